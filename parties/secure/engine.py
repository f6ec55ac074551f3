"""The secure-sum engine interface, shared helpers, and :func:`run_secure_sum`.

An engine is a *choreography*: one sans-I/O program per party and one for the controller
(:meth:`SecureSumEngine.party_program`, :meth:`SecureSumEngine.controller_program`;
:mod:`parties.secure.program`), talking only through the operations they yield.  The actor
runtime runs them from its own actors over their :class:`~parties.transport.Endpoint`
(:meth:`SecureSumEngine.party` / :meth:`SecureSumEngine.controller`, which drive the programs);
:func:`run_secure_sum` is the stand-alone driver (one TaskGroup, everybody on one
:class:`~parties.network.InMemoryNetwork`); :meth:`SecureSumEngine.cost` runs them all through
the counting driver.  (An engine may still implement ``party`` / ``controller`` / ``cost`` as
coroutines and its own count instead: ``masked``.)

Usage::

    net = InMemoryNetwork(n, topology=nx.complete_graph(n))       # paper needs a full mesh
    result = asyncio.run(run_secure_sum(PaperEngine(), net, vectors, timeout=60))
    result.total          # exact column sums of ``vectors`` (int64)
    result.statistics     # measured messages / bytes / rounds
    result.cost           # the counted traffic of a fault-free run (the closed form)

Every engine returns the exact sum or raises a :class:`mprr.errors.ProtocolError` subclass
(``PartyDropped``, ``RoundTimeout``, ``SecureSumAborted``, ``MessageError``) — never a wrong
count.
"""

from __future__ import annotations

import asyncio
import secrets
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar, overload

import numpy as np

from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError, MessageError, ProtocolError, RoundTimeout
from parties.collector import rare_full_collections
from parties.wire.codec import Message, encode
from parties.topology import CONTROLLER, actor_name
from parties.transport import Endpoint, Transport
from parties.secure.messages import TO_CONTROLLER
from parties.secure.pki import Signer, setup_pki
from parties.secure.suite import REAL, SIZING, CryptoSuite
from parties.secure.program import Delivery, Expect, Operation, Program, SizeByShape, count, drive, receive
from parties.secure.ring import ZMod
from parties.secure.topology import Neighbourhoods
from parties.traffic import Counts, TrafficStatistics

if TYPE_CHECKING:
    from parties.secure.messages import PartialSum, ShareVector

M = TypeVar("M", bound=Message)

__all__ = [
    "SecureSumContext",
    "SecureSumEngine",
    "SecureSumResult",
    "SumOutcome",
    "TrafficCost",
    "COUNT_LIMIT",
    "counted_cost",
    "run_secure_sum",
    "encoded_size",
    "as_ring_vector",
    "collect",
    "from_controller",
    "recv_session",
    "to_counts",
    "MAX_TOTAL",
    "check_total",
]


@dataclass(frozen=True)
class SecureSumContext:
    """Everything about one secure-sum session that all participants agree on (public).

    Build it with :meth:`SecureSumEngine.context`; do not construct it by hand.

    Attributes
    ----------
    session
        Unique session id (bound into every message and AEAD associated data).
    parties
        Sorted ids of the participating parties (n >= 2).
    length
        Length L of every party's vector.
    max_value
        Upper bound on every entry of a party's vector (1 for indicator vectors).
    modulus
        M of the ring Z_M the engine computes in (n * max_value < M, so sums are exact).
    neighbours
        Communication graph (party -> sorted neighbours).
    relay
        True when shares travel through the controller (no direct party-to-party links in
        the network topology), AEAD-encrypted end to end.
    threshold
        Shamir threshold t of the masked engine (0 for the other engines).
    registry
        The PKI directory of the parties' signing keys (:class:`~parties.secure.pki.KeyRegistry`),
        set up before the run; ``None`` where the engine signs nothing.
    suite
        The cryptography the programs call (:mod:`parties.secure.suite`): :data:`REAL` in every
        run; :data:`SIZING` only where :func:`counted_cost` counts the traffic.
    """

    session: str
    parties: tuple[int, ...]
    length: int
    max_value: int
    modulus: int
    neighbours: Neighbourhoods
    relay: bool = False
    threshold: int = 0
    registry: Any = field(default=None, compare=False, repr=False)
    suite: CryptoSuite = field(default=REAL, compare=False, repr=False)

    @property
    def n(self) -> int:
        """Number of parties."""
        return len(self.parties)

    @cached_property
    def ring(self) -> ZMod:
        """The ring Z_M (built once per context)."""
        return ZMod(self.modulus)


