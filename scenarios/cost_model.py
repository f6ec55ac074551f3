"""Closed-form communication costs of our protocols, from the message sizes of our codec.

Every number here is *exact* for a fault-free run.  The secure sums of every registered engine
(the shipped paper, paper-per-combination, graph, graph-direct, masked, masked-sparse, and one's
own) are counted: their programs run by the counting driver (:func:`parties.secure.counting.count`),
every message sized by the codec.  The RR phases are derived from the field encodings of
:mod:`parties.wire.codec` (header magic|version|kind = 5 bytes, int = 8, str = 4 + UTF-8 bytes,
1-D array = 10 + data, tuple = 4 + items, bytes = 4 + data) and from each protocol's message
pattern.  ``docs/cost_model.md`` derives all of them by hand (``tests/scenarios/test_cost_model.py``
checks its secure-sum formulas against the counts); ``scenarios.communication`` measures them.

- :func:`closed_form` — one secure sum of a registered engine over vectors of L cells
  (:func:`counted_secure_sum`);
- :func:`release_phase` / :func:`rr_closed_form` — the request/reply phases of the actor
  choreographies (RR-Independent: one phase; RR-Clusters with 4.1: a dependence phase and a
  cluster phase), main paper 4.1: O(nm) at the controller, O(m) per party;
- :func:`pair_cells`, :func:`pair_indicators` — the vectors of main paper 4.2/4.3;
- :func:`measure_secure_sum`, :func:`measure_rr` — run one secure sum (in-memory network) or
  one RR protocol (actor simulator) and set the measured traffic beside the closed form.
"""

from __future__ import annotations


import asyncio
import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import networkx as nx
import numpy as np

from mprr.errors import ConfigurationError
from mprr.data import Attribute, Schema
from mprr.protocols.budget import CLUSTER_FAMILY
from mprr.protocols.plan import Plan
from mprr.protocols.registry import lookup
from mprr.synthetic import planted_clusters
from parties.router import Router
from parties.runtime import Runtime
from parties.transport import CONTROLLER
from parties.wire.codec import encoded_size
from parties.wire.messages import Ack, RandomizedValues
from parties.wire.requests import ReleaseRequest, SecureRelease, SecureSumStart
from parties.traffic import TrafficStatistics
from parties.secure.agreement import DIGEST_BYTES
from parties.secure.context import SecureSumContext
from parties.secure.engine import SecureSumEngine
from parties.secure.run import run_secure_sum
from parties.secure.program import Program
from parties.secure.sizing import SizeByShape
from parties.secure.counting import count
from parties.secure.registry import ENGINES, engine_needs_mesh, sized_engine
from parties.secure.suite import SIZING

__all__ = [
    "ACK_BYTES",
    "ENGINE_KEYS",
    "ClosedForm",
    "MATCHED",
    "Measurement",
    "RRMeasurement",
    "measure_rr",
    "measure_secure_sum",
    "closed_form",
    "counted_secure_sum",
    "element_bytes",
    "engine_and_topology",
    "pair_cells",
    "pair_indicators",
    "release_phase",
    "release_request_bytes",
    "randomized_values_bytes",
    "rr_closed_form",
    "secure_release_bytes",
    "secure_start_bytes",
    "simulate_options",
]

ENGINE_KEYS = tuple(ENGINES)

SESSION_CHARS = 16


def element_bytes(modulus: int) -> int:
    """Bytes of one element of Z_M stored in the smallest unsigned dtype holding M − 1."""
    top = modulus - 1
    for b in (1, 2, 4, 8):
        if top < 1 << (8 * b):
            return b
    raise ConfigurationError(f"modulus must be <= 2**64, got {modulus}")


# --------------------------------------------------------------------------- closed forms


MATCHED: Mapping[str, tuple[str, ...]] = {
    "consistency": ("consistency_messages", "consistency_bytes"), "messages": ("messages",),
    "bytes": ("bytes",), "rounds": ("rounds",), "party": ("party_messages", "party_bytes"),
    "controller": ("controller_messages", "controller_bytes"),
}
"""The quantities a measurement is checked on against its closed form, by group."""

