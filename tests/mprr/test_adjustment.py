"""Tests of mprr.adjustment: RR-Adjustment, main paper Algorithm 2 and Example 1."""

from __future__ import annotations

import warnings
from fractions import Fraction

import numpy as np
import pytest

from mprr.adjustment import Adjustment, adjust
from mprr.distributions import WeightedSample
from mprr.errors import ConfigurationError, DataError, EstimationError

# Main paper Example 1, expression (13): (a1_1, a2_1) x4, (a1_2, a2_1) x2, (a1_2, a2_2) x4.
EXAMPLE_1 = np.array([[0, 0]] * 4 + [[1, 0]] * 2 + [[1, 1]] * 4)
HALF = np.array([0.5, 0.5])
EXAMPLE_1_TARGETS = [((0,), HALF), ((1,), HALF)]


def marginal(codes: np.ndarray, res: Adjustment, axes: tuple[int, ...], sizes: tuple[int, ...]) -> np.ndarray:
    """The weighted marginal Σ_i w_i [codes[i, axes] = cell] (main paper Algorithm 2, steps 11-13)."""
    return WeightedSample(codes, res.weights, sizes).marginal(axes)


def joint(codes: np.ndarray, res: Adjustment, sizes: tuple[int, ...]) -> np.ndarray:
    return marginal(codes, res, tuple(range(len(sizes))), sizes)


def reference_algorithm_2(
    codes: np.ndarray, marginals: list[tuple[tuple[int, ...], np.ndarray]], sweeps: int
) -> list[Fraction]:
    """Record-by-record transcription of Algorithm 2 in exact rational arithmetic."""
    n = codes.shape[0]
    w = [Fraction(1, n)] * n
    for _ in range(sweeps):
        for axes, target in marginals:
            s: dict[tuple[int, ...], Fraction] = {}
            for i in range(n):  # steps 11-13
                key = tuple(int(codes[i, a]) for a in axes)
                s[key] = s.get(key, Fraction(0)) + w[i]
            for i in range(n):  # steps 14-17
                v = tuple(int(codes[i, a]) for a in axes)
                w[i] = w[i] * Fraction(target[v]) / s[v]
    return w


# --------------------------------------------------------------------------- Example 1


def test_example_1_exact_limit_is_half_zero_zero_half() -> None:
    res = adjust(EXAMPLE_1, EXAMPLE_1_TARGETS, exact_limit=True)
    # Joint over cells (a1_1,a2_1), (a1_1,a2_2), (a1_2,a2_1), (a1_2,a2_2): expression (14).
    cells = joint(EXAMPLE_1, res, (2, 2)).ravel()
    np.testing.assert_allclose(cells, [0.5, 0, 0, 0.5], atol=1e-15)
    # "the first 4 records having weight 1/8, the next 2 having weight 0, the last 4 ... 1/8"
    np.testing.assert_allclose(res.weights, [1 / 8] * 4 + [0.0] * 2 + [1 / 8] * 4, atol=1e-15)
    assert res.converged and res.gap <= 1e-15 and res.iterations == 1


def test_example_1_first_adjust_weights_step_matches_the_paper() -> None:
    # One Adjust_weights on attribute 1: weights 1/8 (records 1-4) and 1/12 (records 5-10),
    # and as a side effect lambda^2 = (2/3, 1/3).
    res = adjust(EXAMPLE_1, [((0,), HALF)], max_iter=1)
    np.testing.assert_allclose(res.weights, [1 / 8] * 4 + [1 / 12] * 6, rtol=1e-15)
    np.testing.assert_allclose(
        marginal(EXAMPLE_1, res, (1,), (2, 2)), [2 / 3, 1 / 3], rtol=1e-15
    )


