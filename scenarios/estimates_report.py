"""Estimated tables with their uncertainty beside the truth: the own-data part of ``local_anonymization``.

For a run on the user's file (``mprr run local_anonymization --data FILE``) the controller's
estimates of run 1 are shown for every protocol: each attribute's 1-way marginal and the
:data:`TOP_PAIRS` 2-way tables of the attribute pairs most dependent *in the data* (|Pearson| /
Cramér's V of the true records, :func:`strongest_pairs`), every cell with its standard error and
confidence interval (:meth:`mprr.protocols.ProtocolResult.uncertainty`: the closed form for direct
estimates, a parametric bootstrap where the estimator depends on the data) and the truth (the
file's own counts).

- :func:`estimate_records` — one record per protocol and cell (``results.json["estimates"]``);
- :func:`estimates_tables` — the report's tables (the largest cells of each table);
- :func:`write_estimates_csv` — every record as ``estimates.csv`` (:data:`ESTIMATES_CSV`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mprr.data import Dataset
from mprr.dependence import bivariate_tables, dependence_matrix
from mprr.domain import joint_tally
from mprr.protocols import ProtocolResult
from scenarios.report import Table, plural

__all__ = [
    "ESTIMATES_CSV",
    "TOP_PAIRS",
    "SHOWN_CELLS",
    "true_dependence",
    "strongest_pairs",
    "estimate_records",
    "estimates_tables",
    "estimates_summary",
    "write_estimates_csv",
]

ESTIMATES_CSV = "estimates.csv"
"""The estimates of every protocol, one row per cell, written beside the report."""
TOP_PAIRS = 3
"""2-way tables shown: the attribute pairs most dependent in the data."""
SHOWN_CELLS = 12
"""Most cells of one table in report.md (the largest true ones); all are in the CSV and JSON."""


def true_dependence(dataset: Dataset) -> np.ndarray:
    """Dependence of every attribute pair in the true records (main paper eq. 8 / 9: |Pearson|
    for two ordinal attributes, else Cramér's V)."""
    return dependence_matrix(bivariate_tables(dataset.codes, dataset.sizes), dataset.schema.kinds)


def strongest_pairs(dependence: np.ndarray, k: int = TOP_PAIRS) -> list[tuple[int, ...]]:
    """The ``k`` attribute pairs ``(i, j)``, ``i < j``, with the largest dependence, strongest first
    (ties in pair order)."""
    m = dependence.shape[0]
    pairs: list[tuple[int, ...]] = [(i, j) for i in range(m) for j in range(i + 1, m)]
    return sorted(pairs, key=lambda ij: -float(dependence[ij]))[:k]


def estimate_records(
    results: Mapping[str, ProtocolResult],
    dataset: Dataset,
    tables: Sequence[tuple[int, ...]],
    *,
    confidence: float,
    replicates: int,
    rng: np.random.Generator,
) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Every protocol's estimate of every cell of ``tables``, with SE, interval and truth.

    Parameters
    ----------
    results
        Protocol label -> its result (run 1).
    dataset
        The true records (the truth is their own distribution).
    tables
        Attribute indices of every table.
    confidence, replicates, rng
        Of the intervals (:meth:`ProtocolResult.uncertainty`, target ``"data"``); each protocol
        gets its own child generator of ``rng``.

    Returns
    -------
    records, methods
        One record per protocol and cell: ``protocol``, ``attributes`` (names), ``labels`` (the
        cell's categories), ``estimate``, ``se``, ``ci_low``, ``ci_high``, ``truth``,
        ``covered``, ``method``; and per protocol the descriptions of the methods it used.
    """
    schema = dataset.schema
    records: list[dict[str, Any]] = []
    methods: dict[str, str] = {}
    children = rng.spawn(len(results))
    for (label, result), child in zip(results.items(), children):
        found = result.uncertainty([list(t) for t in tables], confidence=confidence, replicates=replicates,
                                   rng=child)
        methods[label] = "; ".join(dict.fromkeys(u.description for u in found))
        for axes, u in zip(tables, found):
            sizes = tuple(schema[a].size for a in axes)
            truth = joint_tally(dataset.codes[:, list(axes)], sizes) / dataset.n
            for cell in np.ndindex(*sizes):
                lo, hi, t = float(u.low[cell]), float(u.high[cell]), float(truth[cell])
                records.append({
                    "protocol": label,
                    "attributes": [schema[a].name for a in axes],
                    "labels": [str(schema[a].categories[c]) for a, c in zip(axes, cell)],
                    "estimate": float(u.estimate[cell]),
                    "se": float(u.se[cell]),
                    "ci_low": lo,
                    "ci_high": hi,
                    "truth": t,
                    "covered": bool(lo <= t <= hi),
                    "method": u.method,
                })
    return records, methods


def _grouped(records: Sequence[Mapping[str, Any]]) -> dict[tuple[str, ...], dict[tuple[str, ...], dict[str, Any]]]:
    """Table (attribute names) -> cell (labels) -> protocol -> record, in first-seen order."""
    out: dict[tuple[str, ...], dict[tuple[str, ...], dict[str, Any]]] = {}
    for r in records:
        out.setdefault(tuple(r["attributes"]), {}).setdefault(tuple(r["labels"]), {})[r["protocol"]] = r
    return out


def _interval(r: Mapping[str, Any] | None) -> str:
    if r is None:
        return "—"
    return f"{r['estimate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]"


def _coverage(records: Sequence[Mapping[str, Any]], labels: Sequence[str]) -> str:
    parts = []
    for label in labels:
        mine = [r for r in records if r["protocol"] == label]
        parts.append(f"{label} {sum(r['covered'] for r in mine)}/{len(mine)}")
    return ", ".join(parts)


def estimates_tables(records: Sequence[Mapping[str, Any]], labels: Sequence[str], *, confidence: float,
                     pairs_by: str) -> list[Table]:
    """The report's tables: 1-way marginals and the strongest 2-way tables, each cell's truth
    beside every protocol's ``estimate [ci_low, ci_high]`` (the :data:`SHOWN_CELLS` largest
    true cells of each table)."""
    grouped = _grouped(records)
    out = []
    for ways, key, title in ((1, "estimates_1way", "Estimated 1-way marginals (run 1)"),
                             (2, "estimates_2way", "Estimated 2-way tables of the most dependent pairs (run 1)")):
        rows: list[tuple[Any, ...]] = []
        hidden = 0
        for attrs, cells in grouped.items():
            if len(attrs) != ways:
                continue
            ordered = sorted(cells.items(), key=lambda kv: -next(iter(kv[1].values()))["truth"])
            hidden += max(0, len(ordered) - SHOWN_CELLS)
            for cell, by_label in ordered[:SHOWN_CELLS]:
                truth = next(iter(by_label.values()))["truth"]
                rows.append((" × ".join(attrs), ", ".join(cell), truth,
                             *(_interval(by_label.get(label)) for label in labels)))
        if not rows:
            continue
        mine = [r for r in records if len(r["attributes"]) == ways]
        caption = (f"Truth: the file's own distribution. Each protocol: estimate [{confidence:.0%} interval] "
                   f"(target: your records, fixed; only the randomization is random). Intervals covering the "
                   f"truth: {_coverage(mine, labels)}.")
        if ways == 2:
            caption += (f" Pairs: the {plural(len({tuple(r['attributes']) for r in mine}), 'pair')} most dependent "
                        f"{pairs_by}. RR-Independent estimates a 2-way table as the product of its two marginals: "
                        "its interval is the randomization noise around that product, which misses the dependence "
                        "it cannot see.")
        if hidden:
            caption += (f" {plural(hidden, 'smaller cell')} not shown (the {SHOWN_CELLS} largest true cells of each "
                        f"table are); every cell is in {ESTIMATES_CSV} and results.json (estimates).")
        out.append(Table(key=key, title=title, columns=("table", "cell", "truth", *labels), rows=rows,
                         formats={"truth": ".3f"}, caption=caption))
    return out


def estimates_summary(records: Sequence[Mapping[str, Any]], labels: Sequence[str], confidence: float) -> str:
    """One summary line: what was estimated and how often the intervals cover the truth."""
    tables = {tuple(r["attributes"]) for r in records}
    ones = sum(len(t) == 1 for t in tables)
    return (f"estimates ({ESTIMATES_CSV}): {plural(ones, '1-way marginal')} and "
            f"{plural(len(tables) - ones, '2-way table')} with {confidence:.0%} intervals; cells whose interval "
            f"covers the truth: {_coverage(records, labels)}")


def write_estimates_csv(records: Sequence[Mapping[str, Any]], path: Path) -> int:
    """Write the records as CSV, one row per protocol and cell: ``protocol``, ``method``,
    ``attribute_1``, ``value_1``, ``attribute_2``, ``value_2`` (empty for a marginal), ``truth``,
    ``estimate``, ``se``, ``ci_low``, ``ci_high``, ``covered``; returns the number of rows."""
    import pandas as pd

    ways = max((len(r["attributes"]) for r in records), default=1)
    rows = []
    for r in records:
        row: dict[str, Any] = {"protocol": r["protocol"], "method": r["method"]}
        for k in range(ways):
            has = k < len(r["attributes"])
            row[f"attribute_{k + 1}"] = r["attributes"][k] if has else ""
            row[f"value_{k + 1}"] = r["labels"][k] if has else ""
        row.update({key: r[key] for key in ("truth", "estimate", "se", "ci_low", "ci_high", "covered")})
        rows.append(row)
    pd.DataFrame(rows).to_csv(path, index=False, float_format="%.6g")
    return len(rows)