CONSISTENCY_KINDS = ("SurvivorSet", "SurvivorTags", "UnmaskRequest")
"""Message kinds of the masked engine's consistency check."""


@dataclass(frozen=True)
class ClosedForm:
    """Traffic of one run, totals over the run: exact for a fault-free run (:func:`closed_form`,
    :func:`rr_closed_form`), or as a network counted it (:meth:`counted`)."""

    messages: int
    bytes: int
    rounds: int
    party_messages: int
    party_bytes: int
    controller_messages: int
    controller_bytes: int
    formula: str
    consistency_messages: int = 0
    consistency_bytes: int = 0
    """The masked engine's consistency check (Bonawitz et al. 2017, active adversary): the
    ``SurvivorSet`` and ``SurvivorTags`` messages and the tagged views of ``UnmaskRequest``
    (0 for the other engines); included in the totals above."""

    @classmethod
    def counted(cls, stats: TrafficStatistics) -> ClosedForm:
        """What a network counted: totals, the busiest party, the controller and the masked
        engine's consistency messages (formula ``"measured"``)."""
        party = [c for a, c in stats.by_sender.items() if a != CONTROLLER]
        ctrl = stats.sent_by(CONTROLLER)
        check = [stats.by_kind[k] for k in CONSISTENCY_KINDS if k in stats.by_kind]
        return cls(stats.messages, stats.bytes, stats.rounds, max(c.messages for c in party),
                   max(c.bytes for c in party), ctrl.messages, ctrl.bytes, "measured",
                   sum(c.messages for c in check), sum(c.bytes for c in check))

    def headline(self) -> dict[str, Any]:
        """Messages, bytes, rounds and the formula, as ``results.json`` records a closed form."""
        return {"messages": self.messages, "bytes": self.bytes, "rounds": self.rounds, "formula": self.formula}

    def matches(self, other: ClosedForm, groups: Sequence[str] = tuple(MATCHED)) -> dict[str, bool]:
        """Per group of :data:`MATCHED` (``consistency``, ``messages``, ``bytes``, ``rounds``,
        ``party``, ``controller``), whether ``other`` has the same numbers."""
        return {g: all(getattr(self, f) == getattr(other, f) for f in MATCHED[g]) for g in groups}


def _count(engine: SecureSumEngine, ctx: SecureSumContext) -> TrafficStatistics:
    """The counting driver (:func:`parties.secure.counting.count`) on a fault-free sum of ``engine``
    as :func:`parties.secure.engine.counted_cost` runs it (every role's program on all-zero
    inputs, the sizing suite, one party for all where the engine is role-symmetric), with the
    statistics by kind that the consistency check is read from."""
    ctx = replace(ctx, suite=SIZING)
    zero = np.zeros(ctx.length, dtype=np.uint8)
    mirrored = engine.symmetric(ctx)
    programs: dict[int, Program[Any]] = {CONTROLLER: engine.controller_program(ctx)}
    for p in ctx.parties[:1] if mirrored else ctx.parties:
        programs[p] = engine.party_program(p, zero, ctx)
    return count(programs, size=SizeByShape(), mirror=ctx.parties if mirrored else None,
                 counterpart=lambda message, party: engine.counterpart(message, party, ctx)).statistics


