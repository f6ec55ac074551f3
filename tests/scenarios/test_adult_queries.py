"""scenarios.adult_queries: Adult path resolution, subsample/replication, the 6.5 queries with
their zero-count policies, eq. (16) errors, and the two readings of the 6.3.1 matrix."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from mprr.data import Attribute, Dataset, Schema
from mprr.errors import ConfigurationError
from mprr.matrices import grr
from mprr.protocols import attribute_matrices
from scenarios.adult_queries import (
    ADULT_DEFAULT,
    draw_queries,
    errors_of,
    load_adult_dataset,
    matrix_choice,
    printed_epsilons,
    resolve_adult_path,
)
from scenarios.datasets import BUNDLED_ADULT_DIR, bundled_adult, load_adult


def test_missing_adult_file_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="parameters.adult_path .*not found"):
        resolve_adult_path(tmp_path / "nope.data")
    with pytest.raises(ConfigurationError, match="tried .*nope.data"):
        resolve_adult_path("relative/nope.data")


def test_missing_adult_path_lists_each_candidate_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from scenarios.adult_queries import REPO_ROOT

    monkeypatch.chdir(REPO_ROOT)  # the working directory and the repository root give the same path
    with pytest.raises(ConfigurationError, match=r"not found \(tried '[^']*/nope\.data'\); leave adult_path at "
                                                 r"'bundled' .*https://doi.org/10.24432/C5XW20"):
        resolve_adult_path("x/../nope.data")


def test_bundled_is_the_shipped_copy() -> None:
    assert resolve_adult_path(ADULT_DEFAULT) == bundled_adult("adult.data") == BUNDLED_ADULT_DIR / "adult.data.gz"
    assert resolve_adult_path(BUNDLED_ADULT_DIR) == BUNDLED_ADULT_DIR / "adult.data.gz"  # the folder form


def test_adult_subsample_and_replication(adult_path: Path) -> None:
    full = load_adult(adult_path)
    assert resolve_adult_path(adult_path.parent) == adult_path.resolve()
    data = load_adult_dataset({"adult_path": str(adult_path), "max_records": 500, "replicate": 6}, 3)
    assert data.n == 3000
    np.testing.assert_array_equal(data.codes[:500], data.codes[2500:])
    again = load_adult_dataset({"adult_path": str(adult_path), "max_records": 500, "replicate": 1}, 3)
    np.testing.assert_array_equal(again.codes, data.codes[:500])
    full_rows = {tuple(r) for r in full.codes.tolist()}
    assert all(tuple(r) in full_rows for r in again.codes.tolist())
    other = load_adult_dataset({"adult_path": str(adult_path), "max_records": 500}, 4)
    assert not np.array_equal(other.codes, again.codes)  # the subsample depends on the seed


def _sparse() -> Dataset:
    schema = Schema(tuple(Attribute(f"a{j}", ("x", "y", "z"), "nominal") for j in range(3)))
    return Dataset(schema, np.array([[0, 0, 0], [1, 1, 0], [0, 1, 0]] * 5))


def test_queries_zero_policies() -> None:
    data = _sparse()
    rng = np.random.default_rng(0)
    queries, truth = draw_queries(data, 0.2, 40, "exclude", rng)
    assert (truth == 0).any()  # most cells of this domain are empty
    rel, ab = errors_of(data, queries, truth, data.n, "exclude")
    np.testing.assert_array_equal(ab, 0.0)
    assert np.isnan(rel[truth == 0]).all() and (rel[truth > 0] == 0).all()
    shifted = Dataset(data.schema, np.array([[2, 2, 2]] * 15))
    rel, _ = errors_of(shifted, queries, truth, data.n, "inf")
    assert np.isinf(rel[truth == 0]).sum() > 0 or (truth == 0).sum() == 0
    queries, truth = draw_queries(data, 0.2, 40, "resample", rng)
    assert len(queries) == 40 and (truth > 0).all()
    rel, ab = errors_of(shifted, queries, truth, data.n, "exclude")
    np.testing.assert_allclose(rel, ab / truth)  # eq. (16)


def test_printed_epsilon_reading() -> None:
    sizes = (2, 6, 16)
    eps = printed_epsilons(0.3, sizes)
    assert eps == pytest.approx([abs(math.log(0.3 * k / 0.7)) for k in sizes])
    mats = attribute_matrices(sizes, **matrix_choice(0.3, sizes, "printed"))
    for m, k, e in zip(mats, sizes, eps):
        np.testing.assert_allclose(m.values, grr(k, e).values)
        assert m.epsilon == pytest.approx(e)
    assert matrix_choice(0.3, sizes, "matrix") == {"p": 0.3}
    with pytest.raises(ConfigurationError, match="= 0 for p = 0.1 and .A. = 9"):
        printed_epsilons(0.1, (9, 2))
    with pytest.raises(ConfigurationError, match="epsilon_reading must be one of"):
        matrix_choice(0.3, sizes, "other")