class SumOutcome(NamedTuple):
    """What :meth:`SecureSumEngine.controller` returns: the exact int64 ``total`` of the
    ``contributors``' vectors (every party, except masked-engine dropouts)."""

    total: np.ndarray
    contributors: tuple[int, ...]


@dataclass(frozen=True)
class TrafficCost:
    """Traffic of a fault-free run (the closed-form cost).

    ``sent`` maps every actor (CONTROLLER included) to the messages and bytes it sends;
    ``rounds`` counts communication rounds; ``formula`` states how it was obtained.
    """

    sent: Mapping[int, Counts]
    rounds: int
    formula: str
    exact: bool = True
    """False when the count stopped at its limit (:data:`COUNT_LIMIT`): a lower bound."""

    @property
    def messages(self) -> int:
        """Total messages."""
        return sum(c.messages for c in self.sent.values())

    @property
    def bytes(self) -> int:
        """Total bytes."""
        return sum(c.bytes for c in self.sent.values())

    def party_max(self) -> Counts:
        """Largest per-party load (messages, bytes) — the controller excluded."""
        loads = [c for a, c in self.sent.items() if a != CONTROLLER]
        return Counts(max(c.messages for c in loads), max(c.bytes for c in loads))


@dataclass(frozen=True)
class SecureSumResult:
    """Outcome of :func:`run_secure_sum`.

    Attributes
    ----------
    total
        Exact sum (int64) of the vectors of the ``contributors``.
    contributors
        Parties whose vector is in ``total`` (all of them, except masked-engine dropouts).
    dropped
        Parties whose vector is not in ``total``.
    statistics
        Snapshot of the network's measured traffic after the run (cumulative per network).
    engine, context
        The engine and the session's context; :attr:`cost` is the traffic of a fault-free run
        of this engine on this context.
    failures
        Errors raised inside party coroutines (e.g. a crashed party's PartyDropped).
    elapsed
        Wall-clock seconds.
    """

    total: np.ndarray
    contributors: tuple[int, ...]
    dropped: tuple[int, ...]
    statistics: TrafficStatistics
    engine: SecureSumEngine = field(repr=False)
    context: SecureSumContext = field(repr=False)
    failures: Mapping[int, ProtocolError] = field(default_factory=dict)
    elapsed: float = 0.0

    @cached_property
    def cost(self) -> TrafficCost:
        """Traffic of a fault-free run of this engine on this context (``engine.cost``,
        counted when first asked for)."""
        return self.engine.cost(self.context)


def encoded_size(msg: Message) -> int:
    """Bytes of ``msg`` on the wire (what the network counts)."""
    return len(encode(msg))


def as_ring_vector(vector: Any, ctx: SecureSumContext, ring: ZMod) -> np.ndarray:
    """Validate a party's input (1-D, length L, integers in [0, max_value]) and map it into Z_M
    (a new array of the ring's dtype)."""
    arr = np.asarray(vector)
    if arr.ndim != 1 or arr.shape[0] != ctx.length:
        raise ConfigurationError(
            f"vector must be 1-D of length {ctx.length}, got shape {arr.shape}"
        )
    if arr.dtype.kind not in "iub":
        raise ConfigurationError(f"vector must hold integers, got dtype {arr.dtype}")
    low, high = (int(arr.min()), int(arr.max())) if arr.size else (0, 0)
    if low < 0 or high > ctx.max_value:
        raise ConfigurationError(
            f"vector entries must be integers in [0, {ctx.max_value}] (max_value), got range [{low}, {high}]"
        )
    # a new array (the masked engine masks it in place)
    out: np.ndarray = (arr.astype(ring.dtype) if ctx.max_value < ring.modulus  # every entry its own residue
                       else np.array(ring.reduce(arr), dtype=ring.dtype))
    return out


