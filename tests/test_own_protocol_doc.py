"""docs/own_protocol.md: its two code blocks run as written (a user's step program, fast ≡ actors)."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[1] / "docs" / "own_protocol.md"


def test_the_how_to_runs_as_written() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 2
    namespace: dict[str, object] = {}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)  # noqa: S102 - the documented example itself
    sim = namespace["sim"]
    assert sim.traffic.messages > 0  # type: ignore[attr-defined]
