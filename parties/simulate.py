"""Run a protocol as n party actors and one controller.

:func:`simulate` (sync) / :func:`simulate_async` build, for a data set of n records, a
:class:`~parties.runtime.HostingPlan` and let a runtime (:mod:`parties.runtime`: ``memory`` by
default, ``tcp``, ``ray``) host the parties in party shard hosts (:mod:`parties.shard`):

- the router (:class:`~parties.router.Router`: topology, latency model, seeded faults);
- party ``i`` = a :class:`~parties.party.Party` holding record ``i``, the stream
  ``PartyStreams(seed, n).seed_sequence(i)`` (the fast path's stream of party i), its own
  budget and composition policy;
- the :class:`~parties.controller.Controller` on the router, running the protocol's step
  program (:mod:`mprr.protocols.steps`, through :func:`parties.driver.run_actors`), then
  optionally a curious controller's attacks.

Every controller round is bounded by ``timeout`` seconds (``asyncio.timeout``) and the parties
are stopped when the controller is done, so a run ends — with a result or with a clear error —
and never hangs.  Errors:

- :class:`~mprr.errors.PartyDropped`: a party crashed (fault injection) and its answer was
  missing (``parties`` lists the crashed ones);
- :class:`~mprr.errors.RoundTimeout`: some parties stayed silent (e.g. dropped messages);
- :class:`~parties.controller.ReleaseRefused`: parties refused a release (budget, plan);

unless ``on_dropout="exclude"``: then the estimate uses the parties that answered and the
result says so (:attr:`SimulationResult.degraded`, :attr:`SimulationResult.excluded`).

Same seed ⇒ the same released codes, clusters and estimates as the fast path
(:mod:`mprr.protocols` with ``rng=PartyStreams(seed, n)``), including RR-Clusters with 4.2 /
4.3 through any secure-sum engine (the controller then holds the pair tallies, not codes).

Usage::

    sim = simulate(data, "RR-Clusters", seed=1, p=0.7, Tv=50, Td=0.1)        # sync
    sim = await simulate_async(data, "RR-Clusters", seed=1, p=0.7, Tv=50, Td=0.1)  # in a loop
    sim.result.estimate, sim.traffic.to_dict(), sim.view, sim.privacy, sim.ledgers[7]
"""

from __future__ import annotations

import asyncio
import logging
import math
import textwrap
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from mprr.data import Dataset
from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError, PartyDropped, RoundTimeout
from mprr.privacy import (DEFAULT_MIN_ROSTER, CompositionPolicy, Ledger, PrivacyAccountant, PrivacySummary, Refusal,
                          as_policy, json_number, summarize)
from mprr.parameters import Parameters
from mprr.protocols.plan import Needs, Plan
from mprr.protocols.registry import custom_entry, lookup
from mprr.protocols.steps import Program
from mprr.protocols.result import ProtocolResult
from parties.choreographies.malicious import AttackReport, run_attacks
from parties.collector import rare_full_collections
from parties.controller import CONTROLLER_KINDS, Controller
from parties.driver import run_actors
from parties.faults import FaultPlan
from parties.transport import CONTROLLER
from parties.wire.codec import Message
from parties.party import LOOP_KINDS, Party
from parties.runtime import HostingPlan, MemoryRuntime, Runtime
from parties.runtime_registry import RUNTIMES, make_runtime
from parties.shard_report import PartySummary, accountants_of
from parties.secure.cost import COUNT_LIMIT
from parties.secure.engine import SecureSumEngine, counted_cost
from parties.secure.registry import controller_kinds, engine_kinds, engine_needs_mesh, make_engine, party_kinds
from parties.topology import Topology
from parties.traffic import Counts, LatencyModel, TrafficStatistics
from parties.view import ViewLog, ViewSummary

__all__ = ["EXPENSIVE_BYTES", "EXPENSIVE_MESSAGES", "SimulationResult", "simulate", "simulate_async"]

log = logging.getLogger(__name__)

SECURE_KINDS: tuple[type[Message], ...] = party_kinds()
"""Message kinds of the shipped secure-sum engines (their registry entries' ``messages``)."""

PARTY_KINDS: tuple[type[Message], ...] = LOOP_KINDS + SECURE_KINDS
"""Message kinds of the controller's requests and of every shipped secure-sum engine.  In a run a
party's endpoint accepts the requests and the kinds of the engine it agreed to only
(:func:`parties.secure.registry.engine_kinds`; anything else is rejected on delivery); without a
secure sum, :data:`parties.party.LOOP_KINDS` only."""


