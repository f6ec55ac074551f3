"""Snapshot of every shipped scenario's numbers, to show a refactoring changes no result.

Runs each shipped scenario (``scenarios/configs/*.toml``) at a small size with a fixed seed,
on both engines where the scenario has both, and for ``local_anonymization`` with each
dependence method and secure-sum engine, then keeps the numbers of each ``results.json``
(numbers, booleans and the strings ``"inf"``/``"nan"``; key paths joined by ``/``), leaving
out what a run cannot reproduce: wall and CPU times, versions, provenance, elapsed seconds.

::

    .venv/bin/python benchmarks/scenario_snapshot.py --out before.json
    .venv/bin/python benchmarks/scenario_snapshot.py --out after.json --compare before.json

``--compare`` exits with status 1 and lists the differing paths when a number differs by more
than float rounding (relative 1e-9, absolute 1e-12). Scenarios that need UCI Adult read the copy
shipped with the package, or ``--adult`` / ``MPRR_ADULT_DIR``.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from scenarios.runner import run  # noqa: E402
from _adult import DEFAULT_ADULT  # noqa: E402  (benchmarks/_adult.py)

#: Keys whose values depend on the machine or the moment, not on the computation.
VOLATILE = re.compile(
    r"(seconds|elapsed|wall|cpu_time|_time$|^time|timing|versions|provenance|peak_rss|rss_mib"
    r"|duration|figures|source)",
    re.IGNORECASE,
)

_LA = {"n": 240, "queries": 60, "sizes": [4, 3, 5, 2, 3], "clusters": [[0, 1, 2], [3, 4]], "p": 0.7}
"""The papers' per-attribute setting (p = 0.7), which runs every dependence method (4.2 too)."""
_LA_BUDGET = {k: v for k, v in _LA.items() if k != "p"}

#: (label, scenario, engine, parameter overrides, runs, needs Adult)
CASES: list[tuple[str, str, str | None, dict[str, Any], int | None, bool]] = [
    ("local_anonymization/fast/4.1", "local_anonymization", "fast", {**_LA}, None, False),
    ("local_anonymization/actors/4.1", "local_anonymization", "actors", {**_LA}, None, False),
    ("local_anonymization/fast/eps", "local_anonymization", "fast",
     {**_LA_BUDGET, "epsilon_per_attribute": 1.0}, None, False),
    ("local_anonymization/fast/budget", "local_anonymization", "fast", {**_LA_BUDGET, "epsilon": 2.0}, None, False),
    *[
        (f"local_anonymization/{engine}/{dep}/{secure}", "local_anonymization", engine,
         {**_LA, "n": 40, "dependence": dep, "secure_sum": secure}, None, False)
        for dep in ("4.2", "4.3")
        for engine, secure in (("fast", "graph"), ("actors", "paper"), ("actors", "graph"),
                               ("actors", "graph-direct"), ("actors", "masked"),
                               ("actors", "masked-sparse"))
    ],
    ("bistochastic_table", "bistochastic_table", None, {}, None, False),
    ("lambda_table", "lambda_table", None, {}, None, False),
    ("communication_cost", "communication_cost", None,
     {"n_values": [8, 16], "n_fixed": 8, "m_values": [2, 3], "d_values": [2, 4],
      "per_combination_max_messages": 4000}, None, False),
    ("secure_sum_faults", "secure_sum_faults", None,
     {"n": 8, "rates": [0.0], "trials": 2, "engines": ["paper", "graph", "masked"]}, None, False),
    ("kikuchi_sweeps", "kikuchi_sweeps", None,
     {"n": 300, "sweep_v": [0.0, 0.5], "sweep_epsilon": [0.5, 1.0], "sweep_n": [100, 300],
      "sweep_d": [3, 5], "adult": "yes", "adult_pairs": [["sex", "income"]], "workers": 1},
     2, True),
    ("adult_table1", "adult_table1", None,
     {"ps": [0.5], "tvs": [50], "tds": [0.3], "queries_per_run": 10, "workers": 1,
      "bootstrap": 10}, 2, True),
    ("adult_table1/4.3", "adult_table1", None,
     {"ps": [0.5], "tvs": [50], "tds": [0.3], "queries_per_run": 10, "workers": 1,
      "bootstrap": 10, "dependence": "4.3"}, 1, True),
    ("adult_table2", "adult_table2", None,
     {"ps": [0.7], "tvs": [100], "tds": [0.3], "queries_per_run": 10, "workers": 1,
      "bootstrap": 10}, 1, True),
    ("adult_figure3", "adult_figure3", None,
     {"ps": [0.5], "tvs": [50], "tds": [0.3], "sigmas": [0.1, 0.5], "queries_per_run": 10,
      "workers": 1, "bootstrap": 10, "figure2_p": 0.5}, 1, True),
]


