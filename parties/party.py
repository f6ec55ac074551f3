"""The party actor: one private record, one random stream, one privacy budget.

A :class:`Party` holds its record privately (it never leaves the object: no message field,
no ``repr``), its own ``numpy.random.Generator`` built from
``PartyStreams(seed, n).seed_sequence(i)`` — the very stream the fast path
(:mod:`mprr.protocols`) gives party ``i`` — and its own
:class:`mprr.privacy.PrivacyAccountant`.  It answers the controller's
:class:`~parties.wire.requests.ReleaseRequest` by randomizing locally:

- a request is decided **as a whole** by the party's accountant
  (:meth:`mprr.privacy.PrivacyAccountant.answer`, which holds every privacy rule: plans,
  allowed attributes, budget, replays, secure-sum sessions).  The party only refuses what it
  cannot evaluate (an attribute it does not hold, an invalid matrix, a secure sum without an
  engine), through the same accountant, so every refusal is one
  :class:`mprr.privacy.Refusal` record, sent as a :class:`~parties.wire.messages.Refusal`;
  a refused request spends nothing and draws nothing;
- a granted request consumes **one uniform per new unit**, in unit order (draw-order contract
  of :mod:`mprr.streams`); the released code is the inverse-CDF sample of the matrix row
  (:mod:`mprr.randomize`), so the same seed releases the same code as the fast path;
- a unit released before (same attributes, same matrix — in any phase) is **replayed**: the
  party resends the value it released then — no new randomness, no new spending.
  (RR-Clusters with 4.1 relies on this: a singleton cluster is requested with its phase-1
  matrix and replayed, as in the fast path.)

A :class:`~parties.wire.requests.ReportRequest` (a :class:`~mprr.protocols.steps.Report`
step: units through frequency oracles, :mod:`mprr.oracles`) is answered with an
:class:`~parties.wire.messages.OracleReport` computed by
:func:`mprr.protocols.oracle_reports.report_rows` on the party's one record, from its own
uniforms in the draw order of :class:`~mprr.protocols.steps.Report` — the fast path's function
and draws, so the same seed gives the same reports.  The party books the ledger entries the
fast path books (:func:`mprr.protocols.oracle_reports.report_releases`, at the ε its own
oracles compute):

- ``"every"``: the request is decided first (budget; a unit reported before through the same
  oracle is resent, no draw), then one block of uniforms per new unit;
- ``"sampled-fake"``: decided first, then the whole block is drawn; the reply holds a report
  per unit and never the drawn unit;
- ``"sampled"``: the party draws its block first (its draw decides whether it reports at all),
  then, if it drew a unit, its accountant decides; a party that abstains, or that reported in
  a phase of the request's ``exclude`` (its own ledger says so), books nothing and answers an
  empty report.  A report the party made before (same oracles, same units) is resent without
  a draw.

A request re-sent with the same content (a controller's retry) gets the same reply again:
nothing new is drawn or booked.

For the dependence phases 4.2 / 4.3 of RR-Clusters the party answers a
:class:`~parties.wire.requests.SecureRelease` the same way (its accountant books the commitment:
fresh draws, unlinkable ledger entries; 4.2 releases true values: ε = ∞, refused unless the
budget is infinite), then replies :class:`~parties.wire.messages.Ack` and keeps its input vector
(one-hot per unit) until the controller's :class:`~parties.wire.requests.SecureSumStart`, when it
runs its side of the secure-sum engine (:mod:`parties.secure`) with it, if its accountant starts
the session (:meth:`~mprr.privacy.PrivacyAccountant.start_session`: one session per committed
input, one roster of at least ``min_roster`` parties, run once) and the start names the engine
the party agreed to at set-up.  The engine runs under the agreed session id, derived from the
request the party committed to and the start it received
(:func:`~parties.secure.agreement.agreed_session`): parties asked different things never sum
together.  A roster the engine cannot build is refused like any bad request, and the engine
gets the party's ``min_roster`` as the fewest contributors it may release into.  The ε it books
is its own computation from the matrix it applies (main paper eq. (4)); the request carries
no ε.

The public objects every party derives from a request (and the secure-sum context derived
from a start message) are memoized in a shared :class:`~parties.public_state.ReleaseBook`.
"""

from __future__ import annotations