MAX_TOTAL = (1 << 63) - 1
"""Largest total an engine returns: totals are int64 counts, so every sum must stay <= 2^63 − 1."""


def check_total(n: int, max_value: int) -> None:
    """Refuse a session whose largest possible total, ``n * max_value``, leaves int64.

    Raises
    ------
    ConfigurationError
        Naming ``max_value``, ``n`` and the largest ``max_value`` allowed for ``n`` parties.
    """
    if n * max_value > MAX_TOTAL:
        raise ConfigurationError(
            f"max_value={max_value} with n={n} parties allows totals up to n * max_value = "
            f"{n * max_value}, beyond the int64 counts a secure sum returns (<= 2**63 - 1); "
            f"max_value must be <= {MAX_TOTAL // n} for n={n}"
        )


def to_counts(values: np.ndarray) -> np.ndarray:
    """Ring elements that are exact counts (<= 2^63 − 1, :func:`check_total`) as int64.

    Raises
    ------
    ProtocolError
        If an element exceeds :data:`MAX_TOTAL` (it cannot be a count; never cast to a negative).
    """
    arr = np.asarray(values)
    if arr.size and arr.dtype == np.uint64 and int(arr.max()) > MAX_TOTAL:
        raise ProtocolError(f"a secure-sum total of {int(arr.max())} exceeds 2**63 - 1 and is no count")
    return arr.astype(np.int64)


@overload
async def collect(ep: Endpoint, sources: Sequence[int], *, kind: type[M], session: str, phase: str,
                  timeout: float, partial: bool = False, invalid: Callable[[int, M], str | None] | None = None,
                  accept: None = None) -> dict[int, M]: ...
@overload
async def collect(ep: Endpoint, sources: Sequence[int], *, kind: type[M], session: str, phase: str,
                  timeout: float, partial: bool = False, invalid: Callable[[int, M], str | None] | None = None,
                  accept: Callable[[int, M], None]) -> list[int]: ...
async def collect(
    ep: Endpoint,
    sources: Sequence[int],
    *,
    kind: type[M],
    session: str,
    phase: str,
    timeout: float,
    partial: bool = False,
    invalid: Callable[[int, M], str | None] | None = None,
    accept: Callable[[int, M], None] | None = None,
) -> dict[int, M] | list[int]:
    """One ``kind`` message of this ``session`` from each of ``sources`` within ``timeout`` s.

    A message of another session (a late or duplicated delivery of an earlier sum) is skipped
    and its sender stays awaited.  ``invalid(src, message)`` (optional) names what is wrong
    with a well-formed message the protocol cannot use: such a message is rejected
    (:meth:`~parties.transport.Endpoint.reject`, counted against its sender) and its sender is
    treated as silent in this round, never as the end of the run.  Raises RoundTimeout naming
    the missing actors (unless ``partial``: then returns what arrived).

    Returns ``{source: message}`` of the messages kept; with ``accept(src, message)``, which
    is called for each message kept as it arrives and takes what it needs from it, only the
    sources in the order their messages were accepted: the messages are not kept, so a round
    of masked vectors is never all in memory at once.

    Messages are taken in batches as they arrive (:meth:`~parties.mailbox.Mailbox.gather_each`),
    so the checks and ``accept`` run while the other sources are still working, not all after
    the last one.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    pending = set(sources)
    rejected: set[int] = set()
    out: dict[int, M] = {}
    accepted: list[int] = []
    while pending:
        remaining = deadline - loop.time()
        if remaining <= 0:
            break
        async for got in ep.gather_each(pending, kinds=kind, phase=phase, timeout=remaining):
            for src, env in got.items():
                if getattr(env.message, "session", None) == session:
                    reason = None if invalid is None else invalid(src, env.message)
                    if reason is None:
                        if accept is None:
                            out[src] = env.message
                        else:
                            accept(src, env.message)
                            accepted.append(src)
                    else:
                        ep.reject(env, reason)
                        rejected.add(src)
                    pending.discard(src)
    if (pending or rejected) and not partial:
        missing = tuple(sorted(pending | rejected))
        kept = len(out) + len(accepted)
        raise RoundTimeout(
            f"phase {phase!r}: {actor_name(ep.actor)} timed out after {timeout} s waiting for "
            f"{kind.NAME} of session {session!r} from {_names(missing)} "
            f"({kept} of {kept + len(missing)} arrived)",
            phase=phase, timeout=timeout, missing=missing,
        )
    return out if accept is None else accepted


async def recv_session(ep: Endpoint, kind: type[M], *, session: str, phase: str, timeout: float) -> M:
    """The controller's next ``kind`` message of this ``session`` within ``timeout`` s.

    A message of another session (a late or duplicated delivery of an earlier sum, or one of
    a session the controller started with a different request) is taken out of the mailbox
    and dropped: it is never the answer of this receive, and its sender stays awaited.

    Raises
    ------
    RoundTimeout
        No ``kind`` message of this session arrived in time.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    remaining = timeout
    while remaining > 0:
        try:
            msg = (await ep.recv(kinds=kind, sources=CONTROLLER, phase=phase, timeout=remaining)).message
        except RoundTimeout:
            break
        if getattr(msg, "session", None) == session:
            return msg
        remaining = deadline - loop.time()
    raise RoundTimeout(
        f"phase {phase!r}: {actor_name(ep.actor)} timed out after {timeout:g} s waiting for "
        f"{kind.NAME} of session {session!r} from the controller",
        phase=phase, timeout=timeout, missing=(CONTROLLER,),
    )


