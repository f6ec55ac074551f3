"""The controller's program of the masked engine (Bonawitz et al. 2017, the server's side).

:class:`ControllerProgram` relays the masking keys (round 0) and the sealed shares (round 1) as
bytes, adds up the masked inputs as they arrive (round 2), tells each survivor its view and
collects the views it states, MAC'd (round 3, :mod:`parties.secure.views`), then forwards the
stated views each party needs and removes the masks from the shares it returns (round 4,
:mod:`parties.secure.unmasking`).  Each round is a sub-program that returns only what the
later rounds use.  A party whose message a round's check rejects is a dropout of that round;
with fewer than max(t, 2) parties left the program raises :class:`Shortfall`.  The engine and
the party's side are in :mod:`parties.secure.masked`.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Mapping
from typing import Any, TypeVar

import numpy as np

from mprr.errors import ConfigurationError, MessageError, ProtocolError, SecureSumAborted
from parties.wire.codec import Message
from parties.secure.context import SecureSumContext
from parties.secure.engine import SumOutcome
from parties.secure.messages import (
    KeyDirectory,
    MaskedInput,
    PublicKeys,
    RelayedShares,
    SealedShares,
    SurvivorSet,
    SurvivorTags,
    UnmaskShares,
    id_vector,
)
from parties.secure.program import Delivery, Expect, Mark, Operation, Program, Reject, SendEach
from parties.secure.receive import checked_vector
from parties.secure.topology import CompleteNeighbourhoods
from parties.secure.unmasking import Unmasking
from parties.secure.values import to_counts
from parties.secure.views import survivor_view, unmask_requests

__all__ = ["PHASES", "SPREAD_BLOCK", "SPREAD_BLOCKS", "ControllerProgram", "Shortfall", "spread"]

PHASES = ("masked/advertise", "masked/share-keys", "masked/input", "masked/consistency", "masked/unmask")


class Shortfall(SecureSumAborted):
    """Too few parties left at a round of the controller's program; ``silent``: the missing
    parties no check of the program rejected (the driver knows which of them crashed)."""

    def __init__(self, message: str, *, survivors: int, threshold: int, silent: set[int], missing: int) -> None:
        super().__init__(message, survivors=survivors, threshold=threshold)
        self.silent, self.missing = silent, missing


_M = TypeVar("_M", bound=Message)

_BLOCK = 1024
"""Parties whose relayed shares the controller sends at once (one :class:`SendEach`)."""


class ControllerProgram:
    """The controller's program (:meth:`run`), one sub-program per round; ``real`` False: the
    counting driver's run (no unmasking: placeholder shares reconstruct nothing)."""

    def __init__(self, ctx: SecureSumContext, round_timeout: float, *, real: bool) -> None:
        self.ctx, self.timeout, self.real = ctx, round_timeout, real
        self.minimum = max(ctx.threshold, 2)
        self.rejected: set[int] = set()  # parties whose message of a round was rejected (not silent)

    def run(self) -> Program[SumOutcome]:
        ctx = self.ctx
        ring = ctx.ring
        if ring.modulus != 1 << (8 * ring.element_bytes):  # pragma: no cover - ring_modulus gives 2^32 or 2^64
            raise ConfigurationError(f"the masked engine computes in Z_(2^32) or Z_(2^64), got {ring}")
        keys, directory = yield from self._advertise()
        relayed = yield from self._relay(directory)
        total, u3 = yield from self._collect_inputs(set(relayed))
        views, tagged = yield from self._consistency(u3, directory, relayed)
        total = yield from self._unmask(total, u3, set(relayed) - set(u3), relayed, keys, views, tagged)
        return SumOutcome(to_counts(total), tuple(sorted(u3)))

    def _abort(self, stage: str, alive: set[int] | dict[int, Any]) -> Shortfall:
        ctx = self.ctx
        silent = set(ctx.parties) - set(alive) - self.rejected
        return Shortfall(
            f"masked secure sum aborted at {stage}: {len(alive)} of {ctx.n} parties left, the threshold needs "
            f"at least {self.minimum} (t = {ctx.threshold}, and never a sum of one party)",
            survivors=len(alive), threshold=self.minimum, silent=silent, missing=ctx.n - len(alive))

    def _gather(self, kind: type[_M], sources: list[int], phase: str, accept: Callable[[int, _M], None],
                invalid: Callable[[int, _M], str | None] | None = None, *,
                accept_all: Callable[[Mapping[int, _M]], None] | None = None
                ) -> Generator[Operation, Delivery[Any] | None, list[int]]:
        """One round: a ``kind`` message of the session from each of ``sources`` within the round
        timeout, taken in batches as they arrive.  A well-formed message a party cannot have
        sent honestly (``invalid`` names why) is rejected (counted against its sender) and the
        party is treated as a dropout of that round, exactly as when it fell silent.  Returns
        the sources whose message was accepted, in order of arrival.  ``accept_all`` (a round
        without ``invalid``): takes each batch at once, as ``accept`` of each of its messages
        in turn would."""
        expect = Expect(kind, self.ctx.session, tuple(sources), phase, self.timeout, stream=True)
        accepted: list[int] = []
        while True:
            got = yield expect
            if got is None:  # pragma: no cover - a driver always answers an Expect
                raise ProtocolError(f"the driver did not answer the expectation of phase {phase!r}")
            if accept_all is not None and invalid is None:
                accept_all(got.messages)
                accepted.extend(got.messages)
                if got.done:
                    return accepted
                continue
            for src, msg in got.messages.items():
                reason = None if invalid is None else invalid(src, msg)
                if reason is None:
                    accept(src, msg)
                    accepted.append(src)
                else:
                    self.rejected.add(src)
                    yield Reject(src, msg, phase, reason)
            if got.done:
                return accepted

    def _advertise(self) -> Generator[Operation, Delivery[Any] | None,
                                      tuple[dict[int, PublicKeys], dict[int, tuple[int, ...]]]]:
        """Round 0: the masking keys; each party is sent those of its live neighbours."""
        ctx, s, t = self.ctx, self.ctx.session, self.ctx.threshold
        yield Mark(PHASES[0])
        keys: dict[int, PublicKeys] = {}
        yield from self._gather(PublicKeys, list(ctx.parties), PHASES[0], keys.__setitem__, _bad_keys)
        if len(keys) < self.minimum:
            raise self._abort("key advertisement", keys)
        directory = {}
        everyone = len(keys) == ctx.n  # (then every neighbour is live)
        for p in sorted(keys):
            live = tuple(ctx.neighbours[p]) if everyone else tuple([j for j in ctx.neighbours[p] if j in keys])
            if len(live) + 1 < t:
                raise SecureSumAborted(
                    f"masked secure sum aborted: party {p} has {len(live) + 1} live Shamir "
                    f"holders, threshold t = {t}", survivors=len(live) + 1, threshold=t)
            directory[p] = live
        order = spread(sorted(keys))
        key_of = {j: msg.keys[0] for j, msg in keys.items()}.__getitem__
        yield SendEach(tuple(order), tuple([KeyDirectory(s, id_vector(live), b"".join(map(key_of, live)))
                                            for live in map(directory.__getitem__, order)]), PHASES[0])
        return keys, directory

    def _relay(self, directory: dict[int, tuple[int, ...]]
               ) -> Generator[Operation, Delivery[Any] | None, dict[int, tuple[int, ...]]]:
        """Round 1: relay the sealed shares, as bytes (sliced, never opened).  Returns who
        relayed to whom: each party's senders."""
        s = self.ctx.session
        yield Mark(PHASES[1])

        def bad_recipients(src: int, msg: SealedShares) -> str | None:
            if tuple(msg.recipients.tolist()) != directory[src]:
                return f"party {src} sealed shares for other parties than its live neighbours"
            return None

        received: list[tuple[int, SealedShares]] = []
        u2 = yield from self._gather(SealedShares, sorted(directory), PHASES[1],
                                     lambda src, msg: received.append((src, msg)), bad_recipients)
        if len(u2) < self.minimum:
            raise self._abort("key sharing", set(u2))
        relayed: dict[int, tuple[int, ...]] = {}
        order = spread(sorted(u2))
        blobs = _Blobs(received)
        for first in range(0, len(order), _BLOCK):  # a block of bundles at a time
            block = order[first:first + _BLOCK]
            bundles = []
            for p, (senders, ends, data) in zip(block, blobs.bundles(block)):
                relayed[p] = tuple(senders.tolist())
                bundles.append(RelayedShares(s, senders, ends, data))
            yield SendEach(tuple(block), tuple(bundles), PHASES[1])
        return relayed

    def _collect_inputs(self, u2: set[int]) -> Generator[Operation, Delivery[Any] | None, tuple[np.ndarray, set[int]]]:
        """Round 2: the masked inputs, added up as they arrive (never all held)."""
        ctx, ring = self.ctx, self.ctx.ring
        yield Mark(PHASES[2])
        # M = 2^(bits of the dtype): the dtype's wrap-around is the reduction, so add in place
        total = np.zeros(ctx.length, dtype=ring.dtype)

        def bad_vector(src: int, msg: MaskedInput) -> str | None:
            try:
                checked_vector(msg.values, ring, ctx, -1, src)
            except MessageError as exc:
                return str(exc)
            return None

        def add(src: int, msg: MaskedInput) -> None:  # (checked by bad_vector)
            np.add(total, msg.values, out=total)

        u3 = set((yield from self._gather(MaskedInput, sorted(u2), PHASES[2], add, bad_vector)))
        if len(u3) < self.minimum:
            raise self._abort("masked input collection", u3)
        return total, u3

    def _consistency(self, u3: set[int], directory: dict[int, tuple[int, ...]], relayed: dict[int, tuple[int, ...]]
                     ) -> Generator[Operation, Delivery[Any] | None,
                                    tuple[dict[int, tuple[int, ...]], dict[int, SurvivorTags]]]:
        """Round 3: tell each survivor its view; collect the views it states, MAC'd."""
        ctx, s = self.ctx, self.ctx.session
        yield Mark(PHASES[3])
        order = spread(sorted(u3))
        views = {v: survivor_view(ctx, v, u3) for v in order}
        yield SendEach(tuple(order), tuple([SurvivorSet(s, id_vector(views[v])) for v in order]), PHASES[3])
        complete = isinstance(ctx.neighbours, CompleteNeighbourhoods)

        def expected(w: int) -> set[int]:
            """Whom w MACs its view for: its live neighbours, and the holders of the owners it
            holds that are not its neighbours (they got a key from the owner)."""
            if complete:
                return set(directory[w])
            far = set().union(*map(directory.__getitem__, relayed[w]))
            far.difference_update(ctx.neighbours[w])
            far.discard(w)
            far.update(directory[w])
            return far

        def bad_tags(src: int, msg: SurvivorTags) -> str | None:  # (targets: increasing, by validation)
            targets, allowed = msg.targets.tolist(), expected(src)
            if len(targets) != len(allowed) or not allowed.issuperset(targets):  # (distinct: the same set)
                return f"party {src} sent view tags for other parties than those it shares keys with"
            return None

        tagged: dict[int, SurvivorTags] = {}
        yield from self._gather(SurvivorTags, sorted(u3), PHASES[3], tagged.__setitem__, bad_tags)
        if len(tagged) < self.minimum:
            raise self._abort("consistency check", tagged)
        return views, tagged

    def _unmask(self, total: np.ndarray, u3: set[int], dropped: set[int], relayed: dict[int, tuple[int, ...]],
                keys: dict[int, PublicKeys], views: dict[int, tuple[int, ...]], tagged: dict[int, SurvivorTags]
                ) -> Generator[Operation, Delivery[Any] | None, np.ndarray]:
        """Round 4: forward to each party the stated views it needs; reconstruct the self masks
        of the survivors and the mask keys of the dropped from the shares, as they arrive
        (:class:`~parties.secure.unmasking.Unmasking`)."""
        yield Mark(PHASES[4])
        for block in unmask_requests(self.ctx.session, views, tagged, order=spread):
            yield SendEach(tuple([v for v, _ in block]), tuple([request for _, request in block]), PHASES[4])
        if not self.real:
            yield from self._gather(UnmaskShares, sorted(tagged), PHASES[4], _ignore)
            return total
        unmasking = Unmasking(self.ctx, total, u3, relayed, keys, dropped, set(tagged))
        yield from self._gather(UnmaskShares, sorted(tagged), PHASES[4], unmasking.take, accept_all=unmasking.take_all)
        return unmasking.finish(sorted(u3))


