"""An actor's inbox: delivered messages buffered in arrival order, pending receives, rejected frames.

The delivery side of a mailbox.  A transport hands every delivered message to the receiving
actor's inbox as an :class:`~parties.envelope.Envelope` (:meth:`Inbox.deliver`; reply columns
with :meth:`Inbox.deliver_columns`): a pending receive (:class:`~parties.waiter.Waiter`) whose
filters match takes it, or it is buffered.  Unmatched messages stay buffered, in arrival order,
for later receives (:class:`parties.mailbox.Mailbox`).  Frames the transport rejected are noted
here as a :class:`~parties.envelope.Rejection` (:meth:`Inbox.note_rejection`; read with
:meth:`Inbox.rejections`, :meth:`Inbox.take_rejections`); they never reach, wake or fail a
receive.  The delivery side's methods (``deliver``, ``deliver_columns``, ``note_rejection``,
``crash``) are called by the actor's transport only.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from typing import Any

import numpy as np

from mprr.errors import PartyDropped
from parties.awaited import Awaited
from parties.columns import Columns, ReplyColumns
from parties.envelope import Envelope, Rejection
from parties.topology import actor_name
from parties.waiter import Waiter, matches
from parties.wire.codec import Message

__all__ = ["MAX_REJECTIONS_KEPT", "Inbox"]

MAX_REJECTIONS_KEPT = 1024
"""Rejections an inbox keeps for :meth:`Inbox.rejections` (older ones are only counted)."""


class Inbox:
    """The buffered messages, pending receives and rejected frames of one actor (module docstring)."""

    __slots__ = ("actor", "_buffer", "_waiters", "_rejections")

    def __init__(self, actor: int) -> None:
        self.actor = actor
        self._buffer: deque[Envelope[Message]] = deque()
        self._waiters: list[Waiter] = []
        self._rejections: deque[Rejection] = deque(maxlen=MAX_REJECTIONS_KEPT)

    @property
    def buffered(self) -> int:
        """Number of delivered messages no recv has taken yet."""
        return len(self._buffer)

    def pending(self) -> tuple[Envelope[Message], ...]:
        """The buffered envelopes, oldest first (not removed)."""
        return tuple(self._buffer)

    # ------------------------------------------------------------------ rejected frames
    def rejections(self) -> tuple[Rejection, ...]:
        """Frames rejected at this endpoint and not yet taken, oldest first.

        At most :data:`MAX_REJECTIONS_KEPT` are kept; the traffic counters count every one.
        """
        return tuple(self._rejections)

    def take_rejections(self, sources: Iterable[int] | None = None) -> dict[int, Rejection]:
        """Remove the rejections of frames from ``sources`` (None = any sender).

        Returns ``{sender: its first rejection taken}``: the senders whose frames this endpoint
        rejected since they were last taken.
        """
        if not self._rejections:
            return {}
        wanted = None if sources is None else set(sources)
        first: dict[int, Rejection] = {}
        keep: deque[Rejection] = deque(maxlen=MAX_REJECTIONS_KEPT)
        for r in self._rejections:
            if wanted is None or r.src in wanted:
                first.setdefault(r.src, r)
            else:
                keep.append(r)
        self._rejections = keep
        return first

    @property
    def crashed(self) -> bool:
        """True once this actor has crashed."""
        raise NotImplementedError

    def _check_source(self, src: int) -> None:
        """Raise unless ``src`` is an actor that may be waited for."""
        raise NotImplementedError

    def _check_sources(self, sources: set[int]) -> None:
        """:meth:`_check_source` of each of ``sources``."""
        for src in sources:
            self._check_source(src)

    def _raise_pending(self) -> None:
        if self.crashed:
            raise PartyDropped(f"{actor_name(self.actor)} has crashed", parties=(self.actor,))

    def _take(self, kinds: frozenset[int] | None, sources: Any, phase: str | None) -> Envelope[Message] | None:
        buf = self._buffer
        if not buf:
            return None
        if kinds is None and sources is None and phase is None:
            return buf.popleft()
        for i, env in enumerate(buf):
            if matches(env, kinds, sources, phase):
                del buf[i]
                return env
        return None

    def _take_all(self, kinds: frozenset[int] | None, sources: Any, phase: str | None) -> list[Envelope[Message]]:
        buf = self._buffer
        if not buf:
            return []
        if kinds is None and sources is None and phase is None:
            everything = list(buf)
            buf.clear()
            return everything
        out: list[Envelope[Message]] = []
        keep: deque[Envelope[Message]] = deque()
        for env in buf:
            (out if matches(env, kinds, sources, phase) else keep).append(env)
        if keep:
            self._buffer = keep
        else:
            buf.clear()
        return out

    def _take_each(self, want: Awaited, kinds: frozenset[int] | None,
                   phase: str | None) -> dict[int, Envelope[Message]]:
        """Take the first buffered match of each source in ``want`` (removed from ``want``)."""
        got: dict[int, Envelope[Message]] = {}
        if want and self._buffer:
            keep: deque[Envelope[Message]] = deque()
            for env in self._buffer:
                if env.src in want and matches(env, kinds, None, phase):
                    want.discard(env.src)
                    got[env.src] = env
                else:
                    keep.append(env)
            self._buffer = keep
        return got

    def _forget(self, waiter: Waiter, returned: bool) -> None:
        """Drop a finished waiter; unless its catch was returned, put the catch back."""
        try:
            self._waiters.remove(waiter)
        except ValueError:
            pass
        if returned:
            return
        fut = waiter.future
        failed = fut.done() and not fut.cancelled() and fut.exception() is not None  # (retrieved)
        if waiter.want is None:
            # delivered just as the recv was cancelled: nothing is lost
            if fut.done() and not fut.cancelled() and not failed:
                self._buffer.appendleft(fut.result())
        else:
            put_back = list(waiter.got.values())
            for block in waiter.blocks or ():
                put_back.extend(_envelope(block, k, self.actor) for k in range(len(block)))
            for env in reversed(put_back):
                self._buffer.appendleft(env)

    # ------------------------------------------------------------------ delivery side (called by the transport)
    def deliver(self, env: Envelope[Message], position: int | None = None) -> None:
        """Hand ``env`` to the first pending receive it matches, or buffer it (at ``position``,
        a reorder fault's index, when given; else at the end)."""
        if not self._waiters and position is None:
            self._buffer.append(env)
            return
        for w in self._waiters:
            if w.matches(env) and not w.future.done():
                if w.want is None:
                    self._waiters.remove(w)
                    w.future.set_result(env)
                    return
                w.want.discard(env.src)
                w.got[env.src] = env
                if not w.want:
                    self._waiters.remove(w)
                if not w.want and not w.future.done():
                    w.future.set_result(w.got)
                return
        if position is None or position >= len(self._buffer):
            self._buffer.append(env)
        else:
            self._buffer.insert(position, env)

    def deliver_columns(self, block: Columns) -> None:
        """Deliver columns: a waiting columnar gather (the only waiter) takes the members of reply
        columns it wants as columns; every other member is delivered as its own envelope, in
        order (:meth:`deliver`; buffered at once when no receive is pending)."""
        waiters = self._waiters
        if not waiters:
            self._buffer.extend(_envelopes(block, self.actor))
            return
        w = waiters[0] if len(waiters) == 1 else None
        if (w is None or w.blocks is None or w.want is None or not isinstance(block, ReplyColumns)
                or (w.kinds is not None and block.kind not in w.kinds)
                or (w.phase is not None and block.phase != w.phase) or w.future.done()):
            for env in _envelopes(block, self.actor):
                self.deliver(env)
            return
        want = w.want
        take = want.take(block.srcs)  # (the senders are distinct)
        whole = bool(take.all())
        if whole or take.any():
            w.blocks.append(block if whole else block.subset(take))
            if not want:
                waiters.remove(w)
                w.future.set_result(w.got)
        if not whole:
            for k in np.flatnonzero(~take).tolist():
                self.deliver(_envelope(block, k, self.actor))

    def note_rejection(self, rejection: Rejection) -> None:
        """Note a frame the transport rejected for this actor (:meth:`rejections`)."""
        self._rejections.append(rejection)

    def crash(self) -> None:
        """The actor crashed: its buffered messages are lost and its pending receives fail with
        :class:`~mprr.errors.PartyDropped` (called by the transport's ``crash``)."""
        self._buffer.clear()
        err = PartyDropped(f"{actor_name(self.actor)} has crashed", parties=(self.actor,))
        for w in list(self._waiters):
            if not w.future.done():
                w.future.set_exception(err)
        self._waiters.clear()


def _envelope(block: Columns, k: int, dst: int) -> Envelope[Message]:
    """Member ``k`` of columns as its own envelope, delivered to ``dst``."""
    return Envelope(int(block.srcs[k]), dst, block.phase, block.message(k), int(block.sizes[k]))


def _envelopes(block: Columns, dst: int) -> list[Envelope[Message]]:
    """Every member of columns as its own envelope, delivered to ``dst``, in order."""
    phase, message = block.phase, block.message
    return [Envelope(src, dst, phase, message(k), size)
            for k, (src, size) in enumerate(zip(block.srcs.tolist(), block.sizes.tolist()))]