def numbers(doc: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """Every number (and bool, None, inf/nan string) in ``doc`` by key path, volatile keys left out."""
    if isinstance(doc, Mapping):
        for key, value in doc.items():
            if VOLATILE.search(str(key)):
                continue
            yield from numbers(value, f"{path}/{key}")
    elif isinstance(doc, (list, tuple)):
        for i, value in enumerate(doc):
            yield from numbers(value, f"{path}[{i}]")
    elif isinstance(doc, bool) or doc is None:
        yield path, doc
    elif isinstance(doc, (int, float)):
        yield path, doc
    elif isinstance(doc, str) and doc in ("inf", "-inf", "nan"):
        yield path, doc


def snapshot(adult: Path | None, only: str | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for i, (label, name, engine, params, runs, needs_adult) in enumerate(CASES):
            if only and not re.search(only, label):
                continue
            params = dict(params)
            if needs_adult:
                if adult is None:
                    print(f"skip {label}: no Adult file", file=sys.stderr)
                    continue
                params["adult_path"] = str(adult)
            t0 = time.perf_counter()
            outcome = run(name, out_dir=Path(tmp) / str(i), seed=1, runs=runs, engine=engine,
                          parameters=params)
            doc = json.loads(outcome.files.results_json.read_text(encoding="utf-8"))
            out[label] = dict(numbers(doc))
            print(f"{label}: {len(out[label])} numbers, {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr)
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None:
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        if math.isnan(a) and math.isnan(b):
            return True
        return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)
    return a == b


def compare(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Differences between two snapshots, one line each (empty when equal)."""
    problems: list[str] = []
    for label in sorted(set(before) | set(after)):
        if label not in before or label not in after:
            problems.append(f"{label}: only in {'after' if label in after else 'before'}")
            continue
        b, a = before[label], after[label]
        for key in sorted(set(b) | set(a)):
            if key not in b or key not in a:
                problems.append(f"{label}{key}: only in {'after' if key in a else 'before'}")
            elif not _same(b[key], a[key]):
                problems.append(f"{label}{key}: {b[key]!r} -> {a[key]!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="JSON file to write")
    parser.add_argument("--compare", type=Path, default=None, help="earlier snapshot to check")
    parser.add_argument("--adult", type=Path, default=None, help="path of adult.data")
    parser.add_argument("--only", default=None, help="regular expression on the case labels")
    args = parser.parse_args(argv)
    adult = args.adult or DEFAULT_ADULT
    snap = snapshot(adult if adult.exists() else None, args.only)
    args.out.write_text(json.dumps(snap, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {args.out}: {sum(len(v) for v in snap.values())} numbers in {len(snap)} cases")
    if args.compare is not None:
        before = json.loads(args.compare.read_text(encoding="utf-8"))
        if args.only:
            before = {k: v for k, v in before.items() if re.search(args.only, k)}
        problems = compare(before, snap)
        for line in problems[:200]:
            print(line)
        print(f"{len(problems)} differences from {args.compare}")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