@pytest.mark.parametrize("sweeps", [1, 2, 3, 10, 1000])
def test_example_1_plain_iteration_follows_its_closed_form(sweeps: int) -> None:
    # Without exact_limit, Algorithm 2 approaches expression (14) at rate 1/k: after k sweeps
    # the (a1_2, a2_1) cell holds x_k = 1 / (4 (k + 1)) (1/x_{k+1} = 1/x_k + 4, x_1 = 1/8),
    # the joint is (1/2 - x_k, 0, x_k, 1/2) and the first marginal is off by x_k.
    res = adjust(EXAMPLE_1, EXAMPLE_1_TARGETS, max_iter=sweeps)
    x = 1.0 / (4 * (sweeps + 1))
    cells = joint(EXAMPLE_1, res, (2, 2)).ravel()
    np.testing.assert_allclose(cells, [0.5 - x, 0, x, 0.5], rtol=1e-9)
    assert res.iterations == sweeps
    assert res.gap == pytest.approx(x, rel=1e-9)
    assert not res.converged
    if sweeps <= 3:  # exact rational transcription of the algorithm agrees record by record
        ref = reference_algorithm_2(EXAMPLE_1, EXAMPLE_1_TARGETS, sweeps)
        np.testing.assert_allclose(res.weights, [float(v) for v in ref], rtol=1e-13)
        assert float(ref[4] * 2) == pytest.approx(x, rel=1e-15)


# --------------------------------------------------------------------------- fitting marginals


def random_codes(rng: np.random.Generator, n: int, sizes: tuple[int, ...]) -> np.ndarray:
    z = rng.integers(0, 3, n)  # a shared latent variable makes the attributes dependent
    cols = [np.where(rng.random(n) < 0.6, (z * s) // 3, rng.integers(0, s, n)) for s in sizes]
    return np.stack(cols, axis=1)


def test_reproduces_attribute_marginals(rng: np.random.Generator) -> None:
    sizes = (3, 4, 2, 5)
    codes = random_codes(rng, 3000, sizes)
    targets = [((j,), rng.dirichlet(np.full(s, 4.0))) for j, s in enumerate(sizes)]
    res = adjust(codes, targets, tol=1e-11)
    assert res.converged and res.gap <= 1e-11
    assert res.weights.shape == (3000,)
    assert np.all(res.weights >= 0) and res.weights.sum() == pytest.approx(1.0, abs=1e-12)
    for axes, target in targets:
        np.testing.assert_allclose(
            marginal(codes, res, axes, sizes), target, atol=1e-11
        )


def test_reproduces_cluster_marginals(rng: np.random.Generator) -> None:
    sizes = (3, 4, 2, 5)
    codes = random_codes(rng, 3000, sizes)
    targets = [
        ((0, 2), rng.dirichlet(np.full(6, 3.0)).reshape(3, 2)),
        ((3, 1), rng.dirichlet(np.full(20, 3.0)).reshape(5, 4)),  # axes in any order
    ]
    res = adjust(codes, targets, tol=1e-11)
    assert res.converged
    for axes, target in targets:
        np.testing.assert_allclose(
            marginal(codes, res, axes, sizes), target, atol=1e-11
        )


def test_matches_record_by_record_algorithm(rng: np.random.Generator) -> None:
    codes = random_codes(rng, 40, (2, 3, 2))
    targets = [
        ((0,), np.array([0.3, 0.7])),
        ((1, 2), np.array([[0.1, 0.2], [0.15, 0.15], [0.25, 0.15]])),
    ]
    res = adjust(codes, targets, tol=0.0, max_iter=3)
    ref = reference_algorithm_2(codes, targets, 3)
    np.testing.assert_allclose(res.weights, [float(v) for v in ref], rtol=1e-12)


def test_empirical_marginals_leave_uniform_weights(rng: np.random.Generator) -> None:
    codes = random_codes(rng, 500, (3, 4))
    targets = [((j,), np.bincount(codes[:, j], minlength=s) / 500) for j, s in enumerate((3, 4))]
    res = adjust(codes, targets)
    np.testing.assert_allclose(res.weights, np.full(500, 1 / 500), rtol=1e-12)
    assert res.iterations == 1 and res.converged


def test_exact_limit_gives_the_same_limit_on_interior_problems(rng: np.random.Generator) -> None:
    codes = random_codes(rng, 800, (3, 3, 2))
    targets = [((j,), rng.dirichlet(np.full(s, 5.0))) for j, s in enumerate((3, 3, 2))]
    plain = adjust(codes, targets, tol=1e-12)
    exact = adjust(codes, targets, tol=1e-12, exact_limit=True)
    assert plain.converged and exact.converged
    np.testing.assert_allclose(exact.weights, plain.weights, atol=1e-11)


def test_is_deterministic(rng: np.random.Generator) -> None:
    codes = random_codes(rng, 300, (3, 4))
    targets = [((0,), np.array([0.2, 0.3, 0.5])), ((1,), np.full(4, 0.25))]
    a = adjust(codes, targets)
    b = adjust(codes.copy(), [(ax, t.copy()) for ax, t in targets])
    np.testing.assert_array_equal(a.weights, b.weights)
    assert (a.iterations, a.gap, a.converged) == (b.iterations, b.gap, b.converged)


def test_weights_are_read_only() -> None:
    res = adjust(EXAMPLE_1, EXAMPLE_1_TARGETS, max_iter=2)
    with pytest.raises(ValueError, match="read-only"):
        res.weights[0] = 1.0


# --------------------------------------------------------------------------- degenerate targets


def test_target_cell_without_records_is_reported_in_gap() -> None:
    # No record has attribute 0 = 2, yet the target gives it 0.25: that mass cannot be
    # matched; the reachable cells get the rest of the target rescaled, weights sum to 1.
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 1]])
    target = np.array([0.5, 0.25, 0.25])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = adjust(codes, [((0,), target)], max_iter=5)
    assert res.gap == pytest.approx(0.25)
    assert not res.converged
    assert res.weights.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(
        marginal(codes, res, (0,), (3, 2)), [2 / 3, 1 / 3, 0.0]
    )
    # Weights stop changing after the first sweep: the run ends at the fixed point.
    assert res.iterations == 2
    # exact_limit cannot help (no weighting matches): same answer.
    exact = adjust(codes, [((0,), target)], max_iter=5, exact_limit=True)
    np.testing.assert_allclose(exact.weights, res.weights)


