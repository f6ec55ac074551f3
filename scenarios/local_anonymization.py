"""The default scenario: local anonymization of a few thousand parties against an untrusted controller.

``mprr run local_anonymization`` (what ``make demo`` runs) draws a built-in synthetic data set
(:func:`mprr.synthetic.planted_clusters`: attributes with planted dependent clusters, no
external file), then runs, on the same parties:

- **RR-Clusters** (main paper Section 4): dependences by 4.1 (or 4.2 / 4.3 with a secure-sum
  engine), Algorithm 1, RR-Joint per cluster with the 6.3.2 matrices; then **RR-Adjustment**
  (Algorithm 2) on its release;
- **RR-Independent** (Protocol 1) with the same attribute matrices, and RR-Adjustment on it.

Engines: ``actors`` (default) runs every protocol in the asyncio actor simulator
(:func:`parties.simulate.simulate`): one actor per party holding its record, its own random
stream and privacy ledger, and an untrusted controller that only ever sees randomized data;
the traffic is measured message by message.  ``fast`` runs the vectorized fast path
(:mod:`mprr.protocols`) with the same per-party streams, so both engines release the same data
and give the same estimates for the same seed.

Accuracy is measured with the count queries of main paper 6.5 (eq. 16 relative error against
the true counts of the data set), privacy from each party's ledger under every composition
policy of :mod:`mprr.privacy.ledger` (ε per party and per phase, β, refusals:
:mod:`scenarios.privacy_report`), traffic from the network.  The report (metrics, tables,
figures, printed summary) is built by :mod:`scenarios.anonymization_report`.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mprr.data import Dataset
from mprr.errors import ConfigurationError
from mprr.metrics import CountQuery, evaluate_queries, random_queries
from mprr.protocols import ProtocolResult, rr_adjustment
from mprr.parameters import Parameters, checked_parameters
from mprr.protocols.local import run_local
from mprr.protocols.parameters import RRClustersParameters, RRIndependentParameters
from mprr.protocols.registry import lookup
from mprr.streams import PartyStreams
from mprr.synthetic import DEFAULT_CLUSTERS, DEFAULT_SIZES, SyntheticData, planted_clusters
from parties.runtime import Runtime
from scenarios.anonymization_report import build_result
from parties.secure.registry import ENGINES
from scenarios.config import Choice, Field, Float, Int, List, PathValue, Registered, ScenarioConfig, Schema, Str
from scenarios.cost_model import simulate_options
from scenarios.privacy_report import PrivacyRecord
from scenarios.protocol_run import ProtocolRun
from scenarios.progress import Progress
from scenarios.registry import register
from scenarios.report import ScenarioResult, format_value, plural

__all__ = [
    "SCHEMA",
    "FILE_KEYS",
    "InputData",
    "SYNTHETIC_KEYS",
    "check_secure_sum",
    "checked_values",
    "effective_parameters",
    "load_input",
    "ProtocolRun",
    "derive_seeds",
    "make_dataset",
    "protocol_parameters",
    "run_local_anonymization",
    "run_protocol",
    "synthetic_settings",
]

POSTPROCESS = ("clip-rescale", "project-simplex", "ibu")
DEFAULT_EPSILON = 4.0
"""Budget per respondent when no matrix parameter is given: moderate local DP, as deployed
surveys use (ε of a few units per respondent; above about 10 the guarantee is weak)."""
MATRIX_KEYS = ("epsilon", "epsilon_per_attribute", "p")

SCHEMA = Schema(
    [
        Field("n", Int(min=2, max=1_000_000), 3000, help="number of parties (one record each)"),
        Field("sizes", List(Int(min=2, max=64), min_len=2, max_len=16), DEFAULT_SIZES,
              help="category count of every attribute of the synthetic data"),
        Field("clusters", List(List(Int(min=0), min_len=2)), DEFAULT_CLUSTERS,
              help="planted groups of dependent attributes (disjoint attribute indices)"),
        Field("strength", Float(min=0.0, max=1.0), 0.7,
              help="dependence strength s of the planted clusters (Cramér's V of a pair of equal sizes)"),
        Field("exponent", Float(min=0.0), 1.0, help="Zipf exponent of the marginals (0 = uniform)"),
        Field.derived(RRClustersParameters, "epsilon",
                      help=f"privacy budget ε per respondent, the same for every protocol (default "
                           f"{DEFAULT_EPSILON:g} when neither p nor epsilon_per_attribute is given): sequential "
                           "over everything a respondent releases, RR-Clusters' dependence phase included"),
        Field.derived(RRClustersParameters, "discovery_share"),
        Field.derived(RRClustersParameters, "p",
                      help="the papers' setting instead of epsilon: keep probability of main paper 6.3.1, for every "
                           "attribute or one per attribute (ε per respondent then grows with the number of "
                           "attributes)"),
        Field.derived(RRClustersParameters, "epsilon_per_attribute",
                      help="the papers' setting instead of epsilon: ε of every attribute's generalized RR, for "
                           "every attribute or one per attribute"),
        Field.derived(RRClustersParameters, "Tv", 100, type=Int(min=1)),
        Field.derived(RRClustersParameters, "Td", 0.2),
        Field.derived(RRClustersParameters, "max_cells", 4096, type=Int(min=2, max=65_536),
                      help="largest cluster domain RR-Clusters releases (its dense matrix is max_cells²; "
                           "only binds when Tv > max_cells)"),
        Field.derived(RRClustersParameters, "dependence"),
        Field("secure_sum", Registered(ENGINES), "graph",
              help="secure-sum engine of dependence 4.2 / 4.3 on the actors engine (the fast path "
                   "computes the same tallies centrally); paper sends O(n²) messages: n ≤ a few hundred"),
        Field("degree", Int(min=2), 8, help="k of the sparse secure-sum graphs (graph, masked-sparse)"),
        Field.derived(RRClustersParameters, "postprocess", type=Choice(POSTPROCESS)),
        Field("queries", Int(min=1, max=100_000), 500, help="number of count queries (main paper 6.5)"),
        Field("sigma", Float(min=0.0, max=1.0, min_exclusive=True), 0.2,
              help="query coverage σ: share of the value combinations of the query's two attributes"),
        Field("adjustment_tol", Float(min=0.0, min_exclusive=True), 1e-9,
              help="RR-Adjustment stops when the largest marginal gap is below this"),
        Field("adjustment_max_iter", Int(min=1), 1000, help="RR-Adjustment: most IPF sweeps"),
        Field("round_timeout", Float(min=0.0, min_exclusive=True), 30.0,
              help="actors engine: seconds an actor waits for one round's messages"),
        Field("data", PathValue(must_exist=True), None,
              help="your own data: a CSV or Parquet file, one record per row (replaces the synthetic "
                   "data, whose settings n, sizes, clusters, strength and exponent then may not be set)"),
        Field("columns", List(Str(), min_len=2), None,
              help="categorical columns of the data file to use (default: every column)"),
        Field("missing", Str(), None,
              help="label that keeps empty / NA cells of the data file as a category (e.g. \"?\")"),
        Field("ordinal", List(Str(), min_len=1), None,
              help="ordinal columns of the data file: a name (categories in numeric, then text order) or "
                   "'name=c1,c2,...' (that order), e.g. [\"educ\", \"size=S,M,L\"]"),
        Field("delimiter", Str(), None, help="field separator of a CSV data file (default a comma; a tab for .tsv)"),
        Field("encoding", Str(), None, help="text encoding of a CSV data file (default utf-8), e.g. latin-1"),
        Field("confidence", Float(min=0.0, max=1.0, min_exclusive=True, max_exclusive=True), 0.95,
              help="your data: coverage of the intervals of the estimated tables (report, results.json, "
                   "estimates.csv)"),
        Field("replicates", Int(min=2, max=10_000), 200,
              help="your data: parametric-bootstrap replicates of the intervals where the estimator depends on "
                   "the data (post-processing that acted, RR-Adjustment)"),
    ]
)
SYNTHETIC_KEYS = ("n", "sizes", "clusters", "strength", "exponent")
"""Parameters of the built-in synthetic data (:func:`make_dataset`); a data file has its own."""
FILE_KEYS = ("columns", "missing", "ordinal", "delimiter", "encoding")
"""Parameters of reading a data file (:func:`scenarios.datasets.load_table`)."""
log = logging.getLogger(__name__)
BASE_PROTOCOLS = ("RR-Clusters", "RR-Independent")
LABELS = ("RR-Clusters", "RR-Clusters+Adjustment", "RR-Independent", "RR-Independent+Adjustment")


# --------------------------------------------------------------------------- inputs


def derive_seeds(seed: int, runs: int) -> tuple[int, int, list[dict[str, int]]]:
    """Independent integer seeds for the data, the queries and each run's protocols.

    ``SeedSequence(seed).spawn(3)`` gives the data, query and run streams; each run spawns one
    child per base protocol.  Integers (not SeedSequences) so that the actor simulator, which
    takes an int seed, builds exactly the per-party streams the fast path uses.
    """
    root = np.random.SeedSequence(seed)
    data_ss, query_ss, runs_ss = root.spawn(3)
    def as_int(ss: np.random.SeedSequence) -> int:
        return int(ss.generate_state(1, dtype=np.uint64)[0] >> np.uint64(1))

    per_run = []
    for run_ss in runs_ss.spawn(runs):
        children = run_ss.spawn(len(BASE_PROTOCOLS))
        per_run.append({name: as_int(c) for name, c in zip(BASE_PROTOCOLS, children)})
    return as_int(data_ss), as_int(query_ss), per_run


def make_dataset(params: Mapping[str, Any], seed: int) -> SyntheticData:
    """The built-in synthetic data set (main paper has none; ours has a known truth)."""
    return planted_clusters(params["n"], rng=np.random.default_rng(seed), sizes=tuple(params["sizes"]),
                            clusters=tuple(tuple(c) for c in params["clusters"]), strength=params["strength"],
                            exponent=params["exponent"])  # default kinds: the default data's, else nominal


@dataclass(frozen=True)
class InputData:
    """The records the parties hold: the built-in synthetic data or the user's file.

    ``synthetic`` is the :class:`mprr.synthetic.PlantedClusters` (known planted clusters) or
    ``None`` for a file, whose truth is its own empirical distribution; ``source`` says where
    the records came from (its SHA-256 is recorded by :func:`scenarios.runner.provenance`).
    """

    dataset: Dataset
    synthetic: Any
    source: str


def synthetic_settings(config: ScenarioConfig) -> tuple[str, ...]:
    """Settings of the synthetic data (:data:`SYNTHETIC_KEYS`) given for a run on a data file.

    Those set on the command line (``--set n=100``), or in the scenario file that names the data
    file.  A scenario file's settings for its synthetic data (the shipped ``n = 3000``) are
    not given for a run whose command line replaces that data (``--data``).
    """
    if config.parameters.get("data") is None:
        return ()
    data_from_file = "data" not in config.override_keys
    return tuple(k for k in SYNTHETIC_KEYS
                 if k in config.override_keys or (data_from_file and k in config.raw_parameters))


def check_secure_sum(config: ScenarioConfig, dependence: str) -> None:
    """Refuse a ``secure_sum`` given for a run in which none runs (dependence 4.1).

    Raises
    ------
    ConfigurationError
        If ``secure_sum`` was set on the command line and RR-Clusters' ``dependence`` (read from
        its parameter object) is ``"4.1"`` (a scenario
        file's ``secure_sum``, such as the shipped ``"graph"``, is its engine for 4.2 / 4.3 runs,
        not a setting of this run).
    """
    params = config.parameters
    if "secure_sum" in config.override_keys and dependence == "4.1":
        raise ConfigurationError(
            f"parameters.secure_sum = {params['secure_sum']!r} has no effect with parameters.dependence = "
            "'4.1' (dependences from randomized response per attribute: no secure sum runs); set "
            "dependence to '4.2' or '4.3', or drop secure_sum"
        )


def load_input(params: Mapping[str, Any], seed: int, *, synthetic_given: Sequence[str] = ()) -> InputData:
    """The data set of a run: ``params["data"]`` read with :func:`scenarios.datasets.load_table`,
    else the planted-cluster data drawn with ``seed``.

    Parameters
    ----------
    params
        Validated parameters.
    seed
        Seed of the synthetic data.
    synthetic_given
        Settings of the synthetic data given with a data file (:func:`synthetic_settings`):
        refused once the file's records and columns are known.

    Raises
    ------
    ConfigurationError
        A file setting without ``data``, a synthetic-data setting with it, fewer than 2 columns.
    DataError
        An unreadable file or a column with too many categories
        (:func:`scenarios.datasets.check_category_counts`).
    """
    if params.get("data") is None:
        for key in FILE_KEYS:
            if params.get(key) is not None:
                raise ConfigurationError(
                    f"parameters.{key} applies to a data file, but parameters.data is not set "
                    f"(got {key} = {params[key]!r}); pass --data FILE or drop {key}"
                )
        synthetic = make_dataset(params, seed)
        return InputData(synthetic.dataset, synthetic, "mprr.synthetic.planted_clusters")
    from scenarios.datasets import (check_category_counts, declare_ordinal, delimiter_hint, header_among_values,
                                    load_table, parse_ordinal)

    path = Path(params["data"])
    dataset = load_table(path, params["columns"], missing=params["missing"], delimiter=params["delimiter"],
                         encoding=params["encoding"])
    if params.get("ordinal"):
        dataset = declare_ordinal(dataset, parse_ordinal(params["ordinal"]), path)
    names = list(dataset.schema.names)
    if synthetic_given:
        settings = ", ".join(f"{k} = {format_value(params[k])}" for k in synthetic_given)
        clusters = (" (RR-Clusters finds the clusters of your data itself: Algorithm 1 with Tv and Td)"
                    if "clusters" in synthetic_given else "")
        raise ConfigurationError(
            f"parameters {settings} describe the built-in synthetic data and cannot apply to the data "
            f"file {str(path)!r}, which has {dataset.n:,} records and its own columns {names}{clusters}; "
            f"drop {', '.join(synthetic_given)}"
        )
    if dataset.m < 2:
        raise ConfigurationError(
            f"parameters.columns must name at least 2 columns (RR-Clusters needs attribute pairs), "
            f"got {names}{delimiter_hint(names)}" if params["columns"] is not None else
            f"the data file {str(path)!r} has only 1 column {names}; RR-Clusters needs at least 2 "
            f"(attribute pairs){delimiter_hint(names)}"
        )
    check_category_counts(dataset, path, columns_given=params["columns"] is not None)
    echoed = header_among_values(dataset)
    if echoed:
        log.warning("%s: column%s %s also appear%s among %s own values: if the file has no header "
                    "row, its first record was read as the header and is missing from the data; add a "
                    "header line", path, "s" if len(echoed) > 1 else "", ", ".join(map(repr, echoed)),
                    "" if len(echoed) > 1 else "s", "their" if len(echoed) > 1 else "its")
    return InputData(dataset, None, str(path))


def effective_parameters(params: Mapping[str, Any], data: InputData) -> dict[str, Any]:
    """The parameters the run actually used: defaults resolved, the data's own n and sizes."""
    out = dict(params)
    if all(out[k] is None for k in MATRIX_KEYS):
        out["epsilon"] = DEFAULT_EPSILON
    if data.synthetic is None:
        out.update(n=data.dataset.n, sizes=list(data.dataset.sizes), clusters=None, strength=None,
                   exponent=None, columns=list(data.dataset.schema.names))
    return out