@functools.lru_cache(maxsize=256)
def counted_secure_sum(engine: str, n: int, L: int, *, degree: int = 8, S: int = SESSION_CHARS,
                       seed: int = 0) -> ClosedForm:
    """Traffic of a fault-free secure sum of the registered ``engine`` for n parties and vectors
    of L cells: every role's program run by the counting driver (:func:`_count`), every message
    sized by the codec; the consistency check is the messages of :data:`CONSISTENCY_KINDS`.

    An engine that runs once per cell (:attr:`~parties.secure.registry.EngineEntry.per_cell`,
    ``paper-per-combination``) is L runs of its one-cell sum (a message's combination index is
    a fixed-size int64): counted once with L = 1 and multiplied by L
    (``tests/scenarios/test_cost_model.py`` checks this against a full count).  Role-symmetric
    engines (paper, graph-direct; :meth:`parties.secure.engine.SecureSumEngine.symmetric`) are
    counted from one party's program: O(n) messages routed; the others route all their messages.
    """
    if ENGINES.lookup(engine).per_cell and L > 1:
        one = counted_secure_sum(engine, n, 1, degree=degree, S=S, seed=seed)
        return ClosedForm(L * one.messages, L * one.bytes, L * one.rounds, L * one.party_messages,
                          L * one.party_bytes, L * one.controller_messages, L * one.controller_bytes,
                          f"L = {L} runs of one combination, each {one.formula}", L * one.consistency_messages,
                          L * one.consistency_bytes)
    eng = sized_engine(engine, degree=degree, round_timeout=60.0, seed=seed)
    stats = _count(eng, eng.context(range(n), L, session="s" * S))
    kinds = ", ".join(f"{c.messages:,} {k} ({c.bytes:,} B)" for k, c in stats.by_kind.items())
    return replace(ClosedForm.counted(stats), formula=f"counted ({eng.name}, n = {n}, L = {L}): {kinds}")


def closed_form(engine: str, n: int, L: int, *, degree: int = 8, S: int = SESSION_CHARS, seed: int = 0) -> ClosedForm:
    """Closed-form traffic of ``engine`` for n parties and vectors of L cells (fault-free): its
    programs counted by the counting driver (:func:`counted_secure_sum`), whatever the engine,
    shipped or registered by a user.  ``docs/cost_model.md`` derives the shipped engines' by
    hand, and ``tests/scenarios/test_cost_model.py`` checks its formulas against these.

    Parameters
    ----------
    engine
        A registered engine (:data:`parties.secure.registry.ENGINES`).
    n, L
        Number of parties and vector length (value combinations).
    degree
        k of the sparse graph (graph, masked-sparse); capped at n − 1 (complete graph).
    S
        Characters of the session id.
    seed
        Public seed of the random regular graph (``masked-sparse``: the consistency round's
        last message carries the tagged views of each party's 2-hop neighbourhood, whose size
        depends on the graph).

    Raises
    ------
    ConfigurationError
        If ``engine`` is not registered.
    """
    if not ENGINES.accepts(engine):
        raise ConfigurationError(f"engine must be one of {list(ENGINES)}, got {engine!r}")
    return counted_secure_sum(ENGINES.lookup(engine).name, n, L, degree=degree, S=S, seed=seed)


# --------------------------------------------------------------------------- inputs


