"""The party actor: one private record, one random stream, one privacy budget.

A :class:`Party` holds its record privately (it never leaves the object: no message field,
no ``repr``), its own ``numpy.random.Generator`` built from
``PartyStreams(seed, n).seed_sequence(i)`` — the very stream the fast path
(:mod:`mprr.protocols`) gives party ``i`` — and its own
:class:`mprr.privacy.PrivacyAccountant`.  It answers the controller's
:class:`~parties.wire.requests.ReleaseRequest` by randomizing locally:

- a request is decided **as a whole** (atomic): every unit must exist (the party has the
  attributes), the phase's plan must match the plan the party first saw for that phase, every
  unit must be in that plan, every matrix must be well formed, and the new releases together
  must fit the budget under the accountant's composition policy.  Otherwise the party sends a
  :class:`~parties.wire.messages.Refusal` (reason, requested ε, remaining ε), spends nothing and
  draws nothing;
- a granted request consumes **one uniform per new unit**, in unit order (draw-order contract
  of :mod:`mprr.streams`); the released code is the inverse-CDF sample of the matrix row
  (:mod:`mprr.randomize`), so the same seed releases the same code as the fast path;
- a unit released before (same attributes, same matrix — in any phase, as
  :class:`~mprr.privacy.PrivacyAccountant` decides) is **replayed**: the party resends the
  value it released then — no new randomness, no new spending.  A different (e.g. finer)
  matrix for the same attributes is new spending.  (RR-Clusters with 4.1 relies on this: a
  singleton cluster is requested with its phase-1 matrix and replayed, as in the fast path.)

For the dependence phases 4.2 / 4.3 of RR-Clusters the party answers a
:class:`~parties.wire.requests.SecureRelease` the same way (atomic decision, unlinkable
ledger entries; 4.2 releases true values: ε = ∞, refused unless the budget is infinite), then
replies :class:`~parties.wire.messages.Ack` and keeps its input vector (one-hot per unit) until the
controller's :class:`~parties.wire.requests.SecureSumStart`, when it runs its side of the
secure-sum engine (:mod:`parties.secure`) with it.  The ε it books is its own computation
from the matrix it applies (main paper eq. (4)); the request carries no ε.

**One session per committed input.**  Two secure sums of the same inputs over rosters that
differ by one party v reveal v's input (full sum minus partial sum).  The party therefore
binds each committed input to one session and one roster:

- a :class:`SecureRelease` for a new session never reuses an earlier input: exact values
  (4.2) of an attribute that already entered a session are refused (reason
  :data:`~parties.public_state.SESSION_REFUSED`); randomized pairs (4.3) are randomized
  afresh (one new uniform per unit) and booked as new spending, never replayed;
- a :class:`SecureSumStart` is run only for the party's own engine (agreed at set-up), with a
  roster that contains the party and has at least ``min_roster`` parties (default
  :data:`DEFAULT_MIN_ROSTER`), and binds the session's input to that roster;
- a session runs at most once, even after a run that aborted (no retry).  Why not a retry
  over the same roster: with the paper and graph engines it would compute the same sum again,
  but messages of the aborted run still buffered under the same session id could enter the
  retry and make its sum wrong; with the masked engine the controller names the survivors, so
  two runs could be made to sum over two survivor sets.  A controller that needs the sum
  after an abort starts a new session, which needs new commitments (fresh draws for 4.3; for
  4.2 a refusal, since the exact values already entered a session).

The public objects every party derives from a request (and the secure-sum context derived
from a start message) are memoized in a shared :class:`~parties.public_state.ReleaseBook`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from mprr.data import Schema
from mprr.errors import ConfigurationError, MessageError, PartyDropped, ProtocolError, RoundTimeout
from mprr.privacy.ledger import Ledger
from mprr.privacy import Decision, PlanViolationError, PrivacyAccountant, RefusalReason
from parties.wire.messages import Abort, Ack, Message, RandomizedValues, Refusal
from parties.wire.requests import ReleaseRequest, SecureRelease, SecureSumStart, expand_runs as expand
from parties.public_state import INVALID_REQUEST, SESSION_REFUSED, ReleaseBook
from parties.transport import CONTROLLER, Endpoint, actor_name

__all__ = ["DEFAULT_MIN_ROSTER", "INVALID_REQUEST", "LOOP_KINDS", "Party", "PartyRefusal"]

DEFAULT_MIN_ROSTER = 3
"""Fewest parties a party accepts in a secure-sum roster: the threshold rule of statistical
disclosure control (no aggregate of fewer than 3 contributors), and the smallest roster in
which a participant cannot subtract its own input from the sum to get another one's."""

