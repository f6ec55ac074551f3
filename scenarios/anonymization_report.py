"""The report of ``local_anonymization``: metrics, privacy, traffic, tables, figures and the printed summary.

:func:`build_result` turns the runs of :mod:`scenarios.local_anonymization` (RR-Clusters and
RR-Independent on either engine, each followed by RR-Adjustment) into a
:class:`~scenarios.report.ScenarioResult`:

- metrics: clusters found vs planted, count-query relative errors (main paper 6.5, eq. 16),
  RR-Adjustment convergence, timings;
- privacy: one :func:`scenarios.privacy_report.privacy_section` per base protocol (ε per party
  and per phase under every composition policy, β, "no DP guarantee", refusals, replays), plus
  the attribute / cluster ε of the matrices;
- traffic (actors engine): measured messages, bytes, rounds beside the closed form of
  :func:`scenarios.cost_model.rr_closed_form`, and the controller's view;
- tables, figures (query-error boxes, dependence heat maps and ε per phase from
  :mod:`scenarios.anonymization_figures`; bytes per phase) and the short summary the command line
  prints.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mprr.adjustment import Adjustment
from mprr.data import Dataset
from mprr.dependence import bivariate_tables, dependence_matrix, noise_cramers_v
from mprr.errors import ConfigurationError
from mprr.metrics import CountQuery
from mprr.protocols.result import ProtocolResult
from parties.transport import CONTROLLER
from scenarios.anonymization_figures import dependence_plot, epsilon_plot, query_error_boxplot
from scenarios.cost_model import ClosedForm, rr_closed_form
from scenarios.montecarlo import median_over_runs
from scenarios.plots import BarPlot, FigureSpec, phase_colour
from scenarios.privacy_report import (
    budget_note,
    budget_statement,
    privacy_section,
    privacy_summary_lines,
    privacy_table,
)
from scenarios.protocol_run import ProtocolRun
from scenarios.report import RR_INDEPENDENT_JOINT, ScenarioResult, Table, counted_by, plural

log = logging.getLogger(__name__)

__all__ = ["NOISE_FACTOR", "build_result", "noise_warning"]


def _clusters(result: ProtocolResult) -> list[list[int]]:
    if result.clusters is None:
        raise ConfigurationError(f"{result.protocol} reports no clusters; the report needs RR-Clusters")
    return [list(c) for c in result.clusters]


def _adjustment(result: ProtocolResult) -> Adjustment:
    if result.adjustment is None:
        raise ConfigurationError(f"{result.protocol} ran no adjustment; the report needs RR-Adjustment")
    return result.adjustment


def _stats(values: np.ndarray) -> dict[str, float]:
    return {"min": float(np.min(values)), "median": float(np.median(values)), "max": float(np.max(values))}


def _true_dependence(dataset: Dataset) -> np.ndarray:
    tables = bivariate_tables(dataset.codes, dataset.sizes)
    return dependence_matrix(tables, dataset.schema.kinds)


def _fmt_clusters(clusters: Sequence[Sequence[int]] | None, names: Sequence[str] | None = None) -> str:
    if clusters is None:
        return "—"
    label = (lambda a: str(a)) if names is None else (lambda a: names[a])  # noqa: E731
    return " ".join("{" + ",".join(label(a) for a in c) + "}" for c in clusters)


def _human_bytes(n: float) -> str:
    return f"{n:.0f} B" if n < 1000 else f"{n / 1e3:.1f} kB" if n < 1e6 else f"{n / 1e6:.1f} MB"


def _traffic_dict(stats: Any, closed: ClosedForm) -> dict[str, Any]:
    """Measured traffic of one actor run beside its closed form (:func:`rr_closed_form`)."""
    counted, ctrl_recv = ClosedForm.counted(stats), stats.received_by(CONTROLLER)
    return {
        "messages": stats.messages, "bytes": stats.bytes, "rounds": stats.rounds,
        "controller_sent": {"messages": counted.controller_messages, "bytes": counted.controller_bytes},
        "controller_received": {"messages": ctrl_recv.messages, "bytes": ctrl_recv.bytes},
        "party_sent_max": {"messages": counted.party_messages, "bytes": counted.party_bytes},
        "by_phase": {p: c._asdict() for p, c in stats.by_phase.items()},
        "by_kind": {k: c._asdict() for k, c in stats.by_kind.items()},
        "closed_form": closed.headline(),
        "equals_closed_form": all(closed.matches(counted, ("messages", "bytes", "rounds")).values()),
    }


def _remote(traffic: Mapping[str, Any], bases: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The wire figures of each protocol run on a remote runtime (tcp, ray), in ``bases`` order."""
    return {b: dict(traffic[b]["wire"]) for b in bases
            if b in traffic and (traffic[b].get("wire") or {}).get("runtime") in ("tcp", "ray")}


