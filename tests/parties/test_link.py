"""parties.link: the router reaches a party host through its Link's methods only."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from parties.faults import FaultPlan
from parties.link import Link
from parties.router import Router
from parties.secure.messages import SurvivorSet, id_vector
from parties.transport import CONTROLLER, Frame
from parties.wire.codec import Message, encode
from parties.wire.messages import RandomizedValues
from parties.wire.requests import ReleaseRequest

REQUEST = ReleaseRequest(1, "collect", ((0,),), ((0,),), ("keep-or-uniform",), ((0.7,),))


class _Recorder(Link):
    """A link that records every call the router makes (no ``push_many`` of its own)."""

    def __init__(self, parties: range) -> None:
        self.parties = parties
        self.calls: list[tuple[str, object]] = []

    def push(self, frame: Frame, position: int | None) -> None:
        self.calls.append(("push", (frame.src, frame.dst, frame.phase, frame.kind, position)))

    def crash(self, parties: Sequence[int]) -> None:
        self.calls.append(("crash", tuple(parties)))

    def buffered(self, party: int) -> int:
        self.calls.append(("buffered", party))
        return 0


class _Many(_Recorder):
    def push_many(self, frame: Frame, dsts: np.ndarray) -> None:
        self.calls.append(("push_many", (frame.src, dsts.tolist())))


def test_a_link_must_implement_push_crash_and_buffered() -> None:
    with pytest.raises(TypeError, match="abstract"):
        Link()  # type: ignore[abstract]


async def test_a_broadcast_reaches_a_link_once_and_the_default_push_many_pushes_each_party() -> None:
    net = Router(6)
    each, many = _Recorder(range(0, 3)), _Many(range(3, 6))
    net.attach(each)
    net.attach(many)
    await net.endpoint(CONTROLLER).broadcast(range(6), REQUEST, phase="collect")
    assert each.calls == [("push", (CONTROLLER, dst, "collect", REQUEST.KIND, None)) for dst in range(3)]
    assert many.calls == [("push_many", (CONTROLLER, [3, 4, 5]))]
    stats = net.statistics()
    assert stats.messages == 6 and stats.bytes == 6 * len(encode(REQUEST))


async def test_the_router_tells_the_link_of_a_crash_and_asks_it_where_a_reorder_goes() -> None:
    net = Router(2, faults=FaultPlan(reorder=1.0), seed=3)
    link = _Recorder(range(0, 2))
    net.attach(link)
    net.crash(1)
    await net.endpoint(CONTROLLER).send(0, REQUEST, phase="collect")
    assert link.calls[0] == ("crash", (1,))
    assert link.calls[1] == ("buffered", 0)
    assert link.calls[2][0] == "push" and link.calls[2][1][:2] == (CONTROLLER, 0)


async def test_a_frame_up_a_link_for_a_party_it_does_not_host_is_the_senders_fault() -> None:
    net = Router(4)
    link = _Recorder(range(0, 2))
    net.attach(link)
    reply = RandomizedValues(1, np.array([0]))
    net.ingress(link, Frame(2, CONTROLLER, "collect", reply.KIND, encode(reply)))  # party 2 is not behind it
    assert net.statistics().rejected == 1 and net.statistics().messages == 0
    net.ingress(link, Frame(1, CONTROLLER, "collect", reply.KIND, encode(reply)))
    env = await net.endpoint(CONTROLLER).recv(timeout=1.0)
    assert env.src == 1 and env.message == reply


class _Carrier(_Recorder):
    """A link that hands messages to its host as they are (as a host in the router's process)."""

    carries_messages = True

    def push_each(self, src: int, phase: str, kind: int, dsts: Sequence[int], messages: Sequence[Message],
                  sizes: Sequence[int]) -> None:
        self.calls.append(("push_each", (src, phase, kind, list(dsts), list(messages), list(sizes))))


def _told(k: int) -> SurvivorSet:
    return SurvivorSet("s", id_vector(tuple(range(k + 1))))


async def test_a_send_each_reaches_a_carrying_link_once_per_run_of_its_parties_as_the_messages_themselves() -> None:
    net = Router(8)
    carrier, frames = _Carrier(range(0, 4)), _Recorder(range(4, 8))
    net.attach(carrier)
    net.attach(frames)
    net.crash(2)
    dsts = [1, 0, 5, 2, 3, 4]
    msgs = [_told(k) for k in range(len(dsts))]
    await net.endpoint(CONTROLLER).send_each(dsts, msgs, phase="told")
    sizes = [len(encode(m)) for m in msgs]
    kind = SurvivorSet.KIND
    assert carrier.calls == [("crash", (2,)),
                             ("push_each", (CONTROLLER, "told", kind, [1, 0], msgs[:2], sizes[:2])),
                             ("push_each", (CONTROLLER, "told", kind, [3], [msgs[4]], [sizes[4]]))]
    assert frames.calls == [("push", (CONTROLLER, 5, "told", kind, None)), ("push", (CONTROLLER, 4, "told", kind, None))]
    stats = net.statistics()  # every send counted at its codec size; the crashed party's lost at the router
    assert stats.messages == 6 and stats.bytes == sum(sizes) and stats.lost_to_crash == 1


async def test_a_links_own_push_each_pushes_each_messages_encoded_frame_and_a_fault_plan_sends_frames() -> None:
    pushed: list[Frame] = []

    class _Frames(_Recorder):
        def push(self, frame: Frame, position: int | None) -> None:
            pushed.append(frame)

    link = _Frames(range(0, 3))
    link.push_each(CONTROLLER, "told", SurvivorSet.KIND, [2, 0], [_told(0), _told(1)], [0, 0])
    assert pushed == [Frame(CONTROLLER, 2, "told", SurvivorSet.KIND, encode(_told(0)), _told(0)),
                      Frame(CONTROLLER, 0, "told", SurvivorSet.KIND, encode(_told(1)), _told(1))]
    net = Router(3, faults=FaultPlan(duplicate=0.5), seed=1)  # a plan acts per message: frames
    carrier = _Carrier(range(0, 3))
    net.attach(carrier)
    await net.endpoint(CONTROLLER).send_each([0, 1], [_told(0), _told(1)], phase="told")
    assert {name for name, _ in carrier.calls} == {"push"} and len(carrier.calls) >= 2
