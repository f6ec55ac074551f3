"""Tests of mprr.matrices: validation, constructors, ε / entropy / β, closed-form inverses."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.errors import ConfigurationError, DomainTooLargeError, EstimationError
from mprr.matrices import (
    RandomizationMatrix,
    circulant,
    cluster_optimal,
    grr,
    k_anonymity,
    keep_or_uniform,
    lambda_randomization,
    tridiagonal,
    warner,
)

# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0]], "square"),
        ([0.5, 0.5], "square"),
        ([[0.5, 0.5], [1.5, -0.5]], r">= 0, got -0.5 at \[1, 1\]"),
        ([[0.5, 0.5], [np.nan, 0.5]], r"finite, got nan at \[1, 0\]"),
        ([[0.5, 0.5], [np.inf, 0.5]], "finite"),
        ([[0.5, 0.4], [0.5, 0.5]], "row 0 sums to 0.9"),
        ([["a", "b"], ["c", "d"]], "array of real numbers"),
        (np.array([[1 + 1j, 0], [0, 1]]), "array of real numbers"),  # not cast to its real part
    ],
)
def test_bad_matrix_rejected(values: object, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        RandomizationMatrix(values)


def test_row_sum_tolerance_and_readonly() -> None:
    m = RandomizationMatrix([[0.5, 0.5 + 1e-11], [0.25, 0.75]])
    assert m.shape == (2, 2) and m.size == 2
    with pytest.raises(ValueError, match="read-only"):
        m.values[0, 0] = 1.0
    assert m.epsilon == pytest.approx(math.log(2))  # computed once, then never replaced
    for name in ("epsilon", "_values", "anything"):
        with pytest.raises(AttributeError, match=f"a RandomizationMatrix is immutable: cannot set '{name}'"):
            setattr(m, name, 1.0)
    assert m.epsilon == pytest.approx(math.log(2))
    with pytest.raises(ConfigurationError, match="atol=1e-12"):
        RandomizationMatrix([[0.5, 0.5 + 1e-11], [0.25, 0.75]], atol=1e-12)
    with pytest.raises(ConfigurationError, match="atol must be"):
        RandomizationMatrix([[1.0]], atol=-1.0)


def test_input_is_copied() -> None:
    src = np.array([[0.9, 0.1], [0.2, 0.8]])
    m = RandomizationMatrix(src)
    src[0, 0] = 0.0
    assert m.values[0, 0] == 0.9


def test_column_convention_round_trip() -> None:
    # Nayak: Q[v, u] = Pr(Y=v | X=u), columns sum to 1, lambda = Q pi.
    q = np.array([[0.7, 0.2], [0.3, 0.8]])
    p = RandomizationMatrix.from_columns(q)
    np.testing.assert_array_equal(p.values, q.T)
    np.testing.assert_array_equal(p.columns(), q)
    pi = np.array([0.4, 0.6])
    np.testing.assert_allclose(p.values.T @ pi, q @ pi)
    with pytest.raises(ConfigurationError, match="column 0 sums to"):
        RandomizationMatrix.from_columns(q.T)


# ------------------------------------------------------------------ constructors


def test_grr_entries_and_epsilon() -> None:
    p = grr(4, 1.0)
    e = math.e
    np.testing.assert_allclose(np.diagonal(p.values), e / (e + 3))
    np.testing.assert_allclose(p.values[0, 1:], 1 / (e + 3))
    assert p.epsilon == pytest.approx(1.0, abs=1e-12)
    assert p.is_bistochastic and p.lam == pytest.approx((e - 1) / (e + 3))
    # huge epsilon does not overflow: it is (numerically) the identity, eq. (4) gives inf
    big = grr(3, 1000.0)
    np.testing.assert_array_equal(big.values, np.eye(3))
    assert big.epsilon == math.inf


def test_keep_or_uniform_is_corollary_1_matrix() -> None:
    k, p = 5, 0.3
    m = keep_or_uniform(k, p)
    np.testing.assert_allclose(np.diagonal(m.values), p + (1 - p) / k)
    np.testing.assert_allclose(m.values[0, 1:], (1 - p) / k)
    # eq. (4) on the stochastic matrix: ln(1 + p k / (1 - p)).  Main paper 6.3.1 prints
    # |ln(p / ((1-p)/|A|))| for its non-stochastic "p on the diagonal" matrix (discrepancy).
    assert m.epsilon == pytest.approx(math.log(1 + p * k / (1 - p)))
    assert m.epsilon != pytest.approx(abs(math.log(p / ((1 - p) / k))))
    assert keep_or_uniform(3, 1.0).epsilon == math.inf
    assert keep_or_uniform(3, 0.0).epsilon == 0.0


def test_cluster_optimal_sign_corrected() -> None:
    sizes, eps = (2, 3, 2), 1.5
    m = cluster_optimal(sizes, eps)
    big_r = 12
    p_c = 1 / (1 + (big_r - 1) * math.exp(-eps))
    np.testing.assert_allclose(np.diagonal(m.values), p_c)
    np.testing.assert_allclose(m.values[0, 1:], p_c * math.exp(-eps))
    np.testing.assert_allclose(m.values.sum(axis=1), 1.0)
    assert m.epsilon == pytest.approx(eps)
    np.testing.assert_allclose(m.values, grr(big_r, eps).values)
    # the printed formula (1 - R) gives another diagonal, whose rows would not sum to 1
    p_printed = 1 / (1 + (1 - big_r) * math.exp(-eps))
    assert m.values[0, 0] != pytest.approx(p_printed)
    assert p_printed * (1 + (big_r - 1) * math.exp(-eps)) != pytest.approx(1.0)


def test_lambda_warner_circulant_tridiagonal_kanonymity_shapes() -> None:
    lr = lambda_randomization(4, 0.6)
    np.testing.assert_allclose(lr.values, 0.6 * np.eye(4) + 0.4 / 4)
    assert lr.lam == pytest.approx(0.6)
    np.testing.assert_allclose(warner(0.8).values, [[0.8, 0.2], [0.2, 0.8]])
    c = circulant([0.6, 0.3, 0.1])
    np.testing.assert_allclose(c.values, [[0.6, 0.3, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6]])
    assert c.is_bistochastic and c.closed_form == "circulant"
    t = tridiagonal([0.1, 0.2, 0.3])
    expected = np.array(
        [[0.9, 0.1, 0, 0], [0.1, 0.7, 0.2, 0], [0, 0.2, 0.5, 0.3], [0, 0, 0.3, 0.7]]
    )
    np.testing.assert_allclose(t.values, expected)
    assert t.is_bistochastic and t.epsilon == math.inf
    ka = k_anonymity([2, 1, 3])
    assert ka.values[0, 1] == 0.5 and ka.values[2, 2] == 1.0 and ka.values[3, 5] == pytest.approx(1 / 3)
    assert ka.values[0, 2] == 0.0 and ka.is_bistochastic and ka.epsilon == math.inf
    # sizes may be a 1-D integer array as well as a sequence
    np.testing.assert_array_equal(k_anonymity(np.array([2, 1, 3])).values, ka.values)
    np.testing.assert_array_equal(cluster_optimal(np.array([2, 3]), 1.0).values, grr(6, 1.0).values)


def test_non_bistochastic_matrix() -> None:
    m = RandomizationMatrix([[0.9, 0.1], [0.5, 0.5]])
    assert not m.is_bistochastic
    assert m.lam is None and m.closed_form is None
    assert m.epsilon == pytest.approx(math.log(5.0))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: grr(1, 1.0), "k must be an integer >= 2, got 1"),
        (lambda: grr(2.5, 1.0), "k must be an integer >= 2, got 2.5"),
        (lambda: grr(True, 1.0), "k must be an integer"),
        (lambda: grr(3, 0.0), "epsilon must be finite and > 0, got 0.0"),
        (lambda: grr(3, -1.0), "epsilon must be finite and > 0, got -1.0"),
        (lambda: grr(3, math.inf), "epsilon must be finite and > 0, got inf"),
        (lambda: grr(3, math.nan), "epsilon must be finite and > 0, got nan"),
        (lambda: grr(3, "1"), "epsilon must be finite"),
        (lambda: grr(0, 1.0), "k must be an integer >= 2, got 0"),
        (lambda: keep_or_uniform(1, 0.5), "k must be an integer >= 2"),
        (lambda: keep_or_uniform(3, 1.5), r"p must be a real number in \[0, 1\], got 1.5"),
        (lambda: keep_or_uniform(3, -0.1), r"p must be a real number in \[0, 1\]"),
        (lambda: keep_or_uniform(3, math.nan), r"p must be a real number in \[0, 1\]"),
        (lambda: lambda_randomization(3, 0.0), r"lam must be a real number in \(0, 1\], got 0.0"),
        (lambda: lambda_randomization(3, 1.2), r"lam must be a real number in \(0, 1\]"),
        (lambda: lambda_randomization(1, 0.5), "k must be an integer >= 2"),
        (lambda: lambda_randomization(3, -0.2), r"lam must be a real number in \(0, 1\], got -0.2"),
        (lambda: lambda_randomization(3, math.nan), r"lam must be a real number in \(0, 1\], got nan"),
        (lambda: warner(1.01), r"p must be a real number in \[0, 1\]"),
        (lambda: warner(-0.01), r"p must be a real number in \[0, 1\], got -0.01"),
        (lambda: cluster_optimal((), 1.0), "non-empty sequence"),
        (lambda: cluster_optimal((1,), 1.0), "at least 2 joint values"),
        (lambda: cluster_optimal((2, 0), 1.0), r"sizes\[1\] must be an integer >= 1, got 0"),
        (lambda: cluster_optimal((2, 3), 0.0), "epsilon must be finite and > 0"),
        (lambda: cluster_optimal((2, 3), -0.5), "epsilon must be finite and > 0, got -0.5"),
        (lambda: cluster_optimal((2, 3), math.inf), "epsilon must be finite and > 0, got inf"),
        (lambda: cluster_optimal((2, 3), math.nan), "epsilon must be finite and > 0, got nan"),
        (lambda: cluster_optimal((1, 1, 1), 1.0), r"at least 2 joint values, got sizes=\(1, 1, 1\)"),
        (lambda: cluster_optimal("ab", 1.0), "non-empty sequence of integers"),
        (lambda: circulant([0.5, 0.6]), "sum to 1"),
        (lambda: circulant([1.0]), "length >= 2"),
        (lambda: circulant([1.2, -0.2]), ">= 0"),
        (lambda: circulant([0.5, math.nan]), "finite"),
        (lambda: tridiagonal([0.6, 0.5]), r"alpha\[i-1\] \+ alpha\[i\] <= 1"),
        (lambda: tridiagonal([-0.1]), r"in \[0, 1\]"),
        (lambda: tridiagonal([]), "length >= 1"),
        (lambda: k_anonymity([]), "non-empty"),
        (lambda: k_anonymity([1]), "at least 2 values"),
        (lambda: k_anonymity([2, 0]), r"block_sizes\[1\] must be an integer >= 1, got 0"),
    ],
)
def test_constructor_bad_inputs(call: object, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        call()  # type: ignore[operator]


def test_dense_size_limit() -> None:
    with pytest.raises(DomainTooLargeError, match="max_cells=100") as info:
        grr(11, 1.0, max_cells=100)
    assert info.value.cells == 121 and info.value.limit == 100
    with pytest.raises(DomainTooLargeError, match="a dense 15120 x 15120 matrix"):
        cluster_optimal((9, 16, 7, 15), 4.0)
    # a product far beyond memory is refused from its sizes alone (nothing is allocated)
    with pytest.raises(DomainTooLargeError, match="a dense 1000000000000 x 1000000000000") as huge:
        cluster_optimal((10**6, 10**6), 1.0)
    assert huge.value.cells == 10**24


# ------------------------------------------------------------------ eq. (4) on the papers' matrices


def test_epsilon_eq4_on_paper_matrices() -> None:
    # bistochastic paper eq. (2): the 3x3 DP matrix with epsilon = 2
    assert grr(3, 2.0).epsilon == pytest.approx(2.0)
    # RR-Ind-Joint paper 3.3: P^A = [[3/4, 1/4], [1/4, 3/4]] has epsilon = ln 3
    assert RandomizationMatrix([[0.75, 0.25], [0.25, 0.75]]).epsilon == pytest.approx(math.log(3))
    # Warner: |ln(p / (1 - p))|, symmetric in p <-> 1 - p (Nayak: equivalent designs)
    assert warner(0.2).epsilon == pytest.approx(math.log(4)) == warner(0.8).epsilon
    # lambda-randomization: ln((lam + (1-lam)/k) / ((1-lam)/k))
    assert lambda_randomization(5, 0.6).epsilon == pytest.approx(math.log((0.6 + 0.08) / 0.08))
    # k-anonymity blocks and tridiagonal matrices mix zeros and non-zeros: no finite epsilon
    assert k_anonymity([3, 3]).epsilon == math.inf
    assert tridiagonal([0.1] * 3).epsilon == math.inf
    # a column that is all zero (a value never released) does not make epsilon infinite
    assert RandomizationMatrix([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0], [0.5, 0.5, 0.0]]).epsilon == (
        pytest.approx(math.log(2))
    )


def test_bistochastic_eq2_dp_example() -> None:
    # bistochastic paper 2.2: e^2/(2+e^2) "= 0.78" (0.7870, printed truncated) and 0.11 off it
    p = grr(3, 2.0)
    assert p.values[0, 0] == pytest.approx(0.7870, abs=5e-5)
    assert p.values[0, 1] == pytest.approx(0.1065, abs=5e-5)


# ------------------------------------------------------------------ entropy rate and beta


def test_entropy_rate_definitions() -> None:
    assert RandomizationMatrix(np.eye(4)).entropy_rate == 0.0
    uni = keep_or_uniform(8, 0.0)
    assert uni.entropy_rate == pytest.approx(3.0) and uni.beta == pytest.approx(1.0)
    m = RandomizationMatrix([[0.5, 0.5], [1.0, 0.0]])
    assert m.entropy_rate == pytest.approx(0.5)  # mean of 1 bit and 0 bits
    assert RandomizationMatrix([[1.0]]).beta == 0.0


def _beta_percent(m: RandomizationMatrix) -> float:
    return 100 * m.beta


def test_bistochastic_table1() -> None:
    """Bistochastic paper Table 1 (12 x 12 matrices, beta in %).

    Definitions reproduce the DP row (17, 60, 97), k = 2 and 6 of the k-anonymity row (28, 72)
    and alpha = 0.1, 0.4 of the tridiagonal row (24, 40).  Where the published figure differs
    we assert the definition's value (see docs/reproduction.md): k = 3 gives 44.2 (published
    56 = log2 4 / log2 12, i.e. blocks of 4), tridiagonal alpha = 0.3 gives 40.6 (published 35),
    circulant p11 = 0.9 / 0.6 / 0.2 gives 22.7 / 65.7 / 97.3 (published 21 / 63 / 93).
    """
    dp = [_beta_percent(grr(12, e)) for e in (5.0, 3.0, 1.0)]
    assert [round(b) for b in dp] == [17, 60, 97]
    ka = [_beta_percent(k_anonymity([k] * (12 // k))) for k in (2, 3, 6)]
    assert [round(b) for b in (ka[0], ka[2])] == [28, 72]
    assert ka[1] == pytest.approx(100 * math.log2(3) / math.log2(12))  # 44.2, published 56
    tri = [_beta_percent(tridiagonal([a] * 11)) for a in (0.1, 0.3, 0.4)]
    assert [round(tri[0]), round(tri[2])] == [24, 40]
    assert tri[1] == pytest.approx(40.61, abs=0.01)  # published 35
    circ = [_beta_percent(circulant([p] + [(1 - p) / 11] * 11)) for p in (0.9, 0.6, 0.2)]
    assert circ == pytest.approx([22.73, 65.68, 97.34], abs=0.01)  # published 21, 63, 93


def test_lambda_table1_per_attribute() -> None:
    """Lambda paper Table 1, per-attribute beta of 5 x 5 lambda-matrices (in %).

    Definitions give 24.2 / 41.1 / 54.9 for lambda = 0.9 / 0.8 / 0.7 (published 25 / 41 / 56),
    90.9 / 95.7 / 98.9 for 0.3 / 0.2 / 0.1 (published 92 / 96 / 99) and 66.5 / 54.9 / 84.4
    for 0.6 / 0.7 / 0.4 (published 68 / 52 / 85).  The joint column is in test_kronecker.
    """
    got = {lam: _beta_percent(lambda_randomization(5, lam)) for lam in (0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1)}
    expected = {0.9: 24.21, 0.8: 41.10, 0.7: 54.91, 0.6: 66.51, 0.4: 84.36, 0.3: 90.85, 0.2: 95.73, 0.1: 98.86}
    for lam, value in expected.items():
        assert got[lam] == pytest.approx(value, abs=0.01)
    assert round(got[0.8]) == 41 and round(got[0.2]) == 96 and round(got[0.1]) == 99
    # monotone: more weight on the identity, less entropy
    values = [got[lam] for lam in sorted(got)]
    assert values == sorted(values, reverse=True)


# ------------------------------------------------------------------ inverses


@pytest.mark.parametrize(
    "matrix",
    [
        grr(5, 0.7),
        keep_or_uniform(4, 0.2),
        lambda_randomization(6, 0.35),
        warner(0.3),
        circulant([0.5, 0.2, 0.2, 0.1]),
        circulant([0.1, 0.2, 0.3, 0.25, 0.15]),
        tridiagonal([0.2, 0.3, 0.1, 0.4]),
        RandomizationMatrix([[0.8, 0.15, 0.05], [0.1, 0.7, 0.2], [0.3, 0.3, 0.4]]),
        k_anonymity([1, 1, 1]),
    ],
    ids=lambda m: f"{m.closed_form}-{m.size}",
)
def test_inverse_matches_numpy(matrix: RandomizationMatrix) -> None:
    inv = matrix.inverse()
    np.testing.assert_allclose(inv, np.linalg.inv(matrix.values), atol=1e-10)
    np.testing.assert_allclose(inv @ matrix.values, np.eye(matrix.size), atol=1e-10)
    inv[0, 0] = 99.0  # a copy: the cache is not affected
    assert matrix.inverse()[0, 0] != 99.0
    assert matrix.condition_number == pytest.approx(np.linalg.cond(matrix.values), rel=1e-8)


@pytest.mark.parametrize(
    "matrix",
    [warner(0.5), keep_or_uniform(3, 0.0), k_anonymity([2, 2]), circulant([0.5, 0.0, 0.5, 0.0])],
    ids=["warner-half", "uniform", "k-anonymity", "circulant"],
)
def test_singular_inverse_raises(matrix: RandomizationMatrix) -> None:
    with pytest.raises(EstimationError, match="singular"):
        matrix.inverse()
    assert matrix.condition_number > 1e13


@settings(max_examples=60, deadline=None)
@given(k=st.integers(2, 12), lam=st.floats(0.01, 1.0))
def test_property1_closed_form_inverse(k: int, lam: float) -> None:
    """Lambda paper Property 1: inv(lam I + (1-lam) P*) = (1/lam)(I - P*) + P*."""
    m = lambda_randomization(k, lam)
    star = np.full((k, k), 1.0 / k)
    expected = (np.eye(k) - star) / lam + star
    assert m.closed_form == "property-1"
    np.testing.assert_allclose(m.inverse(), expected, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(m.inverse(), np.linalg.inv(m.values), rtol=1e-7, atol=1e-7)


@settings(max_examples=40, deadline=None)
@given(
    row=st.lists(st.floats(0.01, 1.0), min_size=3, max_size=9),
)
def test_circulant_fft_inverse(row: list[float]) -> None:
    c = np.array(row) / sum(row)
    m = circulant(c)
    cond = np.linalg.cond(m.values)
    if cond > 1e8:
        return
    np.testing.assert_allclose(m.inverse() @ m.values, np.eye(len(row)), atol=1e-8 * cond)


def test_cdf_rows_end_at_one_and_skip_zero_probabilities() -> None:
    m = RandomizationMatrix([[0.1, 0.2, 0.7, 0.0], [0.0, 0.0, 1.0, 0.0], [0.3, 0.3, 0.3, 0.1], [0.25] * 4])
    cdf = m.cdf
    assert np.all(cdf[:, -1] == 1.0)
    assert cdf[0, 2] == 1.0 and cdf[1, 1] == 0.0 and cdf[1, 2] == 1.0
    np.testing.assert_allclose(np.diff(cdf, axis=1, prepend=0.0), m.values, atol=1e-15)


@pytest.mark.parametrize("values", [None, 0.5, [0.5, 0.5], [[[1.0]]]])
def test_randomization_matrix_names_values_when_not_2d(values: object) -> None:
    with pytest.raises(ConfigurationError, match=r"values must be a non-empty 2-D square array of probabilities, got "):
        RandomizationMatrix(values)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"q must be a non-empty 2-D square array of probabilities"):
        RandomizationMatrix.from_columns(values)  # type: ignore[arg-type]
