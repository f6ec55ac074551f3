"""parties.inbox: the delivery side of a mailbox (reply columns to a waiting columnar gather)."""

from __future__ import annotations

import asyncio

import numpy as np

from parties.cohort import ReplyLayout
from parties.router import Router
from parties.transport import CONTROLLER
from parties.wire.messages import RandomizedValues


async def test_columns_give_a_columnar_gather_the_members_it_awaits_and_buffer_the_rest() -> None:
    net = Router(5)
    ctrl = net.endpoint(CONTROLLER)
    codes = np.array([[0], [1], [2], [3]], dtype=np.int64)
    block = ReplyLayout.of(4, codes).columns(np.array([0, 1, 2, 3]), "p", slice(0, 4))
    asyncio.get_running_loop().call_soon(lambda: net.ingress_columns(None, block, checked=True))  # type: ignore[arg-type]
    got, blocks = await ctrl.gather_columns([1, 3, 4], kinds=RandomizedValues, phase="p", timeout=1.0)
    assert got == {} and len(blocks) == 1 and blocks[0].srcs.tolist() == [1, 3]
    assert blocks[0].codes.tolist() == [[1], [3]]
    assert [(e.src, e.message) for e in ctrl.pending()] == [(0, RandomizedValues(4, np.array([0]))),
                                                            (2, RandomizedValues(4, np.array([2])))]


async def test_a_cancelled_gather_puts_its_catch_back_a_collect_keeps_it() -> None:
    from parties.awaited import Awaited

    net = Router(3)
    ctrl = net.endpoint(CONTROLLER)
    codes = np.array([[0], [1]], dtype=np.int64)
    for receive in ("gather", "collect"):
        block = ReplyLayout.of(4, codes).columns(np.array([0, 1]), "p", slice(0, 2))
        asyncio.get_running_loop().call_later(0.1, lambda: net.ingress_columns(None, block, checked=True))  # type: ignore[arg-type]
        want, got = Awaited(range(3)), {}
        try:
            async with asyncio.timeout(0.5):  # (party 2 never answers)
                if receive == "gather":
                    await ctrl.gather(range(3), kinds=RandomizedValues, phase="p", timeout=None)
                else:
                    await ctrl.collect(want, got, kinds=RandomizedValues, phase="p")
        except TimeoutError:
            pass
        if receive == "gather":
            assert [e.src for e in ctrl.pending()] == [0, 1] and len(ctrl.take_all()) == 2
        else:
            assert sorted(got) == [0, 1] and ctrl.buffered == 0 and want.ids().tolist() == [2]
