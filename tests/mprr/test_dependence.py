"""Tests of mprr.dependence: |Pearson| (main paper eq. 8), Cramér's V (eq. 9), tables."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy.stats import chi2_contingency
from scipy.stats.contingency import association

from mprr.dependence import (
    noise_cramers_v,
    bivariate_tables,
    cramers_v,
    dependence,
    dependence_matrix,
    pearson_abs,
)
from mprr.errors import ConfigurationError, DataError

TABLE = np.array([[10, 20, 5], [3, 40, 7], [12, 1, 30]])


# --------------------------------------------------------------------------- exact values


def test_two_by_two_both_measures_equal_phi() -> None:
    a, b, c, d = 30, 10, 5, 55
    phi = (a * d - b * c) / np.sqrt((a + b) * (c + d) * (a + c) * (b + d))
    table = np.array([[a, b], [c, d]])
    assert cramers_v(table) == pytest.approx(abs(phi), abs=1e-14)
    assert pearson_abs(table) == pytest.approx(abs(phi), abs=1e-14)


def test_cramers_v_of_known_tables() -> None:
    assert cramers_v(np.diag([0.2, 0.3, 0.5])) == pytest.approx(1.0)
    assert cramers_v(np.outer([0.2, 0.8], [0.5, 0.1, 0.4])) == pytest.approx(0.0, abs=1e-12)
    # RR-Ind-Joint 3.3 true table f^X = [[4, 0], [2, 4]]: phi^2 = chi^2 / n = 0.4444 -> V = 2/3
    assert cramers_v(np.array([[4, 0], [2, 4]])) == pytest.approx(2 / 3)


def test_cramers_v_matches_scipy_and_uses_expected_frequency() -> None:
    assert cramers_v(TABLE) == pytest.approx(association(TABLE, method="cramer"), abs=1e-13)
    n = TABLE.sum()
    chi2 = chi2_contingency(TABLE, correction=False)[0]
    assert cramers_v(TABLE) == pytest.approx(np.sqrt(chi2 / n / 2), abs=1e-13)
    # Main paper eq. (9) as printed divides by the observed frequency f_ab; that is a slip
    # (the chi-squared statistic divides by e_ab) and gives a different number here.
    expected = np.outer(TABLE.sum(1), TABLE.sum(0)) / n
    printed = np.sum((TABLE - expected) ** 2 / TABLE)
    assert np.sqrt(printed / n / 2) != pytest.approx(cramers_v(TABLE), abs=1e-3)


def test_pearson_abs_matches_corrcoef_on_expanded_records() -> None:
    a, b = np.nonzero(np.ones_like(TABLE))
    reps = TABLE.ravel()
    x = np.repeat(a, reps).astype(float)
    y = np.repeat(b, reps).astype(float)
    assert pearson_abs(TABLE) == pytest.approx(abs(np.corrcoef(x, y)[0, 1]), abs=1e-13)


def test_counts_and_probabilities_give_the_same_value() -> None:
    probs = TABLE / TABLE.sum()
    assert cramers_v(probs) == pytest.approx(cramers_v(TABLE), abs=1e-14)
    assert pearson_abs(probs) == pytest.approx(pearson_abs(TABLE), abs=1e-14)


def test_perfect_association_gives_one() -> None:
    perm = np.array([[0, 0, 7], [5, 0, 0], [0, 3, 0]])
    assert cramers_v(perm) == pytest.approx(1.0, abs=1e-14)
    anti = np.array([[0, 0, 4], [0, 6, 0], [2, 0, 0]])
    assert pearson_abs(anti) == pytest.approx(1.0, abs=1e-14)


def test_independent_table_gives_zero() -> None:
    table = np.outer([1, 2, 3], [4, 1, 5, 2])
    assert cramers_v(table) == pytest.approx(0.0, abs=1e-7)
    assert pearson_abs(table) == pytest.approx(0.0, abs=1e-7)


def test_pearson_misses_a_u_shape_that_cramers_v_sees() -> None:
    u_shape = np.array([[0, 10, 0], [10, 0, 10], [0, 10, 0]])
    assert pearson_abs(u_shape) == pytest.approx(0.0, abs=1e-14)
    assert cramers_v(u_shape) > 0.5
    assert dependence(u_shape, "ordinal", "ordinal") == pytest.approx(0.0, abs=1e-14)
    assert dependence(u_shape, "ordinal", "nominal") == pytest.approx(cramers_v(u_shape))
    assert dependence(u_shape, "nominal", "ordinal") == pytest.approx(cramers_v(u_shape))
    assert dependence(u_shape, "nominal", "nominal") == pytest.approx(cramers_v(u_shape))


# --------------------------------------------------------------------------- degenerate input


@pytest.mark.parametrize(
    "table",
    [
        np.array([[3, 4, 5]]),  # constant first attribute (one category)
        np.array([[3], [4]]),  # constant second attribute
        np.array([[0, 0], [4, 6]]),  # only one category of the first occurs
        np.zeros((3, 3)),  # no mass
        np.array([[-0.1, 0.0], [0.0, -0.2]]),  # no mass after clipping
        np.array([[7.0]]),
    ],
)
def test_degenerate_tables_give_zero_without_warnings(table: np.ndarray) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cramers_v(table, clip_negative=True) == 0.0
        assert pearson_abs(table, clip_negative=True) == 0.0


def test_empty_categories_are_left_out_of_cramers_v() -> None:
    # A never-observed category does not cap V below 1 (see the cramers_v docstring).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cramers_v(np.array([[5, 0, 0], [0, 0, 4], [0, 0, 0]])) == pytest.approx(1.0)


def test_negative_entries_are_rejected_unless_clipping_is_asked_for() -> None:
    estimated = np.array([[0.30, -0.02, 0.10], [0.05, 0.35, -0.01], [0.10, 0.03, 0.10]])
    for measure in (cramers_v, pearson_abs):
        with pytest.raises(DataError, match=r"table must hold counts or probabilities >= 0, got -0\.02 at \(0, 1\)"):
            measure(estimated)
    clipped = np.clip(estimated, 0.0, None)
    assert cramers_v(estimated, clip_negative=True) == pytest.approx(cramers_v(clipped), abs=1e-15)
    assert pearson_abs(estimated, clip_negative=True) == pytest.approx(pearson_abs(clipped), abs=1e-15)
    # dependence_matrix takes eq. (2) estimates (negative cells) and clips them
    d = dependence_matrix({(0, 1): estimated}, ["nominal", "ordinal"])
    assert d[0, 1] == pytest.approx(cramers_v(clipped), abs=1e-15)


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (np.array([1.0, 2.0]), "2-D"),
        (np.zeros((0, 3)), "non-empty 2-D"),
        (np.array([[1.0, np.nan], [1.0, 2.0]]), "finite"),
        (np.array([[1.0, np.inf], [1.0, 2.0]]), "finite"),
        ([["a", "b"]], "numeric"),
    ],
)
def test_invalid_tables_are_rejected(table: object, match: str) -> None:
    with pytest.raises(DataError, match=match):
        cramers_v(table)
    with pytest.raises(DataError, match=match):
        pearson_abs(table)


def test_dependence_rejects_unknown_kind() -> None:
    with pytest.raises(ConfigurationError, match="kind_b must be one of"):
        dependence(TABLE, "ordinal", "numeric")


# --------------------------------------------------------------------------- matrices and tables


def test_bivariate_tables_match_per_pair_counting(rng: np.random.Generator) -> None:
    sizes = [3, 5, 2, 4]
    codes = np.stack([rng.integers(0, s, 500) for s in sizes], axis=1)
    tables = bivariate_tables(codes, sizes)
    assert sorted(tables) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    for (i, j), table in tables.items():
        manual = np.zeros((sizes[i], sizes[j]), dtype=np.int64)
        np.add.at(manual, (codes[:, i], codes[:, j]), 1)
        np.testing.assert_array_equal(table, manual)


def test_bivariate_tables_edge_cases() -> None:
    assert bivariate_tables(np.zeros((4, 1), dtype=int), [2]) == {}
    empty = bivariate_tables(np.zeros((0, 2), dtype=int), [2, 3])
    np.testing.assert_array_equal(empty[(0, 1)], np.zeros((2, 3)))


@pytest.mark.parametrize(
    ("codes", "sizes", "error", "match"),
    [
        (np.array([[0, 3]]), [2, 3], DataError, r"codes\[0, 1\] = 3 is outside \[0, 3\)"),
        (np.array([[-1, 0]]), [2, 3], DataError, "outside"),
        (np.array([[0, 1, 1]]), [2, 3], DataError, "2 columns"),
        (np.array([[0.0, 1.0]]), [2, 3], DataError, "integers"),
        (np.array([[0, 1]]), [2, 0], ConfigurationError, r"sizes\[1\] must be an integer >= 1, got 0"),
    ],
)
def test_bivariate_tables_rejects_bad_input(
    codes: np.ndarray, sizes: list[int], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        bivariate_tables(codes, sizes)


def test_dependence_matrix_symmetric_with_unit_diagonal(rng: np.random.Generator) -> None:
    sizes = [3, 4, 2]
    kinds = ["ordinal", "ordinal", "nominal"]
    codes = np.stack([rng.integers(0, s, 300) for s in sizes], axis=1)
    codes[:, 1] = np.minimum(codes[:, 0] + rng.integers(0, 2, 300), 3)
    tables = bivariate_tables(codes, sizes)
    d = dependence_matrix(tables, kinds)
    assert d.shape == (3, 3)
    np.testing.assert_array_equal(d, d.T)
    np.testing.assert_array_equal(np.diag(d), np.ones(3))
    assert d[0, 1] == pytest.approx(pearson_abs(tables[(0, 1)]))
    assert d[0, 2] == pytest.approx(cramers_v(tables[(0, 2)]))
    # A pair given the other way round (rows = attribute 2) is transposed, same value.
    flipped = dict(tables)
    flipped[(2, 1)] = flipped.pop((1, 2)).T
    np.testing.assert_allclose(dependence_matrix(flipped, kinds), d, atol=1e-15)


def test_dependence_matrix_single_attribute() -> None:
    np.testing.assert_array_equal(dependence_matrix({}, ["nominal"]), np.ones((1, 1)))


@pytest.mark.parametrize(
    ("tables", "kinds", "match"),
    [
        ({(0, 1): np.ones((2, 2))}, ["nominal"] * 3, r"pair \(0, 2\) is missing"),
        ({(0, 3): np.ones((2, 2))}, ["nominal"] * 2, "distinct attribute indices"),
        ({(1, 1): np.ones((2, 2))}, ["nominal"] * 2, "distinct attribute indices"),
        ({(0, 1): np.ones((2, 2)), (1, 0): np.ones((2, 2))}, ["nominal"] * 2, "twice"),
        (
            {(0, 1): np.ones((2, 3)), (0, 2): np.ones((3, 2)), (1, 2): np.ones((3, 2))},
            ["nominal"] * 3,
            "disagree on the number of categories of attribute 0",
        ),
        ({(0, 1): np.ones(4)}, ["nominal"] * 2, "2-D contingency table"),
        ({}, [], "at least one attribute"),
        ({(0, 1): np.ones((2, 2))}, ["nominal", "interval"], r"kinds\[1\] must be one of"),
    ],
)
def test_dependence_matrix_rejects_bad_input(tables: dict, kinds: list[str], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        dependence_matrix(tables, kinds)


# --------------------------------------------------------------------------- statistical


# A 3x3 joint distribution with known population dependence.
P_DEP = np.array([[0.20, 0.05, 0.05], [0.05, 0.20, 0.05], [0.05, 0.10, 0.25]])


def test_cramers_v_of_samples_converges_to_population_value(rng: np.random.Generator) -> None:
    n, reps = 50_000, 200
    v0 = cramers_v(P_DEP)
    samples = rng.multinomial(n, P_DEP.ravel(), size=reps).reshape(reps, 3, 3)
    v = np.array([cramers_v(t) for t in samples])
    # Tolerance: 5 standard errors of the replicate mean plus the first-order plug-in bias
    # E[phi^2_hat] - phi^2 ~ (r-1)(c-1)/n, carried to V by dV = dphi^2 / (2 V k).
    bias = (2 * 2 / n) / (2 * v0 * 2)
    assert abs(v.mean() - v0) <= 5 * v.std(ddof=1) / np.sqrt(reps) + bias


def test_pearson_of_samples_converges_to_population_value(rng: np.random.Generator) -> None:
    n, reps = 50_000, 200
    r0 = pearson_abs(P_DEP)
    samples = rng.multinomial(n, P_DEP.ravel(), size=reps).reshape(reps, 3, 3)
    r = np.array([pearson_abs(t) for t in samples])
    # Tolerance: 5 standard errors of the replicate mean plus the plug-in bias of a sample
    # correlation, |E r − ρ| ≈ |ρ| (1 − ρ²) / (2n) <= 0.2 / n (Olkin & Pratt 1958); 1/n covers it.
    assert abs(r.mean() - r0) <= 5 * r.std(ddof=1) / np.sqrt(reps) + 1.0 / n


def test_under_independence_n_k_v_squared_is_chi_square(rng: np.random.Generator) -> None:
    # Under independence n * k * V^2 = chi^2 ~ chi^2_df with df = (r-1)(c-1): mean df, var 2 df.
    pa, pb = np.array([0.5, 0.3, 0.2]), np.array([0.1, 0.2, 0.3, 0.4])
    n, reps, df, k = 20_000, 400, 2 * 3, 2
    samples = rng.multinomial(n, np.outer(pa, pb).ravel(), size=reps).reshape(reps, 3, 4)
    stat = np.array([n * k * cramers_v(t) ** 2 for t in samples])
    assert abs(stat.mean() - df) <= 5 * np.sqrt(2 * df / reps)
    # Same for Pearson with ordinal scores: n r^2 ~ chi^2_1.
    stat_r = np.array([n * pearson_abs(t) ** 2 for t in samples])
    assert abs(stat_r.mean() - 1.0) <= 5 * np.sqrt(2 / reps)


def test_bivariate_tables_of_records_recover_population_dependence(
    rng: np.random.Generator,
) -> None:
    # Records drawn from P_DEP (plus an independent third attribute): the empirical tables'
    # V is within 5 standard errors; SE of V at this n ~ 0.004 (from the replicate test above,
    # sd ~ 0.0029 at n = 50,000, scaled by sqrt(50,000 / 20,000)).
    n = 20_000
    flat = rng.choice(9, size=n, p=P_DEP.ravel())
    codes = np.stack([flat // 3, flat % 3, rng.integers(0, 4, n)], axis=1)
    tables = bivariate_tables(codes, [3, 3, 4])
    d = dependence_matrix(tables, ["nominal", "nominal", "nominal"])
    assert d[0, 1] == pytest.approx(cramers_v(P_DEP), abs=5 * 0.0046)
    # Independent pairs: E[V^2] = df / (n k); 5 sd of chi^2_df bounds n k V^2 by df + 5 sqrt(2 df).
    for j in (0, 1):
        assert n * 2 * d[j, 2] ** 2 <= 6 + 5 * np.sqrt(12)


def test_dependence_matrix_rejects_non_numeric_table() -> None:
    with pytest.raises(DataError, match=r"tables\[\(0, 1\)\] must be a numeric"):
        dependence_matrix({(0, 1): [["a", "b"]]}, ["nominal", "nominal"])


def test_noise_cramers_v_without_randomization_is_the_chi_squared_expectation() -> None:
    """P = I: E[φ²] = (r_a − 1)(r_b − 1)/n, the χ² test's expectation under independence."""
    a, b = np.array([0.5, 0.3, 0.2]), np.array([0.1, 0.2, 0.3, 0.4])
    got = noise_cramers_v(np.eye(3), np.eye(4), a, b, 500)
    assert got == pytest.approx(math.sqrt(2 * 3 / 500 / 2), rel=1e-12)
    assert noise_cramers_v(np.eye(2), np.eye(2), np.array([1.0, 0.0]), np.array([0.5, 0.5]), 10) == 0.0
    with pytest.raises(ConfigurationError, match=r"n must be a positive number of records, got 0"):
        noise_cramers_v(np.eye(2), np.eye(2), np.array([0.5, 0.5]), np.array([0.5, 0.5]), 0)
    with pytest.raises(ConfigurationError, match=r"matching the marginals, got shapes \(2, 2\), \(3, 3\)"):
        noise_cramers_v(np.eye(2), np.eye(3), np.array([0.5, 0.5]), np.array([0.5, 0.5]), 5)