def test_zero_target_cell_zeroes_its_records() -> None:
    codes = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [2, 1]])
    res = adjust(codes, [((0,), np.array([0.6, 0.4, 0.0])), ((1,), np.array([0.5, 0.5]))])
    assert res.weights[4] == 0.0
    assert res.converged
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # A later target putting mass where only zero-weight records live cannot be reached.
        res = adjust(
            codes,
            [
                ((0,), np.array([0.5, 0.5, 0.0])),
                ((0, 1), np.array([[0.4, 0.1], [0.2, 0.1], [0.0, 0.2]])),
            ],
            max_iter=50,
        )
    assert res.gap >= 0.1 and not res.converged
    assert np.all(np.isfinite(res.weights)) and res.weights.sum() == pytest.approx(1.0)


def test_all_target_mass_unreachable_raises() -> None:
    codes = np.array([[0], [0], [1]])
    with pytest.raises(EstimationError, match="all its mass"):
        adjust(codes, [((0,), np.array([0.0, 0.0, 1.0]))])


# --------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("released", "marginals", "error", "match"),
    [
        (np.array([0, 1]), [((0,), HALF)], DataError, "2-D"),
        (np.zeros((0, 2), dtype=int), [((0,), HALF)], DataError, "non-empty 2-D"),
        (np.array([[0.0, 1.0]]), [((0,), HALF)], DataError, "integers"),
        (np.array([[-1, 0]]), [((0,), HALF)], DataError, ">= 0"),
        (np.array([[2, 0]]), [((0,), HALF)], DataError, "outside the 2 categories"),
        (EXAMPLE_1, [], ConfigurationError, "at least one"),
        (EXAMPLE_1, [((2,), HALF)], ConfigurationError, r"distinct attribute indices in \[0, 2\)"),
        (EXAMPLE_1, [((0, 0), np.eye(2) / 2)], ConfigurationError, "distinct"),
        (EXAMPLE_1, [((0,), np.eye(2) / 2)], ConfigurationError, "one axis per attribute"),
        (EXAMPLE_1, [((0,), np.array([1.2, -0.2]))], ConfigurationError, "post-process"),
        (EXAMPLE_1, [((0,), np.array([0.5, 0.4]))], ConfigurationError, "sum to 1"),
        (EXAMPLE_1, [((0,), np.array([np.nan, 1.0]))], ConfigurationError, "finite"),
        (
            EXAMPLE_1,
            [((0,), HALF), ((0, 1), np.full((3, 2), 1 / 6))],
            ConfigurationError,
            "disagree on the number of categories of attribute 0",
        ),
        (EXAMPLE_1, [(0, HALF, 1)], ConfigurationError, r"\(axes, target\) pair"),
    ],
)
def test_rejects_bad_input(
    released: np.ndarray, marginals: list, error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        adjust(released, marginals)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"tol": -1.0}, "tol must be a finite number >= 0"),
        ({"tol": float("nan")}, "tol must be"),
        ({"max_iter": -1}, "max_iter must be an integer >= 0"),
        ({"max_iter": 2.5}, "max_iter must be"),
    ],
)
def test_rejects_bad_options(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        adjust(EXAMPLE_1, EXAMPLE_1_TARGETS, **kwargs)


def test_single_axis_may_be_given_as_int_and_zero_sweeps_keep_uniform_weights() -> None:
    res = adjust(EXAMPLE_1, [(0, HALF), (1, HALF)], max_iter=0)
    np.testing.assert_array_equal(res.weights, np.full(10, 0.1))
    assert res.iterations == 0 and res.gap == pytest.approx(0.1)


# --------------------------------------------------------------------------- statistical


def test_adjustment_recovers_dependence_lost_by_independence(rng: np.random.Generator) -> None:
    # True data with strong dependence, keep-or-uniform RR (p = 0.6) per attribute, marginals
    # estimated by main paper eq. (2) and clipped/rescaled: RR-Independent's product of
    # marginals is far from the truth; RR-Adjustment keeps the joint structure left in Y.
    n, sizes, p = 20_000, (3, 4), 0.6
    truth = np.array([[0.25, 0.05, 0.0, 0.0], [0.02, 0.2, 0.08, 0.0], [0.0, 0.02, 0.08, 0.3]])
    flat = rng.choice(12, size=n, p=truth.ravel())
    x = np.stack(np.unravel_index(flat, sizes), axis=1)
    y = x.copy()
    targets = []
    for j, s in enumerate(sizes):
        y[:, j] = np.where(rng.random(n) < p, x[:, j], rng.integers(0, s, n))
        matrix = p * np.eye(s) + (1 - p) / s
        pi = np.linalg.solve(matrix.T, np.bincount(y[:, j], minlength=s) / n)
        pi = np.clip(pi, 0.0, None)
        targets.append(((j,), pi / pi.sum()))
    res = adjust(y, targets)
    assert res.converged
    empirical = np.bincount(flat, minlength=12).reshape(sizes) / n
    tv_adjusted = 0.5 * np.abs(joint(y, res, sizes) - empirical).sum()
    tv_independent = 0.5 * np.abs(np.outer(targets[0][1], targets[1][1]) - empirical).sum()
    # Sampling noise of a total variation over 12 cells at n = 20,000 is about
    # sqrt(12 / n) ~ 0.025; the improvement required here (0.125) is 5 times that.
    assert tv_adjusted < tv_independent - 5 * np.sqrt(12 / n)