def protocol_parameters(params: Mapping[str, Any]) -> dict[str, Parameters]:
    """The parameter objects of the two base protocols (same attribute matrices for both):
    :class:`~mprr.protocols.parameters.RRClustersParameters` and
    :class:`~mprr.protocols.parameters.RRIndependentParameters`.

    With ``epsilon`` (the default, :data:`DEFAULT_EPSILON` when no matrix parameter is given)
    both protocols get the same budget per respondent; ``p`` or ``epsilon_per_attribute`` is the
    papers' per-attribute setting.  The objects validate the values, once (the scenario schema's
    fields are derived from theirs, :func:`mprr.parameters.checked_parameters`): a refused
    value names its TOML key (``parameters.epsilon``).

    Raises
    ------
    ConfigurationError
        From the parameter objects: e.g. more than one of ``epsilon``, ``epsilon_per_attribute``
        and ``p``, or a budget per respondent asked of dependence 4.2 (exact values, ε = ∞).
    """
    given = [k for k in MATRIX_KEYS if params[k] is not None]
    chosen = {k: params[k] for k in given} if given else {"epsilon": DEFAULT_EPSILON}
    common = {**chosen, "postprocess": params["postprocess"]}
    clusters = {**common, "Tv": params["Tv"], "Td": params["Td"], "max_cells": params["max_cells"],
                "dependence": params["dependence"]}
    if "epsilon" in chosen:
        clusters["discovery_share"] = params["discovery_share"]
    return {"RR-Clusters": checked_parameters(RRClustersParameters, clusters, prefix="parameters"),
            "RR-Independent": checked_parameters(RRIndependentParameters, common, prefix="parameters")}