LOOP_KINDS = (ReleaseRequest, SecureRelease, SecureSumStart, Abort)
"""Kinds the party's main loop takes from the controller; anything else (e.g. secure-sum
shares from peers) stays buffered for the secure-sum engine."""


@dataclass(frozen=True)
class PartyRefusal:
    """One refused request, as the party logged it (and told the controller).

    Attributes
    ----------
    party
        The refusing party.
    request_id, phase
        The request and its phase.
    units
        Attribute indices of every unit of the request.
    reason
        ``"budget-exceeded"``, ``"plan-violation"`` or ``"invalid-request"``.
    message
        Human-readable explanation (what was asked, what is allowed).
    requested
        ε the request would have added (∞ for an exact release; 0 when not costed).
    remaining
        ε the party had left.
    """

    party: int
    request_id: int
    phase: str
    units: tuple[tuple[int, ...], ...]
    reason: str
    message: str
    requested: float
    remaining: float

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (∞ written as ``"inf"``)."""
        def num(x: float) -> float | str:
            return "inf" if math.isinf(x) else float(x)

        return {
            "party": self.party,
            "request_id": self.request_id,
            "phase": self.phase,
            "units": [list(u) for u in self.units],
            "reason": self.reason,
            "message": self.message,
            "requested": num(self.requested),
            "remaining": num(self.remaining),
        }


class Party:
    """One party of the protocol (see the module docstring).

    Parameters
    ----------
    index
        Party id ``i`` in ``0..n-1``.
    record
        The party's true codes, one per schema attribute (kept private).
    schema
        Attributes the party holds.
    seed
        ``numpy.random.SeedSequence`` of the party (``PartyStreams(seed, n).seed_sequence(i)``),
        or its cheap stand-in ``PartyStreams(seed, n).seed(i)`` (the same stream).
    budget
        Largest total ε the party accepts (``math.inf``: account without a limit).
    policy
        Composition policy of the party's accountant (``"sequential"``, ``"parallel"``,
        ``"unlinkable-pairs"``).
    allowed
        Names of the attributes the party agrees to release (default: all of the schema).
    book
        Shared :class:`~parties.public_state.ReleaseBook` (default: a private one).
    engine
        The secure-sum engine the party agreed to at set-up (needed for 4.2 / 4.3); its
        configuration (e.g. the masked engine's threshold) is the party's policy.
    min_roster
        Fewest parties the party accepts in a secure-sum roster (>= 2).
    signer, registry
        The party's signing key and the PKI directory of every party's verification key
        (:mod:`parties.secure.pki`), set up before the run; needed by engines that sign.
    """

    def __init__(
        self,
        index: int,
        record: Any,
        schema: Schema,
        *,
        seed: ISeedSequence,
        budget: float = math.inf,
        policy: str = "sequential",
        allowed: Any = None,
        book: ReleaseBook | None = None,
        engine: Any = None,
        min_roster: int = DEFAULT_MIN_ROSTER,
        signer: Any = None,
        registry: Any = None,
    ) -> None:
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or index < 0:
            raise ConfigurationError(f"index must be an integer >= 0, got {index!r}")
        self.index = int(index)
        if book is not None and book.schema is not schema:
            raise ConfigurationError("book must belong to the same schema object as the party")
        self._book = book if book is not None else ReleaseBook(schema)
        names, sizes = self._book.names, self._book.sizes
        values = tuple(record) if isinstance(record, (list, tuple)) else tuple(np.asarray(record).reshape(-1).tolist())
        if len(values) != len(sizes):
            raise ConfigurationError(
                f"record of party {index} must have one code per attribute ({len(sizes)}), got {len(values)}"
            )
        for v, size, name in zip(values, sizes, names):
            if type(v) is not int and not isinstance(v, (int, np.integer)) or not 0 <= v < size:
                raise ConfigurationError(
                    f"record of party {index}: attribute {name!r} code must be an integer in [0, {size}), got {v!r}"
                )
        self.__record = tuple(int(v) for v in values)
        self.schema = schema
        if not isinstance(seed, ISeedSequence):
            raise ConfigurationError(
                f"seed must be a numpy.random.SeedSequence (or PartyStreams.seed), got {type(seed).__name__}"
            )
        self._rng = np.random.Generator(np.random.PCG64(seed))  # type: ignore[arg-type]  # stubs omit ISeedSequence
        self.accountant = PrivacyAccountant(
            budget,
            policy,
            party=self.index,
            allowed_attributes=names if allowed is None else allowed,
        )
        if isinstance(min_roster, bool) or not isinstance(min_roster, (int, np.integer)) or min_roster < 2:
            raise ConfigurationError(f"min_roster must be an integer >= 2, got {min_roster!r}")
        self.min_roster = int(min_roster)
        self._engine = engine
        self._signer = signer
        self._registry = registry
        self._values: list[int] = []
        self._plans: dict[str, frozenset[tuple[int, ...]]] = {}
        self._inputs: dict[str, np.ndarray] = {}  # committed inputs not yet summed
        self._sessions: dict[str, _Session] = {}  # every session the party committed to
        self._exact: dict[int, str] = {}  # attribute -> session its exact value entered
        self.refusals: list[PartyRefusal] = []
        self.draws = 0
        self.status = "idle"
        self.errors: list[str] = []

    def __repr__(self) -> str:
        return (
            f"Party({self.index}, releases={len(self.accountant.ledger)}, "
            f"refusals={len(self.refusals)}, status={self.status!r})"
        )

    # ------------------------------------------------------------------ state
    @property
    def ledger(self) -> Ledger:
        """The party's ledger (immutable snapshot)."""
        return self.accountant.ledger

    @property
    def released_values(self) -> tuple[int, ...]:
        """Code released for each ledger entry, in ledger order (for exact entries: the true one)."""
        return tuple(self._values)

    # ------------------------------------------------------------------ decisions
    def handle(self, msg: Message) -> Message | None:
        """Answer one message from the controller; ``None`` when no reply is due.

        Raises
        ------
        MessageError
            For a message kind a party does not accept here (a
            :class:`~parties.wire.requests.SecureSumStart` is handled by :meth:`run`).
        """
        if isinstance(msg, ReleaseRequest):
            return self._decide(msg)
        if isinstance(msg, SecureRelease):
            return self._decide(msg)
        raise MessageError(f"{actor_name(self.index)} does not accept {msg.NAME} messages from the controller")

    def _refuse(self, request: ReleaseRequest | SecureRelease, reason: str, message: str,
                requested: float) -> Refusal:
        remaining = self.accountant.remaining()
        self.refusals.append(
            PartyRefusal(self.index, request.request_id, request.phase, request.units, reason, message,
                         requested, remaining)
        )
        return Refusal(request.request_id, f"{reason}: {message}", requested, remaining)

    def _refused(self, request: ReleaseRequest | SecureRelease, decision: Decision) -> Refusal:
        """The wire refusal of ``request`` carrying the accountant's reason, message and ε."""
        refusal = decision.refusal
        if refusal is None:  # pragma: no cover - request_all returns a lone Decision only to refuse
            raise ConfigurationError(f"party {self.index}: a refused decision without its refusal")
        return self._refuse(request, refusal.reason.value, refusal.message, refusal.requested)

    def _decide(self, request: ReleaseRequest | SecureRelease) -> Message:
        resolution = self._book.resolve(request)
        if resolution.units is None or resolution.plan is None:
            return self._refuse(request, str(resolution.reason), str(resolution.message), 0.0)
        acc = self.accountant
        phase = request.phase
        plan = self._plans.get(phase)
        if plan is None:
            try:
                acc.announce_plan(phase, resolution.named_plan)
            except PlanViolationError as exc:
                return self._refuse(request, RefusalReason.PLAN_VIOLATION.value, str(exc), 0.0)
            plan = self._plans[phase] = resolution.plan
        elif plan != resolution.plan:
            return self._refuse(
                request,
                RefusalReason.PLAN_VIOLATION.value,
                f"party {self.index}: phase {phase!r} was announced with plan {sorted(plan)}; "
                f"request {request.request_id} brings another plan {sorted(resolution.plan)}",
                0.0,
            )
        outside = resolution.outside  # the party's plan for the phase equals the request's plan here
        if outside:
            return self._refuse(
                request,
                RefusalReason.PLAN_VIOLATION.value,
                f"party {self.index}: units {list(outside)} are not groups of the plan announced for phase {phase!r}",
                0.0,
            )
        secure = isinstance(request, SecureRelease)
        if isinstance(request, SecureRelease):
            refusal = self._check_commitment(request)
            if refusal is not None:
                return refusal
            if request.session in self._sessions:  # a re-sent request
                return Ack(request.request_id)
        releases = [u.release for u in resolution.units]
        decisions = acc.request_all(releases, fresh=secure, label=f"request {request.request_id} ({phase})")
        if isinstance(decisions, Decision):  # refused, by the accountant's one reason
            return self._refused(request, decisions)
        record = self.__record
        codes = []
        for unit, decision in zip(resolution.units, decisions):
            if decision.granted:
                if unit.exact:
                    code = unit.value(record)
                else:
                    u = self._rng.random()
                    self.draws += 1
                    code = unit.sample(record, u)
                self._values.append(code)
            elif decision.entry_index is not None:  # replayed: resend the value released then
                code = self._values[decision.entry_index]
            else:  # pragma: no cover - an accepted request's units are granted or replayed
                raise ConfigurationError(f"party {self.index}: a replayed release without its ledger entry")
            codes.append(code)
        if isinstance(request, SecureRelease):
            cells = [u.cells for u in resolution.units]
            vector = np.zeros(sum(cells), dtype=np.int64)
            offset = 0
            for c, code in zip(cells, codes):
                vector[offset + code] = 1
                offset += c
            self._inputs[request.session] = vector
            self._sessions[request.session] = _Session(request.units, request.exact)
            if request.exact:
                for attributes in request.units:
                    for a in attributes:
                        self._exact.setdefault(a, request.session)
            return Ack(request.request_id)
        return RandomizedValues(request.request_id, np.asarray(codes, dtype=np.int64))

    def _check_commitment(self, request: SecureRelease) -> Refusal | None:
        """Refuse a commitment the party cannot make (no engine, an input for a second session)."""
        if self._engine is None:
            return self._refuse(request, INVALID_REQUEST,
                                f"party {self.index}: no secure-sum engine was agreed at set-up", 0.0)
        known = self._sessions.get(request.session)
        if known is not None:
            if known.units != request.units or known.exact != request.exact:
                return self._refuse(
                    request, SESSION_REFUSED,
                    f"party {self.index}: session {request.session!r} was committed with units "
                    f"{list(known.units)} (exact={known.exact}); request {request.request_id} asks "
                    f"for {list(request.units)} (exact={request.exact})", 0.0)
            return None
        if request.exact:
            reused = sorted({a for unit in request.units for a in unit if a in self._exact})
            if reused:
                first = self._exact[reused[0]]
                return self._refuse(
                    request, SESSION_REFUSED,
                    f"party {self.index}: the exact values of attributes {reused} already entered "
                    f"secure-sum session {first!r}; a committed input enters at most one session "
                    "(two sums over rosters that differ by one party would reveal that party's values)",
                    math.inf)
        return None

    def _check_start(self, start: SecureSumStart) -> str | None:
        """Why the party will not run ``start`` (``None``: it will), from what it knows itself."""
        session = self._sessions.get(start.session)
        if session is None:
            return "no committed input or unknown session"
        if session.roster is not None:
            return (f"its input already entered session {start.session!r} ({session.state}, roster of "
                    f"{len(expand(session.roster))} parties); a session runs once, with one roster")
        engine = self._engine
        if start.engine != engine.name:
            return f"engine {start.engine!r} asked, but the party agreed to {engine.name!r} at set-up"
        if engine.signs and (self._signer is None or self._registry is None):
            return f"the {engine.name} engine signs with PKI keys, and the party was set up without them"
        roster = start.parties
        if self.index not in roster:
            return f"party {self.index} is not in the roster it was sent"
        if len(roster) < self.min_roster:
            return (f"roster of {len(roster)} parties is below the party's minimum "
                    f"min_roster = {self.min_roster}")
        return None

    async def _secure_sum(self, endpoint: Endpoint, start: SecureSumStart) -> None:
        """Run this party's side of the secure sum ``start.session`` with its committed input.

        Checks (module docstring): the party's own engine, a roster that holds the party and
        at least ``min_roster`` parties, the session's input bound to one roster and run once.
        """
        problem = self._check_start(start)
        if problem is not None:
            self.errors.append(f"secure sum {start.session!r} refused: {problem}")
            return
        session = self._sessions[start.session]
        vector = self._inputs[start.session]
        session.roster, session.state = start.roster, "running"
        context = self._book.secure_context(self._engine, start, int(vector.shape[0]), self._registry,
                                            getattr(endpoint, "network", None))
        try:
            await self._engine.party(endpoint, vector, context, signer=self._signer)
        except ProtocolError as exc:  # a peer or the controller failed; the controller decides
            session.state = "aborted"
            self.errors.append(f"secure sum {start.session!r}: {exc}")
        else:
            session.state = "done"
        finally:
            self._inputs.pop(start.session, None)

    # ------------------------------------------------------------------ actor loop
    async def run(self, endpoint: Endpoint, *, idle_timeout: float | None) -> None:
        """Serve the controller until an :class:`~parties.wire.messages.Abort`, a crash or idleness.

        Takes only messages from the controller, and while a secure-sum input is pending only
        :data:`LOOP_KINDS` (the engine's traffic stays buffered for the engine).  Never raises
        for protocol trouble: a frame the endpoint rejects (undecodable, or of a kind it does not
        accept) never reaches this loop (it is counted against its sender, see
        :meth:`~parties.transport.Endpoint.rejections`); a controller message the party cannot
        serve is logged in :attr:`errors` and skipped; a crash (fault injection) or
        ``idle_timeout`` seconds without a message end the loop (:attr:`status` says which).
        The owner cancels the task when the run is over.
        """
        self.status = "running"
        while True:
            try:
                if self._inputs:  # committed to a secure sum: leave the engine's messages buffered
                    env = await endpoint.recv(kinds=LOOP_KINDS, sources=CONTROLLER, timeout=idle_timeout)
                else:
                    env = await endpoint.recv(sources=CONTROLLER, timeout=idle_timeout)
            except PartyDropped:
                self.status = "crashed"
                return
            except RoundTimeout:
                self.status = "idle-timeout"
                return
            msg = env.message
            if isinstance(msg, Abort):
                self.status = "aborted"
                return
            if isinstance(msg, SecureSumStart):
                await self._secure_sum(endpoint, msg)
                continue
            try:
                reply = self.handle(msg)
            except MessageError as exc:
                self.errors.append(str(exc))
                continue
            if reply is not None:
                await endpoint.send(CONTROLLER, reply, phase=env.phase)


@dataclass
class _Session:
    """What a party remembers of one secure-sum session it committed to."""

    units: tuple[tuple[int, ...], ...]
    exact: bool
    roster: tuple[tuple[int, ...], ...] | None = None  # runs of the first start
    state: str = "committed"  # committed -> running -> done | aborted (never run again)
