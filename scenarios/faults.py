"""``secure_sum_faults``: dropout rate vs outcome of every secure-sum engine.

Each trial runs one secure sum (:func:`parties.secure.run.run_secure_sum`) of the parties'
one-hot pair vectors (main paper 4.2: one cell per value combination of every attribute pair)
on an :class:`~parties.router.Router` whose fault plan crashes a random subset of the
parties at a chosen send (``crash_send``: 1 = before sending anything; the defaults crash a
party in the middle of the protocol — paper / graph after their first message, masked after
advertising keys and sharing its Shamir shares but before its masked input, i.e. the dropout
Bonawitz et al. 2017 recover from).

Outcomes, per trial:

- ``exact``   the engine returned a sum and it equals the plaintext sum of its contributors'
  vectors (the contributors are the parties that did not drop before their input);
- ``error``   a clear :class:`~mprr.errors.PartyDropped` / :class:`~mprr.errors.RoundTimeout`
  (paper and graph engines: a dropout stalls the sum, no count is returned);
- ``aborted`` :class:`~mprr.errors.SecureSumAborted` (masked: fewer survivors than the
  threshold t);
- ``WRONG``   a returned sum that differs from the plaintext sum — must never happen;
- ``other``   any other :class:`~mprr.errors.MprrError` (reported with its message).

Dropout model: every party drops independently with probability ρ (``binomial``), or exactly
round(ρn) parties drop (``fixed``).  The success probability predicted from the engines'
definitions is plotted beside the measured rate: (1 − ρ)^n for paper and graph (any dropout
stalls them), P(survivors ≥ max(t, 2)) for masked on the complete graph.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import binom

from mprr.errors import ConfigurationError, MprrError, PartyDropped, RoundTimeout, SecureSumAborted
from mprr.synthetic import planted_clusters
from parties.faults import FaultPlan
from parties.router import Router
from parties.secure.run import run_secure_sum
from parties.secure.registry import ENGINES, EngineEntry
from scenarios.cost_model import engine_and_topology, pair_indicators
from scenarios.config import Choice, Field, Float, Int, List, Registered, ScenarioConfig, Schema
from scenarios.config import Table as ConfigTable
from scenarios.plots import LinePlot, Series
from scenarios.progress import Progress
from scenarios.registry import register
from scenarios.report import ScenarioResult, Table

__all__ = ["FAULT_ENGINES", "OUTCOMES", "SCHEMA", "Trial", "predicted_success", "run_secure_sum_faults", "run_trial"]

FAULT_ENGINES = tuple(name for name in ENGINES if ENGINES.lookup(name).crash_send is not None)
"""The shipped secure-sum engines this scenario sweeps: those whose registry entry gives a crash
point (:attr:`~parties.secure.registry.EngineEntry.crash_send`: paper, graph, masked,
masked-sparse; ``crash_send`` is configured per engine family, masked-sparse sharing masked's)."""
OUTCOMES = ("exact", "error", "aborted", "WRONG", "other")

_CRASH = Schema([
    Field(family, Int(min=1), ENGINES.lookup(family).crash_send,
          help=f"send at which a dropping party crashes ({family} engine family; the input goes out at send "
               f"{ENGINES.lookup(family).input_send})")
    for family in dict.fromkeys(ENGINES.lookup(name).family for name in FAULT_ENGINES)
])

SCHEMA = Schema(
    [
        Field("n", Int(min=2, max=10_000), 16, help="number of parties"),
        Field("sizes", List(Int(min=2, max=64), min_len=2, max_len=16), (3, 4, 2),
              help="attribute sizes of the parties' records (vector length Σ_{i<j}|A_i||A_j|)"),
        Field("engines", List(Registered(ENGINES), min_len=1), ("paper", "graph", "masked"),
              help="secure-sum engines to test (shipped: paper, graph, masked, masked-sparse; one of one's own "
                   "registered with a crash_send)"),
        Field("rates", List(Float(min=0.0, max=1.0), min_len=1), (0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6),
              help="dropout rates ρ"),
        Field("trials", Int(min=1, max=10_000), 10, help="trials per (engine, rate)"),
        Field("dropout_model", Choice(("binomial", "fixed")), "binomial",
              help="binomial: each party drops with probability ρ; fixed: exactly round(ρn) drop"),
        Field("crash_send", ConfigTable(_CRASH), dict(_CRASH.validate({})),
              help="per engine family, the send at which a dropping party crashes"),
        Field("degree", Int(min=2), 4, help="k of the sparse graphs (graph, masked-sparse)"),
        Field("threshold", Int(min=1), None, help="Shamir threshold t of the masked engines "
              "(default: a strict majority of the smallest holder set)"),
        Field("round_timeout", Float(min=0.0, min_exclusive=True), 0.5,
              help="seconds an actor waits for one round before declaring the missing parties dropped"),
        Field("concurrency", Int(min=1, max=1000), 10,
              help="trials run at once in one event loop (each on its own network)"),
    ]
)


# --------------------------------------------------------------------------- one trial


@dataclass(frozen=True)
class Trial:
    """Outcome of one secure sum with dropouts."""

    engine: str
    rate: float
    index: int
    dropped: tuple[int, ...]
    outcome: str
    contributors: int
    threshold: int
    seconds: float
    message: str = ""


def _entry(key: str) -> EngineEntry:
    """The registry entry of the engine ``key`` (ConfigurationError when not registered)."""
    return ENGINES.lookup(key)


def _crash_send(key: str, params: Mapping[str, Any]) -> int:
    """The configured crash point of ``key``'s family, else its entry's (an engine of one's own)."""
    entry = _entry(key)
    crash_send: int | None = dict(params["crash_send"]).get(entry.family, entry.crash_send)
    if crash_send is None:
        raise ConfigurationError(f"engine {key!r} has no crash point: give crash_send.{entry.family} or register "
                                 "it with EngineEntry(crash_send=...)")
    return crash_send


async def run_trial(key: str, params: Mapping[str, Any], vectors: np.ndarray, dropped: Sequence[int] | np.ndarray,
                    *, rate: float, index: int, seed: int) -> Trial:
    """One secure sum in which the parties ``dropped`` crash at their ``crash_send``-th send."""
    n = vectors.shape[0]
    engine, topology = engine_and_topology(key, n, degree=params["degree"], round_timeout=params["round_timeout"],
                                           threshold=params["threshold"])
    plan = FaultPlan(crash={int(p): _crash_send(key, params) for p in dropped}) if len(dropped) else None
    net = Router(n, topology=topology, faults=plan, seed=seed)
    threshold = engine.context(range(n), vectors.shape[1]).threshold if _entry(key).tolerates_dropouts else n
    start = time.perf_counter()
    outcome, contributors, message = "other", 0, ""
    try:
        result = await run_secure_sum(engine, net, vectors, session=f"f{index:015d}",
                                      timeout=20 * params["round_timeout"] + 30)
    except SecureSumAborted as exc:
        outcome, message = "aborted", str(exc)
    except (PartyDropped, RoundTimeout) as exc:
        outcome, message = "error", str(exc)
    except MprrError as exc:
        outcome, message = "other", f"{type(exc).__name__}: {exc}"
    else:
        members = list(result.contributors)
        contributors = len(members)
        expected = vectors[members].sum(axis=0, dtype=np.int64)
        exact = np.array_equal(result.total, expected) and not (set(members) & set(
            p for p in dropped if _crash_send(key, params) <= _input_send(key)))
        outcome = "exact" if exact else "WRONG"
        if not exact:
            message = f"returned sum differs from the plaintext sum of its {contributors} contributors"
    return Trial(key, rate, index, tuple(int(p) for p in dropped), outcome, contributors, threshold,
                 time.perf_counter() - start, message)


def _input_send(key: str) -> int:
    """The send that carries a party's (masked) input: a party crashing at or before it cannot
    be a contributor (:attr:`~parties.secure.registry.EngineEntry.input_send`).  paper/graph:
    the input hides in every message from the first share on; masked: send 3 (after keys and
    Shamir shares)."""
    return _entry(key).input_send


def predicted_success(key: str, n: int, rate: float, threshold: int, model: str) -> float | None:
    """Success probability from the engines' definitions (None where no simple closed form).

    An engine that stalls on a dropout (paper, graph; :attr:`~parties.secure.registry.EngineEntry.dropouts`
    ``"stall"``): every party is needed, P = P(no dropout).  One that sums the survivors above a
    threshold on the complete graph (masked; not on a sparse graph, ``degree`` among its
    parameters): the sum is recovered iff the survivors number at least max(t, 2).
    """
    entry = _entry(key)
    survivors = entry.tolerates_dropouts and "degree" not in entry.parameters
    if model == "fixed":
        drops = round(rate * n)
        if not entry.tolerates_dropouts:
            return float(drops == 0)
        if survivors:
            return float(n - drops >= max(threshold, 2))
        return None
    if not entry.tolerates_dropouts:
        return (1.0 - rate) ** n
    if survivors:
        return float(binom.cdf(n - max(threshold, 2), n, rate))
    return None


def _dropouts(n: int, rate: float, model: str, rng: np.random.Generator) -> np.ndarray:
    if model == "fixed":
        k = round(rate * n)
        return np.sort(rng.choice(n, size=k, replace=False))
    return np.flatnonzero(rng.random(n) < rate)


async def _batch(key: str, params: Mapping[str, Any], vectors: np.ndarray,
                 jobs: Sequence[tuple[float, int, np.ndarray, int]]) -> list[Trial]:
    """Run ``jobs`` (rate, index, dropped, seed) ``concurrency`` at a time."""
    out: list[Trial] = []
    step = params["concurrency"]
    for lo in range(0, len(jobs), step):
        async with asyncio.TaskGroup() as tg:
            tasks = [tg.create_task(run_trial(key, params, vectors, dropped, rate=rate, index=index, seed=seed))
                     for rate, index, dropped, seed in jobs[lo:lo + step]]
        out += [t.result() for t in tasks]
    return out


# --------------------------------------------------------------------------- runner


@register(
    "secure_sum_faults",
    schema=SCHEMA,
    description="Dropout rate vs outcome per secure-sum engine: paper/graph fail clearly, masked "
                "recovers the survivors' exact sum down to its threshold",
    engines=("actors",),
    hosts_on_runtime=False,  # every trial is a secure sum on an in-memory network of its own
)
def run_secure_sum_faults(
    config: ScenarioConfig, *, out_dir: Path, runs: int, seed: int, engine: str, progress: Progress
) -> ScenarioResult:
    """Dropout sweep (see the module docstring); ``runs`` multiplies the trials per point."""
    params = dict(config.parameters)
    params["crash_send"] = {**dict(_CRASH.validate({})), **dict(params["crash_send"])}
    n, trials = params["n"], params["trials"] * runs
    engines = list(dict.fromkeys(params["engines"]))
    for key in engines:  # every engine has a crash point, before anything runs
        _crash_send(key, params)
    rates = list(dict.fromkeys(params["rates"]))
    root = np.random.SeedSequence(seed)
    data_ss, drop_ss = root.spawn(2)
    data = planted_clusters(n, rng=np.random.default_rng(data_ss), sizes=tuple(params["sizes"]),
                            clusters=()).dataset
    vectors = pair_indicators(data.codes, data.sizes)
    # the same dropout sets for every engine (common random numbers)
    jobs = []
    for r_index, (rate, ss) in enumerate(zip(rates, drop_ss.spawn(len(rates)))):
        rng = np.random.default_rng(ss)
        for t in range(trials):
            jobs.append((rate, r_index * trials + t, _dropouts(n, rate, params["dropout_model"], rng),
                         int(rng.integers(0, 2**31))))
    results: list[Trial] = []
    started = time.perf_counter()
    with progress.task("engines", total=len(engines)) as bar:
        for key in engines:
            bar.set_status(key)
            results += asyncio.run(_batch(key, params, vectors, jobs))
            bar.advance()
    return _result(params, engines, rates, trials, results, time.perf_counter() - started, vectors.shape[1])


def _result(params: Mapping[str, Any], engines: Sequence[str], rates: Sequence[float], trials: int,
            results: Sequence[Trial], elapsed: float, length: int) -> ScenarioResult:
    n = params["n"]
    by: dict[tuple[str, float], list[Trial]] = {(t.engine, t.rate): [] for t in results}
    for t in results:
        by[(t.engine, t.rate)].append(t)
    rows: list[tuple[Any, ...]] = []
    success: dict[str, list[float]] = {}
    predicted: dict[str, list[float | None]] = {}
    for key in engines:
        success[key], predicted[key] = [], []
        for rate in rates:
            group = by[(key, rate)]
            counts = {o: sum(t.outcome == o for t in group) for o in OUTCOMES}
            threshold = group[0].threshold
            pred = predicted_success(key, n, rate, threshold, params["dropout_model"])
            rate_ok = counts["exact"] / len(group)
            success[key].append(rate_ok)
            predicted[key].append(pred)
            recovered = [t.contributors for t in group if t.outcome == "exact"]
            rows.append((
                key, rate, float(np.mean([len(t.dropped) for t in group])), len(group),
                counts["exact"], counts["error"], counts["aborted"], counts["WRONG"], counts["other"],
                rate_ok, pred, threshold if _entry(key).tolerates_dropouts else None,
                float(np.mean(recovered)) if recovered else None,
                float(np.median([t.seconds for t in group])),
            ))
    wrong = [t for t in results if t.outcome == "WRONG"]
    other = [t for t in results if t.outcome == "other"]
    table = Table(
        key="outcomes",
        title=f"Outcome per engine and dropout rate (n = {n}, {trials} trials per point)",
        columns=("engine", "dropout rate", "mean dropped", "trials", "exact", "clear error",
                 "aborted", "WRONG", "other", "success rate", "predicted", "threshold t",
                 "mean contributors", "median seconds"),
        rows=rows,
        formats={"dropout rate": ".2f", "mean dropped": ".2f", "success rate": ".2f",
                 "predicted": ".3f", "mean contributors": ".1f", "median seconds": ".2f"},
        caption="exact: the returned sum equals the plaintext sum of the contributors' vectors; "
                "clear error: PartyDropped / RoundTimeout; aborted: SecureSumAborted (below the "
                "threshold); WRONG: a returned sum that is not exact (must be 0). predicted: "
                "(1 − ρ)^n for paper and graph, P(survivors ≥ max(t, 2)) for masked on the "
                "complete graph; — where no simple closed form exists (sparse masked).",
    )
    figures = [LinePlot(
        filename="success_vs_dropout.png",
        title=f"Secure sum success rate vs dropout rate (n = {n})",
        xlabel="dropout rate ρ",
        ylabel="share of trials returning the exact sum",
        series=tuple(
            [Series(key, rates, success[key], style=_entry(key).line) for key in engines]
            + [Series(f"{key} predicted", rates, [np.nan if p is None else p for p in predicted[key]],
                      style=":") for key in engines if any(p is not None for p in predicted[key])]
        ),
        caption=f"Markers: measured share of {trials} trials per point (no whiskers; paper and graph "
                "coincide: both need every party); dotted: predicted from the engines' definitions "
                "((1 − ρ)^n, or P(survivors ≥ max(t, 2)) for masked).",
        legend="below",  # inside, it covered the masked predicted curve
    )]
    examples = {}
    for key in engines:
        for outcome in ("error", "aborted", "other"):
            hit = next((t for t in results if t.engine == key and t.outcome == outcome), None)
            if hit is not None:
                examples[f"{key}/{outcome}"] = hit.message
    metrics = {
        "n": n,
        "vector_length": length,
        "trials_per_point": trials,
        "outcomes": {key: {f"{rate:g}": {o: sum(t.outcome == o for t in by[(key, rate)]) for o in OUTCOMES}
                           for rate in rates} for key in engines},
        "success_rate": {key: dict(zip((f"{r:g}" for r in rates), success[key])) for key in engines},
        "predicted_success": {key: dict(zip((f"{r:g}" for r in rates), predicted[key])) for key in engines},
        "wrong_sums": len(wrong),
        "other_errors": len(other),
        "every_returned_sum_exact": not wrong,
        "example_messages": examples,
        "wall_seconds": elapsed,
    }
    summary = [
        f"{len(results)} secure sums with dropouts (n = {n}, vectors of {length} cells), {elapsed:.1f} s; "
        f"returned sums all exact: {'yes' if not wrong else f'NO ({len(wrong)} wrong)'}"
        + (f"; {len(other)} unexpected errors" if other else ""),
    ]
    for key in engines:
        summary.append(f"{key}: success rate by dropout rate " + ", ".join(
            f"{r:g}→{s:.0%}" for r, s in zip(rates, success[key])))
    notes = [
        f"Crash points (send number at which a dropping party crashes): {dict(params['crash_send'])}; "
        f"dropout model {params['dropout_model']}; round timeout {params['round_timeout']:g} s.",
        "paper and graph engines need every party: a dropout ends the run with a clear PartyDropped "
        "error naming the missing parties, never a count. masked (Bonawitz et al. 2017) recovers the "
        "exact sum of the survivors while at least max(t, 2) remain, and aborts below.",
    ]
    if other:
        notes.append("Unexpected errors: " + "; ".join(sorted({t.message[:160] for t in other}))[:800])
    effective = dict(params)
    if effective["threshold"] is None:  # record the threshold each masked engine used, not null
        effective["threshold"] = {t.engine: t.threshold for t in results
                                  if _entry(t.engine).tolerates_dropouts} or None
    return ScenarioResult(metrics=metrics, tables=[table], figures=figures, notes=notes, summary=summary,
                          parameters=effective)
