"""``Link``: the router's handle on one party host, the only way it reaches parties hosted there.

The router (:class:`parties.router.Router`) holds one link per party host
(:class:`~parties.shard.PartyShard`) and talks to the host through these methods only;
every runtime supplies its own:

- the ``memory`` runtime's :class:`parties.runtime.LocalLink` — a direct call each way, the
  host on the router's event loop, a send to several of its parties handed over as the messages
  themselves (:meth:`Link.push_each`, :attr:`Link.carries_messages`);
- the ``tcp`` runtime's stream to a worker process, and the ``ray`` runtime's link to a shard
  actor — both :class:`parties.channel.RecordBatcher`: the frames become the channel's
  records (:mod:`parties.channel`), batched per turn of the event loop.

What comes back up a link — a frame a hosted party sent, or a run of its cohort's replies as
reply columns — enters the router through :meth:`Router.ingress
<parties.router.Router.ingress>` / :meth:`Router.ingress_columns
<parties.router.Router.ingress_columns>`, which check that the link hosts the sender.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

import numpy as np

from parties.transport import Frame
from parties.wire.codec import Message, encode

__all__ = ["Link"]


class Link(ABC):
    """The router's handle on one party host (module docstring).

    Attributes
    ----------
    parties
        The parties the host behind this link hosts (a contiguous range; empty until known).
    """

    parties: range

    @abstractmethod
    def push(self, frame: Frame, position: int | None) -> None:
        """Queue ``frame`` for delivery to its hosted party (must not block); ``position`` is a
        reorder fault's buffer index (``None``: the end)."""

    def push_many(self, frame: Frame, dsts: np.ndarray) -> None:
        """``frame`` (a broadcast's) for every party of ``dsts`` (an ascending int64 array of
        parties this link hosts): as many :meth:`push` calls, which a link may carry at once."""
        for dst in dsts.tolist():
            self.push(frame._replace(dst=dst), None)

    carries_messages = False
    """Whether :meth:`push_each` hands the messages to the host as they are (a host in the
    router's process); otherwise it encodes each one and :meth:`push` es its frame."""

    def push_each(self, src: int, phase: str, kind: int, dsts: Sequence[int], messages: Sequence[Message],
                  sizes: Sequence[int]) -> None:
        """``messages[k]`` (all of ``kind``, ``sizes[k]`` bytes encoded, counted by the router)
        from ``src`` for the hosted party ``dsts[k]``, in order: as many :meth:`push` calls of
        their frames, each message encoded."""
        for dst, msg in zip(dsts, messages):
            self.push(Frame(src, dst, phase, kind, encode(msg), msg), None)

    @abstractmethod
    def crash(self, parties: Sequence[int]) -> None:
        """Tell the host that these of its parties crashed."""

    @abstractmethod
    def buffered(self, party: int) -> int:
        """Messages buffered at ``party``'s endpoint (where a reorder fault inserts the next
        one); a remote host's buffers are not visible here: 0."""