def from_controller(me: int, kind: type[M], session: str, phase: str, timeout: float
                    ) -> Generator[Operation, Delivery[Any] | None, M]:
    """A program's round of one ``kind`` message of ``session`` from the controller within
    ``timeout`` s (``msg = yield from from_controller(...)``; a message of another session is
    not this round's, and its sender stays awaited).

    Raises
    ------
    RoundTimeout
        No ``kind`` message of this session arrived in time.
    """
    got = yield from receive(Expect(kind, session, (CONTROLLER,), phase, timeout))
    if got.timed_out:
        raise RoundTimeout(
            f"phase {phase!r}: {actor_name(me)} timed out after {timeout:g} s waiting for "
            f"{kind.NAME} of session {session!r} from the controller",
            phase=phase, timeout=timeout, missing=(CONTROLLER,),
        )
    return got.messages[CONTROLLER]


def _names(actors: Sequence[int], limit: int = 10) -> str:
    names = ", ".join(actor_name(a) for a in actors[:limit])
    return names + (f" and {len(actors) - limit} more" if len(actors) > limit else "")


class SecureSumEngine(ABC):
    """Interface of a secure-sum engine (``paper``, ``graph``, ``masked``).

    Parameters
    ----------
    round_timeout
        Seconds each participant waits for one round's messages (wall clock) before it
        declares the missing actors dropped.
    max_value
        Bound on the entries of every input vector (1 for 0/1 indicator vectors); fixes the
        modulus so that the exact sum is recovered.
    """

    name: str = ""
    signs: bool = False
    """True when the engine's parties sign with PKI keys (:mod:`parties.secure.pki`) and so take
    ``signer=`` in :meth:`party`."""
    pki_signing: bool = True
    """With :attr:`signs`: whether the parties' PKI keys include an Ed25519 signing key (False:
    the X25519 static keys only, for an engine whose parties sign nothing: ``masked``)."""

    def __init__(self, *, round_timeout: float = 30.0, max_value: int = 1) -> None:
        self.round_timeout = check_real("round_timeout", round_timeout, strict=True, allow_inf=True)  # seconds
        check_int("max_value", max_value, 1)
        self.max_value = max_value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(round_timeout={self.round_timeout}, max_value={self.max_value})"

    # ---------------------------------------------------------------- session setup
    def context(
        self,
        parties: Sequence[int],
        length: int,
        *,
        network: Transport | None = None,
        session: str | None = None,
        registry: Any = None,
    ) -> SecureSumContext:
        """Validate the session parameters and build the shared :class:`SecureSumContext`.

        Every participant builds it for itself from the roster, the vector length, the
        session id and its own engine (a party: from the
        :class:`~parties.wire.requests.SecureSumStart` it received), so all agree.

        Raises
        ------
        ConfigurationError
            Fewer than 2 parties, duplicate ids, bad length, or a network topology the
            engine cannot run on.
        """
        ids = tuple(sorted(int(p) for p in parties))
        if len(ids) < 2:
            raise ConfigurationError(
                f"a secure sum needs at least 2 parties (n >= 2), got n = {len(ids)}: with one "
                "party the sum is its own input"
            )
        if len(set(ids)) != len(ids) or ids[0] < 0:
            raise ConfigurationError(f"party ids must be distinct integers >= 0, got {ids[:10]}")
        check_int("length", length, 1)
        if session is None:
            session = secrets.token_hex(8)
        if not isinstance(session, str) or not session:
            raise ConfigurationError(f"session must be a non-empty string, got {session!r}")
        if network is not None and ids[-1] >= network.n:
            raise ConfigurationError(
                f"party ids must be < network size {network.n}, got {ids[-1]}"
            )
        ctx = self._context(ids, int(length), session, network)
        return ctx if registry is None else replace(ctx, registry=registry)

    @abstractmethod
    def _context(
        self, parties: tuple[int, ...], length: int, session: str, network: Transport | None
    ) -> SecureSumContext:
        """Engine-specific part of :meth:`context` (modulus, topology, threshold)."""

    # ---------------------------------------------------------------- programs
    def party_program(self, me: int, vector: np.ndarray, ctx: SecureSumContext, *,
                      signer: Signer | None = None, min_contributors: int = 2) -> Program[np.ndarray | None]:
        """Party ``me``'s sans-I/O program (:mod:`parties.secure.program`) with its private
        ``vector``; returns the total when the engine lets parties learn it (paper), else None.

        ``signer`` is the party's PKI key, used by the engines that sign (:attr:`signs`).
        ``min_contributors`` is the party's policy (its ``min_roster``): it releases nothing
        that can enter a sum over fewer contributors, as far as it can tell.  On the paper and
        graph engines every roster member's input is needed for the sum (a missing one stops
        it), so the roster check of the party's accountant is that check; the masked engine,
        which sums over the survivors, checks the survivors the party knows of.

        Raises
        ------
        ConfigurationError
            The engine has no program (it overrides :meth:`party` instead).
        """
        raise ConfigurationError(f"the {self.name!r} engine runs as coroutines, not as a program")

    def controller_program(self, ctx: SecureSumContext) -> Program[SumOutcome]:
        """The controller's sans-I/O program; returns the exact int64 total and who contributed.

        Raises
        ------
        ConfigurationError
            The engine has no program (it overrides :meth:`controller` instead).
        """
        raise ConfigurationError(f"the {self.name!r} engine runs as coroutines, not as a program")

    # ---------------------------------------------------------------- choreography
    async def party(self, ep: Endpoint, vector: np.ndarray, ctx: SecureSumContext, *,
                    signer: Signer | None = None, min_contributors: int = 2) -> np.ndarray | None:
        """Run party ``ep.actor``'s side with its private ``vector``: its
        :meth:`party_program` over its endpoint (:func:`~parties.secure.program.drive`).

        Returns the total when the engine lets parties learn it (paper), else None.
        """
        return await drive(ep, self.party_program(ep.actor, vector, ctx, signer=signer,
                                                  min_contributors=min_contributors))

    async def controller(self, ep: Endpoint, ctx: SecureSumContext) -> SumOutcome:
        """Run the controller's side (:meth:`controller_program` over its endpoint); returns
        the exact int64 total and who contributed."""
        return await drive(ep, self.controller_program(ctx))

    # ---------------------------------------------------------------- cost model
    def symmetric(self, ctx: SecureSumContext) -> bool:
        """Whether every party's program (all-zero inputs) has any other's traffic relabelled,
        a party sending to a peer exactly when the peer sends to it: then one party counts for
        all (:func:`~parties.secure.program.count`'s ``mirror``).  Default: False."""
        return False

    def counterpart(self, message: Message, party: int, ctx: SecureSumContext) -> Message:
        """Party ``party``'s message to the controller for the representative's ``message`` in a
        mirrored count (same kind and size; default: the message itself, naming no party)."""
        return message

    def cost(self, ctx: SecureSumContext) -> TrafficCost:
        """Messages / bytes / rounds of a fault-free run: every role's program run by the
        counting driver (:func:`counted_cost`, up to :data:`COUNT_LIMIT` messages)."""
        return counted_cost(self, ctx, limit=COUNT_LIMIT)