def checked_values(params: Mapping[str, Any], parameters: Mapping[str, Parameters]) -> dict[str, Any]:
    """``params`` with the values the parameter objects normalised (``epsilon = 4`` read as
    ``4.0``): the scenario reads its protocol settings back from the objects that checked them."""
    out = dict(params)
    for obj in parameters.values():
        out.update({k: getattr(obj, k) for k in params if params[k] is not None and hasattr(obj, k)})
    return out


# --------------------------------------------------------------------------- running


def _actors(dataset: Dataset, protocol: str, parameters: Parameters, seed: int,
            params: Mapping[str, Any], status: Callable[[str], None] | None, runtime: Runtime | None,
            ) -> tuple[ProtocolResult, PrivacyRecord, Any, Any, Any]:
    """One run in the actor simulator: n party actors with their own streams and ledgers, on
    ``runtime`` (``None``: memory); ``status`` receives a line of traffic so far every second
    (the progress bar)."""
    from parties.simulate import simulate

    def report(elapsed: float, messages: int, nbytes: int) -> None:
        if status is not None:
            status(f"{protocol}: {messages:,} messages, {nbytes / 1e6:.1f} MB, {elapsed:.0f} s")

    plan = lookup(protocol).plan(dataset.schema, parameters)  # a secure sum in it takes the scenario's engine
    options = simulate_options(plan, params["secure_sum"], dataset.n, params["degree"], params["round_timeout"])
    sim = simulate(dataset, protocol, seed=seed, timeout=params["round_timeout"], progress=report,
                   progress_interval=1.0, runtime=runtime, parameters=parameters, **options)
    view = dict(sim.view.to_dict())
    view["degraded"] = sim.degraded
    view["refusals"] = len(sim.refusals)
    return sim.result, PrivacyRecord.of(sim), sim.traffic, view, sim.wire