def _counted_by(traffic: Mapping[str, Any], bases: Sequence[str]) -> str:
    """Who counted the traffic (:func:`scenarios.report.counted_by`), and on a remote runtime
    where the bytes on its sockets are."""
    wire = next(iter(_remote(traffic, bases).values()), None)
    if wire is None:
        return counted_by(None)
    return (f"{counted_by(wire)}; the bytes on the sockets, with framing and TLS, are in the table "
            "'Measured on the wire'")


def _wire_table(traffic: Mapping[str, Any], bases: Sequence[str]) -> Table | None:
    """The bytes a remote runtime measured on its channels (run 1), one row per protocol."""
    wire_of = _remote(traffic, bases)
    if not wire_of:
        return None
    first = next(iter(wire_of.values()))
    rows = []
    for base, w in wire_of.items():
        socket_bytes = (None if "socket_bytes_sent" not in w
                        else w["socket_bytes_sent"] + w["socket_bytes_received"])
        saved = w.get("multicast_saved_bytes", 0) + w.get("columns_saved_bytes", 0)
        rows.append((base, w.get("payload_bytes"), w.get("party_to_party_bytes"), w.get("framing_bytes"),
                     w.get("control_bytes"), saved, socket_bytes, w.get("tls_overhead_bytes")))
    tls = ("TLS on" if first.get("tls") else "TLS off") if first["runtime"] == "tcp" else "Ray's own transport"
    return Table(
        key="wire",
        title=f"Measured on the wire ({first['runtime']} runtime, run 1)",
        columns=("protocol", "payload bytes", "party-to-party bytes", "framing bytes", "control bytes",
                 "not carried bytes", "socket bytes", "TLS overhead bytes"),
        rows=rows,
        caption=(f"{tls}. Bytes of the controller process's channels to its party hosts, both directions. "
                 "Payload: the codec's bytes, the traffic table's bytes plus the party-to-party bytes (such a "
                 "frame crosses twice, up to the router and down to its receiver's host); framing: record "
                 "headers and length prefixes; control: set-up, key directory, reports; not carried: payload "
                 "bytes counted but not sent (a broadcast's copies to the parties of one host travel once, reply "
                 "columns carry their members' layout once); socket bytes: the kernel's TCP_INFO counters (— "
                 "where not measured); TLS overhead: socket bytes less payload, framing and control plus what "
                 "was not carried (handshakes, record headers, AEAD tags)."),
    )


def _interval_text(interval: Sequence[float]) -> str:
    """``"4.81–5.63%"`` for a bootstrap interval of a relative error, ``"— (1 run)"`` without one."""
    low, high = interval
    return "— (1 run)" if not (math.isfinite(low) and math.isfinite(high)) else f"{low:.2%}–{high:.2%}"


def _run_ranges(runs: Sequence[int]) -> str:
    """``[1, 2, 3, 5, 7, 8]`` -> ``"1–3, 5, 7–8"`` (run numbers, ascending)."""
    spans: list[list[int]] = []
    for r in runs:
        if spans and r == spans[-1][1] + 1:
            spans[-1][1] = r
        else:
            spans.append([r, r])
    return ", ".join(f"{a}" if a == b else f"{a}–{b}" for a, b in spans)