COUNT_LIMIT = 1_000_000
"""Messages :meth:`SecureSumEngine.cost` routes at most (beyond: a lower bound, ``exact`` False);
a role-symmetric sum (paper, graph on a regular graph) routes O(n), one party's and the controller's."""


def counted_cost(engine: SecureSumEngine, ctx: SecureSumContext, *, limit: int | None = None,
                 threshold: Counts | None = None, suite: CryptoSuite = SIZING, mirror: bool = True) -> TrafficCost:
    """Traffic of a fault-free run of ``engine`` on ``ctx``: the controller's and every party's
    program (:meth:`SecureSumEngine.party_program`, inputs all zero) run by the counting driver
    :func:`~parties.secure.program.count`, every message sized by the codec (one encoding per
    message shape, :class:`~parties.secure.program.SizeByShape`).  No message's size depends on
    the inputs or on the cryptography's outputs, only on their lengths: the programs run with
    the right-sized stand-ins of :data:`~parties.secure.suite.SIZING` (``suite=REAL``: the real
    cryptography, with a fresh PKI where the engine signs).  ``mirror`` (default), where the
    parties are role-symmetric (:meth:`SecureSumEngine.symmetric`) and the suite :data:`SIZING`:
    the controller's and the first party's programs run, the first party's traffic counts for
    all (equal to the full count, ``mirror=False``).  ``limit``: stop after that many messages
    routed (the work); ``threshold``: once the traffic exceeds its messages or bytes.  Then the
    cost is a lower bound (``exact`` False, its formula says "at least")."""
    ctx = replace(ctx, suite=suite)
    signers: dict[int, Signer] = {}
    if engine.signs and not suite.sizing:
        signers, registry = setup_pki(ctx.parties, signing=engine.pki_signing)
        ctx = replace(ctx, registry=registry)
    zero = np.zeros(ctx.length, dtype=np.uint8)
    mirrored = mirror and suite.sizing and engine.symmetric(ctx)  # (real keys: signed by their own party)
    programs: dict[int, Program[Any]] = {CONTROLLER: engine.controller_program(ctx)}
    for p in ctx.parties[:1] if mirrored else ctx.parties:
        programs[p] = engine.party_program(p, zero, ctx, signer=signers.get(p))
    counted = count(programs, size=SizeByShape(), limit=limit, threshold=threshold,
                    mirror=ctx.parties if mirrored else None,
                    counterpart=lambda message, party: engine.counterpart(message, party, ctx))
    stats = counted.statistics
    kinds = ", ".join(f"{c.messages:,} {k} ({c.bytes:,} B)" for k, c in stats.by_kind.items())
    limits = [f"{limit:,} messages routed"] if limit is not None else []
    if threshold is not None:
        limits.append(f"{threshold.messages:,} messages or {threshold.bytes:,} bytes counted")
    bound = "" if counted.complete else f"at least (stopped after {' or '.join(limits)}) "
    return TrafficCost(sent=counted.sent(), rounds=stats.rounds, exact=counted.complete,
                       formula=f"{bound}counted ({engine.name}, n = {ctx.n}, L = {ctx.length}): {kinds}")