class _Blobs:
    """The sealed shares of round 1 as columns, for relaying: every blob's sender, recipient,
    message and place in its ciphertexts, sorted by recipient, then sender."""

    def __init__(self, received: list[tuple[int, SealedShares]]) -> None:
        msgs = [msg for _, msg in received]
        counts = np.fromiter([msg.recipients.shape[0] for msg in msgs], dtype=np.int64, count=len(msgs))
        senders = np.repeat(np.fromiter([src for src, _ in received], dtype=np.int64, count=len(msgs)), counts)
        recipients = (np.concatenate([msg.recipients for msg in msgs]) if msgs else np.zeros(0)).astype(np.int64)
        ends = (np.concatenate([msg.ends for msg in msgs]) if msgs else np.zeros(0)).astype(np.int64)
        first = np.cumsum(counts) - counts  # each message's first blob
        starts = np.empty_like(ends)
        starts[1:] = ends[:-1]
        starts[first[counts > 0]] = 0  # (a message's first blob starts its ciphertexts)
        self.texts = [msg.ciphertexts for msg in msgs]
        by = np.lexsort((senders, recipients))
        self.message = np.repeat(np.arange(len(msgs)), counts)[by].tolist()  # each blob's message
        self.recipients = recipients[by]
        self.senders = senders[by].astype(np.uint32)
        self.senders.flags.writeable = False
        lengths = (ends - starts)[by]
        total = np.cumsum(lengths)
        fresh = np.ones(len(by), dtype=bool)  # the first blob of each recipient's run
        fresh[1:] = self.recipients[1:] != self.recipients[:-1]
        run_first = np.maximum.accumulate(np.where(fresh, np.arange(len(by)), 0))
        self.ends = (total - (total - lengths)[run_first]).astype(np.uint32)  # within each recipient's bundle
        self.ends.flags.writeable = False
        self.starts, self.stops = starts[by].tolist(), ends[by].tolist()

    def bundles(self, recipients: list[int]) -> list[tuple[np.ndarray, np.ndarray, bytes]]:
        """Each recipient's bundle of the blobs sealed for it, by sender: (senders, ends, data)
        (:func:`~parties.secure.messages.bundle`)."""
        want = np.asarray(recipients, dtype=np.int64)
        lows = np.searchsorted(self.recipients, want, "left").tolist()
        highs = np.searchsorted(self.recipients, want, "right").tolist()
        texts, message, starts, stops = self.texts, self.message, self.starts, self.stops
        senders, ends = self.senders, self.ends
        return [(senders[lo:hi], ends[lo:hi],
                 b"".join([texts[message[k]][starts[k]:stops[k]] for k in range(lo, hi)]))
                for lo, hi in zip(lows, highs)]


