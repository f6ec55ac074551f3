"""What one party does with the vectors its peers send in a round of a secure sum.

Shared by the engines whose parties exchange share vectors and partial sums (main paper 4.2,
engine ``paper``; the graph relay, engine ``graph``): run a party's sending and receiving
together (:func:`run_both`), check that a received vector is ring elements of the expected
length (:func:`checked_vector`), and receive one vector from every peer while summing them
mod M (:func:`receive_sum`: duplicates skipped, a second different vector or a non-peer's
rejected against its sender, missing peers named after the timeout).
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import TYPE_CHECKING, Any

import numpy as np

from mprr.errors import ConfigurationError, MessageError, ProtocolError, RoundTimeout
from parties.topology import actor_name
from parties.transport import Endpoint
from parties.secure.engine import SecureSumContext
from parties.secure.ring import ZMod

if TYPE_CHECKING:
    from parties.secure.messages import PartialSum, ShareVector

__all__ = ["checked_vector", "receive_sum", "run_both"]


async def run_both(first: Any, second: Any) -> tuple[Any, Any]:
    """Run two coroutines of one actor concurrently (e.g. send shares while receiving them).

    If either fails the other is cancelled and the first error is raised as is (not wrapped
    in an ExceptionGroup).
    """
    try:
        async with asyncio.TaskGroup() as tg:
            t1 = tg.create_task(first)
            t2 = tg.create_task(second)
    except BaseExceptionGroup as group:
        protocol: list[BaseException] = [e for e in group.exceptions if isinstance(e, ProtocolError)]
        raise (protocol or list(group.exceptions))[0] from None
    return t1.result(), t2.result()


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
"""Received vectors range-checked and added by :func:`receive_sum` in one numpy call each."""


def _checked_digest(values: np.ndarray, ring: ZMod, ctx: SecureSumContext, tag: int, src: int) -> tuple[np.ndarray, bytes]:
    checked = checked_vector(values, ring, ctx, tag, src)
    return checked, hashlib.sha256(np.ascontiguousarray(checked).data).digest()[:16]


async def receive_sum(ep: Endpoint, peers: tuple[int, ...], kind: type[ShareVector | PartialSum], field: str, tag: int,
                       ctx: SecureSumContext, ring: ZMod, phase: str, timeout: float, *,
                       broadcast: bool = False) -> np.ndarray:
    """Receive one ``kind`` message (ShareVector / PartialSum) from every peer and sum its
    ``field`` mod M, up to ``_BATCH`` vectors at a time (no buffering of n vectors).

    Duplicated deliveries of the same message, and messages of another session or combination
    (late deliveries of an earlier sum), are skipped; a message from an actor that is not a
    peer, or a second different message from a peer, is rejected (counted against its sender,
    :meth:`~parties.transport.Endpoint.reject`) and skipped, so a misbehaving sender cannot
    abort this receive; missing peers after ``timeout`` seconds raise RoundTimeout naming them.
    A peer's vector of the wrong shape or outside the ring is a MessageError naming it.
    ``broadcast``: the messages are broadcasts, checked once per message object
    (:class:`_CheckedVectors`).
    """
    expected = set(peers)
    acc = np.zeros(ctx.length if tag < 0 else 1, dtype=np.uint64)
    seen: dict[int, bytes] = {}  # digests, to recognise duplicated deliveries
    # A peer's first vector is checked in two steps: its shape and dtype on arrival, its range
    # (every cell below M; ``top`` None when the dtype holds nothing else) together with up to
    # _BATCH others by :func:`flush`, which adds them to ``acc`` with one numpy call each.
    shape, dtype = acc.shape, ring.dtype
    top = None if ring.modulus - 1 >= int(np.iinfo(dtype).max) else dtype.type(ring.modulus)
    sha256, checked_broadcast, session = hashlib.sha256, _BROADCASTS.get, ctx.session
    pending: list[np.ndarray] = []
    senders: list[int] = []
    wide = np.uint32 if (ring.modulus - 1) * _BATCH < 1 << 32 else np.uint64  # holds a batch's exact sum

    def flush() -> None:
        rows = np.concatenate(pending).reshape(len(pending), shape[0])
        if top is not None and not broadcast and rows.max() >= top:  # (broadcasts: checked by _BROADCASTS)
            bad = np.flatnonzero(rows.max(axis=1) >= top)  # checked_vector names the first such peer
            checked_vector(pending[bad[0]], ring, ctx, tag, senders[bad[0]])
        ring.accumulate(acc, rows.sum(axis=0, dtype=wide))
        pending.clear()
        senders.clear()

    try:
        async with asyncio.timeout(timeout):
            while expected:
                for env in await ep.recv_many(kinds=kind, phase=phase, timeout=None):
                    msg = env.message
                    if msg.session != session or msg.combination != tag:
                        continue  # a late delivery of another sum or combination
                    src = env.src
                    raw = getattr(msg, field)
                    if src in expected:  # a peer's first vector
                        if broadcast:
                            values, digest = checked_broadcast(raw, ring, ctx, tag, src)
                        elif raw.shape == shape and raw.dtype == dtype:  # (the codec made it C-contiguous)
                            values, digest = raw, sha256(raw).digest()[:16]  # = _checked_digest's digest
                        else:
                            values, digest = _checked_digest(raw, ring, ctx, tag, src)  # raises
                        expected.discard(src)
                        seen[src] = digest
                        pending.append(values)
                        senders.append(src)
                        if len(pending) >= _BATCH:
                            flush()
                    elif src not in seen:
                        ep.reject(env, f"{kind.NAME} from {actor_name(src)}, which is not a peer")
                    elif seen[src] != (checked_broadcast(raw, ring, ctx, tag, src) if broadcast
                                       else _checked_digest(raw, ring, ctx, tag, src))[1]:
                        ep.reject(env, f"a second, different {kind.NAME} from {actor_name(src)}")
                    # (else a duplicated delivery of the same message: skipped)
    except TimeoutError:
        if pending:
            flush()  # a peer's vector outside the ring is named even when others are missing
        missing = tuple(sorted(expected))
        raise RoundTimeout(
            f"phase {phase!r}: {actor_name(ep.actor)} got no {kind.NAME} from "
            f"{len(missing)} part{'y' if len(missing) == 1 else 'ies'} {list(missing)[:10]} "
            f"within {timeout} s",
            phase=phase, timeout=timeout, missing=missing,
        ) from None
    if pending:
        flush()
    return ring.reduce(acc)
