"""Encoded sizes by message shape (parties.secure.sizing)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from parties.secure.counting import count
from parties.secure.sizing import SizeByShape
from parties.secure.pki import setup_pki
from parties.topology import CONTROLLER
from parties.wire.codec import encode


@pytest.mark.parametrize(("engine", "n", "L"), [("paper", 5, 7), ("paper-per-combination", 3, 2),
                                                ("graph", 9, 5), ("graph-direct", 9, 5)])
def test_size_by_shape_is_the_codec_size_of_every_message(engine: str, n: int, L: int) -> None:
    """One encoding per message shape gives every message's codec size: checked on every
    message of real sums (the counting driver sizes each with both)."""
    from parties.secure.engine import counted_cost
    from parties.secure.registry import sized_engine

    by_shape = SizeByShape()
    checked: list[int] = []

    def both(message: Any) -> int:
        size = len(encode(message))
        assert by_shape(message) == size, message.NAME
        checked.append(size)
        return size

    eng = sized_engine(engine, degree=4, round_timeout=5.0)
    signers, registry = setup_pki(range(n))
    ctx = eng.context(range(n), L, session="s" * 16, registry=registry)
    programs = {CONTROLLER: eng.controller_program(ctx),
                **{p: eng.party_program(p, np.zeros(L, np.uint8), ctx, signer=signers[p]) for p in range(n)}}
    counted = count(programs, size=both)
    assert len(checked) == counted.statistics.messages > 0
    assert counted.statistics.bytes == sum(checked) == counted_cost(eng, ctx).bytes