def _ignore(src: int, msg: Message) -> None:
    """An answer the counting driver's controller does not use."""


SPREAD_BLOCK = 1024
"""The most consecutive ids :func:`spread` keeps together (a block of the roster)."""
SPREAD_BLOCKS = 16
"""The fewest blocks :func:`spread` cuts a roster of at least as many ids into."""


def spread(ids: list[int], *, block: int | None = None) -> list[int]:
    """``ids`` in blocks of ``block`` consecutive ids, the blocks in bit-reversed order of their
    index (van der Corput: block 0, then the one half-way, then the quarters, ...): the order in
    which the controller sends a round's messages.  ``block`` None: :data:`SPREAD_BLOCK` ids, or
    fewer so that there are at least :data:`SPREAD_BLOCKS` blocks.

    Each contiguous half of the roster (the parties of one of two worker processes) gets its
    first message within the first two blocks, i.e. after at most ``block`` sends (a sixteenth
    of the round with the default), instead of waiting for the half before it; with a power of
    two blocks, each quarter within the first four blocks.  The parties stepped one after
    another are neighbours in the roster, whose state lies together in memory: one process
    steps them faster than every ⌊√n⌋-th id in turn (2.5-3 % of the 32,561-party memory sum's
    CPU, 3-3.5 % of its wall time on tcp: ``benchmarks/send_order.py``).  Any order gives the same
    messages and the same sum."""
    if block is None:
        block = max(1, min(SPREAD_BLOCK, len(ids) // SPREAD_BLOCKS))
    if block < 1:
        raise ConfigurationError(f"block must be >= 1 or None, got {block}")
    blocks = -(-len(ids) // block)
    bits = max(0, (blocks - 1).bit_length())
    order: list[int] = []
    for k in range(1 << bits):
        b = int(f"{k:0{bits}b}"[::-1], 2) if bits else 0  # k with its bits reversed
        if b < blocks:
            order.extend(ids[b * block:(b + 1) * block])
    return order


def _bad_keys(src: int, msg: PublicKeys) -> str | None:
    """Why an advertisement of keys is unusable (None: it is usable)."""
    if len(msg.keys) != 1 or msg.signature:
        return f"party {src} must advertise its masking key s_pk alone"
    return None
