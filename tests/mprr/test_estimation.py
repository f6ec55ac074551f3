"""Tests of mprr.estimation: eq. (2), post-processing, IBU, Nayak eq. (3.2), eq. (5)/(6)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.optimize
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.errors import ConfigurationError, EstimationError
from mprr.estimation import (
    POSTPROCESSORS,
    IBUResult,
    clip_rescale,
    covariance,
    error_bounds,
    ibu,
    invert,
    marginal_variance,
    postprocess,
    project_simplex,
)
from mprr.matrices import (
    RandomizationMatrix,
    circulant,
    grr,
    k_anonymity,
    keep_or_uniform,
    kron,
    tridiagonal,
    warner,
)
from mprr.randomize import randomize

PA = RandomizationMatrix([[0.75, 0.25], [0.25, 0.75]])  # RR-Ind-Joint paper 3.3


# ------------------------------------------------------------------ eq. (2)


def test_invert_dense_paths_agree_with_numpy(rng: np.random.Generator) -> None:
    for m in (grr(5, 1.0), circulant([0.5, 0.3, 0.1, 0.1]), tridiagonal([0.2, 0.3, 0.1])):
        obs = rng.integers(0, 50, m.size)
        lam = obs / obs.sum()
        est = invert(m, obs)
        np.testing.assert_allclose(est, np.linalg.inv(m.values.T) @ lam, atol=1e-12)
        assert est.sum() == pytest.approx(1.0)
        np.testing.assert_allclose(invert(m, lam), est, atol=1e-14)  # counts or frequencies


def test_rr_ind_joint_two_attribute_example() -> None:
    """RR-Ind-Joint paper 3.3 (n = 10, p_A = p_B = 3/4).

    Truth (C order (a1b1, a1b2, a2b1, a2b2)) = (0.4, 0, 0.2, 0.4).  The expected release
    distribution P^T pi = (0.2875, 0.1625, 0.2625, 0.2875) matches the paper.  For the
    observed f^Y = [[3, 2], [2, 3]] the definitions give pi_hat = (0.45, 0.05, 0.05, 0.45)
    (MAE 0.075); the paper prints (0.375, 0.075, 0.275, 0.375), which sums to 1.1 and is the
    inverse of (0.3, 0.2, 0.3, 0.3) — a typo in one observed cell (docs/reproduction.md).
    """
    km = kron(PA, PA)
    truth = np.array([[0.4, 0.0], [0.2, 0.4]])  # rows a, columns b
    np.testing.assert_allclose(km.apply_transpose(truth).ravel(), [0.2875, 0.1625, 0.2625, 0.2875])
    f_y = np.array([[3, 2], [2, 3]])
    est = invert(km, f_y)
    np.testing.assert_allclose(est, [[0.45, 0.05], [0.05, 0.45]], atol=1e-12)
    np.testing.assert_allclose(invert(km.to_matrix(), f_y.ravel()), est.ravel(), atol=1e-12)
    assert np.mean(np.abs(est - truth)) == pytest.approx(0.075)
    published = np.array([0.375, 0.075, 0.275, 0.375])
    assert published.sum() == pytest.approx(1.1)
    np.testing.assert_allclose(km.todense().T @ published, [0.3, 0.2, 0.3, 0.3], atol=1e-12)
    # RR-Ind on the same data: lambda^A = lambda^B = (0.5, 0.5) invert to (0.5, 0.5), not the
    # true marginals (0.4, 0.6) / (0.6, 0.4) the paper prints for RR-Ind.
    np.testing.assert_allclose(invert(PA, f_y.sum(axis=1)), [0.5, 0.5])


def test_kronecker_invert_matches_dense(rng: np.random.Generator) -> None:
    factors = [
        grr(3, 0.7),
        tridiagonal([0.2, 0.3, 0.1]),
        RandomizationMatrix([[0.8, 0.2], [0.3, 0.7]]),
        circulant([0.6, 0.3, 0.1]),
    ]
    km = kron(*factors)
    obs = rng.integers(0, 20, km.sizes)
    est = invert(km, obs)
    dense = np.linalg.solve(km.todense().T, obs.ravel() / obs.sum())
    np.testing.assert_allclose(est.ravel(), dense, atol=1e-12)
    assert est.shape == km.sizes
    flat = invert(km, obs.ravel())
    assert flat.shape == (km.size,)
    np.testing.assert_allclose(flat, dense, atol=1e-12)


@pytest.mark.parametrize(
    ("observed", "match"),
    [
        (np.array([1, 2]), r"shape \(3,\)"),
        (np.array([1, -2, 3]), ">= 0, got -2.0"),
        (np.array([1, np.nan, 3]), "finite"),
        (np.array([0, 0, 0]), "positive total, got 0.0"),
        (np.array(["a", "b", "c"]), "real numbers"),
        (np.array([1 + 1j, 2, 3]), "real numbers"),  # not silently cast to its real part
    ],
)
def test_invert_bad_observed(observed: np.ndarray, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        invert(grr(3, 1.0), observed)


def test_invert_bad_kronecker_shape_and_singular() -> None:
    with pytest.raises(ConfigurationError, match=r"shape \(2, 3\) or \(6,\)"):
        invert(kron(grr(2, 1.0), grr(3, 1.0)), np.ones((3, 2)))
    with pytest.raises(EstimationError, match="singular"):
        invert(k_anonymity([2, 2]), np.ones(4))
    with pytest.raises(EstimationError, match="singular"):
        invert(kron(grr(2, 1.0), keep_or_uniform(3, 0.0)), np.ones((2, 3)))
    with pytest.raises(EstimationError, match="singular"):
        invert(RandomizationMatrix([[0.5, 0.5, 0.0], [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]]), np.ones(3))
    with pytest.raises(ConfigurationError, match="RandomizationMatrix or KroneckerMatrix"):
        invert(np.eye(2), np.ones(2))


def test_invert_unbiased_monte_carlo() -> None:
    """E[pi_hat] = pi and Cov[pi_hat] = Nayak (3.2) under multinomial sampling.

    R = 4000 independent surveys of n = 300 parties: records drawn from pi, released by
    inverse-CDF sampling, tallied and inverted.  Tolerances: 5 standard errors of the mean
    (sqrt(Var/R) from eq. (3.2)); variances within 5 sd of a sample variance (sqrt(2/R)).
    """
    rng = np.random.default_rng(1234)
    P = RandomizationMatrix([[0.7, 0.2, 0.1, 0.0], [0.1, 0.6, 0.2, 0.1], [0.1, 0.1, 0.7, 0.1], [0.2, 0.1, 0.1, 0.6]])
    pi = np.array([0.1, 0.4, 0.3, 0.2])
    reps, n, r = 4000, 300, 4
    x = rng.choice(r, size=(reps, n), p=pi).ravel()
    y = randomize(x, P, uniforms=rng.random(reps * n))
    counts = np.bincount(np.repeat(np.arange(reps), n) * r + y, minlength=reps * r).reshape(reps, r)
    est = np.stack([invert(P, c) for c in counts])
    cov = covariance(P, pi, n)
    se = np.sqrt(np.diag(cov) / reps)
    assert np.all(np.abs(est.mean(axis=0) - pi) <= 5 * se)
    emp_var = est.var(axis=0, ddof=1)
    assert np.all(np.abs(emp_var / np.diag(cov) - 1) <= 5 * math.sqrt(2 / reps))


# ------------------------------------------------------------------ covariance, both conventions


def _nayak(q: np.ndarray, pi: np.ndarray, n: int) -> np.ndarray:
    """Nayak eq. (3.2) literally, with his column-stochastic Q (lambda = Q pi)."""
    lam = q @ pi
    qi = np.linalg.inv(q)
    return (np.diag(pi) - np.outer(pi, pi)) / n + (qi @ np.diag(lam) @ qi.T - np.diag(pi)) / n


def test_covariance_column_and_row_conventions() -> None:
    q = np.array([[0.7, 0.2, 0.1], [0.2, 0.6, 0.3], [0.1, 0.2, 0.6]])  # columns sum to 1
    pi = np.array([0.5, 0.3, 0.2])
    ours = covariance(RandomizationMatrix.from_columns(q), pi, 100)
    np.testing.assert_allclose(ours, _nayak(q, pi, 100), atol=1e-14)
    # the same numbers through the row-convention constructor
    np.testing.assert_allclose(covariance(RandomizationMatrix(q.T), pi, 100), ours, atol=1e-14)
    # feeding Nayak's Q as if it were row-stochastic is a different (wrong) design
    assert not np.allclose(covariance(RandomizationMatrix(q / q.sum(axis=1, keepdims=True)), pi, 100), ours)


def test_covariance_warner_closed_form() -> None:
    """Nayak section 5: V(pi_hat) = theta (1 - theta) / (n (gamma - delta)^2)."""
    gamma, delta, pi1, n = 0.8, 0.3, 0.35, 250  # gamma = P(Yes|A), delta = P(Yes|A^c)
    q = np.array([[gamma, delta], [1 - gamma, 1 - delta]])
    theta = delta + (gamma - delta) * pi1
    cov = covariance(RandomizationMatrix.from_columns(q), np.array([pi1, 1 - pi1]), n)
    assert cov[0, 0] == pytest.approx(theta * (1 - theta) / (n * (gamma - delta) ** 2))
    w = warner(0.8)  # gamma = p, delta = 1 - p
    theta = 0.2 + 0.6 * pi1
    assert covariance(w, np.array([pi1, 1 - pi1]), n)[0, 0] == pytest.approx(theta * (1 - theta) / (n * 0.36))


def test_covariance_kronecker_and_errors() -> None:
    km = kron(grr(2, 1.0), tridiagonal([0.2, 0.3]))
    pi = np.arange(1, 7, dtype=float).reshape(2, 3) / 21
    np.testing.assert_allclose(covariance(km, pi, 50), covariance(km.to_matrix(), pi.ravel(), 50), atol=1e-13)
    with pytest.raises(ConfigurationError, match="n must be an integer >= 1, got 0"):
        covariance(grr(2, 1.0), np.array([0.5, 0.5]), 0)
    with pytest.raises(ConfigurationError, match="sum to 1"):
        covariance(grr(2, 1.0), np.array([0.5, 0.6]), 10)
    with pytest.raises(ConfigurationError, match="shape"):
        covariance(grr(2, 1.0), np.array([0.5, 0.25, 0.25]), 10)


# ------------------------------------------------------------------ post-processing


def test_clip_rescale_and_projection_differ() -> None:
    v = np.array([0.5, 0.8, -0.3])
    np.testing.assert_allclose(clip_rescale(v), [0.5 / 1.3, 0.8 / 1.3, 0.0])
    proj = project_simplex(v)
    np.testing.assert_allclose(proj, [0.35, 0.65, 0.0])
    # main paper 6.4 calls clip-rescale the closest distribution; it is not
    assert np.linalg.norm(proj - v) < np.linalg.norm(clip_rescale(v) - v)
    with pytest.raises(EstimationError, match="positive"):
        clip_rescale(np.array([-0.1, 0.0]))
    with pytest.raises(ConfigurationError, match="finite"):
        project_simplex(np.array([0.1, np.nan]))
    with pytest.raises(ConfigurationError, match="empty"):
        project_simplex(np.array([]))


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(-2.0, 2.0), min_size=1, max_size=7))
def test_project_simplex_is_the_euclidean_projection(values: list[float]) -> None:
    v = np.array(values)
    w = project_simplex(v)
    assert np.all(w >= 0) and w.sum() == pytest.approx(1.0)
    # compare with a generic QP solver
    res = scipy.optimize.minimize(
        lambda x: 0.5 * np.sum((x - v) ** 2),
        np.full(v.size, 1.0 / v.size),
        jac=lambda x: x - v,
        bounds=[(0.0, 1.0)] * v.size,
        constraints=({"type": "eq", "fun": lambda x: x.sum() - 1.0},),
        method="SLSQP",
        options={"ftol": 1e-14, "maxiter": 500},
    )
    assert np.linalg.norm(w - v) <= np.linalg.norm(res.x - v) + 1e-7
    np.testing.assert_allclose(project_simplex(w), w, atol=1e-12)  # idempotent


def test_project_simplex_tensor_shape() -> None:
    t = np.array([[0.3, -0.1], [0.6, 0.4]])
    out = project_simplex(t)
    assert out.shape == (2, 2)
    np.testing.assert_allclose(out.ravel(), project_simplex(t.ravel()))


def test_ibu_recovers_interior_truth_and_matches_kronecker() -> None:
    km = kron(grr(3, 1.0), tridiagonal([0.2, 0.1]))
    truth = np.array([[0.1, 0.2, 0.05], [0.15, 0.1, 0.1], [0.05, 0.15, 0.1]])
    lam = km.apply_transpose(truth)
    res = ibu(km, lam, tol=1e-13, max_iter=100_000)
    assert isinstance(res, IBUResult) and res.converged and res.iterations > 1
    np.testing.assert_allclose(res.estimate, truth, atol=1e-6)
    dense = ibu(km.to_matrix(), lam.ravel(), tol=1e-13, max_iter=100_000)
    np.testing.assert_allclose(dense.estimate, res.estimate.ravel(), atol=1e-9)


def test_ibu_is_a_distribution_when_inversion_is_not() -> None:
    P = grr(4, 0.5)
    obs = np.array([40, 12, 1, 1])
    pi_hat = invert(P, obs)
    assert pi_hat.min() < 0
    res = ibu(P, obs)
    assert res.converged and res.estimate.min() >= 0 and res.estimate.sum() == pytest.approx(1.0)
    # EM never decreases the multinomial log-likelihood of the observations
    def loglik(pi: np.ndarray) -> float:
        return float(obs @ np.log(P.values.T @ pi))
    # and it ends at (numerically) the maximum likelihood over the simplex
    assert loglik(res.estimate) >= loglik(project_simplex(pi_hat)) - 1e-8
    assert loglik(res.estimate) >= loglik(clip_rescale(pi_hat)) - 1e-8
    capped = ibu(P, obs, max_iter=3)
    assert capped.iterations == 3 and not capped.converged


def test_ibu_ends_at_the_maximum_likelihood_kkt_point() -> None:
    """EM fixed point = MLE over the simplex: the KKT conditions of max Σ_v λ_v log (Pᵀπ)_v.

    With g_u = Σ_v λ_v P[u, v] / (Pᵀπ)_v: g_u = 1 where π_u > 0 and g_u <= 1 where π_u = 0.
    """
    P = grr(4, 0.5)
    obs = np.array([40, 12, 1, 1])
    res = ibu(P, obs, tol=1e-12)
    lam = obs / obs.sum()
    g = P.values @ (lam / (P.values.T @ res.estimate))
    support = res.estimate > 1e-6
    assert res.converged and support.sum() == 1  # the MLE sits on a vertex here
    np.testing.assert_allclose(g[support], 1.0, atol=1e-6)
    assert np.all(g[~support] <= 1.0 + 1e-6)


def test_ibu_refuses_counts_at_values_p_never_releases() -> None:
    # Column 2 of P is all zero: value 2 is never released, a count there contradicts P.
    P = RandomizationMatrix([[0.5, 0.5, 0.0], [0.25, 0.75, 0.0], [0.5, 0.5, 0.0]])
    with pytest.raises(EstimationError, match=r"never produces .* first at index \(2,\)"):
        ibu(P, np.array([3, 4, 1]))
    with pytest.raises(EstimationError, match="mass 1.0 on released values that P never produces"):
        ibu(P, np.array([0, 0, 5]))  # used to return NaN (0/0) with a RuntimeWarning
    km = kron(grr(2, 1.0), P)
    with pytest.raises(EstimationError, match=r"first at index \(1, 2\)"):
        ibu(km, np.array([[3, 4, 0], [1, 1, 1]]))
    assert ibu(km, np.array([[3, 4, 0], [1, 1, 0]])).estimate.shape == (2, 3)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tol": 0.0}, "tol must be a finite number > 0, got 0.0"),
        ({"max_iter": 0}, "max_iter must be an integer >= 1, got 0"),
        ({"initial": np.array([0.0, 0.5, 0.5])}, "strictly positive"),
        ({"observed": np.array([1, 2])}, r"observed must have shape \(3,\) to match P, got \(2,\)"),
        ({"observed": np.array([1, -2, 3])}, "observed counts must be >= 0, got -2.0"),
        ({"observed": np.array([1, np.nan, 3])}, "observed must be finite"),
    ],
)
def test_ibu_bad_arguments(kwargs: dict[str, object], match: str) -> None:
    observed = kwargs.pop("observed", np.array([1, 2, 3]))
    with pytest.raises(ConfigurationError, match=match):
        ibu(grr(3, 1.0), observed, **kwargs)  # type: ignore[arg-type]


def test_postprocess_dispatch() -> None:
    P = grr(3, 0.5)
    obs = np.array([30, 1, 1])
    pi_hat = invert(P, obs)
    assert POSTPROCESSORS == {"none", "clip-rescale", "project-simplex", "ibu"}
    np.testing.assert_array_equal(postprocess(pi_hat, "none"), pi_hat)
    np.testing.assert_array_equal(postprocess(pi_hat, "clip-rescale"), clip_rescale(pi_hat))
    np.testing.assert_array_equal(postprocess(pi_hat, "project-simplex"), project_simplex(pi_hat))
    np.testing.assert_array_equal(postprocess(pi_hat, "ibu", P=P, observed=obs), ibu(P, obs).estimate)
    with pytest.raises(ConfigurationError, match="needs both P and observed"):
        postprocess(pi_hat, "ibu")
    with pytest.raises(ConfigurationError, match="method must be one of"):
        postprocess(pi_hat, "clip")


# ------------------------------------------------------------------ eq. (5), (6)


def test_error_bounds_formulas() -> None:
    lam = np.array([0.5, 0.3, 0.2])
    n, alpha = 1000, 0.05
    b = scipy.stats.chi2.isf(alpha / 3, 1)
    e_abs, e_rel = error_bounds(lam, n, alpha)
    assert e_abs == pytest.approx(math.sqrt(b * 0.25 / n))
    assert e_rel == pytest.approx(math.sqrt(b * 0.8 / 0.2 / n))
    assert error_bounds(lam * 1000, n, alpha) == pytest.approx((e_abs, e_rel))  # counts accepted
    # main paper 3.3: uniform frequencies give e_rel = sqrt(B (r - 1) / n)
    r = 16
    _, e_rel_uniform = error_bounds(np.full(r, 1 / r), 500, 0.05)
    assert e_rel_uniform == pytest.approx(math.sqrt(scipy.stats.chi2.isf(0.05 / r, 1) * (r - 1) / 500))
    # Figure 1: sqrt(B) at alpha = 0.05 is already above 2 (200 %) for r = 2 (uniform lambda,
    # n = 1 makes eq. (6) exactly sqrt(B))
    assert error_bounds(np.array([0.5, 0.5]), 1, 0.05)[1] == pytest.approx(2.2414, abs=1e-4)
    assert error_bounds(np.array([0.0, 1.0]), 10, 0.05)[1] == math.inf


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((np.array([0.5, 0.5]), 0, 0.05), "n must be an integer >= 1"),
        ((np.array([0.5, 0.5]), 10, 0.0), r"alpha must be a real number in \(0, 1\)"),
        ((np.array([0.5, 0.5]), 10, 1.0), r"alpha must be a real number in \(0, 1\)"),
        ((np.array([-0.5, 1.5]), 10, 0.05), ">= 0"),
        ((np.array([]), 10, 0.05), "non-empty"),
    ],
)
def test_error_bounds_bad_inputs(args: tuple[object, ...], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        error_bounds(*args)  # type: ignore[arg-type]


def test_covariance_rejects_a_distribution_with_negative_mass() -> None:
    # sums to 1 but is no distribution: its "variance" would come out negative
    bad = np.array([1.2, -0.1, -0.1])
    with pytest.raises(ConfigurationError, match=r"pi must be a probability distribution \(entries >= 0 summing to 1\), got -0\.1 at \(1,\)"):
        covariance(grr(3, 1.0), bad, 100)
    good = covariance(grr(3, 1.0), np.array([0.6, 0.3, 0.1]), 100)
    assert np.all(np.diag(good) > 0)


# ------------------------------------------------------------------ marginal_variance


def _summing_matrix(sizes: tuple[int, ...], keep: tuple[int, ...]) -> np.ndarray:
    """The 0/1 matrix A with A π = the marginal of π over ``keep`` (in that order), C order."""
    cells = np.indices(sizes).reshape(len(sizes), -1)
    kept = [sizes[a] for a in keep]
    rows = np.ravel_multi_index(tuple(cells[a] for a in keep), kept)
    A = np.zeros((math.prod(kept), math.prod(sizes)))
    A[rows, np.arange(A.shape[1])] = 1.0
    return A


@pytest.mark.parametrize("keep", [(0,), (1,), (1, 0), (0, 1)])
@pytest.mark.parametrize("sampling", [True, False])
def test_marginal_variance_is_the_linear_map_of_nayaks_covariance(keep: tuple[int, ...], sampling: bool) -> None:
    sizes = (3, 4)
    pi = np.random.default_rng(5).dirichlet(np.ones(12)).reshape(sizes)
    A = _summing_matrix(sizes, keep)
    shape = tuple(sizes[a] for a in keep)
    for P in (kron(grr(3, 1.0), keep_or_uniform(4, 0.6)), RandomizationMatrix(kron(grr(3, 1.0), grr(4, 0.5)).to_matrix().values)):
        dense = P if isinstance(P, RandomizationMatrix) else P.to_matrix()
        expected = np.diag(A @ covariance(dense, pi.ravel(), 250, sampling=sampling) @ A.T).reshape(shape)
        np.testing.assert_allclose(marginal_variance(P, pi, 250, keep, sampling=sampling), expected, rtol=1e-10, atol=1e-15)


def test_covariance_given_the_records_drops_the_sampling_term() -> None:
    P, pi, n = keep_or_uniform(4, 0.4), np.array([0.1, 0.2, 0.3, 0.4]), 300
    full, given_records = covariance(P, pi, n), covariance(P, pi, n, sampling=False)
    np.testing.assert_allclose(full - given_records, (np.diag(pi) - np.outer(pi, pi)) / n, atol=1e-15)
    # given the records: Q^-1 Var(λ̂ | X) Q^-1' with Var(λ̂ | X) = (D_λ − Pᵀ D_π P) / n
    lam = P.values.T @ pi
    q_inv = P.inverse().T
    direct = q_inv @ ((np.diag(lam) - P.values.T @ np.diag(pi) @ P.values) / n) @ q_inv.T
    np.testing.assert_allclose(given_records, direct, atol=1e-14)


def test_marginal_variance_warner_closed_form_and_errors() -> None:
    theta, pi1, n = 0.8, 0.3, 400
    lam1 = theta * pi1 + (1 - theta) * (1 - pi1)
    var = marginal_variance(warner(theta), np.array([pi1, 1 - pi1]), n)
    assert var[0] == pytest.approx(lam1 * (1 - lam1) / (n * (2 * theta - 1) ** 2))  # Warner (1965)
    given_records = marginal_variance(warner(theta), np.array([pi1, 1 - pi1]), n, sampling=False)
    assert given_records[0] == pytest.approx(var[0] - pi1 * (1 - pi1) / n)
    with pytest.raises(ConfigurationError, match=r"keep must name distinct axes in \[0, 1\), at least one, got \(1,\)"):
        marginal_variance(warner(theta), np.array([pi1, 1 - pi1]), n, (1,))
    with pytest.raises(ConfigurationError, match="pi must be a probability distribution"):
        marginal_variance(warner(theta), np.array([1.2, -0.2]), n)