def _cluster_rows(found: Sequence[str], recovered: Sequence[bool | None]) -> list[tuple[str, int, str, bool | None]]:
    """One row per distinct clustering found (in order of first appearance): the runs that found
    it (``"1–20"`` for 20 identical runs, not 20 rows), how many, the clusters, and whether they
    are the planted ones."""
    runs: dict[tuple[str, bool | None], list[int]] = {}
    for i, key in enumerate(zip(found, recovered), start=1):
        runs.setdefault(key, []).append(i)
    return [(_run_ranges(r), len(r), text, ok) for (text, ok), r in runs.items()]


def build_result(params: Mapping[str, Any], engine: str, synthetic: Any, dataset: Dataset,
                 queries: Sequence[CountQuery], all_runs: Sequence[Mapping[str, ProtocolRun]],
                 errors: Mapping[str, np.ndarray], elapsed: float) -> ScenarioResult:
    """The :class:`ScenarioResult` of ``local_anonymization``: metrics, privacy, traffic, tables, figures.

    Parameters
    ----------
    params
        Validated scenario parameters.
    engine
        ``"actors"`` or ``"fast"``.
    synthetic, dataset
        The planted-cluster data (truth and records).
    queries
        The count queries of main paper 6.5.
    all_runs
        Per run, base protocol name (``"RR-Clusters"``, ``"RR-Independent"``) -> its run.
    errors
        Per label (base protocol, ``+Adjustment``) the (runs, queries) eq. (16) relative errors.
    elapsed
        Wall-clock seconds of the whole scenario.
    """
    runs = len(all_runs)
    first = all_runs[0]
    bases = tuple(first)  # the base protocols, in run order
    labels = tuple(errors)  # bases and their +Adjustment
    clusters_run = first["RR-Clusters"].result
    planted = None if synthetic is None else [list(c) for c in synthetic.clusters]
    found = _clusters(clusters_run)
    found_all = [_clusters(pr["RR-Clusters"].result) for pr in all_runs]
    recovered: list[bool | None] = [None] * runs
    exact_recovery: int | None = None
    if planted is not None:
        used = {a for c in planted for a in c}
        target = sorted([tuple(c) for c in planted] + [(a,) for a in range(dataset.m) if a not in used])
        recovered = [sorted(map(tuple, f)) == target for f in found_all]
        exact_recovery = sum(bool(r) for r in recovered)
    undefined = int(np.isnan(errors[labels[0]][0]).sum())

    query_metrics = {
        label: {"median": float(np.nanmedian(v)), "mean": float(np.nanmean(v)),
                "p90": float(np.nanpercentile(v, 90)), "per_run_median": np.nanmedian(v, axis=1),
                # 95% percentile bootstrap interval of the median over whole runs (NaN with one run)
                "median_interval": [(m := median_over_runs(v, seed=runs)).low, m.high]}
        for label, v in errors.items()
    }

    sections = {base: privacy_section([pr[base].privacy for pr in all_runs]) for base in bases}
    privacy: dict[str, Any] = {
        base: {**sections[base], "attribute_epsilons": first[base].result.parameters.get("attribute_epsilons")}
        for base in bases
    }
    privacy["RR-Clusters"]["cluster_epsilons"] = clusters_run.parameters.get("cluster_epsilons")
    privacy["adjustment"] = "RR-Adjustment releases nothing: it is post-processing, ε unchanged"
    sequential = {base: sections[base]["policies"]["sequential"] for base in bases}
    budget = first["RR-Independent"].result.parameters.get("epsilon")
    share = clusters_run.parameters.get("discovery_share")
    budget_text = budget_statement(budget, share, dataset.m, dataset.sizes)

    traffic: dict[str, Any] = {}
    given = first["RR-Independent"].result.parameters
    matrices = next(k for k in ("epsilon", "epsilon_per_attribute", "p") if given.get(k) is not None)
    for base in bases:
        res = first[base].result
        if first[base].traffic is not None:
            session = res.details.get("secure_sum", {}).get("session", "dependence/1")
            traffic[base] = _traffic_dict(first[base].traffic, rr_closed_form(
                base, dataset.n, dataset.m, matrices=matrices, clusters=res.clusters,
                dependence=params["dependence"], sizes=dataset.sizes,
                engine=params["secure_sum"], degree=params["degree"], session=session,
                replays=any(any(r.replayed or ()) for r in res.releases)))
            if first[base].wire:
                traffic[base]["wire"] = dict(first[base].wire)
    if first["RR-Clusters"].view is not None:
        traffic["controller_view"] = {b: first[b].view for b in bases}

    timing = {base: {"protocol_seconds": _stats(np.array([pr[base].seconds for pr in all_runs])),
                     "adjustment_seconds": _stats(np.array([pr[base].adjustment_seconds for pr in all_runs]))}
              for base in bases}
    metrics = {
        "n": dataset.n,
        "m": dataset.m,
        "attributes": list(dataset.schema.names),
        "sizes": list(dataset.sizes),
        "cells": math.prod(dataset.sizes),
        "planted_clusters": planted,
        "clusters_found": found,
        "clusters_found_per_run": found_all,
        "runs_recovering_planted_clusters": exact_recovery,
        "queries": len(queries),
        "queries_with_zero_true_count": undefined,
        "relative_error": query_metrics,
        "adjustment": {base: {"iterations": _adjustment(first[base].adjusted).iterations,
                              "converged": bool(_adjustment(first[base].adjusted).converged),
                              "gap": float(_adjustment(first[base].adjusted).gap)} for base in bases},
        "timing": timing,
        "wall_seconds": elapsed,
    }

    table_rows = []
    for label in labels:
        base = label.split("+")[0]
        t = traffic.get(base)
        q = query_metrics[label]
        table_rows.append((
            label, q["median"], _interval_text(q["median_interval"]), q["mean"], q["p90"],
            *(float(sequential[base]["epsilon"][k]) for k in ("min", "median", "max")),
            None if t is None else t["messages"], None if t is None else t["bytes"],
            float(np.median([pr[base].seconds + (pr[base].adjustment_seconds if "+" in label else 0.0)
                             for pr in all_runs])),
        ))
    comparison = Table(
        key="comparison",
        title="Accuracy, privacy and cost per protocol",
        columns=("protocol", "median rel. error", "median 95% interval", "mean rel. error", "90th pct rel. error",
                 "ε min", "ε median", "ε max", "messages", "bytes", "seconds"),
        rows=table_rows,
        formats={"median rel. error": ".2%", "mean rel. error": ".2%", "90th pct rel. error": ".2%",
                 "ε min": ".3f", "ε median": ".3f", "ε max": ".3f", "seconds": ".2f"},
        caption=f"{plural(len(queries), 'count query', 'count queries')} of main paper 6.5 "
                f"(σ = {params['sigma']:g}) × {plural(runs, 'run')}; eq. (16) relative error against the true counts of the data "
                f"({plural(undefined, 'query', 'queries')} with a true count of 0 excluded); median 95% interval: "
                "percentile bootstrap of the median over whole runs (with one run, none). ε per respondent under sequential "
                "composition of its own ledger. " + budget_note(sequential, bases, budget)
                + " Messages/bytes: measured on the network (actors engine; run 1)."
                + (" The fast path sends no messages." if engine == "fast" else "") + " " + RR_INDEPENDENT_JOINT,
    )
    names = dataset.schema.names
    cluster_table = Table(
        key="clusters",
        title="Clusters found by Algorithm 1",
        columns=("runs", "count", "clusters", "= planted"),
        rows=_cluster_rows([_fmt_clusters(f, names) for f in found_all], recovered),
        caption=(f"Planted: {_fmt_clusters(planted, names)} (other attributes independent); " if planted
                 else "Own data: no planted clusters to compare with (— in the last column); ")
                + f"Tv = {params['Tv']}, Td = {params['Td']:g}, dependence method {params['dependence']}.",
    )
    phase_table = privacy_table(sections, caption="RR-Adjustment is post-processing: it spends nothing more.")
    tables = [comparison, cluster_table, phase_table]
    if traffic:
        tr_rows = []
        for base in bases:
            for ph, c in traffic[base]["by_phase"].items():
                tr_rows.append((base, ph, c["messages"], c["bytes"], c["rounds"]))
        tables.append(Table(
            key="traffic_by_phase",
            title="Measured traffic by phase (run 1)",
            columns=("protocol", "phase", "messages", "bytes", "rounds"),
            rows=tr_rows,
            caption=f"Every encoded message of the phase, {_counted_by(traffic, bases)}.",
        ))
        wire = _wire_table(traffic, bases)
        if wire is not None:
            tables.append(wire)

    est_dep = clusters_run.dependence
    figures: list[FigureSpec] = [
        query_error_boxplot(errors, params["sigma"], {b: float(sequential[b]["epsilon"]["median"]) for b in bases}),
        dependence_plot(_true_dependence(dataset), est_dep, dataset.schema.names,
                        _fmt_clusters(found, dataset.schema.names), params["dependence"]),
        epsilon_plot(sequential, bases, budget),
    ]
    if traffic:
        phases = list(dict.fromkeys(ph for b in bases for ph in traffic[b]["by_phase"]))
        figures.append(BarPlot(
            filename="traffic_by_phase.png",
            title="Measured bytes by phase (actors engine, run 1)",
            categories=bases,
            groups={ph: [traffic[b]["by_phase"].get(ph, {"bytes": 0})["bytes"] / 1e3 for b in bases]
                    for ph in phases},
            ylabel="kB on the network (all actors)",
            xlabel="protocol",
            colours={ph: phase_colour(ph) for ph in phases},  # the same colour per phase in every run
            caption=f"Bytes of every encoded message of the phase (parties and controller, both directions), "
                    f"{_counted_by(traffic, bases)}. A phase a protocol does not run has no bar.",
        ))

    summary = _summary_lines(params, engine, dataset, planted, found, exact_recovery, runs,
                             query_metrics, sections, traffic, timing, elapsed, len(queries), bases, budget_text)
    noise = noise_warning(clusters_run, dataset, params["Td"])
    if noise:
        log.warning("%s", noise)
        summary.append(f"warning: {noise}")
    data_note = (
        "Data: mprr.synthetic.planted_clusters — Zipf-like marginals, planted clusters with joint "
        "(1 − s)·⊗π_j + s·comonotone coupling, the other attributes independent; the truth is known."
        if synthetic is not None else
        f"Data: your file, {dataset.n} records of {dataset.m} categorical columns "
        f"({', '.join(f'{a.name} ({a.size})' for a in dataset.schema)}); the truth every error is measured "
        "against is the file's own empirical distribution (its exact counts)."
    )
    notes = [
        data_note,
        budget_text,
        ("RR-Clusters splits the budget in advance: a share for the dependence phase (4.1: the paper's 6.3.1 "
         "matrices with the one keep probability that spends ε·share; 4.3: ε·share over m(m−1)/2 pairs), the rest "
         "for the clusters (cluster C carries Σ_{A∈C} ε_A of the matrices that spend ε·(1 − share), whatever "
         "clusters Algorithm 1 forms), so every party's sequential ledger stays within ε for any data; "
         "RR-Independent uses the 6.3.1 matrices with the keep probability that spends ε." if budget is not None else
         "RR-Clusters spends the dependence phase (4.1: every attribute randomized once) plus the cluster "
         "phase (6.3.2 matrices carrying Σ ε_A per cluster), composed sequentially because both releases "
         "are linkable to the party; RR-Independent spends Σ ε_A once. Dependence 4.2 releases exact "
         "bivariate tables (ε = ∞, no DP guarantee)."),
        "A singleton cluster whose release matrix is its phase-1 matrix is replayed: every party resends its "
        "phase-1 value (no new uniform, no new ε), exactly as on the fast path.",
        "RR-Independent's joint estimate is the product of its estimated marginals (it assumes the attributes "
        "independent).",
        "At the budgets people deploy the papers' RR-Clusters loses to one report per respondent: "
        "`mprr run utility_vs_epsilon` compares it at equal ε with SPL, SMP, RS+FD, a CALM-style release and "
        "RR-Clusters-Sampled, the clustering idea with sampled respondents (docs/utility.md).",
        "RR-Adjustment (Algorithm 2) reweights the released records so that their marginals match the "
        "estimated attribute / cluster distributions; it is post-processing and costs no ε.",
        f"Engine '{engine}': " + (
            "every party is an asyncio actor; all traffic is real encoded messages counted by the network."
            if engine == "actors" else
            "vectorized fast path with the same per-party random streams as the actor engine (same seed ⇒ "
            "same releases); no messages are sent."),
    ]
    if noise:
        notes.insert(0, f"Warning: {noise}")
    return ScenarioResult(metrics=metrics, privacy=privacy, traffic=traffic, tables=tables,
                          figures=figures, notes=notes, summary=summary)