async def run_secure_sum(
    engine: SecureSumEngine,
    network: Transport,
    vectors: np.ndarray | Mapping[int, np.ndarray],
    *,
    timeout: float | None = None,
    session: str | None = None,
) -> SecureSumResult:
    """Run ``engine`` with one task per party plus the controller, in one TaskGroup.

    Parameters
    ----------
    engine
        A configured engine.
    network
        The transport (e.g. :class:`~parties.network.InMemoryNetwork`); its topology must
        suit the engine.  Party ``i`` uses ``network.endpoint(i)``.
    vectors
        (n, L) integer array (row i = party i) or ``{party_id: vector}``.
    timeout
        Overall wall-clock limit in seconds (None: only the engine's round timeouts).
    session
        Session id (default: random).

    Raises
    ------
    ConfigurationError
        Bad inputs (n < 2, ragged vectors, entries outside [0, max_value], topology).
    ProtocolError
        The controller could not obtain the exact sum (PartyDropped, RoundTimeout,
        SecureSumAborted, MessageError) — raised as is, not wrapped in an ExceptionGroup.
    """
    if isinstance(vectors, Mapping):
        inputs = {int(k): np.asarray(v) for k, v in vectors.items()}
    else:
        arr = np.asarray(vectors)
        if arr.ndim != 2:
            raise ConfigurationError(f"vectors must be a 2-D (n, L) array, got shape {arr.shape}")
        inputs = {i: arr[i] for i in range(arr.shape[0])}
    if not inputs:
        raise ConfigurationError("a secure sum needs at least 2 parties (n >= 2), got n = 0")
    lengths = {np.asarray(v).shape for v in inputs.values()}
    if len(lengths) != 1 or len(next(iter(lengths))) != 1:
        raise ConfigurationError(f"every vector must be 1-D with the same length, got shapes {sorted(lengths)}")
    (length,) = next(iter(lengths))
    # set-up: engines that sign get a fresh PKI for the roster (parties.secure.pki)
    signers, registry = setup_pki(inputs, signing=engine.pki_signing) if engine.signs else ({}, None)
    ctx = engine.context(tuple(inputs), length, network=network, session=session, registry=registry)
    ring = ctx.ring
    for pid, vec in inputs.items():
        try:
            as_ring_vector(vec, ctx, ring)
        except ConfigurationError as exc:
            raise ConfigurationError(f"party {pid}: {exc}") from None

    failures: dict[int, ProtocolError] = {}
    tasks: dict[int, asyncio.Task[np.ndarray | None]] = {}
    controller_error: list[ProtocolError] = []

    async def guarded_party(pid: int) -> np.ndarray | None:
        try:
            return await engine.party(network.endpoint(pid), inputs[pid], ctx, signer=signers.get(pid))
        except ProtocolError as exc:  # e.g. the party crashed, or a peer did and it timed out
            failures[pid] = exc
            return None

    async def guarded_controller() -> SumOutcome | None:
        try:
            return await engine.controller(network.endpoint(CONTROLLER, accept=TO_CONTROLLER), ctx)
        except ProtocolError as exc:  # the run is over: stop the parties still waiting
            controller_error.append(exc)
            for task in tasks.values():
                task.cancel()
            return None

    start = time.perf_counter()
    ctrl: asyncio.Task[SumOutcome | None] | None = None
    try:
        with rare_full_collections():  # the shares in flight stay buffered: don't walk them again and again
            async with asyncio.timeout(timeout), asyncio.TaskGroup() as tg:
                ctrl = tg.create_task(guarded_controller())  # first: it marks the rounds
                for pid in ctx.parties:
                    tasks[pid] = tg.create_task(guarded_party(pid))
    except TimeoutError:
        raise RoundTimeout(
            f"secure sum ({engine.name}) did not finish within timeout={timeout} s",
            phase=engine.name, timeout=timeout,
        ) from None
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0]
        raise
    finally:
        close = getattr(network, "close", None)
        if close is not None and (controller_error or ctrl is None or not ctrl.done()):
            close()
    if controller_error:
        raise controller_error[0]
    outcome = ctrl.result() if ctrl is not None else None
    if outcome is None:  # pragma: no cover - guarded_controller returns None only on error
        raise ProtocolError(f"secure sum ({engine.name}): the controller returned no result")
    total, contributors = outcome
    party_totals = {pid: value for pid, t in tasks.items() if (value := t.result()) is not None}
    for pid, value in party_totals.items():
        if not np.array_equal(value, total):
            raise ProtocolError(
                f"party {pid} computed a total different from the controller's: inconsistent run"
            )
    contributing = set(contributors)
    dropped = tuple(p for p in ctx.parties if p not in contributing)
    return SecureSumResult(
        total=total,
        contributors=tuple(contributors),
        dropped=dropped,
        statistics=network.statistics(),
        engine=engine,
        context=ctx,
        failures=MappingProxyType(dict(failures)),
        elapsed=time.perf_counter() - start,
    )