def run_protocol(dataset: Dataset, protocol: str, parameters: Parameters, *, seed: int,
                 engine: str, params: Mapping[str, Any],
                 status: Callable[[str], None] | None = None, runtime: Runtime | None = None) -> ProtocolRun:
    """Run one base protocol on ``engine`` and RR-Adjustment on its release (``status``:
    progress text of long actor runs; ``runtime``: where the actor engine's parties live,
    ``None``: memory)."""
    start = time.perf_counter()
    if engine == "fast":  # the local driver: every party at once, each with its own stream
        result = run_local(lookup(protocol).program, dataset, parameters, rng=PartyStreams(seed, dataset.n))
        privacy, traffic, view, wire = PrivacyRecord.of(result), None, None, None
    else:
        result, privacy, traffic, view, wire = _actors(dataset, protocol, parameters, seed, params, status, runtime)
    seconds = time.perf_counter() - start
    start = time.perf_counter()
    adjusted = rr_adjustment(result, tol=params["adjustment_tol"], max_iter=params["adjustment_max_iter"])
    return ProtocolRun(result, adjusted, privacy, traffic, view, seconds,
                       time.perf_counter() - start, wire)


# --------------------------------------------------------------------------- metrics


def _query_errors(queries: Sequence[CountQuery], runs: Sequence[dict[str, ProtocolRun]],
                  dataset: Dataset) -> dict[str, np.ndarray]:
    """Eq. (16) relative errors per label, all runs stacked: (runs, queries)."""
    out: dict[str, list[np.ndarray]] = {label: [] for label in LABELS}
    for per_run in runs:
        for base, pr in per_run.items():
            out[base].append(evaluate_queries(queries, pr.result.estimate, dataset).relative)
            out[f"{base}+Adjustment"].append(
                evaluate_queries(queries, pr.adjusted.estimate, dataset).relative)
    return {label: np.vstack(v) for label, v in out.items()}