@dataclass(frozen=True, eq=False, repr=False)
class SimulationResult:
    """Outcome of one actor run.

    Attributes
    ----------
    privacy
        (property) :func:`mprr.privacy.summarize` of the parties' accountants under their
        policy (refusals included); computed on first access.
    result
        The controller's :class:`mprr.protocols.ProtocolResult` (same type as the fast path).
    traffic
        Measured messages, bytes, rounds (``network.statistics()``).
    view
        Summary of the controller's view; :attr:`view_log` holds every message it received.
    view_log
        The full :class:`~parties.view.ViewLog`.
    ledgers
        Ledger of every party, index = party id.
    refusals
        Every refusal the parties sent (their accountants' :class:`mprr.privacy.Refusal` records).
    excluded
        Parties left out under ``on_dropout="exclude"`` (party -> phase and cause).
    attacks
        Reports of the curious controller's attacks (empty for an honest controller).
    crashed
        Parties crashed by fault injection.
    wall_time
        Seconds the run took (wall clock).
    options
        Simulation options (seed, budget, policy, timeout, retries, on_dropout, ...).
    parties
        In memory the party actors (harness access only: they hold the private records); for
        a remote runtime their :class:`~parties.shard_report.PartySummary` (accountant, refusals,
        values), rebuilt on access from the shards' reports
        (:class:`~parties.shard_report.PartySummaries`).
    wire
        A remote runtime's measured channel figures (framing, control and TLS bytes, socket
        counters, start-up and protocol seconds); ``None`` in memory.
    """

    result: ProtocolResult
    traffic: TrafficStatistics
    view: ViewSummary
    view_log: ViewLog = field(repr=False)
    ledgers: tuple[Ledger, ...] = field(repr=False)
    refusals: tuple[Refusal, ...]
    excluded: Mapping[int, str]
    attacks: tuple[AttackReport, ...]
    crashed: tuple[int, ...]
    wall_time: float
    options: Mapping[str, Any]
    parties: Sequence[Party | PartySummary] = field(repr=False)
    wire: Mapping[str, Any] | None = None
    _cache: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        """One line: protocol, parties, traffic, time and what went wrong (never the arrays).

        Short on purpose: ``asyncio.run`` formats the repr of its main task's result when it
        restores the SIGINT handler, and a full repr of the estimate and releases of tens of
        thousands of parties costs about a second.
        """
        t = self.traffic
        extra = "".join((
            f", {len(self.excluded)} excluded" if self.excluded else "",
            f", {len(self.crashed)} crashed" if self.crashed else "",
            f", {len(self.refusals)} refusals" if self.refusals else "",
        ))
        return (f"SimulationResult({self.result.protocol!r}, n={self.options.get('n')}, "
                f"messages={t.messages}, bytes={t.bytes}, wall_time={self.wall_time:.3g}{extra})")

    @property
    def privacy(self) -> PrivacySummary:
        """:func:`mprr.privacy.summarize` of the parties' accountants under their policy
        (computed on first access)."""
        if "privacy" not in self._cache:
            self._cache["privacy"] = summarize(accountants_of(self.parties))
        summary: PrivacySummary = self._cache["privacy"]
        return summary

    @property
    def degraded(self) -> bool:
        """``True`` when some party was excluded: the estimate does not use every record."""
        return bool(self.excluded)

    @property
    def estimate(self) -> Any:
        """The controller's estimate (``result.estimate``)."""
        return self.result.estimate

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly report (no arrays): protocol summary, traffic, view, privacy, faults."""
        return {
            "protocol": self.result.summary(),
            "traffic": {**self.traffic.to_dict(), **({"wire": dict(self.wire)} if self.wire else {})},
            "view": self.view.to_dict(),
            "privacy": self.privacy.to_dict(),
            "refusals": [r.to_dict() for r in self.refusals[:100]],
            "refusal_count": len(self.refusals),
            "degraded": self.degraded,
            "excluded": {str(k): v for k, v in self.excluded.items()},
            "attacks": [a.to_dict() for a in self.attacks],
            "crashed": list(self.crashed),
            "wall_time": self.wall_time,
            "options": {k: v for k, v in self.options.items()},
        }


async def simulate_async(
    dataset: Dataset,
    protocol: str | Callable[..., Program],
    *,
    seed: int,
    budget: float | Sequence[float] = math.inf,
    policy: CompositionPolicy | str = "sequential",
    timeout: float = 30.0,
    retries: int = 0,
    on_dropout: str = "fail",
    faults: FaultPlan | None = None,
    fault_seed: int | None = None,
    latency: LatencyModel | None = None,
    topology: nx.Graph[int] | None = None,
    attacks: Sequence[str] = (),
    min_roster: int = DEFAULT_MIN_ROSTER,
    runtime: Runtime | str | None = None,
    progress: Callable[[float, int, int], None] | None = None,
    progress_interval: float = 5.0,
    parameters: Parameters | None = None,
    **params: Any,
) -> SimulationResult:
    """Run ``protocol`` on ``dataset`` with one actor per record (see the module docstring).

    Parameters
    ----------
    dataset
        Party ``i`` holds record ``i``.
    protocol
        Protocol name (:data:`mprr.protocols.registry.PROTOCOLS`, case-insensitive,
        aliases allowed), e.g. ``"RR-Clusters"``, or a step-program function of your own
        (``program(schema, **params)``, :mod:`mprr.protocols.steps`; ``docs/own_protocol.md``):
        it runs on every runtime like the shipped ones; its secure sums (if it yields any) need
        ``engine``.
    seed
        Run seed (non-negative int): party streams ``PartyStreams(seed, n)``; also the fault
        seed unless ``fault_seed`` is given.
    budget
        ε budget of every party (``math.inf``: account without a limit), or one budget per
        party.
    policy
        Composition policy of every party's accountant.
    timeout
        Seconds each round waits for the parties' answers (> 0).
    retries
        Re-sends of a request to parties still silent after ``timeout`` (answered by replay).
    on_dropout
        ``"fail"`` (error) or ``"exclude"`` (degraded result from the parties that answered).
    faults, fault_seed, latency, topology
        Network options (:class:`~parties.faults.FaultPlan`, its seed,
        :class:`~parties.traffic.LatencyModel`, networkx graph of party links).  Default
        topology: the star, or the full mesh when the program's plan has a secure sum whose
        engine sends shares over direct party links (``"paper"``, ``"graph-direct"``).
    attacks
        Curious-controller attacks run after the protocol
        (:data:`parties.choreographies.malicious.ATTACKS`, ``SECURE_ATTACKS`` after 4.2 / 4.3,
        ``REPORT_ATTACKS`` after frequency-oracle reports).
    min_roster
        Fewest parties each party accepts in a secure-sum roster.
    runtime
        Where the parties live: ``"memory"`` (one shard host on this event loop), a remote
        :class:`~parties.runtime.Runtime` (:func:`parties.runtime_registry.make_runtime`:
        ``memory``, ``tcp`` workers, ``ray`` shards) or ``None``: memory.  Same seed, same
        result; the traffic adds the runtime's measured wire figures (``traffic["wire"]`` in
        :meth:`SimulationResult.to_dict`).
    progress, progress_interval
        Every ``progress_interval`` seconds of a run, ``progress(elapsed_seconds, messages,
        bytes)`` is called with the traffic so far (``elapsed_seconds``: since the network came
        up, on the event loop's clock), and the same is logged at INFO level on
        the ``parties.simulate`` logger (``mprr -v``).  Before a run with a secure sum whose
        closed-form cost exceeds :data:`EXPENSIVE_BYTES` or :data:`EXPENSIVE_MESSAGES`, a
        warning with that cost is logged.
    parameters
        The protocol's parameter object (e.g. :class:`mprr.protocols.parameters.RRClustersParameters`),
        validated when it was built: what the actors and the step program receive.
    **params
        Instead of ``parameters``: the protocol's parameters as keywords, as for the fast-path
        function (e.g. ``p``, ``Tv``, ``Td``); a protocol with a parameter object builds it from
        them once (:meth:`mprr.protocols.registry.ProtocolEntry.bind`).  The run is set up from the program's plan with them
        (:meth:`mprr.protocols.registry.ProtocolEntry.plan`, ``options["plan"]``); a plan with
        a secure sum (RR-Clusters with dependence 4.2 / 4.3) also takes the secure-sum engine
        as ``secure_sum`` (or ``engine``): ``"paper"`` (default), ``"graph"``,
        ``"graph-direct"``, ``"masked"``, ``"masked-sparse"`` or a configured engine; a plan
        without one refuses it.

    Raises
    ------
    ConfigurationError
        Bad dataset, protocol name, parameter or option, or a program of one's own whose plan
        a dry run cannot derive (:func:`mprr.protocols.plan.plan_of`), before anything runs.
    PartyDropped, RoundTimeout, ReleaseRefused, ProtocolError
        The run could not complete (module docstring).
    """
    if not isinstance(dataset, Dataset):
        raise ConfigurationError(f"dataset must be a mprr.data.Dataset, got {type(dataset).__name__}")
    if "secure_sum" in params:  # the scenarios' name of the secure-sum engine
        if "engine" in params:
            raise ConfigurationError(
                f"give secure_sum or engine (the same option), not both; got secure_sum = "
                f"{params['secure_sum']!r} and engine = {params['engine']!r}"
            )
        params["engine"] = params.pop("secure_sum")
    chosen = params.pop("engine", None)
    entry = lookup(protocol) if isinstance(protocol, str) else custom_entry(protocol)
    if parameters is not None and params:
        raise ConfigurationError(
            f"give the protocol's parameters in the parameter object, not also as {sorted(params)}")
    bound = entry.bind(parameters if parameters is not None else params)  # the parameter object, or keywords
    seed = check_int("seed", seed, 0)
    timeout = check_real("timeout", timeout, strict=True)
    policy = as_policy(policy)
    n = dataset.n
    budgets = _budgets(budget, n)
    schema = dataset.schema
    plan = entry.plan(schema, bound)  # what the program will ask, from its parameters: the run's set-up
    engine: SecureSumEngine | None = None
    if plan.needs.engine:  # set-up: every party gets the engine (its secure-sum policy) before the run
        engine = make_engine("paper" if chosen is None else chosen, round_timeout=timeout)
        plan = plan.with_needs(Needs(mesh=engine_needs_mesh(engine), pki=engine.signs))
    elif chosen is not None:
        raise ConfigurationError(
            f"engine = {chosen!r} has no effect: the plan of {entry.name!r} with these parameters has no secure "
            f"sum ({'; '.join(p.describe() for p in plan.phases)}); drop it, or give parameters with a secure "
            "sum (RR-Clusters: dependence '4.2' or '4.3')")
    # a party's endpoint accepts the kinds of the engine it agreed to, no other engine's
    accept = LOOP_KINDS + engine_kinds(engine) if engine is not None else LOOP_KINDS
    interval = check_real("progress_interval", progress_interval, strict=True, allow_inf=True)
    if topology is not None and not isinstance(topology, nx.Graph):
        Topology(n, topology)  # its ConfigurationError (the graph's nodes are checked when the network is built)
    net_seed = fault_seed if fault_seed is not None else seed
    runtime = make_runtime(runtime) if isinstance(runtime, str) else runtime or MemoryRuntime()
    if not isinstance(runtime, Runtime):
        raise ConfigurationError(f"runtime must be a runtime name ({', '.join(RUNTIMES)}) or a "
                                 f"parties.runtime.Runtime, got {type(runtime).__name__}")
    PrivacyAccountant(math.inf, policy, min_roster=min_roster)  # the parties' own checks, before anything starts
    if not isinstance(runtime, MemoryRuntime) and topology is not None:
        raise ConfigurationError(
            f"runtime {runtime.name!r} supports the star topology, and the full mesh an engine needs, "
            f"only (topology=None), got a graph of {topology.number_of_edges()} party links"
        )
    hosting_plan = HostingPlan(n=n, schema=schema, records=np.asarray(dataset.codes), seed=int(seed),
                               budgets=tuple(budgets), policy=policy.value, accept=tuple(k.KIND for k in accept),
                               engine=engine, min_roster=min_roster, mesh=plan.needs.mesh, topology=topology,
                               faults=faults, latency=latency, fault_seed=net_seed, timeout=timeout)
    options = {
        "protocol": entry.name,
        "seed": seed,
        "n": n,
        "budget": _budget_option(budgets),
        "policy": policy.value,
        "timeout": timeout,
        "retries": retries,
        "on_dropout": on_dropout,
        "faults": None if faults is None else repr(faults),
        "fault_seed": net_seed,
        "latency": None if latency is None else repr(latency),
        "topology": ("star" if topology is None and not plan.needs.mesh
                     else f"{n * (n - 1) // 2 if topology is None else topology.number_of_edges()} party links"),
        "attacks": list(attacks),
        "runtime": "memory" if runtime == MemoryRuntime() else runtime.options(),
        "plan": plan.to_dict(),
    }
    started = time.perf_counter()
    error: BaseException | None = None
    result: ProtocolResult | None = None
    reports: tuple[AttackReport, ...] = ()
    with rare_full_collections():  # the run keeps a few objects per party until its end
        async with runtime.host(hosting_plan) as hosting, asyncio.TaskGroup() as tg:
            net = hosting.router
            ready = time.perf_counter()
            if engine is not None:
                _warn_if_expensive(engine, n, plan, net)
            heartbeat = (tg.create_task(_heartbeat(net, interval, progress)) if math.isfinite(interval)
                         else None)
            controller = Controller(net.endpoint(CONTROLLER, accept=tuple(dict.fromkeys(CONTROLLER_KINDS + controller_kinds()))), schema, range(n),
                                    timeout=timeout, on_dropout=on_dropout, retries=retries)
            try:
                result = await run_actors(entry.program, controller, bound, plan=plan, engine=engine)
                reports = await run_attacks(controller, attacks)
            except Exception as exc:  # re-raised below, after the parties are stopped
                error = exc
            finally:
                if heartbeat is not None:
                    heartbeat.cancel()
            protocol_done = time.perf_counter()
            parties = await hosting.parties()
            net.close()
            controller.drain()
            wire = hosting.wire()
    wall = time.perf_counter() - started
    if error is not None:
        raise _explain(error, net.crashed) from error
    if result is None:  # pragma: no cover - the program returned nothing
        raise ConfigurationError(f"protocol {entry.name!r} returned no result")
    result.timings["wall"] = wall
    if wire:
        wire["startup_seconds"] = ready - started
        wire["protocol_seconds"] = protocol_done - ready
    accountants = accountants_of(parties)
    return SimulationResult(
        result=result,
        traffic=net.statistics(),
        view=controller.view.summary(),
        view_log=controller.view,
        ledgers=tuple(a.ledger for a in accountants),
        refusals=tuple(r for a in accountants for r in a.refusals),
        excluded=dict(controller.excluded),
        attacks=reports,
        crashed=tuple(sorted(net.crashed)),
        wall_time=wall,
        options=options,
        parties=parties,
        wire=wire or None,
    )


EXPENSIVE_BYTES = 50_000_000
"""Closed-form secure-sum traffic (bytes) above which :func:`simulate_async` warns first."""
EXPENSIVE_MESSAGES = 1_000_000
"""Closed-form secure-sum message count above which :func:`simulate_async` warns first."""
WARNING_WIDTH = 88
"""Columns of the wrapped detail lines of that warning (a terminal's width, less its prefix)."""


def _warn_if_expensive(engine: SecureSumEngine, n: int, plan: Plan, net: Any) -> None:
    """Log a warning with the closed-form cost of the plan's secure sums (each one vector of
    :attr:`PhasePlan.cells <mprr.protocols.plan.PhasePlan.cells>` per party; main paper 4.2 /
    4.3: Σ_{i<j} |A_i||A_j|) when it is large.

    Bounded in time: where the engine's upper bounds
    (:meth:`~parties.secure.engine.SecureSumEngine.most_cost`, no program run) stay below the
    thresholds, nothing is counted and nothing said; where its lower bound
    (:meth:`~parties.secure.engine.SecureSumEngine.least_cost`) already crosses
    :data:`EXPENSIVE_MESSAGES` or :data:`EXPENSIVE_BYTES`, nothing is counted (the warning then
    says "at least"); else an engine counted by the counting driver
    (:func:`~parties.secure.engine.counted_cost`) stops as soon as the traffic crosses them
    ("at least" again), and after :data:`~parties.secure.cost.COUNT_LIMIT` messages routed in
    any case."""
    messages = nbytes = 0
    exact = True
    formulas = []
    try:
        contexts = [engine.context(range(n), cells, network=net, session="cost-estimate") for cells in plan.sum_cells]
        most = [engine.most_cost(ctx) for ctx in contexts]
        if (all(m is not None for m in most) and sum(m.messages for m in most if m) <= EXPENSIVE_MESSAGES
                and sum(m.bytes for m in most if m) <= EXPENSIVE_BYTES):
            return  # (the upper bounds stay below the threshold: nothing to count, nothing to say)
        for phase, cells, ctx in zip(plan.secure_sums, plan.sum_cells, contexts):
            least = engine.least_cost(ctx)
            if least is not None and (messages + least.messages > EXPENSIVE_MESSAGES
                                      or nbytes + least.bytes > EXPENSIVE_BYTES):
                cost = least  # (a lower bound already crosses the threshold: nothing to count)
            elif type(engine).cost is SecureSumEngine.cost:  # the counting driver: stop at the threshold
                left = Counts(max(EXPENSIVE_MESSAGES - messages, 0), max(EXPENSIVE_BYTES - nbytes, 0))
                cost = counted_cost(engine, ctx, limit=COUNT_LIMIT, threshold=left)
            else:
                cost = engine.cost(ctx)
            messages += cost.messages
            nbytes += cost.bytes
            exact = exact and cost.exact
            formulas.append(f"secure sum {phase.phase!r} of {cells} cells; closed form: {cost.formula}")
            if nbytes > EXPENSIVE_BYTES or messages > EXPENSIVE_MESSAGES:
                break  # (enough to warn)
    except Exception as exc:  # the estimate is advice only: never stop a run over it
        log.debug("no closed-form cost for %r: %s", engine, exc)
        return
    if nbytes > EXPENSIVE_BYTES or messages > EXPENSIVE_MESSAGES:
        # a short headline, then the details wrapped for a terminal (the formula is long)
        details = textwrap.fill(f"({n} parties, {'; '.join(formulas)})",
                                width=WARNING_WIDTH, initial_indent="  ", subsequent_indent="  ")
        sparse = engine.topology != "complete"  # graph, masked-sparse
        log.warning(
            "expensive configuration: the %s secure sum sends %s%s messages, %.1f MB\n%s\n  %s",
            engine.name or type(engine).__name__, "" if exact else "at least ", f"{messages:,}", nbytes / 1e6, details,
            "fewer parties or fewer cells cost less" if sparse
            else "a sparse engine (graph, masked-sparse) or fewer parties costs less",
        )


async def _heartbeat(net: Any, interval: float,
                     progress: Callable[[float, int, int], None] | None) -> None:
    """Report the traffic so far every ``interval`` seconds until cancelled.

    Time is the event loop's clock, counted from the heartbeat's start (the network is up):
    a test on a virtual clock sees its reports at exact virtual times."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    while True:
        await asyncio.sleep(interval)
        messages, nbytes = net.totals()
        elapsed = loop.time() - started
        log.info("simulation running %.1f s: %s messages, %.1f MB so far", elapsed, f"{messages:,}", nbytes / 1e6)
        if progress is not None:
            progress(elapsed, messages, nbytes)


def _budgets(budget: Any, n: int) -> list[float]:
    """One budget per party from a scalar or a sequence (ConfigurationError otherwise)."""
    values = list(budget) if isinstance(budget, (Sequence, np.ndarray)) and not isinstance(budget, str) else None
    if values is not None and len(values) != n:
        raise ConfigurationError(f"budget must be one number or one per party ({n}), got {len(values)} values")
    out = [check_real("budget", b, allow_inf=True) for b in (values if values is not None else [budget])]
    return out if values is not None else out * n


def _budget_option(budgets: list[float]) -> Any:
    """JSON-friendly budget option: one value when all parties share it."""
    return json_number(budgets[0]) if len(set(budgets)) == 1 else [json_number(b) for b in budgets]


def _explain(error: BaseException, crashed: frozenset[int]) -> BaseException:
    """Turn a timeout caused by crashed parties into :class:`PartyDropped` (others unchanged)."""
    if isinstance(error, RoundTimeout):
        gone = tuple(sorted(set(error.missing) & set(crashed)))
        if gone:
            return PartyDropped(
                f"{error} — {len(gone)} of the missing parties crashed: "
                + ", ".join(f"party {p}" for p in gone[:10])
                + (" ..." if len(gone) > 10 else ""),
                parties=gone,
            )
    return error


def simulate(dataset: Dataset, protocol: str | Callable[..., Program], *, seed: int,
             parameters: Parameters | None = None, **options: Any) -> SimulationResult:
    """Synchronous wrapper of :func:`simulate_async` (``asyncio.run``); same parameters.

    The event loop is the runtime's ``loop_factory`` when it has one (the ``virtual`` runtime's
    clock, :mod:`parties.netsim.runtime`), else asyncio's default."""
    runtime = options.get("runtime")
    chosen = make_runtime(runtime) if isinstance(runtime, str) else runtime
    if chosen is not None:
        options["runtime"] = chosen
    with asyncio.Runner(loop_factory=getattr(chosen, "loop_factory", None)) as runner:
        return runner.run(simulate_async(dataset, protocol, seed=seed, parameters=parameters, **options))
