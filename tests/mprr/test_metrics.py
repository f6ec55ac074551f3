"""Tests of mprr.metrics: count queries (main paper 6.5, eq. 16), MAE/MSE, total variation."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from mprr.data import Attribute, Dataset, Schema, parse_adult
from mprr.distributions import DenseDistribution, ProductDistribution, WeightedSample
from mprr.errors import ConfigurationError, EstimationError
from mprr.metrics import (
    CountQuery,
    absolute_error,
    answer,
    answers,
    evaluate_queries,
    mae,
    mse,
    random_queries,
    relative_error,
    total_variation,
)
from mprr.dependence import cramers_v
from mprr.synthetic import planted_clusters


def _dataset() -> Dataset:
    schema = Schema((Attribute("a", ("0", "1", "2")), Attribute("b", ("x", "y")), Attribute("c", ("p", "q"))))
    codes = np.array([[0, 0, 0], [0, 1, 1], [1, 1, 0], [2, 0, 1], [2, 1, 1], [2, 1, 0]])
    return Dataset(schema, codes)


# --------------------------------------------------------------------------- queries


def test_count_query_answers_exact() -> None:
    d = _dataset()
    mask = np.array([[True, False], [False, True], [False, False]])  # (a=0,b=x), (a=1,b=y)
    q = CountQuery((0, 1), mask)
    assert q.coverage == pytest.approx(2 / 6)
    assert answer(q, d) == 2.0
    dist = d.distribution()
    assert answer(q, dist) == pytest.approx(2 / 6)
    assert answer(q, dist, n=6) == pytest.approx(2.0)
    q2 = CountQuery((2, 0), np.array([[False, False, True], [False, False, True]]))  # a == 2
    np.testing.assert_allclose(answers([q, q2, q], d), [2, 3, 2])
    np.testing.assert_allclose(answers([q, q2], dist, n=6), [2, 3])


def test_answers_on_product_distribution_without_dense() -> None:
    sizes = (40,) * 6  # 4.1e9 cells: answering must only use pair marginals
    factors = tuple(np.full(40, 1 / 40) for _ in sizes)
    p = ProductDistribution(tuple((i,) for i in range(6)), factors, sizes)
    mask = np.zeros((40, 40), dtype=bool)
    mask[:10, :4] = True
    assert answer(CountQuery((5, 2), mask), p, n=1000) == pytest.approx(1000 * 40 / 1600)


def test_count_query_validation() -> None:
    d = _dataset()
    with pytest.raises(ConfigurationError, match="two distinct indices >= 0, got \\(1, 1\\)"):
        CountQuery((1, 1), np.ones((2, 2), dtype=bool))
    with pytest.raises(ConfigurationError, match="non-empty 2-D boolean mask, got dtype int64"):
        CountQuery((0, 1), np.ones((3, 2), dtype=np.int64))
    with pytest.raises(ConfigurationError, match=r"mask must have shape \(3, 2\) for axes \(0, 1\), got \(2, 3\)"):
        answer(CountQuery((0, 1), np.ones((2, 3), dtype=bool)), d)
    with pytest.raises(ConfigurationError, match="do not exist in a domain of 3 attributes"):
        answer(CountQuery((0, 3), np.ones((3, 2), dtype=bool)), d)
    with pytest.raises(ConfigurationError, match="n must be a finite number >= 0, got 'x'"):
        answer(CountQuery((0, 1), np.ones((3, 2), dtype=bool)), d.distribution(), n="x")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="n must be a finite number >= 0, got -1"):
        answer(CountQuery((0, 1), np.ones((3, 2), dtype=bool)), d.distribution(), n=-1)
    with pytest.raises(ConfigurationError, match="n must be > 0, got 0"):
        answer(CountQuery((0, 1), np.ones((3, 2), dtype=bool)), d.distribution(), n=0)
    with pytest.raises(ConfigurationError, match="n must be None when answering on a Dataset"):
        answer(CountQuery((0, 1), np.ones((3, 2), dtype=bool)), d, n=5)
    with pytest.raises(ConfigurationError, match="source must be a Dataset or a JointDistribution"):
        answer(CountQuery((0, 1), np.ones((3, 2), dtype=bool)), np.ones((3, 2)))  # type: ignore[arg-type]


def test_random_queries_follow_section_6_5() -> None:
    sizes = (9, 16, 7, 15, 6, 5, 2, 2)
    queries = random_queries(sizes, 0.1, 300, rng=np.random.default_rng(1))
    assert len(queries) == 300
    pairs = set()
    for q in queries:
        i, j = q.axes
        assert i < j and q.cells.shape == (sizes[i], sizes[j])
        cells = sizes[i] * sizes[j]
        assert q.cells.sum() == max(1, int(np.floor(0.1 * cells + 0.5)))
        pairs.add(q.axes)
    assert len(pairs) > 20  # 28 possible pairs, drawn uniformly
    assert all(q.cells.sum() == q.cells.size for q in random_queries(sizes, 1.0, 5, rng=np.random.default_rng(2)))
    # sex x income at sigma 0.1: 0.4 cells -> at least one cell
    q = random_queries((2, 2), 0.1, 1, rng=np.random.default_rng(0))[0]
    assert q.cells.sum() == 1


def test_random_queries_reproducible_and_uniform() -> None:
    a = random_queries((4, 5, 6), 0.3, 50, rng=np.random.default_rng(9))
    b = random_queries((4, 5, 6), 0.3, 50, rng=np.random.default_rng(9))
    assert [q.axes for q in a] == [q.axes for q in b]
    assert all(np.array_equal(x.cells, y.cells) for x, y in zip(a, b))
    # each of the 4*5 cells of pair (0, 1) is chosen with probability k/20 = 6/20
    qs = [q for q in random_queries((4, 5, 6), 0.3, 6000, rng=np.random.default_rng(5)) if q.axes == (0, 1)]
    freq = np.mean([q.cells for q in qs], axis=0)
    # Bernoulli(0.3) per cell over len(qs) draws: 5 standard errors
    assert np.all(np.abs(freq - 0.3) <= 5 * np.sqrt(0.3 * 0.7 / len(qs)))


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (((3,), 0.1, 1), "at least 2 attributes"),
        (((3, 3), 0.0, 1), r"sigma must be a real number in \(0, 1\], got 0.0"),
        (((3, 3), 1.5, 1), r"sigma must be a real number in \(0, 1\], got 1.5"),
        (((3, 3), float("nan"), 1), "sigma must be a real number in"),
        (((3, 3), "x", 1), "sigma must be a real number in .*, got 'x'"),
        (((3, 3), True, 1), "sigma must be a real number in .*, got True"),
        (((3, 3), 0.5, 0), "count must be an integer >= 1, got 0"),
        (((3, 0), 0.5, 1), r"sizes\[1\] must be an integer >= 1, got 0"),
    ],
)
def test_random_queries_rejects(args: tuple, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        random_queries(*args, rng=np.random.default_rng(0))


# --------------------------------------------------------------------------- eq. (16)


def test_absolute_and_relative_error_eq16() -> None:
    np.testing.assert_allclose(absolute_error([12.0, 7.0], [10.0, 8.0]), [2.0, 1.0])
    np.testing.assert_allclose(relative_error([12.0, 7.0], [10.0, 8.0]), [0.2, 0.125])
    assert float(relative_error(5.0, 10.0)) == pytest.approx(0.5)


def test_relative_error_zero_true_count_policy() -> None:
    r = relative_error([3.0, 0.0, 1.0], [0.0, 0.0, 2.0])
    assert np.isnan(r[0]) and np.isnan(r[1]) and r[2] == pytest.approx(0.5)
    np.testing.assert_array_equal(relative_error([3.0, 0.0, 1.0], [0.0, 0.0, 2.0], zero="inf"), [np.inf, 0.0, 0.5])
    with pytest.raises(EstimationError, match="undefined for 2 queries with true count 0"):
        relative_error([3.0, 0.0], [0.0, 0.0], zero="raise")
    with pytest.raises(ConfigurationError, match="zero must be 'nan', 'inf' or 'raise', got 'skip'"):
        relative_error(1.0, 1.0, zero="skip")  # type: ignore[arg-type]


def test_evaluate_queries_dataset_vs_distribution() -> None:
    d = _dataset()
    q = CountQuery((0, 1), np.array([[True, False], [False, True], [False, False]]))
    t = np.full((3, 2, 2), 1 / 12)
    t[0, 0, :] = 0.0
    t[2, 0, :] += 1 / 12
    est = DenseDistribution(t)
    res = evaluate_queries([q], est, d)
    # X_S = 2, Y_S = 6 * (0 + 2/12) = 1
    np.testing.assert_allclose(res.true_counts, [2.0])
    np.testing.assert_allclose(res.estimated_counts, [1.0])
    np.testing.assert_allclose(res.absolute, [1.0])
    np.testing.assert_allclose(res.relative, [0.5])


def test_query_errors_converge_statistically(rng: np.random.Generator) -> None:
    """Empirical answers of a large sample approach n times the truth's mass."""
    data = planted_clusters(50_000, rng=rng)
    queries = random_queries(data.dataset.sizes, 0.3, 40, rng=rng)
    res = evaluate_queries(queries, data.truth, data.dataset)
    p = res.estimated_counts / data.dataset.n
    # X_S ~ Binomial(n, p): |X_S - n p| within 5 standard errors sqrt(n p (1 - p))
    assert np.all(res.absolute <= 5 * np.sqrt(data.dataset.n * p * (1 - p)) + 1e-9)


