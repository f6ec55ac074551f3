"""What the tests of ``parties.party_sum`` share: a host's transport that keeps its sends, a
stand-in party, a host serving them, a start and a controller's survivor-set frame."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

from mprr.errors import ProtocolError
from parties.party_sum import PartySums
from parties.secure.messages import ShareVector, SurvivorSet, id_vector
from parties.topology import CONTROLLER
from parties.transport import Frame, Transport
from parties.wire.codec import encode
from parties.wire.requests import SecureSumStart

START = SecureSumStart(1, "s", "graph", ((0, 2),))
KINDS = frozenset({ShareVector.KIND, SurvivorSet.KIND})
Program = Generator[Any, Any, Any]


class Net(Transport):
    """A host's transport whose sends are kept."""

    def __init__(self, n: int) -> None:
        super().__init__(n)
        self.sent: list[Frame] = []

    def _transmit(self, frame: Frame) -> None:
        self.sent.append(frame)


class StubParty:
    """What the host asks of a party: its program for a start, and the end of it."""

    def __init__(self, index: int, program: Program | None) -> None:
        self.index = index
        self.program = program
        self.errors: list[str] = []
        self.asked: list[tuple[SecureSumStart, object]] = []
        self.ended: list[tuple[str, ProtocolError | None, bool]] = []

    def secure_program(self, start: SecureSumStart, network: Any = None) -> Program | None:
        self.asked.append((start, network))
        return self.program

    def end_secure_sum(self, session: str, error: ProtocolError | None, *, ran: bool = True) -> None:
        self.ended.append((session, error, ran))


def vector(src: int, session: str = "s") -> Frame:
    msg = ShareVector(session, -1, id_vector((src,)))
    return Frame(src, 0, "graph/shares", msg.KIND, encode(msg))


TOLD = Frame(CONTROLLER, 0, "graph/told", SurvivorSet.KIND, encode(SurvivorSet("s", id_vector((0,)))))


def host(net: Transport, failures: list[BaseException] | None = None) -> PartySums:
    sums = PartySums(net, KINDS, (failures if failures is not None else []).append)
    sums.serving = True
    return sums