NOISE_FACTOR = 2.0
"""An estimated dependence below this many times the noise level of its pair
(:func:`mprr.dependence.noise_cramers_v`, an RMS) is within the noise of the randomization."""


def noise_warning(run: ProtocolResult, dataset: Dataset, td: float) -> str | None:
    """A warning when RR-Clusters' estimated dependences (main paper 4.1: pair tables estimated
    from per-attribute randomized values) are within the noise of the randomization.

    For every pair measured by Cramér's V (not two ordinal attributes), the noise level is the
    V that an independent pair with the estimated marginals would show at this n through the
    released matrices (:func:`mprr.dependence.noise_cramers_v`); a dependence below
    :data:`NOISE_FACTOR` times it is within the noise.  Warns when every such pair is, or when
    Algorithm 1 merged a pair (dependence ≥ Td) that is.  ``None`` otherwise, and for
    dependences not estimated from per-attribute releases (4.2: exact tables; 4.3: pair units).
    """
    dep = getattr(run, "dependence", None)
    phase = next((r for r in run.releases if r.phase == "dependence"), None)
    if dep is None or phase is None or phase.exact or any(len(u) != 1 for u in phase.units):
        return None
    matrices = {u[0]: m for u, m in zip(phase.units, phase.matrices)}
    names, kinds = dataset.schema.names, [a.kind for a in dataset.schema]
    within: list[tuple[str, str]] = []
    merged_on_noise: list[str] = []
    levels: list[float] = []
    checked = 0
    for i in range(dataset.m):
        for j in range(i + 1, dataset.m):
            if (kinds[i], kinds[j]) == ("ordinal", "ordinal") or i not in matrices or j not in matrices:
                continue
            mi, mj = matrices[i], matrices[j]
            if mi is None or mj is None or not hasattr(mi, "values") or not hasattr(mj, "values"):
                continue
            level = noise_cramers_v(mi.values, mj.values, run.estimate.marginal([i]), run.estimate.marginal([j]),
                                    dataset.n)
            checked += 1
            levels.append(level)
            if dep[i, j] < NOISE_FACTOR * level:
                within.append((names[i], names[j]))
                if dep[i, j] >= td:
                    merged_on_noise.append(f"{{{names[i]},{names[j]}}} ({dep[i, j]:.2f})")
    if not checked:
        return None
    typical = float(np.median(levels))
    if len(within) == checked:
        return (f"every estimated dependence of RR-Clusters (Cramér's V) is within the noise of the randomization: "
                f"an independent pair shows V ≈ {typical:.2f} at n = {dataset.n:,} through these matrices; "
                "the clusters found are no evidence of dependence (more records, or a larger ε, lower the noise)")
    if merged_on_noise:
        shown = ", ".join(merged_on_noise[:6]) + (f" and {len(merged_on_noise) - 6} more" if len(merged_on_noise) > 6 else "")
        return (f"Algorithm 1 takes as dependent (≥ Td = {td:g}) pairs whose estimated dependence is within the noise "
                f"of the randomization, below {NOISE_FACTOR:g}× the V an independent pair shows at n = {dataset.n:,} "
                f"(≈ {typical:.2f}): {shown}; clusters built on them may come from noise alone (more records, or a "
                "larger ε, lower the noise)")
    return None