SYNTHETIC_CSV = "synthetic_records.csv"
"""Synthetic microdata written beside the report."""


def write_synthetic_csv(result: ProtocolResult, path: Path, *, seed: int) -> int:
    """Draw ``result.n`` synthetic records from ``result``'s estimate and write them as CSV with
    the category labels (header = attribute names); returns the number of records."""
    from mprr.protocols import synthesize

    synthetic = synthesize(result, rng=np.random.default_rng([seed, 0x5717]))
    frame = pd.DataFrame({a.name: np.asarray(a.categories, dtype=object)[synthetic.codes[:, j]]
                          for j, a in enumerate(synthetic.schema)})
    frame.to_csv(path, index=False)
    return synthetic.n


# --------------------------------------------------------------------------- runner


@register(
    "local_anonymization",
    schema=SCHEMA,
    description="Local anonymization of synthetic parties against an untrusted controller: "
                "RR-Clusters (+Adjustment) vs RR-Independent",
    engines=("actors", "fast"),
)
def run_local_anonymization(
    config: ScenarioConfig, *, out_dir: Path, runs: int, seed: int, engine: str, progress: Progress,
    runtime: Runtime | None = None,
) -> ScenarioResult:
    """RR-Clusters (+Adjustment) vs RR-Independent on planted-cluster data (see module
    docstring); the actor engine's parties live on ``runtime`` (``None``: memory)."""
    parameters = protocol_parameters(config.parameters)
    params = checked_values(config.parameters, parameters)
    check_secure_sum(config, params["dependence"])
    data_seed, query_seed, run_seeds = derive_seeds(seed, runs)
    started = time.perf_counter()
    data = load_input(params, data_seed, synthetic_given=synthetic_settings(config))
    dataset = data.dataset
    queries = random_queries(dataset.sizes, params["sigma"], params["queries"],
                             rng=np.random.default_rng(query_seed))

    all_runs: list[dict[str, ProtocolRun]] = []
    with progress.task("runs", total=runs) as bar:
        for r in range(runs):
            per_run = {}
            for base in BASE_PROTOCOLS:
                bar.set_status(base)
                per_run[base] = run_protocol(dataset, base, parameters[base], seed=run_seeds[r][base],
                                             engine=engine, params=params, status=bar.set_status,
                                             runtime=runtime)
            all_runs.append(per_run)
            bar.advance()
    errors = _query_errors(queries, all_runs, dataset)
    elapsed = time.perf_counter() - started
    result = build_result(params, engine, data.synthetic, dataset, queries, all_runs, errors, elapsed)
    synthetic_csv = write_synthetic_csv(all_runs[0]["RR-Clusters"].adjusted, out_dir / SYNTHETIC_CSV,
                                        seed=query_seed)
    result = replace(result, notes=[*result.notes, (
        f"{SYNTHETIC_CSV}: {synthetic_csv} synthetic records drawn from the RR-Clusters+Adjustment estimate "
        "of run 1 (main paper 3.2: anyone holding the estimate can draw synthetic microdata), with the "
        "category labels of the data.")], files=[*result.files, SYNTHETIC_CSV])
    if data.synthetic is None:
        result = with_estimates(result, all_runs[0], dataset, params, out_dir, seed=query_seed)
    return replace(result, parameters=effective_parameters(params, data), description=own_data_description(data),
                   provenance={} if data.synthetic is None else {"data_source": data.source})


