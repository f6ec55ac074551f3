"""Tests of mprr.independence: Pearson's χ² on released pairs, the Wald test on debiased estimates,
the bias-corrected Cramér's V.

Statistical tests simulate the released counts directly: n independent reports of a pair drawn
from π and randomized by P are a multinomial sample of λ = Pᵀπ (for a support oracle like OUE,
given the true counts N_v the support counts are independent Bin(N_v, p) + Bin(n − N_v, q)).
Sizes are checked over R = 400 data sets against 0.05 ± 3 binomial SE (0.0327).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import chi2_contingency

from mprr.dependence import cramers_v
from mprr.errors import ConfigurationError, EstimationError
from mprr.estimation import covariance as nayak_covariance
from mprr.independence import (
    dependence_effect,
    matrix_estimate,
    pearson_chi2,
    support_estimate,
    wald_independence,
)
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import RandomizationMatrix, grr, kron
from mprr.synthetic import zipf_marginal, zipf_pair_joint

R = 400
ALPHA = 0.05
SIZE_TOLERANCE = 3 * math.sqrt(ALPHA * (1 - ALPHA) / R)


def independent(di: int, dj: int) -> np.ndarray:
    joint: np.ndarray = np.outer(zipf_marginal(di), zipf_marginal(dj))
    return joint


def released_counts(P: RandomizationMatrix | KroneckerMatrix, pi: np.ndarray, n: int,
                    rng: np.random.Generator) -> np.ndarray:
    """R tables of the released pair values: multinomial(n, Pᵀπ)."""
    lam = P.apply_transpose(pi) if isinstance(P, KroneckerMatrix) else P.values.T @ pi.ravel()
    lam = np.clip(lam.ravel(), 0, None)
    counts: np.ndarray = rng.multinomial(n, lam / lam.sum(), size=R).reshape(R, *pi.shape)
    return counts


def oue_support(pi: np.ndarray, n: int, epsilon: float, rng: np.random.Generator) -> tuple[np.ndarray, float, float]:
    p, q = 0.5, 1.0 / (math.exp(epsilon) + 1.0)
    true_counts = rng.multinomial(n, pi.ravel(), size=R)
    support = rng.binomial(true_counts, p) + rng.binomial(n - true_counts, q)
    return support.reshape(R, *pi.shape), p, q


def wald_rate(P: RandomizationMatrix | KroneckerMatrix, counts: np.ndarray) -> float:
    return sum(matrix_estimate(P, c).wald().rejects(ALPHA) for c in counts) / R


# --------------------------------------------------------------------------- exact values


def test_pearson_chi2_matches_scipy() -> None:
    table = np.array([[10, 20, 5], [3, 40, 7], [12, 1, 30]])
    stat, p, df, _ = chi2_contingency(table, correction=False)
    result = pearson_chi2(table)
    assert result.statistic == pytest.approx(stat, rel=1e-12)
    assert result.p_value == pytest.approx(p, rel=1e-9)
    assert result.df == df == 4 and result.method == "pearson-chi2"
    # a category nobody reported is left out of the table and of the degrees of freedom
    padded = pearson_chi2(np.vstack([table, np.zeros((1, 3))]))
    assert padded.df == 4 and padded.statistic == pytest.approx(stat, rel=1e-12)
    assert pearson_chi2(np.array([[3, 4, 5]])) .p_value == 1.0


def test_matrix_estimate_covariance_is_nayak_eq_3_2(rng: np.random.Generator) -> None:
    P = grr(6, 1.5)
    truth = np.array([[0.3, 0.12, 0.08], [0.09, 0.25, 0.16]])
    counts = np.round(1000 * (P.values.T @ truth.ravel())).reshape(2, 3)
    e = matrix_estimate(P, counts)
    assert e.wald() == wald_independence(e.estimate, e.null_covariance)
    assert e.effect() == dependence_effect(e.estimate, e.covariance)
    n = int(counts.sum())
    assert e.n == n and e.estimate.shape == (2, 3)
    assert e.estimate.min() > 0  # so that Nayak's formula applies at π̂
    np.testing.assert_allclose(e.covariance, nayak_covariance(P, e.estimate.ravel(), n), rtol=0, atol=1e-15)
    # the null covariance is eq. (3.2) at the product of the estimated marginals
    fit = np.outer(e.estimate.sum(1), e.estimate.sum(0)).ravel()
    np.testing.assert_allclose(e.null_covariance, nayak_covariance(P, fit, n), rtol=0, atol=1e-15)
    # a Kronecker channel gives what its dense product gives
    K = kron(grr(2, 1.0), grr(3, 0.5))
    dense = RandomizationMatrix(K.todense())
    a, b = matrix_estimate(K, counts), matrix_estimate(dense, counts.ravel(), (2, 3))
    np.testing.assert_allclose(a.estimate, b.estimate, atol=1e-13)
    np.testing.assert_allclose(a.covariance, b.covariance, atol=1e-15)
    np.testing.assert_allclose(a.null_covariance, b.null_covariance, atol=1e-15)


def test_support_estimate_is_wang_et_al_estimator_with_sampling_covariance() -> None:
    support = np.array([[520, 300], [410, 380]])
    n, p, q = 1000, 0.5, 1 / (math.e + 1)
    e = support_estimate(support, n, p, q)
    np.testing.assert_allclose(e.estimate, (support / n - q) / (p - q), atol=1e-15)
    lam = (support / n).ravel()
    pi = e.estimate.ravel()
    np.testing.assert_allclose(np.diag(e.covariance), lam * (1 - lam) / (p - q) ** 2 / n, atol=1e-18)
    assert e.covariance[0, 1] == pytest.approx(-pi[0] * pi[1] / n, abs=1e-18)


def test_wald_statistic_of_a_two_by_two_by_hand() -> None:
    """2 x 2: one contrast g = π_00 − π_0· π_·0 and its delta-method variance J Σ Jᵀ."""
    pi = np.array([[0.3, 0.2], [0.1, 0.4]])
    cov = np.diag([1e-4, 2e-4, 3e-4, 4e-4])
    g = 0.3 - 0.5 * 0.4
    jac = np.array([1 + 0.3 - 0.4 - 0.5, 0.3 - 0.4, 0.3 - 0.5, 0.3])  # S π_00 − π_0· π_·0
    result = wald_independence(pi, cov)
    assert result.df == 1 and result.method == "wald"
    assert result.statistic == pytest.approx(g * g / (jac @ cov @ jac), rel=1e-12)


def test_wald_pseudo_inverse_keeps_the_directions_with_information() -> None:
    """A rank-one covariance c v vᵀ gives Σ_g = c (Jv)(Jv)ᵀ: df 1 and W = (Jv·g)² / (c |Jv|⁴)."""
    pi = np.array([[0.2, 0.1, 0.1], [0.3, 0.2, 0.1]])
    with pytest.raises(EstimationError, match="carries no information"):
        wald_independence(pi, np.zeros((6, 6)))
    v = np.array([1.0, -2.0, 0.5, 0.3, 0.0, 0.2])
    c = 1e-4
    row, col = pi.sum(1), pi.sum(0)
    g = np.array([pi[0, 0] - row[0] * col[0], pi[0, 1] - row[0] * col[1]])
    jac = np.zeros((2, 6))
    for k, b in enumerate((0, 1)):
        for cell in range(6):
            a2, b2 = divmod(cell, 3)
            jac[k, cell] = (cell == b) + pi[0, b] - (a2 == 0) * col[b] - (b2 == b) * row[0]
    jv = jac @ v
    result = wald_independence(pi, c * np.outer(v, v))
    assert result.df == 1
    assert result.statistic == pytest.approx((jv @ g) ** 2 / (c * (jv @ jv) ** 2), rel=1e-9)


# --------------------------------------------------------------------------- size


@pytest.mark.parametrize("shape, n", [((2, 3), 5_000), ((9, 16), 5_000)])
@pytest.mark.parametrize("epsilon", [1.0, 4.0])
def test_pearson_chi2_holds_its_size_on_product_channels(rng: np.random.Generator, shape: tuple[int, int],
                                                         n: int, epsilon: float) -> None:
    """Each attribute through its own GRR with ε/2 (the pair is ε-LDP)."""
    P = kron(grr(shape[0], epsilon / 2), grr(shape[1], epsilon / 2))
    counts = released_counts(P, independent(*shape), n, rng)
    rate = np.mean([pearson_chi2(c).rejects(ALPHA) for c in counts])
    assert abs(rate - ALPHA) <= SIZE_TOLERANCE, rate


@pytest.mark.parametrize(
    "shape, epsilon, n",
    [((2, 3), 1.0, 5_000), ((2, 3), 4.0, 5_000), ((9, 16), 4.0, 100_000), ((9, 16), 1.0, 1_000_000)],
)
def test_wald_holds_its_size_with_grr_on_the_joint_domain(rng: np.random.Generator, shape: tuple[int, int],
                                                          epsilon: float, n: int) -> None:
    """GRR on the d_i d_j joint values (released attributes dependent under independence).
    144 joint values at ε = 1 need n ≈ 10⁶ for the asymptotics (conservative below)."""
    pi = independent(*shape)
    P = grr(pi.size, epsilon)
    lam = P.values.T @ pi.ravel()
    released = lam.reshape(shape)
    assert cramers_v(released) > 1e-3  # the released pair is dependent: χ² on it would not hold
    rate = wald_rate(P, released_counts(P, pi, n, rng))
    assert abs(rate - ALPHA) <= SIZE_TOLERANCE, rate


@pytest.mark.parametrize(
    "shape, epsilon, n",
    [((2, 3), 1.0, 5_000), ((2, 3), 4.0, 5_000), ((9, 16), 1.0, 20_000), ((9, 16), 4.0, 20_000)],
)
def test_wald_holds_its_size_with_product_channels(rng: np.random.Generator, shape: tuple[int, int],
                                                   epsilon: float, n: int) -> None:
    P = kron(grr(shape[0], epsilon / 2), grr(shape[1], epsilon / 2))
    rate = wald_rate(P, released_counts(P, independent(*shape), n, rng))
    assert abs(rate - ALPHA) <= SIZE_TOLERANCE, rate


@pytest.mark.parametrize(
    "shape, epsilon, n", [((2, 3), 1.0, 5_000), ((2, 3), 4.0, 5_000), ((9, 16), 4.0, 200_000)]
)
def test_wald_holds_its_size_with_oue_support_counts(rng: np.random.Generator, shape: tuple[int, int],
                                                     epsilon: float, n: int) -> None:
    support, p, q = oue_support(independent(*shape), n, epsilon, rng)
    rejections = 0
    for s in support:
        e = support_estimate(s, n, p, q)
        rejections += wald_independence(e.estimate, e.null_covariance).rejects(ALPHA)
    assert abs(rejections / R - ALPHA) <= SIZE_TOLERANCE, rejections / R


@pytest.mark.parametrize("epsilon, n", [(2.0, 1_200), (8.0, 1_200), (4.0, 5_000)])
def test_wald_with_the_null_covariance_is_never_oversized_with_few_reports_per_cell(
    rng: np.random.Generator, epsilon: float, n: int
) -> None:
    """16 x 15 joint values (Adult's education x occupation), GRR on the 240 values, a few
    reports per cell (the discovery phase of a sampled-pair release): the test may be
    conservative but rejects at most α + 3 SE of the time.  (The plug-in covariance rejects
    in 88-100 % of these data sets.)"""
    pi = independent(16, 15)
    P = grr(240, epsilon)
    rate = wald_rate(P, released_counts(P, pi, n, rng))
    assert rate <= ALPHA + SIZE_TOLERANCE, rate


# --------------------------------------------------------------------------- power


def test_both_tests_detect_a_stated_dependence(rng: np.random.Generator) -> None:
    """Zipf marginals 3 x 4 coupled to Cramér's V = 0.2, ε = 2 for the pair (GRR with ε = 1 per
    attribute, or GRR on the 12 joint values), n = 20,000.  (Per-attribute GRR attenuates
    φ² about 80-fold here: at V = 0.1 the χ² test's power is only about 0.3.)"""
    pi = zipf_pair_joint((3, 4), 0.2)
    P = kron(grr(3, 1.0), grr(4, 1.0))
    chi2_power = np.mean([pearson_chi2(c).rejects(ALPHA) for c in released_counts(P, pi, 20_000, rng)])
    G = grr(12, 2.0)
    wald_power = wald_rate(G, released_counts(G, pi, 20_000, rng))
    assert chi2_power > 0.9 and wald_power > 0.9, (chi2_power, wald_power)


# --------------------------------------------------------------------------- effect size


@pytest.mark.parametrize("shape, v", [((3, 4), 0.0), ((3, 4), 0.2), ((9, 16), 0.0), ((9, 16), 0.2)])
def test_dependence_effect_is_unbiased_with_a_calibrated_standard_error(rng: np.random.Generator,
                                                                      shape: tuple[int, int], v: float) -> None:
    """GRR on the joint values at ε = 4 (3 x 4: ε = 2), n = 20,000: the corrected φ² has mean
    φ² within 5 SE of the mean over R data sets, and its SE matches the spread of φ̂² (the
    sample SD of R values has relative SE 1/sqrt(2R) = 3.5 %; the bound is 15 %, 30 % above at
    independence)."""
    pi = zipf_pair_joint(shape, v)
    phi2 = cramers_v(pi) ** 2 * (min(shape) - 1)
    P = grr(pi.size, 4.0 if pi.size > 12 else 2.0)
    effects = []
    for c in released_counts(P, pi, 20_000, rng):
        e = matrix_estimate(P, c)
        effects.append(dependence_effect(e.estimate, e.covariance))
    values = np.array([f.phi2 for f in effects])
    ses = np.array([f.phi2_se for f in effects])
    assert abs(values.mean() - phi2) <= 5 * values.std() / math.sqrt(R)
    # at independence the SE is conservative: its clipped term (see dependence_effect) is >= 0
    assert 0.85 <= ses.mean() / values.std() <= (1.3 if v == 0 else 1.15)
    vs = np.array([f.cramers_v for f in effects])
    if v == 0:
        plug_in = values + np.array([f.bias for f in effects])
        assert plug_in.mean() > 5 * values.std() / math.sqrt(R)  # the uncorrected φ² is biased up
    else:
        assert abs(vs.mean() - v) <= 5 * vs.std() / math.sqrt(R)
        assert 0.85 <= np.mean([f.cramers_v_se for f in effects]) / vs.std() <= 1.15


# --------------------------------------------------------------------------- errors


def test_bad_input_is_refused_with_the_parameter_named() -> None:
    with pytest.raises(ConfigurationError, match=r"counts must be counts >= 0, got -1.0"):
        pearson_chi2(np.array([[1, -1], [2, 3]]))
    with pytest.raises(ConfigurationError, match=r"counts must be a non-empty 2-D table, got shape \(3,\)"):
        pearson_chi2(np.array([1, 2, 3]))
    with pytest.raises(ConfigurationError, match=r"shape must be \(d_i, d_j\) with d_i \* d_j = 6, got \(2, 2\)"):
        matrix_estimate(grr(6, 1.0), np.ones(6), (2, 2))
    with pytest.raises(ConfigurationError, match=r"shape \(d_i, d_j\) is needed for flat counts and a dense P"):
        matrix_estimate(grr(6, 1.0), np.ones(6))
    with pytest.raises(ConfigurationError, match=r"p must be > q .* got p=0.2, q=0.3"):
        support_estimate(np.ones((2, 2)), 10, 0.2, 0.3)
    with pytest.raises(ConfigurationError, match=r"covariance must have shape \(4, 4\) for an estimate of shape \(2, 2\), got \(3, 3\)"):
        wald_independence(np.full((2, 2), 0.25), np.eye(3))
    with pytest.raises(ConfigurationError, match=r"alpha must be a real number in \(0, 1\)"):
        pearson_chi2(np.eye(2) + 1).rejects(1.5)