import math
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any, TypeVar

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from mprr.data import Schema
from mprr.domain import check_int
from mprr.errors import ConfigurationError, MessageError, ProtocolError
from mprr.privacy.ledger import Ledger
from mprr.privacy import DEFAULT_MIN_ROSTER, Decision, PrivacyAccountant, Refusal, RefusalReason
from mprr.protocols.oracle_reports import report_rows
from mprr.protocols.release import unit_codes
from mprr.streams import PartyStream
from parties.wire.codec import Message
from parties.wire.messages import Abort, Ack, OracleReport, RandomizedValues, Refusal as WireRefusal
from parties.wire.requests import ReleaseRequest, ReportRequest, SecureRelease, SecureSumStart
from parties.public_state import ReleaseBook, ResolvedUnit
from parties.secure.program import Program
from parties.transport import actor_name

__all__ = ["LOOP_KINDS", "Accounted", "AccountedParties", "Party"]

LOOP_KINDS = (ReleaseRequest, ReportRequest, SecureRelease, SecureSumStart, Abort)
"""Kinds a party's host hands to :meth:`Party.receive` when the controller sends them;
anything else (the secure-sum engines' traffic) goes to the party's secure-sum program, which its
host drives (:mod:`parties.party_sum`)."""


class Accounted:
    """What the harness reads of a party through its accountant: a :class:`Party`, or its
    :class:`~parties.shard_report.PartySummary` after a run on a remote runtime."""

    accountant: PrivacyAccountant

    @property
    def ledger(self) -> Ledger:
        """The party's ledger (immutable snapshot)."""
        return self.accountant.ledger

    @property
    def refusals(self) -> tuple[Refusal, ...]:
        """Every request the party refused (its accountant's records)."""
        return self.accountant.refusals


A = TypeVar("A", bound=Accounted)


class AccountedParties(Sequence[A]):
    """The parties of a run, whose accountants can be read without a party object each
    (:class:`PartySummaries`, or a shard's :class:`~parties.hosted_parties.HostedParties`)."""

    @abstractmethod
    def accountants(self) -> list[PrivacyAccountant]:
        """Per party, in order, its accountant (parties in the same state may share one)."""