def with_estimates(result: ScenarioResult, first: Mapping[str, ProtocolRun], dataset: Dataset,
                   params: Mapping[str, Any], out_dir: Path, *, seed: int) -> ScenarioResult:
    """``result`` with the estimates of run 1 (:mod:`scenarios.estimates_report`): every protocol's
    1-way marginals and the 2-way tables of the pairs most dependent in the data, with standard
    errors and intervals beside the truth, as report tables, ``results.json["estimates"]``, a
    summary line and :data:`~scenarios.estimates_report.ESTIMATES_CSV`."""
    from scenarios.estimates_report import (
        ESTIMATES_CSV,
        estimate_records,
        estimates_summary,
        estimates_tables,
        strongest_pairs,
        true_dependence,
        write_estimates_csv,
    )

    results = {label: (pr.adjusted if "+" in label else pr.result)
               for base, pr in first.items() for label in (base, f"{base}+Adjustment")}
    tables = [(a,) for a in range(dataset.m)] + strongest_pairs(true_dependence(dataset))
    records, methods = estimate_records(results, dataset, tables, confidence=params["confidence"],
                                        replicates=params["replicates"],
                                        rng=np.random.default_rng([seed, 0xE57]))
    rows = write_estimates_csv(records, out_dir / ESTIMATES_CSV)
    labels = list(results)
    notes = [f"{ESTIMATES_CSV}: {rows} rows, every protocol's estimate of every cell of the tables shown, with its "
             "standard error, interval and the truth. How each protocol's intervals were made: "
             + " | ".join(f"{label}: {text}" for label, text in methods.items())]
    return replace(result, tables=[*result.tables, *estimates_tables(
                       records, labels, confidence=params["confidence"],
                       pairs_by="in your data (|Pearson| / Cramér's V of the true records)")],
                   records={**result.records, "estimates": records}, summary=[*result.summary, estimates_summary(records, labels, params["confidence"])],
                   notes=[*result.notes, *notes], files=[*result.files, ESTIMATES_CSV])


def own_data_description(data: InputData, shown: int = 8) -> str:
    """The report's opening line for a run on the user's file (``""`` for the built-in data:
    the scenario file's description stays): file name, records and columns."""
    if data.synthetic is not None:
        return ""
    names = list(data.dataset.schema.names)
    columns = ", ".join(names[:shown]) + (f", … ({len(names)} in all)" if len(names) > shown else "")
    return (f"Your data: {Path(data.source).name}, {plural(data.dataset.n, 'record')} of {plural(data.dataset.m, 'column')} "
            f"({columns}); each record is a party that anonymizes it locally against an untrusted controller: "
            "RR-Clusters (+Adjustment) vs RR-Independent — query errors, ε per party, messages and bytes")