def pair_cells(sizes: Sequence[int]) -> int:
    """L = Σ_{i<j} |A_i||A_j| — value combinations of all attribute pairs (main paper 4.2)."""
    s = np.asarray(sizes, dtype=np.int64)
    return int((s.sum() ** 2 - (s ** 2).sum()) // 2)


def pair_indicators(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """``(n, L)`` uint8 one-hot of every party's value pair for every attribute pair ``i < j``.

    Pairs in lexicographic order, pair code ``x_i·|A_j| + x_j`` (C order), as in
    :func:`mprr.protocols.dependence_phase`.  Column sums are the bivariate tables.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n, m = codes.shape
    out = np.zeros((n, pair_cells(sizes)), dtype=np.uint8)
    offset = 0
    rows = np.arange(n)
    for i in range(m):
        for j in range(i + 1, m):
            out[rows, offset + codes[:, i] * sizes[j] + codes[:, j]] = 1
            offset += sizes[i] * sizes[j]
    return out


# --------------------------------------------------------------------------- RR phases (4.1)


def release_request_bytes(phase: str, units: Sequence[Sequence[int]], families: Sequence[str],
                          params_per_unit: Sequence[int], plan: Sequence[Sequence[int]] | None = None) -> int:
    """Encoded size of one ``ReleaseRequest`` (kind 100, :mod:`parties.wire.requests`) with these
    units, plan (default: the units), matrix families and ``params_per_unit[j]`` parameters for
    unit j, by the codec (:func:`~parties.wire.codec.encoded_size`: no size depends on a number's
    value; docs/cost_model.md derives it by hand, ``tests/scenarios/test_communication.py``
    checks the two agree)."""
    units_t = tuple(tuple(int(a) for a in u) for u in units)
    plan_t = units_t if plan is None else tuple(tuple(int(a) for a in g) for g in plan)
    return encoded_size(ReleaseRequest(0, phase, plan_t, units_t, tuple(families),
                                       tuple((0.5,) * q for q in params_per_unit)))


def randomized_values_bytes(k: int) -> int:
    """Encoded size of one ``RandomizedValues`` reply with k codes (no ids), by the codec."""
    return encoded_size(RandomizedValues(0, np.zeros(k, dtype=np.int64)))


@dataclass(frozen=True)
class PhaseCost:
    """One request/reply phase: the controller sends one request per party, each party one reply."""

    phase: str
    request_bytes: int
    reply_bytes: int

    def totals(self, n: int) -> tuple[int, int]:
        """(messages, bytes) of the phase for n parties."""
        return 2 * n, n * (self.request_bytes + self.reply_bytes)


def release_phase(phase: str, units: Sequence[Sequence[int]], families: Sequence[str]) -> PhaseCost:
    """Closed form of one phase where every unit's matrix has one parameter (p, ε)."""
    return PhaseCost(phase, release_request_bytes(phase, units, families, [1] * len(units)),
                     randomized_values_bytes(len(units)))


MATRIX_OPTIONS = ("p", "epsilon_per_attribute", "epsilon")
"""How the attribute matrices of RR-Independent and RR-Clusters may be given (``matrices`` of
:func:`rr_closed_form` when no plan is given)."""


def secure_release_bytes(phase: str, session: str, units: Sequence[Sequence[int]], *, exact: bool,
                         family: str = CLUSTER_FAMILY) -> int:
    """Encoded size of one ``SecureRelease`` (kind 101), the 4.2 / 4.3 commitment request, by the
    codec: plan = units, then for 4.3 (``exact`` False) one ``family`` and one parameter per unit.
    (No ε travels: the party computes it from the matrix.)"""
    units_t = tuple(tuple(int(a) for a in u) for u in units)
    return encoded_size(SecureRelease(0, phase, session, units_t, units_t, exact,
                                      () if exact else (family,) * len(units_t),
                                      () if exact else ((0.5,),) * len(units_t)))


def _plan(protocol: str, m: int, sizes: Sequence[int] | None, matrices: str, dependence: str) -> Plan:
    """The plan of ``protocol`` with its attribute matrices given as ``matrices`` (one of
    :data:`MATRIX_OPTIONS`; the families do not depend on the value) on ``m`` attributes."""
    if matrices not in MATRIX_OPTIONS:
        raise ConfigurationError(f"matrices must be one of {list(MATRIX_OPTIONS)}, got {matrices!r}")
    dims = tuple(sizes) if sizes is not None else (2,) * m
    schema = Schema(tuple(Attribute(f"A{j}", tuple(str(c) for c in range(r))) for j, r in enumerate(dims)))
    entry = lookup(protocol)
    declared = {spec.name for spec in entry.parameters.specs()} if entry.parameters is not None else set()
    # the dependence method shapes the plan; Algorithm 1's thresholds apply after it (any valid value)
    options = {"dependence": dependence, "Tv": 2, "Td": 0.0}
    return entry.plan(schema, {matrices: 0.5, **{k: v for k, v in options.items() if k in declared}})


ACK_BYTES = encoded_size(Ack(0))
"""Encoded size of one ``Ack`` (no ids), by the codec."""


def secure_start_bytes(session: str, engine: str = "paper", runs: int = 1) -> int:
    """Encoded size of one ``SecureSumStart`` (kind 102), by the codec: the session, the engine's
    name and the roster as ``runs`` half-open ranges of party ids (one when nobody was excluded)."""
    return encoded_size(SecureSumStart(0, session, engine, tuple((2 * k, 2 * k + 1) for k in range(runs))))


def rr_closed_form(protocol: str, n: int, m: int, *, matrices: str = "p",
                   clusters: Sequence[Sequence[int]] | None = None, dependence: str = "4.1",
                   sizes: Sequence[int] | None = None, engine: str = "paper", degree: int = 8,
                   session: str = "dependence/1", replays: bool | None = None,
                   plan: Plan | None = None) -> ClosedForm:
    """Exact fault-free traffic of a protocol of releases and secure sums (RR-Independent,
    RR-Clusters) in the actor simulator, read from its plan (:mod:`mprr.protocols.plan`).

    Each release phase is one request/reply round trip: its units are the plan's, or (a phase
    that chooses them from earlier replies, RR-Clusters' ``"clusters"``) the announced
    ``clusters``, through the phase's first family (a singleton that replays phase 1) or its
    last; a secure-sum phase is a ``SecureRelease`` to every party, an ``Ack`` from each, a
    ``SecureSumStart`` to each, then the secure sum of the phase's vectors.

    Parameters
    ----------
    protocol
        Its registered name (:mod:`mprr.protocols.registry`): its plan, without ``plan``, and
        messages.
    n, m
        Parties and attributes.
    matrices
        Without ``plan``: how the attribute matrices were given, ``"p"``, ``"epsilon"`` or
        ``"epsilon_per_attribute"`` (the protocol's plan function then gives their family).
    clusters
        The units announced for a phase that chooses them (RR-Clusters: Algorithm 1's clusters).
    dependence
        Without ``plan``: the dependence method of a protocol that declares one (RR-Clusters:
        ``"4.1"``, a release of the m singletons, or ``"4.2"`` / ``"4.3"``, a secure sum of the
        L-cell pair vectors).
    sizes
        Without ``plan``: the attribute sizes (needed for a secure sum: its vector length L).
    engine, degree, session
        A secure sum: the engine key (:func:`closed_form`) and its graph degree, under the
        agreed session id: ``session``, ``"#"`` and 32 hex digits of the request's digest
        (:mod:`parties.secure.agreement`).
    replays
        Whether singletons of a phase that chooses its units replay phase 1 (default: where the
        phase declares a family before its last; a budget per respondent whose discovery share
        is not one half releases them afresh).
    plan
        The run's plan: phases, units, vector lengths and the matrix families each phase
        applies; default: the protocol's plan with ``matrices`` (and ``dependence``).
    """
    if plan is None:
        plan = _plan(protocol, m, sizes, matrices, dependence)
        if sizes is None and any(p.kind == "secure-sum" for p in plan.phases):
            raise ConfigurationError("rr_closed_form with dependence 4.2 / 4.3 needs the attribute sizes")
    undeclared = [p.phase for p in plan.phases if p.families is None]
    if undeclared:
        raise ConfigurationError(f"the plan of {protocol} must declare the families of its phases, "
                                 f"got none for {undeclared}")
    phases = []
    extra = ClosedForm(0, 0, 0, 0, 0, 0, 0, "")
    for step in plan.phases:
        families = step.families or (CLUSTER_FAMILY,)
        if step.kind == "release" and step.units is not None:  # units fixed before the run: one family
            phases.append(release_phase(step.phase, step.units, [families[0]] * len(step.units)))
        elif step.kind == "release":  # units chosen from earlier replies: the announced clusters
            if clusters is None:
                raise ConfigurationError(f"rr_closed_form({protocol!r}) needs the announced clusters: its phase "
                                         f"{step.phase!r} chooses its units from earlier replies")
            # a singleton that replays phase 1 keeps its first family; a fresh release takes the last
            replay = len(families) > 1 if replays is None else replays
            phases.append(release_phase(step.phase, clusters, [families[0] if (len(c) == 1 and replay) else
                                                               families[-1] for c in clusters]))
        elif step.kind == "secure-sum":
            assert step.units is not None and step.cells is not None  # (a secure sum declares both: PhasePlan)
            request = secure_release_bytes(step.phase, session, step.units, exact=step.exact, family=families[-1])
            start = secure_start_bytes(session, sized_engine(engine, degree=degree, round_timeout=30.0).name)
            # the engine runs under the agreed session id: session + "#" + the request digest
            agreed = len(session.encode("utf-8")) + 1 + 2 * DIGEST_BYTES
            ss = closed_form(engine, n, step.cells, degree=degree, S=agreed)
            extra = ClosedForm(
                messages=3 * n + ss.messages, bytes=n * (request + ACK_BYTES + start) + ss.bytes,
                rounds=3 + ss.rounds, party_messages=1 + ss.party_messages,
                party_bytes=ACK_BYTES + ss.party_bytes, controller_messages=2 * n + ss.controller_messages,
                controller_bytes=n * (request + start) + ss.controller_bytes,
                formula=f"{step.phase}: n × ({request} B SecureRelease + {ACK_BYTES} B Ack + {start} B "
                        f"SecureSumStart) + {engine} secure sum of L = {step.cells} cells ({ss.formula})")
        else:
            raise ConfigurationError(f"rr_closed_form covers releases and secure sums; phase {step.phase!r} of "
                                     f"{protocol} is a {step.kind}")
    return ClosedForm(
        messages=extra.messages + sum(ph.totals(n)[0] for ph in phases),
        bytes=extra.bytes + sum(ph.totals(n)[1] for ph in phases),
        rounds=extra.rounds + 2 * len(phases),
        party_messages=extra.party_messages + len(phases),
        party_bytes=extra.party_bytes + sum(ph.reply_bytes for ph in phases),
        controller_messages=extra.controller_messages + n * len(phases),
        controller_bytes=extra.controller_bytes + n * sum(ph.request_bytes for ph in phases),
        formula=" + ".join([*([extra.formula] if extra.formula else []),
                            *(f"{ph.phase}: n × ({ph.request_bytes} B request + {ph.reply_bytes} B reply)"
                              for ph in phases)]),
    )


# --------------------------------------------------------------------------- measuring


def engine_and_topology(key: str, n: int, *, degree: int, round_timeout: float, threshold: int | None = None
                        ) -> tuple[SecureSumEngine, nx.Graph[int] | None]:
    """The engine ``key`` (:func:`parties.secure.registry.sized_engine`) and the network
    topology it needs for n parties (a full mesh for direct party links, else ``None``: the star)."""
    engine = sized_engine(key, degree=degree, round_timeout=round_timeout, threshold=threshold)
    return engine, (nx.complete_graph(n) if engine_needs_mesh(key) else None)


@dataclass(frozen=True)
class Measurement:
    """One measured secure sum (``measured``) beside its closed form, and the engine's own
    ``cost()`` (messages, bytes, rounds)."""

    engine: str
    sweep: str
    n: int
    m: int
    d: int | None
    L: int
    measured: ClosedForm
    engine_cost: tuple[int, int, int]
    seconds: float
    exact_sum: bool
    closed: ClosedForm

    def matches(self) -> dict[str, bool]:
        """Which measured quantities equal the closed form."""
        return self.measured.matches(self.closed)


def measure_secure_sum(key: str, vectors: np.ndarray, expected: np.ndarray, *, sweep: str, m: int,
                       d: int | None, degree: int, round_timeout: float, index: int) -> Measurement:
    """Run one secure sum in the in-memory network and compare with the closed form."""
    n, L = vectors.shape
    engine, topology = engine_and_topology(key, n, degree=degree, round_timeout=round_timeout)
    net = Router(n, topology=topology)
    start = time.perf_counter()
    result = asyncio.run(run_secure_sum(engine, net, vectors, session=f"{index:0{SESSION_CHARS}x}",
                                        timeout=max(60.0, 10 * round_timeout)))
    return Measurement(key, sweep, n, m, d, L, ClosedForm.counted(result.statistics),
                       (result.cost.messages, result.cost.bytes, result.cost.rounds), time.perf_counter() - start,
                       bool(np.array_equal(result.total, expected)), closed_form(key, n, L, degree=degree))


@dataclass(frozen=True)
class RRMeasurement:
    """One actor-simulator run of an RR protocol beside its closed form."""

    protocol: str
    sweep: str
    n: int
    m: int
    d: int | None
    clusters: tuple[tuple[int, ...], ...]
    stats: TrafficStatistics
    closed: ClosedForm
    seconds: float
    dependence: str | None = "4.1"
    """The dependence method (None: the protocol has none)."""
    engine: str = ""

    def measured(self) -> dict[str, int]:
        """Messages, bytes and rounds in total, of the busiest party and of the controller."""
        counted = ClosedForm.counted(self.stats)
        return {f: getattr(counted, f) for g in RR_MATCHED for f in MATCHED[g]}

    def matches(self) -> bool:
        """Whether :meth:`measured` equals the closed form (the consistency messages of a masked
        secure sum are in the totals; :func:`rr_closed_form` does not single them out)."""
        return all(ClosedForm.counted(self.stats).matches(self.closed, RR_MATCHED).values())


RR_MATCHED = ("messages", "bytes", "rounds", "party", "controller")


def simulate_options(plan: Plan, engine: str, n: int, degree: int, round_timeout: float) -> dict[str, Any]:
    """Keyword arguments of :func:`parties.simulate.simulate` for a program with ``plan``
    (:mod:`mprr.protocols.plan`): nothing when it has no secure sum; otherwise the configured
    secure-sum ``engine`` (:func:`engine_and_topology`) and, when it needs direct party links
    (paper, graph-direct), the full-mesh topology."""
    if not plan.needs.engine:
        return {}
    instance, topology = engine_and_topology(engine, n, degree=degree, round_timeout=round_timeout)
    return {"secure_sum": instance, **({"topology": topology} if topology is not None else {})}


def measure_rr(protocol: str, sizes: Sequence[int], n: int, *, sweep: str, d: int | None,
               params: Mapping[str, Any], seed: int, dependence: str = "4.1",
               engine: str = "", runtime: Runtime | None = None) -> RRMeasurement:
    """Run ``protocol`` in the actor simulator on planted-cluster data and measure its traffic.

    The protocol is given the parameters it declares (its registry entry's) among ``params`` and
    ``dependence`` (RR-Clusters: its plan's secure sum under 4.2 / 4.3 through the secure-sum
    ``engine``; the measurement's ``dependence`` is None for a protocol without one); the parties
    live on ``runtime`` (``None``: memory).
    """
    from parties.simulate import simulate

    entry = lookup(protocol)
    sizes = tuple(sizes)
    data = planted_clusters(n, rng=np.random.default_rng(seed), sizes=sizes,
                            clusters=((0, 1),) if len(sizes) >= 2 else ()).dataset
    given = {**params, "dependence": dependence}
    declared = [spec.name for spec in entry.parameters.specs()] if entry.parameters is not None else []
    kwargs: dict[str, Any] = {k: given[k] for k in declared if k in given}
    plan = entry.plan(data.schema, kwargs)
    kwargs.update(simulate_options(plan, engine, n, params["degree"], float(params["round_timeout"])))
    sim = simulate(data, protocol, seed=seed, timeout=float(params["round_timeout"]), runtime=runtime, **kwargs)
    if sim.result.clusters is None:
        raise ConfigurationError(f"protocol must be one that reports its clusters (a release protocol such as "
                                 f"RR-Independent or RR-Clusters), got {protocol!r}")
    clusters = tuple(tuple(c) for c in sim.result.clusters)
    session = sim.result.details.get("secure_sum", {}).get("session", "dependence/1")
    closed = rr_closed_form(protocol, n, len(sizes), clusters=clusters,
                            dependence=dependence, sizes=sizes, engine=engine or "paper",
                            degree=params["degree"], session=session, plan=plan)
    return RRMeasurement(protocol, sweep, n, len(sizes), d, clusters, sim.traffic, closed, sim.wall_time,
                         dependence if "dependence" in kwargs else None, engine)