class Party(Accounted):
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
        or its cheap stand-in ``PartyStreams(seed, n).seed(i)``, or the party's row of a
        :class:`~mprr.streams.StreamTable` (``StreamTable(seed, parties).stream(i)``, 32 bytes a
        party where many share a process): the same stream.
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
    accountant, released, draws
        The state of a party that has run so far in a cohort of its shard
        (:mod:`parties.cohort`), from which it continues on its own: its accountant (its
        ``party`` must be ``index``), the code released for each ledger entry and the uniforms
        drawn (``seed`` is then its stream at the current position).  Default: a fresh party.
    """

    def __init__(
        self,
        index: int,
        record: Any,
        schema: Schema,
        *,
        seed: ISeedSequence | PartyStream,
        budget: float = math.inf,
        policy: str = "sequential",
        allowed: Any = None,
        book: ReleaseBook | None = None,
        engine: Any = None,
        min_roster: int = DEFAULT_MIN_ROSTER,
        signer: Any = None,
        registry: Any = None,
        accountant: PrivacyAccountant | None = None,
        released: Sequence[int] = (),
        draws: int = 0,
    ) -> None:
        self.index = index if type(index) is int and index >= 0 else check_int("index", index, 0)
        if book is not None and book.schema is not schema:
            raise ConfigurationError("book must belong to the same schema object as the party")
        self._book = book if book is not None else ReleaseBook(schema)
        names, sizes = self._book.names, self._book.sizes
        values = tuple(record) if isinstance(record, (list, tuple)) else tuple(np.asarray(record).reshape(-1).tolist())
        if len(values) != len(sizes):
            raise ConfigurationError(
                f"record of party {index} must have one code per attribute ({len(sizes)}), got {len(values)}"
            )
        plain = set(map(type, values)) == {int}
        if not (plain and min(values, default=0) >= 0 and not any(map(int.__ge__, values, sizes))):
            for v, size, name in zip(values, sizes, names):  # (not all plain integers in range: each checked)
                if type(v) is not int and not isinstance(v, (int, np.integer)) or not 0 <= v < size:
                    raise ConfigurationError(f"record of party {index}: attribute {name!r} code must be an "
                                             f"integer in [0, {size}), got {v!r}")
            values = tuple(map(int, values))
        self.__record = values  # the record, in plain integers
        self.__row: np.ndarray | None = None  # the same as a (1, m) table of one row, made when first asked for
        self.schema = schema
        self._rng: np.random.Generator | PartyStream
        if isinstance(seed, PartyStream):
            self._rng = seed
        elif isinstance(seed, ISeedSequence):
            self._rng = np.random.Generator(np.random.PCG64(seed))  # type: ignore[arg-type]  # stubs omit ISeedSequence
        else:
            raise ConfigurationError(
                "seed must be a numpy.random.SeedSequence (or PartyStreams.seed, or a StreamTable's "
                f"PartyStream), got {type(seed).__name__}"
            )
        if accountant is None:
            accountant = PrivacyAccountant(
                budget,
                policy,
                party=self.index,
                allowed_attributes=names if allowed is None else allowed,
                min_roster=min_roster,
            )
        elif accountant.party != self.index or len(released) != len(accountant.ledger):
            raise ConfigurationError(
                f"party {index} continues from an accountant of party {accountant.party!r} with "
                f"{len(accountant.ledger)} ledger entries and {len(released)} released values: it must be "
                "its own, with one released value per entry")
        self.accountant = accountant
        self._engine = engine
        self._signer = signer
        self._registry = registry
        self._values: list[int] = list(map(int, released))
        # oracle reports of sampled phases by ledger entry (to resend), and the last report request answered
        self._reports: dict[int, tuple[int, np.ndarray]] = {}
        self._last_report: tuple[ReportRequest, Message] | None = None
        # committed inputs not yet summed, with the digest of the request they answer
        self._inputs: dict[str, tuple[np.ndarray, bytes]] = {}
        self.draws = draws if type(draws) is int and draws >= 0 else check_int("draws", draws, 0)
        self.status = "idle"
        self.errors: list[str] = []

    def __repr__(self) -> str:
        return (
            f"Party({self.index}, releases={len(self.accountant.ledger)}, "
            f"refusals={len(self.refusals)}, status={self.status!r})"
        )

    # ------------------------------------------------------------------ state
    def register(self, registry: Any) -> None:
        """Install the PKI directory (:class:`~parties.secure.pki.KeyRegistry`) at set-up.

        For runtimes whose parties generate their signing keys where they live (the shard
        hosts of :mod:`parties.shard`): the directory of every party's verification key exists
        only after all of them registered.  It is installed once, before the protocol; nothing
        the controller sends reaches this method.

        Raises
        ------
        ConfigurationError
            If the party already holds a directory, or the directory does not hold the
            party's own verification key.
        """
        if self._registry is not None:
            raise ConfigurationError(f"party {self.index} already holds its PKI directory (set-up happens once)")
        if self._signer is not None and (self.index not in registry or registry.key(self.index) != self._signer.public):
            raise ConfigurationError(
                f"the PKI directory does not hold party {self.index}'s own verification key: refused"
            )
        self._registry = registry

    @property
    def released_values(self) -> tuple[int, ...]:
        """Code released for each ledger entry, in ledger order (for exact entries: the true one)."""
        return tuple(self._values)

    def hold_input(self, session: str, vector: np.ndarray, digest: bytes) -> None:
        """Hold ``vector``, the input the party committed to secure sum ``session`` by the
        request of ``digest``, until that sum ends: what :meth:`handle` holds for a
        :class:`~parties.wire.requests.SecureRelease`, when its host's cohort computed the
        commitment for all its members at once (:meth:`parties.cohort.Cohort.commit`, from the
        party's own record and accountant state, which then books it)."""
        if self.accountant.session_state(session) != "committed":
            raise ConfigurationError(f"party {self.index}: no commitment to secure sum {session!r} is booked")
        self._inputs[session] = (vector, digest)

    # ------------------------------------------------------------------ decisions
    def handle(self, msg: Message) -> Message | None:
        """Answer one message from the controller; ``None`` when no reply is due.

        Raises
        ------
        MessageError
            For a message kind a party does not accept here (a
            :class:`~parties.wire.requests.SecureSumStart` is its host's to run, see
            :meth:`receive`).
        """
        if isinstance(msg, (ReleaseRequest, SecureRelease)):
            return self._decide(msg)
        if isinstance(msg, ReportRequest):
            last = self._last_report
            if last is not None and last[0] == msg:  # a retry: the same reply, nothing drawn or booked
                return last[1]
            reply = self._report(msg)
            self._last_report = (msg, reply)
            return reply
        raise MessageError(f"{actor_name(self.index)} does not accept {msg.NAME} messages from the controller")

    def _decide(self, request: ReleaseRequest | SecureRelease) -> Message:
        decided = self.decide(request)
        if not isinstance(decided, tuple):
            return decided
        return self.reply_to(request, *decided)

    def reply_to(self, request: ReleaseRequest | SecureRelease, units: tuple[ResolvedUnit, ...],
                 decisions: tuple[Decision, ...]) -> Message:
        """The reply to ``request`` once :meth:`decide` gave its ``units`` and ``decisions``: a
        granted unit's code (the true one of an exact unit, else the inverse-CDF sample of the
        party's next uniform), a replayed unit's code released then; the values (or, for a
        commitment, the input held until its session ends)."""
        values = self._values
        codes = []
        for unit, decision in zip(units, decisions):
            if decision.granted:
                if unit.exact:
                    code = unit.value_of(self.__record)
                else:
                    u = self._rng.random()
                    self.draws += 1
                    code = unit.sample_one(self.__record, u)
                values.append(code)
            else:  # replayed: resend the value released then
                code = values[decision.entry_index]
            codes.append(code)
        if isinstance(request, SecureRelease):
            cells = [u.cells for u in units]
            # 0/1 indicators: one byte a cell (the engine maps them into its ring when the sum
            # starts); a party holds its committed input until its session ends
            vector = np.zeros(sum(cells), dtype=np.uint8)
            offset = 0
            for c, code in zip(cells, codes):
                vector[offset + code] = 1
                offset += c
            self._inputs[request.session] = (vector, self._book.digest(request))
            return Ack(request.request_id)
        released = np.array(codes, dtype=np.int64)
        released.flags.writeable = False  # as the message keeps it: no second copy
        return RandomizedValues(request.request_id, released)

    def decide(self, request: ReleaseRequest | SecureRelease
               ) -> Message | tuple[tuple[ResolvedUnit, ...], tuple[Decision, ...]]:
        """The party's decision on ``request`` (what :meth:`handle` does first): the reply when
        it is decided without releasing a value (a refusal; ``Ack`` for a commitment made
        before), else the request's units and the accountant's decision on each, which the
        accountant has booked: the codes are then due, drawn from the party's stream in unit
        order (:meth:`handle` does it; a host answering many parties at once does it as
        :meth:`released` says)."""
        resolution = self._book.resolve(request)
        acc = self.accountant
        ask = resolution.ask
        units = resolution.units
        if units is None or resolution.reason is not None:
            return WireRefusal.of(acc.refuse(ask, resolution.reason or RefusalReason.INVALID_REQUEST,
                                             resolution.message))
        if ask.session is not None and self._engine is None:
            return WireRefusal.of(acc.refuse(ask, RefusalReason.INVALID_REQUEST,
                                             f"party {self.index}: no secure-sum engine was agreed at set-up"))
        decisions = acc.answer(ask)
        if isinstance(decisions, Refusal):
            return WireRefusal.of(decisions)
        if not decisions:  # a re-sent commitment, already made
            return Ack(request.request_id)
        return units, decisions

    def released(self, codes: Sequence[int], drawn: int) -> None:
        """Book the codes of a release request whose every unit :meth:`decide` granted, computed
        by the party's host for many parties at once as :meth:`handle` computes them (the true
        code of an exact unit; for each other unit, in unit order, the inverse-CDF sample of the
        party's next uniform): ``drawn`` uniforms were taken from the party's stream."""
        self._values.extend(codes)
        self.draws += drawn

    def _draw(self, k: int) -> np.ndarray:
        """``k`` uniforms from the party's stream, in order."""
        rng = self._rng
        self.draws += k
        return np.array([rng.random() for _ in range(k)], dtype=np.float64)

    def _report(self, request: ReportRequest) -> Message:
        """Answer a report request (module docstring)."""
        resolution = self._book.resolve_report(request)
        acc = self.accountant
        ask = resolution.ask
        step = resolution.step
        if step is None:
            return WireRefusal.of(acc.refuse(ask, resolution.reason or RefusalReason.INVALID_REQUEST,
                                             resolution.message))
        rid = request.request_id
        oracles = resolution.oracles
        sizes = self._book.sizes
        row = self.__row
        if row is None:
            row = self.__row = np.array([self.__record], dtype=np.int64)
        values = self._values
        if step.assign == "every":
            decisions = acc.answer(ask)
            if isinstance(decisions, Refusal):
                return WireRefusal.of(decisions)
            codes = []
            for unit, oracle, decision in zip(step.units, oracles, decisions):
                if decision.granted:
                    u = self._draw(oracle.uniforms_per_report)
                    code = int(oracle.perturb(unit_codes(row, sizes, unit), u[None, :])[0])
                    values.append(code)
                else:  # reported before through the same oracle: resend that report
                    code = values[decision.entry_index]
                codes.append(code)
            return OracleReport(rid, -1, np.array(codes, dtype=np.int64))
        (release,) = ask.releases
        if acc.ledger.lookup(release) is not None:  # reported before: resend it, no draw
            decisions = acc.answer(ask)
            if isinstance(decisions, Refusal):
                return WireRefusal.of(decisions)
            drawn, sent = self._reports[decisions[0].entry_index]
            return OracleReport(rid, drawn, sent)
        fake = step.assign == "sampled-fake"
        decided = acc.answer(ask) if fake else None  # fake values: every party reports, decided before any draw
        if isinstance(decided, Refusal):
            return WireRefusal.of(decided)
        excluded = None
        if step.exclude:
            excluded = np.array([any(r.phase in step.exclude for r in acc.ledger)])
        reports, assigned = report_rows(step, oracles, row, sizes, self._draw(resolution.uniforms)[None, :], excluded)
        assert assigned is not None  # (a sampled assignment)
        j = int(assigned[0])
        if j < 0:  # abstained or excluded: nothing reported, nothing booked
            return OracleReport(rid, -1, np.zeros(0, dtype=np.int64))
        if decided is None:
            decided = acc.answer(ask)
            if isinstance(decided, Refusal):
                return WireRefusal.of(decided)
        reply = OracleReport(rid, -1, reports[0]) if fake else OracleReport(rid, j, reports[0, j:j + 1])
        values.append(int(reports[0, j]))
        self._reports[decided[0].entry_index] = (reply.unit, reply.reports)
        return reply

    def _check_start(self, start: SecureSumStart) -> str | None:
        """Why the party will not run ``start`` (``None``: it will; its accountant then binds the
        session to the start's roster)."""
        engine = self._engine
        if engine is None:
            return "no secure-sum engine was agreed at set-up"
        if start.engine != engine.name:
            return f"engine {start.engine!r} asked, but the party agreed to {engine.name!r} at set-up"
        if engine.signs and (self._signer is None or self._registry is None):
            return f"the {engine.name} engine signs with PKI keys, and the party was set up without them"
        return self.accountant.start_session(start.session, start.parties, self.index)

    def secure_program(self, start: SecureSumStart, network: Any = None) -> Program[np.ndarray | None] | None:
        """This party's side of the secure sum ``start.session`` with its committed input, as a
        sans-I/O program (:mod:`parties.secure.program`) for its host to drive
        (:class:`parties.party_sum.PartySums`); ``None`` when the party refuses
        (logged in :attr:`errors`).

        Checks (module docstring): the party's own engine, a roster that holds the party and
        at least ``min_roster`` parties, the session's input bound to one roster and run once.
        ``network``: what the engine's context may ask of the party's transport (its links).
        When the program ends the host calls :meth:`end_secure_sum`.
        """
        problem = self._check_start(start)
        if problem is not None:
            self.errors.append(f"secure sum {start.session!r} refused: {problem}")
            return None
        engine = self._engine
        assert engine is not None  # _check_start: the party agreed to an engine
        vector, digest = self._inputs[start.session]
        try:
            context = self._book.secure_context(engine, start, int(vector.shape[0]), self._registry, network,
                                                digest=digest)
        except ConfigurationError as exc:  # a roster the engine cannot run: refused like any bad request
            self.accountant.end_session(start.session, aborted=True)
            self._inputs.pop(start.session, None)
            self.errors.append(f"secure sum {start.session!r} refused: {exc}")
            return None
        program: Program[np.ndarray | None] = engine.party_program(
            self.index, vector, context, signer=self._signer, min_contributors=self.accountant.min_roster)
        return program

    def end_secure_sum(self, session: str, error: ProtocolError | None, *, ran: bool = True) -> None:
        """The program of :meth:`secure_program` ended: without ``error`` the accountant closes
        the session, with one (a peer or the controller failed; the controller decides) it
        aborts it and the error is logged; ``ran=False`` (the host stopped before the program
        ended) leaves the session as it stands.  The committed input is forgotten in any case."""
        if ran:
            self.accountant.end_session(session, aborted=error is not None)
            if error is not None:
                self.errors.append(f"secure sum {session!r}: {error}")
        self._inputs.pop(session, None)

    # ------------------------------------------------------------------ the host's entry
    def receive(self, msg: Message) -> Message | SecureSumStart | None:
        """What one message from the controller asks of this party (every host calls this).

        An :class:`~parties.wire.messages.Abort` sets :attr:`status` to ``"aborted"``; a
        :class:`~parties.wire.requests.SecureSumStart` is returned for the host to run
        (:meth:`secure_program`, driven as a task the host owns); any other message is answered by
        :meth:`handle` and its reply returned.  A message the party cannot serve is logged in
        :attr:`errors` and gives ``None``: never raises for protocol trouble.
        """
        if isinstance(msg, Abort):
            self.status = "aborted"
            return None
        if isinstance(msg, SecureSumStart):
            return msg
        try:
            return self.handle(msg)
        except MessageError as exc:
            self.errors.append(str(exc))
            return None

