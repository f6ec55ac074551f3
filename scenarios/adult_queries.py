"""The Adult data and the count-query evaluation of the main paper's experiments (Section 6).

- :func:`resolve_adult_path` / :func:`load_adult_dataset` — UCI Adult from the configured path
  (default ``"bundled"``: the copy shipped in ``scenarios/data/adult``), optionally subsampled (reduced runs) and concatenated k times (Table II: Adult6);
- :func:`draw_queries` / :func:`errors_of` — the 6.5 query generator with an explicit policy for
  queries whose true count is 0, and the eq. (16) errors of any estimate;
- :func:`matrix_choice` — the two readings of the 6.3.1 matrix: ``"matrix"`` (the stochastic
  ``keep_or_uniform(|A|, p)``, ε_A computed from it; docs/architecture.md) or ``"printed"`` (the paper's
  printed ε_A = |ln(p|A|/(1 − p))|, i.e. k-RR ``grr(|A|, ε_A)`` per attribute, clusters carrying
  Σ of the printed ε_A) — used to test whether the printed formula explains the paper's numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mprr.data import Dataset
from mprr.errors import ConfigurationError, DataError, EstimationError
from mprr.metrics import CountQuery, answers, random_queries, relative_error
from scenarios.datasets import bundled_adult, load_adult

__all__ = [
    "ADULT_DEFAULT",
    "EPSILON_READINGS",
    "REPO_ROOT",
    "cluster_names",
    "draw_queries",
    "errors_of",
    "load_adult_dataset",
    "matrix_choice",
    "printed_epsilons",
    "resolve_adult_path",
]

REPO_ROOT = Path(__file__).resolve().parents[1]
ADULT_DEFAULT = "bundled"
"""``adult_path`` of the Adult scenarios: the gzip-compressed copy of UCI Adult shipped with the
package (:func:`scenarios.datasets.bundled_adult`); any other value is the path of another copy."""
EPSILON_READINGS = ("matrix", "printed", "printed-separate")


def resolve_adult_path(value: str | Path) -> Path:
    """The Adult file of the configuration: ``"bundled"`` (:data:`ADULT_DEFAULT`) is the copy
    shipped with the package; any other value is a path, absolute, or relative to the working
    directory, or relative to the repository root (in that order).  A directory means its
    ``adult.data`` (or ``adult.data.gz``).

    Raises
    ------
    ConfigurationError
        If no candidate exists (the message lists every path tried).
    """
    if str(value) == ADULT_DEFAULT:
        try:
            return bundled_adult()
        except DataError as exc:
            raise ConfigurationError(f"parameters.adult_path = {ADULT_DEFAULT!r}: {exc}") from exc
    raw = Path(value).expanduser()
    tries = [raw] if raw.is_absolute() else [Path.cwd() / raw, REPO_ROOT / raw]
    candidates = list(dict.fromkeys(c.resolve() for c in tries))  # run from the root: one path
    for c in candidates:
        if c.is_dir():
            c = next((f for f in (c / "adult.data", c / "adult.data.gz") if f.is_file()), c / "adult.data")
        if c.is_file():
            return c.resolve()
    tried = ", ".join(repr(str(c)) for c in candidates)
    raise ConfigurationError(
        f"parameters.adult_path must be the UCI Adult file adult.data (or its directory), got "
        f"{str(value)!r}: not found (tried {tried}); leave adult_path at {ADULT_DEFAULT!r} for the copy shipped "
        "with mprr, or give the path of another copy (UCI Machine Learning Repository, "
        "https://doi.org/10.24432/C5XW20): --set adult_path='\"/path/to/adult.data\"'"
    )


def load_adult_dataset(params: dict[str, Any], seed: int) -> Dataset:
    """Adult as configured: optional random subsample of ``max_records`` records (drawn with
    the run seed), then concatenated ``replicate`` times (main paper: Adult6 = 6 copies)."""
    path = resolve_adult_path(params["adult_path"])
    try:
        data = load_adult(path)
    except DataError as exc:
        raise ConfigurationError(f"parameters.adult_path {str(path)!r} is not a readable Adult file: {exc}") from exc
    codes = data.codes
    k = params.get("max_records", 0)
    if k and k < data.n:
        rng = np.random.default_rng([int(seed), 0x5EED])
        codes = codes[np.sort(rng.choice(data.n, size=k, replace=False))]
    rep = params.get("replicate", 1)
    if rep > 1:
        codes = np.tile(codes, (rep, 1))
    return Dataset(data.schema, codes)


def draw_queries(
    dataset: Dataset, sigma: float, count: int, zero_policy: str, rng: np.random.Generator
) -> tuple[list[CountQuery], np.ndarray]:
    """``count`` queries of the 6.5 generator and their true counts X_S.

    ``zero_policy="resample"`` redraws queries until every true count is > 0 (at most 100
    rounds); otherwise queries with X_S = 0 are kept (their relative error is then excluded or
    infinite, see :func:`errors_of`).
    """
    queries = random_queries(dataset.sizes, sigma, count, rng=rng)
    truth = answers(queries, dataset)
    if zero_policy != "resample":
        return queries, truth
    keep = [(q, t) for q, t in zip(queries, truth) if t > 0]
    for _ in range(100):
        if len(keep) >= count:
            break
        extra = random_queries(dataset.sizes, sigma, count, rng=rng)
        keep += [(q, t) for q, t in zip(extra, answers(extra, dataset)) if t > 0]
    if len(keep) < count:
        raise EstimationError(f"could not draw {count} queries with a non-zero true count at sigma={sigma}")
    keep = keep[:count]
    return [q for q, _ in keep], np.array([t for _, t in keep])


def errors_of(estimate: Any, queries: Sequence[CountQuery], truth: np.ndarray, n: int,
              zero_policy: str) -> tuple[np.ndarray, np.ndarray]:
    """(relative, absolute) eq. (16) errors; relative NaN (excluded) or inf where X_S = 0."""
    y = answers(queries, estimate) if isinstance(estimate, Dataset) else answers(queries, estimate, n=n)
    rel = relative_error(y, truth, zero="inf" if zero_policy == "inf" else "nan")
    return rel, np.abs(y - truth)


def cluster_names(dataset: Dataset, clusters: Sequence[Sequence[int]]) -> str:
    """Attribute names of the multi-attribute clusters, e.g. ``{sex, income}; {race, ...}``."""
    names = dataset.schema.names
    multi = [c for c in clusters if len(c) > 1]
    return "; ".join("{" + ", ".join(names[a] for a in c) + "}" for c in multi) or "all singletons"


def printed_epsilons(p: float, sizes: Sequence[int]) -> list[float]:
    """ε_A = |ln(p|A|/(1 − p))| as printed in main paper 6.3.1, one per attribute.

    Raises
    ------
    ConfigurationError
        When the formula gives ε_A = 0 (p|A| = 1 − p: the printed matrix is then uniform and
        carries no information, e.g. p = 0.1 for the 9 values of workclass).
    """
    eps = [abs(math.log(p * k / (1.0 - p))) for k in sizes]
    bad = [k for k, e in zip(sizes, eps) if e < 1e-9]
    if bad:
        raise ConfigurationError(
            f"epsilon_reading 'printed' gives ε_A = |ln(p|A|/(1−p))| = 0 for p = {p:g} and |A| = {bad[0]} "
            "(the printed matrix is uniform); use epsilon_reading = 'matrix' or another p"
        )
    return eps


def matrix_choice(p: float, sizes: Sequence[int], reading: str) -> dict[str, Any]:
    """Keyword arguments selecting the attribute matrices of p for the protocols:
    ``{"p": p}`` (``"matrix"``) or ``{"epsilon_per_attribute": printed ε_A}`` (``"printed"`` and
    ``"printed-separate"``, which differ in how a cluster is released: see
    :mod:`scenarios.paper_adult`)."""
    if reading == "matrix":
        return {"p": p}
    if reading in ("printed", "printed-separate"):
        return {"epsilon_per_attribute": printed_epsilons(p, sizes)}
    raise ConfigurationError(f"epsilon_reading must be one of {list(EPSILON_READINGS)}, got {reading!r}")