def test_noise_cramers_v_matches_the_simulated_estimates_through_k_rr(rng: np.random.Generator) -> None:
    """Independent pairs released through grr matrices and estimated by eq. (2): the mean φ̂²
    over repetitions equals the predicted E[φ²] within 4 Monte Carlo standard errors (plus 3%
    for the O(1/n²) terms the delta method leaves out)."""
    from mprr.matrices import grr

    a, b = np.array([0.5, 0.3, 0.2]), np.array([0.4, 0.35, 0.25])
    pa, pb = grr(3, 1.0).values, grr(3, 1.5).values
    n, reps = 2000, 600
    lam = pa.T @ np.outer(a, b) @ pb
    inv_a, inv_b = np.linalg.inv(pa.T), np.linalg.inv(pb.T)
    tallies = rng.multinomial(n, lam.ravel(), size=reps).reshape(reps, 3, 3) / n
    est = inv_a @ tallies @ inv_b.T
    rows, cols = est.sum(axis=2), est.sum(axis=1)
    phi2 = (((est - rows[:, :, None] * cols[:, None, :]) ** 2) / np.outer(a, b)).sum(axis=(1, 2))
    predicted = noise_cramers_v(pa, pb, a, b, n) ** 2 * 2  # V² · (min(r) − 1)
    se = phi2.std(ddof=1) / math.sqrt(reps)
    assert abs(phi2.mean() - predicted) < 4 * se + 0.03 * predicted