def _summary_lines(params: Mapping[str, Any], engine: str, dataset: Dataset, planted: Any, found: Any,
                   recovered: int | None, runs: int, q: Mapping[str, Mapping[str, Any]],
                   sections: Mapping[str, Mapping[str, Any]], traffic: Mapping[str, Any],
                   timing: Mapping[str, Any], elapsed: float, n_queries: int,
                   bases: Sequence[str], budget_text: str) -> list[str]:
    names = dataset.schema.names
    where = (f"planted clusters {_fmt_clusters(planted, names)}, found {_fmt_clusters(found, names)} "
             f"(recovered in {recovered}/{plural(runs, 'run')})" if planted is not None
             else f"clusters found {_fmt_clusters(found, names)}")
    eps = {b: float(sections[b]["policies"]["sequential"]["epsilon"]["median"]) for b in bases}
    eps_text = {b: "∞" if math.isinf(e) else f"{e:.3g}" for b, e in eps.items()}

    def med(label: str) -> str:  # the median, with its 95% bootstrap interval over runs when there is one
        low, high = q[label]["median_interval"]
        return f"{q[label]['median']:.2%}" + (f" [{low:.1%}–{high:.1%}]" if math.isfinite(low) else "")

    lines = [
        f"{dataset.n} parties, {dataset.m} attributes ({math.prod(dataset.sizes):,} cells), engine {engine}; "
        + where,
        f"count-query relative error, median of {plural(n_queries, 'query', 'queries')} x {plural(runs, 'run')} "
        f"(σ = {params['sigma']:g}): "
        f"RR-Clusters {med('RR-Clusters')}, +Adjustment {med('RR-Clusters+Adjustment')} "
        f"(ε {eps_text['RR-Clusters']} per respondent) | "
        f"RR-Independent {med('RR-Independent')}, +Adjustment {med('RR-Independent+Adjustment')} "
        f"(ε {eps_text['RR-Independent']} per respondent)"
        + ("" if len({round(e, 9) for e in eps.values()}) <= 1 or params.get("epsilon") is not None
           or "Budget:" in budget_text else " — budgets differ: not a comparison at equal ε"),
        budget_text.split(" In words:")[0] + (" WEAK PRIVACY." if "Weak privacy" in budget_text else ""),
    ]
    lines += privacy_summary_lines(sections)
    views = traffic.get("controller_view") if traffic else None
    if views:
        lines.append("controller's view (untrusted, run 1): " + "; ".join(  # one count per protocol, never added up
            f"{b} {views[b].get('messages', 0):,} messages received, kinds {', '.join(sorted(views[b].get('kinds', ())))}"
            for b in bases if b in views) + " (what each reveals: docs/threat_model.md)")
    if traffic:
        lines.append("traffic (run 1): " + "; ".join(
            f"{b} {traffic[b]['messages']:,} messages, {_human_bytes(traffic[b]['bytes'])}, "
            f"{traffic[b]['rounds']} rounds" for b in bases)
            + (" (= closed form, docs/cost_model.md)" if all(traffic[b]["equals_closed_form"]
                                                            for b in bases) else " (DIFFERS from the closed form)"))
    else:
        lines.append("traffic: none on the fast path (run with --engine actors to measure messages and bytes)")
    lines.append("wall time: " + ", ".join(
        f"{b} {timing[b]['protocol_seconds']['median']:.2f} s" for b in bases)
        + f"; scenario total {elapsed:.1f} s")
    return lines
