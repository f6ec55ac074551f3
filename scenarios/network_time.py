"""``network_time``: how long RR-Clusters takes on a network, per secure-sum engine and profile.

Every point of the sweep (n x engine x network profile) is one run of RR-Clusters 4.3 (a secure
sum of fresh randomized pair values in the dependence phase) at a budget of ``epsilon`` per
respondent (:func:`mprr.protocols.budget.keep_for_budget` plans its releases) on the ``virtual``
runtime (:mod:`parties.netsim.runtime`): the real protocol, every message encoded and counted,
each delivered when the network model says it arrives (latency + size over the bottleneck of the
two access links, the controller's link shared, the cryptography's compute time calibrated on
this machine, parties away per round with probability ``dropout``).  ``docs/network_time.md``
explains the model.

A profile is a shipped name (``datacenter``, ``broadband``, ``mobile``:
:data:`parties.netsim.profiles.PROFILES`, sources in its docstring) or the path of a network
model TOML of one's own (:func:`parties.netsim.model.model_from_toml`).

Outputs: a table of every run (completion time, per-round median / 95th percentile over the
parties, messages, bytes on the controller's link and a party's uplink, parties that missed a
round, where the time went along the critical path), the rounds of one run (``timeline_run``),
and figures: completion time vs n per engine for each profile, where the time went per engine,
and the timeline of one run.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mprr.errors import MprrError
from mprr.synthetic import planted_clusters
from parties.netsim.availability import Availability
from parties.netsim.model import NetworkModel, model_from_toml
from parties.netsim.profiles import PROFILES
from parties.netsim.runtime import VirtualRuntime
from parties.netsim.timeline import Timeline
from parties.secure.registry import ENGINES as SECURE_ENGINES
from parties.simulate import simulate
from scenarios.config import Choice, Field, Float, Int, List, ScenarioConfig, Schema, Str
from scenarios.config import Table as ConfigTable
from scenarios.plots import CustomPlot, LinePlot, Series, phase_colour
from scenarios.progress import Progress
from scenarios.registry import register
from scenarios.report import ScenarioResult, Table

__all__ = ["ENGINES", "PARTS", "SCHEMA", "breakdown_figure", "run_network_time", "timeline_figure"]

ENGINES = tuple(name for name in SECURE_ENGINES if not SECURE_ENGINES.lookup(name).per_cell)
"""The shipped secure-sum engines this scenario sweeps (all but the one run per cell:
paper, graph, graph-direct, masked, masked-sparse)."""
PARTS = ("compute", "queueing", "bandwidth", "latency", "waiting")
"""Where the time went (:meth:`parties.netsim.timeline.Timeline.breakdown`)."""
_PART_COLOURS = {"compute": "#9467bd", "queueing": "#ff7f0e", "bandwidth": "#2ca02c", "latency": "#1f77b4",
                 "waiting": "#c7c7c7"}

_TIMELINE = Schema([
    Field("n", Int(min=2), 100, help="parties of the run whose timeline is drawn"),
    Field("engine", Choice(ENGINES), "masked-sparse", help="its secure-sum engine"),
    Field("profile", Str(), "mobile", help="its profile (a shipped name or a model TOML)"),
    Field("dropout", Float(min=0.0, max=1.0, max_exclusive=True), 0.02,
          help="probability that a party is away for a round, in this run"),
])

SCHEMA = Schema([
    Field("n_values", List(Int(min=2, max=1_000_000), min_len=1), (25, 50, 100, 200), help="party counts"),
    Field("engines", List(Choice(ENGINES), min_len=1), ("paper", "graph", "masked", "masked-sparse"),
          help="secure-sum engines of the dependence phase"),
    Field("profiles", List(Str(), min_len=1), ("datacenter", "broadband", "mobile"),
          help="network profiles: shipped names or paths of network model TOML files"),
    Field("epsilon", Float(min=0.0, min_exclusive=True), 4.0,
          help="privacy budget ε per respondent (RR-Clusters 4.3 plans its releases within it)"),
    Field("Tv", Int(min=2), 100, help="RR-Clusters: largest cluster domain"),
    Field("Td", Float(min=0.0), 0.2, help="RR-Clusters: dependence threshold"),
    Field("dropout", Float(min=0.0, max=1.0, max_exclusive=True), 0.0,
          help="probability that a party is away for a round, in the sweep (paper and graph need every party)"),
    Field("timeout", Float(min=0.0, min_exclusive=True), 30.0, help="round timeout (virtual seconds)"),
    Field("network_seed", Int(min=0), 0, help="seed of the network model's draws (links, dropouts)"),
    Field("timeline_run", ConfigTable(_TIMELINE), dict(_TIMELINE.validate({})), help="the run whose timeline is drawn"),
])


def _model(profile: str, dropout: float, seed: int, base: Path) -> NetworkModel:
    if profile in PROFILES:
        return NetworkModel(PROFILES[profile], availability=Availability(dropout), seed=seed)
    path = Path(profile) if Path(profile).is_absolute() else base / profile
    model = model_from_toml(path, seed=seed)
    if dropout and model.availability.dropout == 0:
        model = NetworkModel(model.profile, model.controller, model.framing, model.costs,
                             Availability(dropout, model.availability.traces), seed)
    return model


def _label(profile: str) -> str:
    return profile if profile in PROFILES else Path(profile).stem


def _run(n: int, engine: str, profile: str, params: Mapping[str, Any], dropout: float, seed: int,
         base: Path) -> tuple[dict[str, Any], Timeline]:
    """One run; an engine that cannot finish (paper and graph need every party) is recorded with
    its error and a NaN completion time."""
    data = planted_clusters(n, rng=np.random.default_rng(seed)).dataset
    runtime = VirtualRuntime(model=_model(profile, dropout, params["network_seed"], base))
    record: dict[str, Any] = {"profile": _label(profile), "engine": engine, "n": n, "dropout": dropout}
    try:
        sim = simulate(data, "RR-Clusters", seed=seed, runtime=runtime, epsilon=params["epsilon"],
                       Tv=params["Tv"], Td=params["Td"], dependence="4.3", secure_sum=engine,
                       timeout=params["timeout"], on_dropout="exclude")
    except MprrError as exc:
        nan = float("nan")
        record.update({"outcome": f"{type(exc).__name__}: {str(exc)[:160]}", "completion_s": nan, "rounds": 0,
                       "round_median_s": nan, "round_p95_s": nan, "messages": 0, "controller_in_MB": nan,
                       "controller_out_MB": nan, "party_uplink_median_B": nan,
                       "missed_party_rounds": sum(len(p) for p in runtime.timeline.missed().values()),
                       "excluded": 0, **{f"{k}_s": nan for k in PARTS}, "epsilon": nan})
        return record, runtime.timeline
    report = runtime.timeline.report()
    eps = sim.privacy.epsilon
    rounds = report["rounds"]
    links = report["links"]
    record.update({
        "outcome": "ok", "completion_s": report["completion"],
        "rounds": len(rounds), "round_median_s": float(np.median([r["median"] for r in rounds])),
        "round_p95_s": float(max(r["p95"] for r in rounds)), "messages": sim.traffic.messages,
        "controller_in_MB": links["controller_downlink"] / 1e6, "controller_out_MB": links["controller_uplink"] / 1e6,
        "party_uplink_median_B": links["party_uplink"]["median"],
        "missed_party_rounds": sum(len(p) for p in report["missed"].values()), "excluded": len(sim.excluded),
        **{f"{k}_s": report["breakdown"][k] for k in PARTS},
        "epsilon": float(eps.max) if eps is not None else float("nan"),
    })
    return record, runtime.timeline


def timeline_figure(timeline: Timeline, title: str, *, parties: int = 60, caption: str = "") -> CustomPlot:
    """A Gantt chart of one run: for the first ``parties`` parties, one bar per round from the
    round's start to the party's last message of the round, coloured by round; a cross where a
    party missed a round."""
    c = timeline.columns()
    shown = min(parties, timeline.n)
    ok = c["lost"] == 0

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        starts = [float(c["sent"][c["round"] == r].min()) if (c["round"] == r).any() else np.inf
                  for r in range(len(timeline.rounds))]
        for r, name in enumerate(timeline.rounds):
            mine = c["round"] == r
            if not mine.any():
                continue
            start = starts[r]
            later = [t for t in starts if t > start]
            ax.axvspan(start, min(later) if later else timeline.finished, color=phase_colour(name), alpha=0.12,
                       linewidth=0)
            got = mine & ok
            actors = np.concatenate((c["src"][got], c["dst"][got]))
            times = np.concatenate((c["arrival"][got], c["arrival"][got]))
            keep = (actors >= 0) & (actors < shown)
            done = np.full(shown, np.nan)
            np.fmax.at(done, actors[keep], times[keep])
            ys = np.flatnonzero(np.isfinite(done))
            ax.hlines(ys, start, done[ys], colors=phase_colour(name), linewidth=2.2, label=name)
        missed = [p for ps in timeline.missed().values() for p in ps if p < shown]
        if missed:
            lost = c["lost"] > 0
            who = np.where(c["lost"] == 1, c["src"], c["dst"])
            pick = lost & (who >= 0) & (who < shown)
            ax.plot(c["sent"][pick], who[pick], "kx", markersize=4, label="missed (away)")
        ax.axvline(timeline.finished, color="0.3", linestyle=":", linewidth=1, label="controller done")
        ax.set_xlabel("virtual time (s)")
        ax.set_ylabel(f"party (first {shown} of {timeline.n})")
        ax.invert_yaxis()
        ax.legend(fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=4)

    return CustomPlot("timeline.png", title, draw, size=(7.2, 5.6), caption=caption)


def breakdown_figure(records: list[dict[str, Any]], title: str, *, caption: str = "") -> CustomPlot:
    """Stacked horizontal bars, one per (profile, engine) run: the share of its completion time
    spent in each of :data:`PARTS` along the critical path, the completion time at the bar's end."""
    rows = [r for r in records if r["outcome"] == "ok"]

    def draw(fig: Any) -> None:
        ax = fig.add_subplot(1, 1, 1)
        labels = [f"{r['profile']} / {r['engine']}" for r in rows]
        left = np.zeros(len(rows))
        total = np.array([r["completion_s"] for r in rows])
        for part in PARTS:
            share = np.array([r[f"{part}_s"] for r in rows]) / np.where(total > 0, total, 1.0)
            ax.barh(labels, share, left=left, color=_PART_COLOURS[part], label=part)
            left += share
        for y, t in enumerate(total):
            ax.text(1.01, y, f"{t:.3g} s", va="center", fontsize="x-small")
        ax.set_xlim(0, 1.15)
        ax.set_xlabel("share of the completion time (critical path)")
        ax.invert_yaxis()
        ax.legend(fontsize="x-small", loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=5, frameon=False)

    return CustomPlot("where_the_time_went.png", title, draw, size=(7.2, 0.9 + 0.32 * max(len(rows), 4) + 0.6),
                      caption=caption)


