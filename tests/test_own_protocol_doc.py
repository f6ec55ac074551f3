"""docs/own_protocol.md: its code blocks run as written (a user's step program, fast ≡ actors, then
registered with its parameter object and run by name; a secure-sum engine of one's own, run by name)."""

from __future__ import annotations

import re
from pathlib import Path

from mprr.protocols.registry import PROTOCOLS
from parties.secure.registry import ENGINES

DOC = Path(__file__).resolve().parents[1] / "docs" / "own_protocol.md"


def test_the_how_to_runs_as_written() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 5
    namespace: dict[str, object] = {}
    try:
        for block in blocks:
            exec(compile(block, str(DOC), "exec", dont_inherit=True), namespace)  # noqa: S102 - the example itself
    finally:
        if PROTOCOLS.accepts("my-pairs"):
            PROTOCOLS.unregister("my-pairs")  # the other tests see the shipped protocols only
        if ENGINES.accepts("my-ring"):
            ENGINES.unregister("my-ring")
    sim, same = namespace["sim"], namespace["same"]
    assert sim.traffic.messages > 0  # type: ignore[attr-defined]
    assert same.result.protocol == "pairs" and same.options["protocol"] == "my-pairs"  # type: ignore[attr-defined]
