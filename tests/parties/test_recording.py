"""parties.recording: the controller's endpoint logs everything it receives to the view."""

from __future__ import annotations

import asyncio

import numpy as np

from parties.awaited import Awaited
from parties.cohort import ReplyLayout
from parties.router import Router
from parties.recording import RecordingEndpoint
from parties.transport import CONTROLLER
from parties.view import ViewLog
from parties.wire.messages import Ack, RandomizedValues


async def test_what_a_collect_caught_before_its_deadline_is_in_the_view() -> None:
    net = Router(4)
    view = ViewLog()
    ep = RecordingEndpoint(net.endpoint(CONTROLLER), view)
    await net.endpoint(1).send(CONTROLLER, Ack(1), phase="p")
    block = ReplyLayout.of(7, np.array([[3], [4]], dtype=np.int64)).columns(np.array([2, 3]), "p", slice(0, 2))
    asyncio.get_running_loop().call_later(0.5, lambda: net.ingress_columns(None, block, checked=True))  # type: ignore[arg-type]  # (columns while it waits)
    want, got, blocks = Awaited(range(4)), {}, []
    try:
        async with asyncio.timeout(1.0):  # party 0 never answers
            await ep.collect(want, got, blocks, kinds=(Ack, RandomizedValues), phase="p")
    except TimeoutError:
        pass
    assert list(got) == [1] and blocks == [block] and want.ids().tolist() == [0]
    assert [(e.src, e.message) for e in view] == [(1, Ack(1)), (2, RandomizedValues(7, np.array([3]))),
                                                  (3, RandomizedValues(7, np.array([4])))]


async def test_every_receive_is_logged() -> None:
    net = Router(2)
    view = ViewLog()
    ep = RecordingEndpoint(net.endpoint(CONTROLLER), view)
    for i in (0, 1, 0, 1):
        await net.endpoint(i).send(CONTROLLER, Ack(i), phase="p")
    await ep.recv(kinds=Ack, sources=0, timeout=1.0)
    await ep.gather([1], kinds=Ack, timeout=1.0)
    assert len(ep.take_all()) == 2
    assert [e.src for e in view] == [0, 1, 0, 1]