# --------------------------------------------------------------------------- MAE / MSE / TV


# RR-Ind-Joint paper 3.3: true joint, cells (a, b); f^X = [[4, 0], [2, 4]] read as (a1b1, a1b2; a2b1, a2b2)
TRUE_33 = np.array([[0.4, 0.0], [0.2, 0.4]])


def test_mae_rr_ind_example_section_3_3() -> None:
    # RR-Ind estimate = outer(pi_A, pi_B) = outer((0.4, 0.6), (0.6, 0.4)); paper: MAE = 0.16
    est = np.outer([0.4, 0.6], [0.6, 0.4])
    assert mae(est, TRUE_33) == pytest.approx(0.16)
    assert total_variation(est, TRUE_33) == pytest.approx(0.32)
    assert mse(est, TRUE_33) == pytest.approx(0.16**2)


def test_mae_rr_ind_joint_example_section_3_3_by_definition() -> None:
    """Paper prints estimate (0.375, 0.075, 0.275, 0.375) (sums to 1.1) and MAE 0.05.

    By eq. (2) with P = [[3/4, 1/4], [1/4, 3/4]] and observed lambda = (3, 2, 2, 3)/10 the
    estimate is (0.45, 0.05, 0.05, 0.45) and its MAE against the true joint is 0.075.
    """
    p = np.array([[0.75, 0.25], [0.25, 0.75]])
    lam = np.array([[0.3, 0.2], [0.2, 0.3]])
    pinv = np.linalg.inv(p.T)
    est = pinv @ lam @ pinv.T
    np.testing.assert_allclose(est, [[0.45, 0.05], [0.05, 0.45]], atol=1e-12)
    assert mae(est, TRUE_33) == pytest.approx(0.075)
    # the expected lambda of the true joint is the paper's (0.2875, 0.1625, 0.2625, 0.2875)
    np.testing.assert_allclose(p.T @ TRUE_33 @ p, [[0.2875, 0.1625], [0.2625, 0.2875]])


