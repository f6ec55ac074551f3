"""What one party does with the vectors its peers send in a round of a secure sum.

Shared by the engines whose parties exchange share vectors and partial sums (main paper 4.2,
engine ``paper``; engine ``graph``): check that a received vector is ring elements of the
expected length (:func:`checked_vector`), and fold one vector from every peer into their sum
mod M as the round's batches arrive (:class:`VectorSum`, a piece of a sans-I/O program,
:mod:`parties.secure.program`: duplicates skipped, a second different vector or a non-peer's
rejected against its sender, missing peers named after the timeout).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any

import numpy as np

from mprr.errors import ConfigurationError, MessageError, ProtocolError, RoundTimeout
from parties.topology import actor_name
from parties.secure.context import SecureSumContext
from parties.secure.program import Delivery, Expect, Operation, Reject
from parties.secure.ring import ZMod

if TYPE_CHECKING:
    from parties.secure.messages import PartialSum, ShareVector

__all__ = ["VectorSum", "checked_vector", "combination"]


def checked_vector(values: np.ndarray, ring: ZMod, ctx: SecureSumContext, tag: int, src: int) -> np.ndarray:
    """A received vector must be ring elements of length L (``tag`` < 0) or 1 (one combination)."""
    expected = ctx.length if tag < 0 else 1
    if values.shape != (expected,):
        raise MessageError(f"{actor_name(src)} sent {values.shape} cells, expected ({expected},)")
    try:
        return ring.check(values, f"vector from {actor_name(src)}")
    except ConfigurationError as exc:
        raise MessageError(str(exc)) from None


class _CheckedVectors:
    """The checked vector and digest of recently received array *objects*, by identity.

    In one process a broadcast (main paper 4.2 step 3) is one immutable message object delivered
    to every peer, and :func:`checked_vector` and the digest are pure functions of it, so each
    broadcast is checked and hashed once instead of once per receiver.  An entry keeps its array
    alive, so an id is never reused while it is cached; at most ``size`` entries (oldest first out).
    """

    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._entries: dict[int, tuple[np.ndarray, int, int, bytes]] = {}

    def get(self, values: np.ndarray, ring: ZMod, ctx: SecureSumContext, tag: int, src: int) -> tuple[np.ndarray, bytes]:
        hit = self._entries.get(id(values))
        expected = ctx.length if tag < 0 else 1
        if hit is not None and hit[0] is values and hit[1] == ring.modulus and hit[2] == expected:
            return values, hit[3]  # (the same object, already checked: the same answer)
        checked, digest = _checked_digest(values, ring, ctx, tag, src)
        if len(self._entries) >= self.size:
            del self._entries[next(iter(self._entries))]
        self._entries[id(values)] = (values, ring.modulus, expected, digest)
        return checked, digest


_BROADCASTS = _CheckedVectors()

_BATCH = 64
"""Received vectors range-checked and added by :class:`VectorSum` in one numpy call each."""


def _checked_digest(values: np.ndarray, ring: ZMod, ctx: SecureSumContext, tag: int, src: int) -> tuple[np.ndarray, bytes]:
    checked = checked_vector(values, ring, ctx, tag, src)
    return checked, hashlib.sha256(np.ascontiguousarray(checked).data).digest()[:16]


class VectorSum:
    """Sum mod M of one vector from every source of a streamed round, folded batch by batch.

    Pure (no I/O): :meth:`fold` takes each :class:`~parties.secure.program.Delivery` of the
    round ``expect`` and yields the :class:`~parties.secure.program.Reject` operations it
    decides on; :meth:`finish` waits for the rest of the round and returns the sum.  A
    source's vectors are added up to ``_BATCH`` at a time (no buffering of n vectors).

    Duplicated deliveries of the same message are skipped; a message from an actor that is
    not a source, or a second different message from a source, is rejected (counted against
    its sender) and skipped, so a misbehaving sender cannot abort the round; a source's vector
    of the wrong shape or outside the ring is a MessageError naming it; missing sources at the
    timeout raise RoundTimeout naming them.  ``broadcast``: the messages are broadcasts,
    checked once per message object (:class:`_CheckedVectors`).
    """

    def __init__(self, me: int, expect: Expect[ShareVector] | Expect[PartialSum], field: str, tag: int,
                 ctx: SecureSumContext, ring: ZMod, *, broadcast: bool = False) -> None:
        self.me, self.expect, self.field, self.tag = me, expect, field, tag
        self.ctx, self.ring, self.broadcast = ctx, ring, broadcast
        self.shape = (ctx.length if tag < 0 else 1,)
        self.acc: np.ndarray | None = None  # the unreduced sum (allocated at the first flush: the
        # n programs of one process all wait at once, before their vectors arrive)
        self.seen: dict[int, bytes] = {}  # digests, to recognise duplicated deliveries
        self.done = False
        self.missing: tuple[int, ...] = expect.sources
        self.timed_out = False
        # A source's first vector is checked in two steps: its shape and dtype on arrival, its
        # range (every cell below M; ``top`` None when the dtype holds nothing else) together
        # with up to _BATCH others by :meth:`_flush`, which adds them with one numpy call each.
        self._top = None if ring.modulus - 1 >= int(np.iinfo(ring.dtype).max) else ring.dtype.type(ring.modulus)
        self._wide = np.uint32 if (ring.modulus - 1) * _BATCH < 1 << 32 else np.uint64  # a batch's exact sum
        self._pending: list[np.ndarray] = []
        self._senders: list[int] = []

    def _flush(self) -> None:
        pending = self._pending
        rows = np.concatenate(pending).reshape(len(pending), self.shape[0])
        if self._top is not None and not self.broadcast and rows.max() >= self._top:  # (broadcasts: checked by _BROADCASTS)
            bad = np.flatnonzero(rows.max(axis=1) >= self._top)  # checked_vector names the first such source
            checked_vector(pending[bad[0]], self.ring, self.ctx, self.tag, self._senders[bad[0]])
        if self.acc is None:
            self.acc = np.zeros(self.shape, dtype=np.uint64)
        self.ring.accumulate(self.acc, rows.sum(axis=0, dtype=self._wide))
        pending.clear()
        self._senders.clear()

    def _digest(self, raw: np.ndarray, src: int) -> tuple[np.ndarray, bytes]:
        if self.broadcast:
            return _BROADCASTS.get(raw, self.ring, self.ctx, self.tag, src)
        return _checked_digest(raw, self.ring, self.ctx, self.tag, src)

    def fold(self, got: Delivery[Any]) -> Generator[Operation, Delivery[Any] | None, None]:
        """Take one delivery of the round: add the sources' first vectors, reject the others."""
        shape, dtype, field, name = self.shape, self.ring.dtype, self.field, self.expect.kind.NAME
        for src, msg in got.messages.items():
            raw = getattr(msg, field)
            if not self.broadcast and raw.shape == shape and raw.dtype == dtype:  # (the codec made it C-contiguous)
                values, digest = raw, hashlib.sha256(raw).digest()[:16]  # = _checked_digest's digest
            else:
                values, digest = self._digest(raw, src)  # raises on a bad shape
            self.seen[src] = digest
            self._pending.append(values)
            self._senders.append(src)
            if len(self._pending) >= _BATCH:
                self._flush()
        for src, msg in got.others:
            if src not in self.seen:
                yield Reject(src, msg, self.expect.phase, f"{name} from {actor_name(src)}, which is not a peer")
            elif self.seen[src] != self._digest(getattr(msg, field), src)[1]:
                yield Reject(src, msg, self.expect.phase, f"a second, different {name} from {actor_name(src)}")
            # (else a duplicated delivery of the same message: skipped)
        self.done, self.missing, self.timed_out = got.done, got.missing, got.timed_out

    def finish(self) -> Generator[Operation, Delivery[Any] | None, np.ndarray]:
        """Wait for the rest of the round; the sum mod M of the sources' vectors."""
        while not self.done:
            got = yield self.expect
            if got is None:  # pragma: no cover - a driver always answers an Expect
                raise ProtocolError(f"the driver did not answer the round of phase {self.expect.phase!r}")
            yield from self.fold(got)
            del got  # (not kept while the next batch is awaited)
        if self._pending:
            self._flush()  # a source's vector outside the ring is named even when others are missing
        if self.timed_out:
            missing, expect = self.missing, self.expect
            raise RoundTimeout(
                f"phase {expect.phase!r}: {actor_name(self.me)} got no {expect.kind.NAME} from "
                f"{len(missing)} part{'y' if len(missing) == 1 else 'ies'} {list(missing)[:10]} "
                f"within {expect.timeout} s",
                phase=expect.phase, timeout=expect.timeout, missing=missing,
            )
        return self.ring.reduce(self.acc if self.acc is not None else np.zeros(self.shape, dtype=np.uint64))


def combination(tag: int) -> Callable[[ShareVector | PartialSum], bool]:
    """The ``where`` of a round of combination ``tag`` (messages of another combination, late
    deliveries of an earlier sum, are not this round's)."""
    def match(msg: ShareVector | PartialSum) -> bool:
        return msg.combination == tag
    return match