@register(
    "network_time",
    schema=SCHEMA,
    description="Virtual completion time of RR-Clusters per secure-sum engine and network profile "
                "(latency, bandwidth, the controller's shared link, compute, dropouts), with timelines",
    engines=("actors",),
    hosts_on_runtime=False,  # every run is on the virtual runtime of its profile
)
def run_network_time(
    config: ScenarioConfig, *, out_dir: Path, runs: int, seed: int, engine: str, progress: Progress
) -> ScenarioResult:
    """The sweep of the module docstring (``runs`` is ignored: one run per point, same seed)."""
    params = dict(config.parameters)
    params["timeline_run"] = {**dict(_TIMELINE.validate({})), **dict(params["timeline_run"])}
    base = config.source.parent if config.source is not None else Path(".")
    ns = sorted(set(params["n_values"]))
    engines = list(dict.fromkeys(params["engines"]))
    profiles = list(dict.fromkeys(params["profiles"]))
    chosen = params["timeline_run"]
    points = [(p, e, n) for p in profiles for e in engines for n in ns]
    records: list[dict[str, Any]] = []
    started = time.perf_counter()
    with progress.task("runs", total=len(points) + 1) as bar:
        for p, e, n in points:
            bar.set_status(f"{_label(p)} {e} n={n}")
            records.append(_run(n, e, p, params, params["dropout"], seed, base)[0])
            bar.advance()
        bar.set_status("timeline run")
        timeline_record, timeline = _run(chosen["n"], chosen["engine"], chosen["profile"], params, chosen["dropout"],
                                         seed, base)
        bar.advance()
    elapsed = time.perf_counter() - started
    done = [r for r in records + [timeline_record] if r["outcome"] == "ok"]
    epsilon = done[0]["epsilon"] if done else float("nan")
    eps = f"ε = {epsilon:.3g} per respondent" if np.isfinite(epsilon) else "ε = ∞ (exact releases)"
    labels = [_label(p) for p in profiles]
    figures: list[Any] = []
    for p in labels:
        figures.append(LinePlot(
            filename=f"completion_vs_n_{p}.png",
            title=f"RR-Clusters 4.3 on {p}: completion time vs n ({eps})",
            xlabel="parties n", ylabel="completion time (virtual s)",
            series=tuple(Series(e, ns, [r["completion_s"] for r in records if r["profile"] == p and r["engine"] == e],
                                style=SECURE_ENGINES.lookup(e).line) for e in engines),
            legend="below",
            caption=f"One run per point (seed {seed}, network seed {params['network_seed']}, dropout "
                    f"{params['dropout']:g}, round timeout {params['timeout']:g} s); real messages timed by the "
                    f"{p} profile (docs/network_time.md).",
        ))
    largest = ns[-1]
    figures.append(breakdown_figure(
        [r for r in records if r["n"] == largest],
        f"Where the time went, n = {largest} ({eps})",
        caption="Share of the completion time on the run's critical path (from the last arrival back to "
                "the start): compute of the cryptography, queueing on busy links, transmission (size over "
                "the bottleneck), latency, and waiting (timeouts for parties away); the completion time "
                "is written at the end of each bar."))
    figures.append(timeline_figure(
        timeline, f"Timeline: {chosen['engine']}, {_label(chosen['profile'])}, n = {chosen['n']}, "
                  f"dropout {chosen['dropout']:g} ({eps})",
        caption="Each bar: from a round's first message to the party's last message of that round; "
                "shaded: the round until the next one starts (waiting for parties away ends at the round "
                "timeout). Rounds are the protocol's phases, coloured as in every mprr figure."))
    rounds = timeline.report()["rounds"]
    missed = timeline.missed()
    tables = [
        Table(key="runs", title="Completion time per profile, engine and n",
              columns=("profile", "engine", "n", "outcome", "completion (s)", "rounds", "round median (s)", "round p95 (s)",
                       "messages", "controller in (MB)", "controller out (MB)", "party uplink (B)",
                       "missed party-rounds", *(f"{k} (s)" for k in PARTS)),
              rows=[(r["profile"], r["engine"], r["n"], r["outcome"], r["completion_s"], r["rounds"], r["round_median_s"],
                     r["round_p95_s"], r["messages"], r["controller_in_MB"], r["controller_out_MB"],
                     r["party_uplink_median_B"], r["missed_party_rounds"], *(r[f"{k}_s"] for k in PARTS))
                    for r in records],
              formats={"completion (s)": ".3f", "round median (s)": ".3f", "round p95 (s)": ".3f",
                       "controller in (MB)": ".2f", "controller out (MB)": ".2f", "party uplink (B)": ".0f",
                       **{f"{k} (s)": ".3f" for k in PARTS}},
              caption="round median / p95: over the parties of each round, the time from the round's start "
                      "to the party's last message (median over rounds of the medians; largest p95)."),
        Table(key="timeline_rounds", title=f"Rounds of the timeline run ({chosen['engine']}, "
                                           f"{_label(chosen['profile'])}, n = {chosen['n']})",
              columns=("round", "start (s)", "duration (s)", "median (s)", "p95 (s)", "parties", "wire MB", "missed"),
              rows=[(r["round"], r["start"], r["duration"], r["median"], r["p95"], r["parties"], r["wire_bytes"] / 1e6,
                     len(missed.get(r["round"], []))) for r in rounds],
              formats={"start (s)": ".3f", "duration (s)": ".3f", "median (s)": ".3f", "p95 (s)": ".3f",
                       "wire MB": ".3f"}),
    ]
    fastest = {p: min(ok, key=lambda r: r["completion_s"]) for p in labels
               if (ok := [r for r in records if r["profile"] == p and r["n"] == largest and r["outcome"] == "ok"])}
    failed = [r for r in records if r["outcome"] != "ok"]
    summary = [f"{len(records)} virtual-time runs in {elapsed:.1f} s of wall time ({eps})"] + [
        f"{p}, n = {largest}: fastest {r['engine']} at {r['completion_s']:.2f} s" for p, r in fastest.items()] + (
        [f"{len(failed)} runs could not finish (an engine that needs every party met a dropout)"] if failed else [])
    notes = [
        "Time is virtual: the real protocol's messages (their encoded bytes plus the tcp runtime's "
        "framing, TLS 1.3 and TCP/IP overhead) are delivered when the network model says they arrive; "
        "see docs/network_time.md for the model and the shipped profiles' sources.",
        f"Timeline run: completion {timeline_record['completion_s']:.3f} s, "
        f"{timeline_record['missed_party_rounds']} missed party-rounds.",
    ]
    return ScenarioResult(
        metrics={"runs": len(records), "wall_seconds": elapsed, "epsilon": epsilon,
                 "completion": {f"{r['profile']}/{r['engine']}/{r['n']}": r["completion_s"] for r in records},
                 "timeline": {"run": dict(chosen), "breakdown": timeline.breakdown(), "missed": missed}},
        tables=tables, figures=figures, notes=notes, summary=summary, records={"network_time": records},
        parameters=params)