def test_metrics_on_distributions_with_axes() -> None:
    data = planted_clusters(10, rng=np.random.default_rng(0))
    truth = data.truth
    indep = ProductDistribution(tuple((j,) for j in range(8)), tuple(truth.marginal((j,)) for j in range(8)), truth.sizes)
    t01 = truth.marginal((0, 1))
    i01 = np.outer(truth.marginal((0,)), truth.marginal((1,)))
    assert mae(indep, truth, axes=(0, 1)) == pytest.approx(np.abs(t01 - i01).mean())
    assert mse(indep, truth, axes=(0, 1)) == pytest.approx(((t01 - i01) ** 2).mean())
    assert total_variation(indep, truth, axes=(5, 6)) == pytest.approx(0.0, abs=1e-15)
    assert total_variation(truth, truth) == 0.0
    ws = WeightedSample(np.zeros((1, 8), dtype=int), np.ones(1), truth.sizes)
    assert total_variation(ws, truth, axes=(7,)) == pytest.approx(1 - truth.marginal((7,))[0])


def test_metrics_reject_bad_shapes() -> None:
    with pytest.raises(ConfigurationError, match=r"same shape, got \(2,\) and \(3,\)"):
        mae(np.ones(2), np.ones(3))
    with pytest.raises(ConfigurationError, match="axes can only be given for JointDistribution"):
        mse(np.ones(2), np.ones(2), axes=(0,))


def test_adult_table_1_mse_of_rr_ind(adult_path: Path) -> None:
    """RR-Ind-Joint paper Table 1: V and the MSE of RR-Ind (product of the marginals).

    With noise-free marginals the RR-Ind estimate is the product of the true marginals; its
    MSE per pair matches the published one to the printed digits (the paper truncates:
    0.0018879 printed 0.00188, 2.1477e-5 printed 2.14e-5).
    """
    opened = gzip.open(adult_path, "rt", encoding="utf-8") if adult_path.suffix == ".gz" else adult_path.open(encoding="utf-8")
    with opened as fh:  # the shipped copy is gzip-compressed
        d = parse_adult(fh)
    published = {
        ("sex", "income"): (0.2159802, 0.00188),
        ("sex", "race"): (0.1181155, 0.00011),
        ("education", "occupation"): (0.1873341, 2.14e-5),
    }
    for (a, b), (v, m) in published.items():
        t = d.joint_counts([a, b]) / d.n
        assert cramers_v(t) == pytest.approx(v, abs=5e-8)
        got = mse(np.outer(t.sum(axis=1), t.sum(axis=0)), t)
        assert got == pytest.approx(m, rel=0.01)
