"""``communication_cost``: messages, bytes and rounds vs n, m and domain size, measured and closed form.

Two families of measurements, each set beside an exact closed form derived from the message
sizes of our codec (:mod:`parties.wire.codec`; the derivations are in ``docs/cost_model.md``):

**Secure-sum engines** (what dependence methods 4.2 and 4.3 of the main paper cost).  Every
party feeds the one-hot vector of its value pairs — one cell per value combination of every
attribute pair, ``L = Σ_{i<j} |A_i||A_j|`` cells, exactly ``m(m−1)/2`` ones — into
:func:`parties.secure.run.run_secure_sum` on an :class:`~parties.router.Router`
(4.2 feeds the true pairs; 4.3 the RR-randomized pairs: same vector length, same traffic).
Engines: ``paper`` (main paper 4.2, batched: one vector of all L combinations per message),
``paper-per-combination`` (the paper's text: one run per combination), ``graph`` (additive
shares to k neighbours, relayed by the controller under AEAD), ``masked`` (Bonawitz et al.
2017, complete graph) and ``masked-sparse`` (k-regular neighbour graph, Bell et al. 2020).
Each measured total equals the closed form exactly; the sum is checked against the plaintext
tally.

**RR phases in the actor simulator** (:func:`parties.simulate.simulate`): RR-Independent and
RR-Clusters with dependence method 4.1 — one request per party and phase from the controller,
one reply of one code per unit from each party: O(nm) bytes at the controller, O(m) per party
(main paper 4.1) — against :func:`scenarios.cost_model.rr_closed_form`.

**Dependence methods end to end**: RR-Clusters in the actor simulator with dependence 4.1, 4.2
(true pairs into a secure sum) and 4.3 (randomized pairs into a secure sum) with every engine,
at ``method_n_values`` parties, against the same closed forms.

Sweeps: n (with the base attribute sizes), the number of attributes m (sizes ``d``), and the
domain size d (``m`` attributes of d categories).  Log-log plots of measured points and
closed-form lines (:mod:`scenarios.communication_figures`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from mprr.synthetic import DEFAULT_SIZES, planted_clusters
from parties.runtime import Runtime
from parties.secure.registry import ENGINES
from scenarios.config import Choice, Field, Float, Int, List, Registered, ScenarioConfig, Schema
from scenarios.config import Table as ConfigTable
from scenarios.cost_model import (
    ENGINE_KEYS,
    ClosedForm,
    Measurement,
    RRMeasurement,
    closed_form,
    measure_rr,
    measure_secure_sum,
    pair_cells,
    pair_indicators,
)
from scenarios.communication_figures import loglog
from scenarios.plots import FigureSpec, log_log_slope
from scenarios.progress import Progress
from scenarios.registry import register
from scenarios.report import ScenarioResult, Table, counted_by, plural

__all__ = ["SCHEMA", "run_communication_cost", "rr_jobs", "sweep_points"]

def rr_jobs(params: Mapping[str, Any]) -> list[tuple[str, str, tuple[int, ...], int, int | None, str, str]]:
    """(protocol, sweep, sizes, n, d, dependence, engine) of the actor-simulator runs: the RR
    n / m / d sweeps (4.1), then RR-Clusters with every dependence method and engine at
    ``method_n_values`` (engines within their ``max_n``; an engine run once per cell, such as
    paper-per-combination, is left out)."""
    base = tuple(params["sizes"])
    pts: list[tuple[str, tuple[int, ...], int, int | None]] = [("n", base, n, None) for n in params["rr_n_values"]]
    pts += [("m", (4,) * m, params["rr_n_fixed"], 4) for m in params["rr_m_values"]]
    pts += [("d", (d,) * 4, params["rr_n_fixed"], d) for d in params["rr_d_values"]]
    jobs: list[tuple[str, str, tuple[int, ...], int, int | None, str, str]] = [
        (proto, *pt, "4.1", "") for pt in pts for proto in params["rr_protocols"]
    ]
    for n in params["method_n_values"]:
        jobs.append(("RR-Clusters", "method", base, n, None, "4.1", ""))
        for dependence in ("4.2", "4.3"):
            for key in params["engines"]:
                point = Point("method", n, base)
                if not ENGINES.lookup(key).per_cell and not _skip_reason(key, point, params):
                    jobs.append(("RR-Clusters", "method", base, n, None, dependence, key))
    return jobs


# --------------------------------------------------------------------------- schema

_MAX_N = Schema([
    Field("paper", Int(min=2), 128, help="largest n measured with the batched paper engine"),
    Field("paper-per-combination", Int(min=2), 8, help="largest n, paper engine one run per combination"),
    Field("graph", Int(min=2), 1024, help="largest n, graph engine (relay through the controller)"),
    Field("graph-direct", Int(min=2), 1024, help="largest n, graph engine over direct party links"),
    Field("masked", Int(min=2), 64, help="largest n, masked engine on the complete graph"),
    Field("masked-sparse", Int(min=2), 1024, help="largest n, masked engine on a k-regular graph"),
])

SCHEMA = Schema(
    [
        Field("n_values", List(Int(min=2, max=1_000_000), min_len=1), (8, 16, 32, 64, 128, 256, 512, 1024),
              help="numbers of parties of the n sweep (base attribute sizes)"),
        Field("sizes", List(Int(min=2, max=64), min_len=2, max_len=16), DEFAULT_SIZES,
              help="base attribute sizes of the n sweep (L = Σ_{i<j}|A_i||A_j|)"),
        Field("engines", List(Registered(ENGINES), min_len=1), ENGINE_KEYS,
              help="secure-sum engines measured (the shipped ones, or one's own registered)"),
        Field("degree", Int(min=2), 8, help="k of the sparse graphs (graph, masked-sparse); n·k must be even"),
        Field("max_n", ConfigTable(_MAX_N), dict(_MAX_N.validate({})),
              help="per engine, the largest n actually run (larger n: closed form only)"),
        Field("per_combination_max_messages", Int(min=1), 60_000,
              help="skip paper-per-combination points whose closed form exceeds this many messages"),
        Field("n_fixed", Int(min=2), 32, help="n of the m and d sweeps"),
        Field("m_values", List(Int(min=2, max=16), min_len=1), (2, 3, 4, 6, 8),
              help="numbers of attributes of the m sweep"),
        Field("m_sweep_size", Int(min=2, max=64), 4, help="categories per attribute in the m sweep"),
        Field("d_values", List(Int(min=2, max=64), min_len=1), (2, 4, 8, 16),
              help="categories per attribute of the d (domain size) sweep"),
        Field("d_sweep_m", Int(min=2, max=16), 4, help="number of attributes in the d sweep"),
        Field("round_timeout", Int(min=1), 60, help="seconds an actor waits for one round"),
        Field("rr_protocols", List(Choice(("RR-Independent", "RR-Clusters")), min_len=0),
              ("RR-Independent", "RR-Clusters"), help="RR protocols measured in the actor simulator"),
        Field("rr_n_values", List(Int(min=2, max=1_000_000)), (100, 300, 1000, 3000),
              help="n of the RR sweep (base attribute sizes)"),
        Field("rr_n_fixed", Int(min=2), 500, help="n of the RR m and d sweeps"),
        Field("rr_m_values", List(Int(min=2, max=32)), (2, 4, 8, 16), help="m of the RR m sweep"),
        Field("rr_d_values", List(Int(min=2, max=256)), (2, 4, 16, 64), help="d of the RR d sweep (4 attributes)"),
        Field("p", Float(min=0.0, max=1.0, min_exclusive=True, max_exclusive=True), 0.7,
              help="keep probability of the RR matrices (main paper 6.3.1)"),
        Field("Tv", Int(min=1), 100, help="RR-Clusters, Algorithm 1: largest cluster domain"),
        Field("Td", Float(min=0.0, max=1.0), 0.2, help="RR-Clusters, Algorithm 1: smallest dependence to merge"),
        Field("method_n_values", List(Int(min=2, max=100_000)), (16, 32, 64),
              help="n of the end-to-end RR-Clusters runs with dependence 4.1 / 4.2 / 4.3 and every engine"),
    ]
)


# --------------------------------------------------------------------------- sweeps


@dataclass(frozen=True)
class Point:
    """One sweep point: which sweep, n and attribute sizes (d: categories per attribute)."""

    sweep: str
    n: int
    sizes: tuple[int, ...]
    d: int | None = None

    @property
    def L(self) -> int:
        return pair_cells(self.sizes)


def sweep_points(params: Mapping[str, Any]) -> list[Point]:
    """The n, m and d sweeps of the secure sums (vectors of the parties' true value pairs)."""
    base = tuple(params["sizes"])
    points = [Point("n", n, base) for n in params["n_values"]]
    points += [Point("m", params["n_fixed"], (params["m_sweep_size"],) * m, params["m_sweep_size"])
               for m in params["m_values"]]
    points += [Point("d", params["n_fixed"], (d,) * params["d_sweep_m"], d) for d in params["d_values"]]
    return points


def _skip_reason(key: str, point: Point, params: Mapping[str, Any]) -> str:
    limit = dict(params["max_n"]).get(key)  # an engine of one's own without a max_n: every point
    if limit is not None and point.n > limit:
        return f"n > max_n.{key} = {limit}"
    if ENGINES.lookup(key).per_cell:  # one run per cell: its message count grows with L
        msgs = closed_form(key, point.n, point.L).messages
        if msgs > params["per_combination_max_messages"]:
            return f"{msgs:,} messages > per_combination_max_messages"
    if "degree" in ENGINES.lookup(key).parameters:  # on a degree-regular graph (sized_engine)
        k = min(params["degree"], point.n - 1)
        if k < point.n - 1 and (point.n * k) % 2:
            return f"no {k}-regular graph on n = {point.n} parties (n·k odd)"
    return ""


def _vectors(point: Point, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The parties' one-hot true-pair vectors (main paper 4.2) and their exact column sums."""
    data = planted_clusters(point.n, rng=np.random.default_rng(seed), sizes=point.sizes, clusters=()).dataset
    vectors = pair_indicators(data.codes, point.sizes)
    return vectors, vectors.sum(axis=0, dtype=np.int64)


# --------------------------------------------------------------------------- runner


@register(
    "communication_cost",
    schema=SCHEMA,
    description="Messages, bytes and rounds vs n, m and domain size for each secure-sum engine and "
                "dependence method, measured against the closed forms",
    engines=("actors",),
)
def run_communication_cost(
    config: ScenarioConfig, *, out_dir: Path, runs: int, seed: int, engine: str, progress: Progress,
    runtime: Runtime | None = None,
) -> ScenarioResult:
    """Measure every engine at every sweep point (see the module docstring); the actor-simulator
    runs host their parties on ``runtime`` (``None``: memory)."""
    params = dict(config.parameters)
    params["max_n"] = {**dict(_MAX_N.validate({})), **dict(params["max_n"])}
    engines = list(dict.fromkeys(params["engines"]))
    points = sweep_points(params)
    seeds = np.random.SeedSequence(seed).spawn(len(points))
    rows: list[tuple[Point, str, Measurement | None, ClosedForm, str]] = []
    started = time.perf_counter()
    with progress.task("secure sums", total=len(points) * len(engines)) as bar:
        for p_index, point in enumerate(points):
            vectors = expected = None
            for key in engines:
                bar.set_status(f"{point.sweep} {key} n={point.n} L={point.L}")
                reason = _skip_reason(key, point, params)
                closed = closed_form(key, point.n, point.L, degree=params["degree"])
                measured = None
                if not reason:
                    if vectors is None or expected is None:
                        vectors, expected = _vectors(point, int(seeds[p_index].generate_state(1)[0]))
                    measured = measure_secure_sum(
                        key, vectors, expected, sweep=point.sweep, m=len(point.sizes), d=point.d,
                        degree=params["degree"], round_timeout=params["round_timeout"],
                        index=len(rows))
                rows.append((point, key, measured, closed, reason))
                bar.advance()
    rr: list[RRMeasurement] = []
    jobs = rr_jobs(params)
    rr_seeds = np.random.SeedSequence([seed, 1]).spawn(max(1, len(jobs)))
    with progress.task("actor simulator", total=len(jobs)) as bar:
        for (proto, sweep, sizes, n, d, dependence, key), ss in zip(jobs, rr_seeds):
            bar.set_status(f"{sweep} {proto} {dependence} {key} n={n} m={len(sizes)}")
            rr.append(measure_rr(proto, sizes, n, sweep=sweep, d=d, params=params,
                                 seed=int(ss.generate_state(1)[0]), dependence=dependence, engine=key,
                                 runtime=runtime))
            bar.advance()
    elapsed = time.perf_counter() - started
    return _result(params, engines, rows, rr, elapsed, None if runtime is None else runtime.options())


def _secure_sums_counted_by(where: Mapping[str, Any] | None) -> str:
    """Who counted the secure sums of the first table: always the in-memory network (they run
    alone in this process); on a remote runtime, say that it placed only the actor simulator's
    parties."""
    text = "Measured: counted by the in-memory network (every message encoded by the codec)"
    if where is None or counted_by(where) == counted_by(None):
        return text + ". "
    return (f"{text}: these secure sums run alone in this process whatever the runtime; the "
            f"{where['runtime']} runtime hosted the parties of the actor-simulator runs only. ")


def _rr_outputs(rr: Sequence[RRMeasurement], where: Mapping[str, Any] | None
                ) -> tuple[list[Table], list[FigureSpec]]:
    """The RR table and its log-log figure (controller and busiest party vs n, m, d)."""
    rows = []
    for r in rr:
        got, c = r.measured(), r.closed
        rows.append((r.sweep, r.protocol, r.dependence, r.engine or None,
                     r.n, r.m, r.d, len(r.clusters), got["messages"], c.messages,
                     got["bytes"], c.bytes, got["rounds"], c.rounds, got["party_bytes"], c.party_bytes,
                     got["controller_bytes"], c.controller_bytes, "= closed form" if r.matches() else "DIFFERS",
                     r.seconds))
    table = Table(
        key="rr_measured_vs_closed_form",
        title="RR-Independent and RR-Clusters in the actor simulator: measured vs closed form",
        columns=("sweep", "protocol", "dependence", "engine", "n", "m", "d", "clusters", "messages",
                 "messages (closed)", "bytes",
                 "bytes (closed)", "rounds", "rounds (closed)", "max party bytes", "party bytes (closed)",
                 "controller bytes", "controller bytes (closed)", "check", "seconds"),
        rows=rows, formats={"seconds": ".2f"},
        caption=f"Measured: {counted_by(where)} (every message encoded by the codec). "
                "Closed form: scenarios.cost_model.rr_closed_form (one ReleaseRequest per party and phase, "
                "one RandomizedValues reply of one code per unit; 4.2 / 4.3 add SecureRelease, Ack, "
                "SecureSumStart and the secure sum); RR-Clusters given the clusters Algorithm 1 announced. "
                "Main paper 4.1: O(nm) for the controller, O(m) per party.",
    )
    panels, by_sweep = [], {}
    axes: tuple[tuple[str, str, Callable[[RRMeasurement], int]], ...] = (
        ("n", "parties n", lambda r: r.n), ("m", "attributes m (4 categories)", lambda r: r.m),
        ("d", "categories d (4 attributes)", lambda r: r.d or 0))
    for sweep, xlabel, x_of in axes:
        series: dict[str, tuple[Sequence[float], Sequence[float], Sequence[float], Sequence[float]]] = {}
        for proto in dict.fromkeys(r.protocol for r in rr):
            sel = sorted((r for r in rr if r.sweep == sweep and r.protocol == proto), key=x_of)
            for who, attr in (("controller", "controller_bytes"), ("party", "party_bytes")):
                xs = [x_of(r) for r in sel]
                series[f"{proto} {who}"] = (xs, [getattr(r.closed, attr) for r in sel], xs,
                                            [r.measured()[attr] for r in sel])
        panels.append((sweep, xlabel, "bytes sent per actor"))
        by_sweep[sweep] = series
    figure = loglog("rr_cost.png", "RR phases in the actor simulator (main paper 4.1)", panels, by_sweep,
                     "Markers: measured; dashed: closed form. Bytes sent by the controller, and by the party "
                     "that sent the most. The controller sends O(nm) bytes, each party O(m), independent of n.")
    return [table], ([figure] if rr else [])


def _methods_table(params: Mapping[str, Any], rr: Sequence[RRMeasurement], where: Mapping[str, Any] | None
                   ) -> Table:
    """RR-Clusters end to end with dependence 4.1, 4.2 and 4.3 and every engine (base sizes)."""
    privacy = {"4.1": "ε-DP, linkable: Σ ε_A", "4.2": "exact tables, ε = ∞", "4.3": "randomized pairs, unlinkable"}
    out = []
    for r in rr:
        if r.sweep != "method" or r.dependence is None:
            continue
        got = r.measured()
        dep = sum(c.bytes for ph, c in r.stats.by_phase.items() if ph != "clusters")
        out.append((r.dependence, r.engine or "— (RR per attribute)", r.n, got["messages"], got["bytes"], dep,
                    got["rounds"], got["party_bytes"], got["controller_bytes"],
                    "= closed form" if r.matches() else "DIFFERS", privacy[r.dependence], r.seconds))
    return Table(
        key="dependence_methods",
        title=f"RR-Clusters end to end by dependence method and engine (actor simulator, base sizes, "
              f"L = {pair_cells(params['sizes'])})",
        columns=("method", "secure-sum engine", "n", "messages", "bytes", "dependence-phase bytes", "rounds",
                 "max party bytes", "controller bytes", "check", "privacy of the dependence phase", "seconds"),
        rows=out,
        formats={"seconds": ".2f"},
        caption=f"Whole runs (dependence phase, Algorithm 1, cluster phase) in the actor simulator, "
                f"{counted_by(where)}; the check "
                "compares messages, bytes, rounds, the busiest party and the controller with "
                "scenarios.cost_model.rr_closed_form. 4.2 / 4.3: SecureRelease + Ack + SecureSumStart per "
                "party, then the engine's secure sum of the L-cell pair vectors.",
    )


def _largest_masked(measured: Sequence[tuple[Point, str, Measurement, ClosedForm]]
                    ) -> list[tuple[str, Point, Measurement]]:
    """The n-sweep measurement with the largest n of each engine with a consistency check (masked)."""
    best: dict[str, tuple[Point, Measurement]] = {}
    for p, k, m, _ in measured:
        if m.measured.consistency_messages and p.sweep == "n" and (k not in best or p.n > best[k][0].n):
            best[k] = (p, m)
    return [(k, p, m) for k, (p, m) in sorted(best.items())]


_TABLE_FIELDS = ("messages", "bytes", "rounds", "party_bytes", "controller_bytes", "consistency_messages",
                 "consistency_bytes")


def _result(params: Mapping[str, Any], engines: Sequence[str],
            rows: Sequence[tuple[Point, str, Measurement | None, ClosedForm, str]],
            rr: Sequence[RRMeasurement], elapsed: float, where: Mapping[str, Any] | None = None
            ) -> ScenarioResult:
    measured = [(p, k, m, c) for p, k, m, c, _ in rows if m is not None]
    mismatches = []
    for p, k, got, c in measured:
        bad = [name for name, ok in got.matches().items() if not ok]
        if bad:
            mismatches.append((p, k, bad))
    wrong_sums = [(p, k) for p, k, m, _ in measured if not m.exact_sum]

    totals_rows, load_rows = [], []
    for p, k, m, c, reason in rows:
        flags = "" if m is None else ", ".join(name for name, ok in m.matches().items() if not ok)

        def pairs(fields: Sequence[str]) -> list[Any]:
            return [x for f in fields for x in (None if m is None else getattr(m.measured, f), getattr(c, f))]

        totals_rows.append((
            p.sweep, k, p.n, len(p.sizes), p.d, p.L, *pairs(_TABLE_FIELDS[:3]),
            None if m is None else m.exact_sum,
            reason or ("= closed form" if not flags else f"differs: {flags}"),
            None if m is None else m.seconds,
        ))
        load_rows.append((p.sweep, k, p.n, p.L, *pairs(_TABLE_FIELDS[3:])))
    table = Table(
        key="measured_vs_closed_form",
        title="Secure sums: measured vs closed form",
        columns=("sweep", "engine", "n", "m", "d", "L", "messages", "messages (closed)", "bytes",
                 "bytes (closed)", "rounds", "rounds (closed)", "exact sum", "check", "seconds"),
        rows=totals_rows,
        formats={"seconds": ".2f"},
        caption=_secure_sums_counted_by(where)
                + "Closed form: docs/cost_model.md, from the codec's field sizes (session ids of 16 "
                "characters). L = Σ_{i<j}|A_i||A_j| cells per party vector. 'exact sum': the "
                "result equals the plaintext tally of the parties' vectors; 'check': every measured "
                "number of this row and of the next table equals its closed form. Rows without measured "
                "values are beyond the configured max_n (closed form only). Load per actor and the "
                "masked engines' consistency check: next table.",
    )
    per_actor = Table(
        key="load_vs_closed_form",
        title="Secure sums: load per actor and consistency check, measured vs closed form",
        columns=("sweep", "engine", "n", "L", "max party bytes", "party bytes (closed)", "controller bytes",
                 "controller bytes (closed)", "consistency msgs", "consistency msgs (closed)", "consistency bytes",
                 "consistency bytes (closed)"),
        rows=load_rows,
        caption="The same runs as the table above: bytes sent by the busiest party and by the controller, "
                "and the masked engines' consistency check (SurvivorSet, SurvivorTags, and the MAC'd views in "
                "UnmaskRequest; Bonawitz et al. 2017, active adversary), which the totals above include.",
    )

    def series(sweep: str, x_of: Callable[[Point], float], y_of: Callable[[Any], float]
               ) -> dict[str, tuple[Sequence[float], Sequence[float], Sequence[float], Sequence[float]]]:
        out: dict[str, tuple[Sequence[float], Sequence[float], Sequence[float], Sequence[float]]] = {}
        for key in engines:
            sel = [(p, m, c) for p, k, m, c, _ in rows if k == key and p.sweep == sweep]
            sel.sort(key=lambda t: x_of(t[0]))
            out[key] = ([x_of(p) for p, _, _ in sel], [y_of(c) for _, _, c in sel],
                        [x_of(p) for p, m, _ in sel if m is not None],
                        [y_of(m.measured) for _, m, _ in sel if m is not None])
        return out

    n_series = {
        "messages": series("n", lambda p: p.n, lambda r: r.messages),
        "bytes": series("n", lambda p: p.n, lambda r: r.bytes),
        "party": series("n", lambda p: p.n, lambda r: r.party_bytes),
        "controller": series("n", lambda p: p.n, lambda r: r.controller_bytes),
    }
    domain_series = {
        "d": series("d", lambda p: p.L, lambda r: r.bytes),
        "m": series("m", lambda p: p.L, lambda r: r.bytes),
    }
    figures = [
        loglog("secure_sum_vs_n.png", f"Secure sums vs n (L = {pair_cells(params['sizes'])} cells)",
                [("messages", "parties n", "messages (total)"), ("bytes", "parties n", "bytes (total)")],
                n_series, "Markers: measured; dashed: closed form (docs/cost_model.md)."),
        loglog("load_per_actor_vs_n.png", "Load per actor vs n",
                [("party", "parties n", "bytes sent by the busiest party"),
                 ("controller", "parties n", "bytes sent by the controller")],
                n_series, "The paper engine's per-party load grows as O(nL) (main paper 4.2); the "
                "graph and masked-sparse engines' stay O(L + k). The controller sends nothing in "
                "the paper and graph-direct engines (no points on the right)."),
        loglog("secure_sum_vs_domain.png", f"Secure sums vs domain size (n = {params['n_fixed']})",
                [("d", "L = Σ|A_i||A_j| (d sweep)", "bytes (total)"),
                 ("m", "L = Σ|A_i||A_j| (m sweep)", "bytes (total)")],
                domain_series, f"d sweep: {params['d_sweep_m']} attributes of d = {list(params['d_values'])} "
                f"categories; m sweep: m = {list(params['m_values'])} attributes of "
                f"{params['m_sweep_size']} categories."),
    ]

    slopes = {key: {"party_bytes_vs_n": log_log_slope(*n_series["party"][key][2:4]),
                    "total_bytes_vs_n": log_log_slope(*n_series["bytes"][key][2:4])} for key in engines}
    metrics = {
        "points": len(rows),
        "measured": len(measured),
        "closed_form_only": len(rows) - len(measured),
        "all_equal_closed_form": not mismatches,
        "mismatches": [{"sweep": p.sweep, "engine": k, "n": p.n, "L": p.L, "differs": bad}
                       for p, k, bad in mismatches],
        "all_sums_exact": not wrong_sums,
        "log_log_slopes": slopes,
        "engine_cost_equal_closed_form": all(
            m.engine_cost[:2] == (c.messages, c.bytes) for _, _, m, c in measured),
        "wall_seconds": elapsed,
    }
    traffic = {
        f"{p.sweep}/{k}/n={p.n}/L={p.L}": {
            "messages": t.messages, "bytes": t.bytes, "rounds": t.rounds,
            "party_max": {"messages": t.party_messages, "bytes": t.party_bytes},
            "controller": {"messages": t.controller_messages, "bytes": t.controller_bytes},
            "consistency": {"messages": t.consistency_messages, "bytes": t.consistency_bytes},
            "closed_form": c.headline(),
        }
        for p, k, t, c in ((p, k, m.measured, c) for p, k, m, c in measured)
    }
    summary = [
        f"{plural(len(measured), 'secure sum')} measured ({plural(len(rows) - len(measured), 'point')} closed form "
        "only), "
        f"{elapsed:.1f} s; every sum exact: {'yes' if not wrong_sums else 'NO'}",
        "measured = closed form (messages, bytes, rounds, busiest party, controller): "
        + ("all points" if not mismatches else
           f"{len(measured) - len(mismatches)}/{len(measured)}; differs at "
           + "; ".join(sorted({f'{k} ({", ".join(bad)})' for _, k, bad in mismatches}))),
        "consistency check (masked engines, largest measured n): " + (", ".join(
            f"{k} n = {p.n}: {m.measured.consistency_messages} messages, {m.measured.consistency_bytes:,} B "
            f"({100 * m.measured.consistency_bytes / m.measured.bytes:.1f} % of the bytes)"
            for k, p, m in _largest_masked(measured)) or "not measured"),
        "log-log slope of the busiest party's bytes vs n: " + ", ".join(
            f"{k} {s['party_bytes_vs_n']:.2f}" for k, s in slopes.items() if s["party_bytes_vs_n"] is not None),
    ]
    notes = [
        "Main paper 4.2/4.3: the secure sum is run for every value combination of every attribute "
        "pair, cost O(Σ_{i<j}|A_i||A_j|·n) per party. Our paper engine sends per party (n−1) shares "
        "and n broadcasts (n−1 peers + the controller) of L cells, batched in one vector per message "
        "(paper) or one message per combination (paper-per-combination): per party (2n−1)·L cells, "
        "in total n(2n−1)·L.",
        "graph: additive shares to k neighbours of a random k-regular graph, relayed by the "
        "controller under ChaCha20-Poly1305 (the network is a star); graph-direct: the same over "
        "direct party links. masked: Bonawitz et al. 2017 on the complete graph (5 rounds, "
        "O(n) Shamir shares per party); masked-sparse: the k-regular variant of Bell et al. 2020. "
        "Both run the active-adversary consistency check: each survivor states the survivor set "
        "it was told, MAC'd (16-byte keyed BLAKE2b tags) for every party of its 2-hop neighbourhood, "
        "and before revealing a share checks the stated views of a majority of the owner's holders "
        "(n views on the complete graph, O(k^2) on the sparse one).",
        "Traffic is deterministic given n, the sizes and the engine: runs and seed change only the "
        "parties' data and key material, never a count.",
        "4.2 and 4.3 run the same secure sum: the vectors have the same length whatever their content "
        "(true pairs vs randomized pairs); only their SecureRelease requests differ (4.3 carries one "
        "matrix specification per attribute pair; no ε travels: each party computes it).",
    ]
    if mismatches:
        notes.append("Differences from the closed form: " + "; ".join(
            f"{k} at n = {p.n}, L = {p.L}: {', '.join(bad)}" for p, k, bad in mismatches[:12])
            + (" (rounds are counted by the network from explicit round marks; an engine that does "
               "not mark its rounds gets one implicit round per change of phase between sends)"
               if any("rounds" in bad for _, _, bad in mismatches) else ""))
    rr_tables, rr_figures = _rr_outputs(rr, where)
    rr_bad = [r for r in rr if not r.matches()]
    metrics["rr_measured"] = len(rr)
    metrics["rr_all_equal_closed_form"] = not rr_bad
    metrics["rr_mismatches"] = [{"protocol": r.protocol, "sweep": r.sweep, "n": r.n, "m": r.m,
                                 "measured": r.measured()} for r in rr_bad]
    for r in rr:
        traffic[f"rr/{r.sweep}/{r.protocol}/n={r.n}/m={r.m}" + (f"/d={r.d}" if r.d else "")] = {
            **r.measured(), "clusters": [list(c) for c in r.clusters],
            "closed_form": r.closed.headline()}
    if rr:
        summary.append(f"{plural(len(rr), 'run')} in the actor simulator (RR sweeps; RR-Clusters with 4.1 / 4.2 / "
                       "4.3 and "
                       f"every engine): measured = closed form at {len(rr) - len(rr_bad)}/{len(rr)}")
        biggest = max((r.n for r in rr if r.sweep == "method"), default=None)
        if biggest is not None:
            parts = [f"{r.dependence}{'/' + r.engine if r.engine else ''} {r.measured()['bytes'] / 1e3:,.0f} kB"
                     for r in rr if r.sweep == "method" and r.n == biggest]
            summary.append(f"RR-Clusters at n = {biggest}, total bytes: " + ", ".join(parts))
    tables = [table, per_actor, *rr_tables, _methods_table(params, rr, where)]
    return ScenarioResult(metrics=metrics, traffic=traffic, tables=tables, figures=[*figures, *rr_figures],
                          notes=notes, summary=summary)
