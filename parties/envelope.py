"""What a mailbox holds: delivered messages as :class:`Envelope`, rejected frames as :class:`Rejection`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from parties.topology import actor_name
from parties.wire.codec import Message

__all__ = ["Envelope", "Rejection"]

M_co = TypeVar("M_co", bound=Message, covariant=True)


class Envelope(NamedTuple, Generic[M_co]):
    """A delivered message: sender, receiver, phase, the decoded message and its size in bytes.

    Generic in the message class: ``recv(kinds=KeyDirectory)`` returns an
    ``Envelope[KeyDirectory]``, so the message's fields are typed without a cast.  (A named
    tuple, as :class:`parties.transport.Frame`.)
    """

    src: int
    dst: int
    phase: str
    message: M_co
    size: int

    @property
    def kind(self) -> str:
        """Name of the message kind."""
        return self.message.NAME


@dataclass(frozen=True, slots=True)
class Rejection:
    """A frame the receiving endpoint rejected: who sent it, in which phase, and why.

    ``kind`` is the kind number the frame claimed (it may be meaningless for garbage).
    """

    src: int
    dst: int
    phase: str
    kind: int
    reason: str

    def describe(self) -> str:
        """One line naming the sender, the receiver, the phase and the reason."""
        return (f"{actor_name(self.dst)} rejected a frame from {actor_name(self.src)} "
                f"in phase {self.phase!r}: {self.reason}")
