"""parties.exchange: a request and its replies, one asyncio.timeout per round, with retries.

Async tests here run on the virtual clock (tests/parties/conftest.py): times are exact.
"""

from __future__ import annotations

import asyncio

import numpy as np

from mprr.protocols.steps import MatrixSpec
from parties.cohort import ReplyLayout
from parties.exchange import exchange
from parties.router import Router
from parties.recording import RecordingEndpoint
from parties.transport import CONTROLLER
from parties.view import ViewLog
from parties.wire.messages import RandomizedValues, Refusal
from parties.wire.requests import ReleaseRequest

KINDS = (RandomizedValues, Refusal)


def request(rid: int = 1) -> ReleaseRequest:
    return ReleaseRequest.build(rid, "p", ((0,),), (MatrixSpec.keep_or_uniform(0.5),))


async def answer(net: Router, pid: int, replies, *, after: float = 0.0, times: int = 1) -> None:
    """A fake party: at each request, wait ``after`` s, then send ``replies(request)``."""
    ep = net.endpoint(pid)
    for _ in range(times):
        env = await ep.recv(kinds=ReleaseRequest, timeout=None)
        await asyncio.sleep(after)
        for reply in replies(env.message):
            await ep.send(CONTROLLER, reply, phase="p")


def value(code: int, shift: int = 0):
    return lambda req: [RandomizedValues(req.request_id + shift, np.array([code]))]


async def run(net: Router, parties, **kw) -> tuple[dict, tuple[int, ...], ViewLog, float]:
    view = ViewLog()
    ep = RecordingEndpoint(net.endpoint(CONTROLLER), view)
    loop = asyncio.get_running_loop()
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(p) for p in parties]
        start = loop.time()
        got, silent = await exchange(ep, request(), list(range(net.n)), kinds=KINDS, **{"timeout": 1.0, "retries": 0, **kw})
        took = loop.time() - start
        for t in tasks:
            t.cancel()
    return got, silent, view, took


async def test_one_deadline_bounds_the_round_whatever_arrives_before_it() -> None:
    # parties 0 and 2 first send a stale reply (their senders stay awaited), then their answers,
    # at 0.9 s (kept) and 1.5 s (after the deadline: silent); party 1 answers at 0.5 s
    net = Router(3)

    async def stale_then(pid: int, after: float) -> None:
        ep = net.endpoint(pid)
        req = (await ep.recv(kinds=ReleaseRequest, timeout=None)).message
        await ep.send(CONTROLLER, RandomizedValues(req.request_id + 5, np.array([1])), phase="p")
        await asyncio.sleep(after)
        await ep.send(CONTROLLER, RandomizedValues(req.request_id, np.array([pid])), phase="p")

    got, silent, view, took = await run(net, [stale_then(0, 0.9), answer(net, 1, value(1), after=0.5),
                                              stale_then(2, 1.5)])
    assert {p: m.codes.tolist() for p, m in got.items()} == {1: [1], 0: [0]}
    assert silent == (2,) and took == 1.0
    assert [(e.src, e.message.request_id) for e in view] == [(0, 6), (2, 6), (1, 1), (0, 1)]  # (stale ones logged)


async def test_retries_resend_to_the_silent_parties_only_with_a_deadline_each() -> None:
    net = Router(2)
    seen = []

    def second_time(req):
        seen.append(req.request_id)
        return [] if len(seen) == 1 else [RandomizedValues(req.request_id, np.array([1]))]

    got, silent, _, took = await run(net, [answer(net, 0, value(0)), answer(net, 1, second_time, after=0.5, times=2)],
                                     retries=2)
    assert sorted(got) == [0, 1] and silent == () and seen == [1, 1] and took == 1.5
    assert net.statistics().sent_by(CONTROLLER).messages == 3  # 2 + 1 retry to party 1


async def test_columns_of_another_request_leave_their_senders_awaited() -> None:
    net = Router(3)
    codes = np.array([[0], [1], [2]], dtype=np.int64)
    stale = ReplyLayout.of(9, codes).columns(np.array([0, 1, 2]), "p", slice(0, 3))
    fresh = ReplyLayout.of(1, codes[1:]).columns(np.array([1, 2]), "p", slice(0, 2))

    async def shard() -> None:
        await net.endpoint(0).recv(kinds=ReleaseRequest, timeout=None)
        net.ingress_columns(None, stale, checked=True)  # type: ignore[arg-type]  # (checked, no fault plan: the link is not used)
        await asyncio.sleep(0.2)
        net.ingress_columns(None, fresh, checked=True)  # type: ignore[arg-type]

    columns: list = []
    got, silent, view, took = await run(net, [shard()], columns=columns)
    assert got == {} and silent == (0,) and took == 1.0
    assert columns == [fresh] and len(view) == 5  # the stale block's three replies and the fresh two
