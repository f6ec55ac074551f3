"""Tests of mprr.marginals: projection, Norm-Sub, PriView/CALM consistency, maximum entropy (IPF)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mprr.domain import joint_tally
from mprr.errors import ConfigurationError, DomainTooLargeError, EstimationError
from mprr.marginals import make_consistent, maxent_joint, maxent_marginal, norm_sub, project
from scenarios.datasets import load_adult


def margins_of(joint: np.ndarray, keys: list[tuple[int, ...]]) -> dict[tuple[int, ...], np.ndarray]:
    every = tuple(range(joint.ndim))
    return {k: project(joint, every, k) for k in keys}


def entropy(p: np.ndarray) -> float:
    q = p[p > 0]
    return float(-np.sum(q * np.log(q)))


def assert_consistent(tables: dict[tuple[int, ...], np.ndarray], atol: float = 1e-9) -> None:
    for (k1, t1), (k2, t2) in itertools.combinations(tables.items(), 2):
        common = tuple(sorted(set(k1) & set(k2)))
        np.testing.assert_allclose(project(t1, k1, common), project(t2, k2, common), rtol=0, atol=atol)


# --------------------------------------------------------------------------- project


def test_project_worked_example() -> None:
    table = np.arange(24, dtype=float).reshape(2, 3, 4)
    np.testing.assert_array_equal(project(table, (1, 4, 6), (4,)), [60, 92, 124])
    np.testing.assert_array_equal(project(table, (1, 4, 6), (1, 6)), table.sum(axis=1))
    assert float(project(table, (1, 4, 6), ())) == 276.0
    np.testing.assert_array_equal(project(table, (1, 4, 6), (1, 4, 6)), table)


def test_project_refuses_bad_subsets() -> None:
    table = np.ones((2, 3))
    with pytest.raises(ConfigurationError, match=r"onto must be a subset of attrs \(0, 2\), got \(1,\)"):
        project(table, (0, 2), (1,))
    with pytest.raises(ConfigurationError, match=r"attrs must be a tuple of strictly ascending .* got \(2, 0\)"):
        project(table, (2, 0), (0,))
    with pytest.raises(ConfigurationError, match=r"table must have one axis per attribute of attrs \(0, 1, 2\)"):
        project(table, (0, 1, 2), (0,))


# --------------------------------------------------------------------------- Norm-Sub


def norm_sub_literal(v: np.ndarray, total: float) -> np.ndarray:
    """Wang et al.'s loop as written: zero the negatives, shift the positives, repeat."""
    x = v.astype(float).copy()
    while True:
        x[x < 0] = 0.0
        pos = x > 0
        x[pos] += (total - x[pos].sum()) / pos.sum()
        if not np.any(x < 0):
            return x


def test_norm_sub_worked_example() -> None:
    out = norm_sub(np.array([-0.1, 0.3, 0.5, 0.3]))
    np.testing.assert_allclose(out, [0.0, 0.3 - 0.1 / 3, 0.5 - 0.1 / 3, 0.3 - 0.1 / 3], atol=1e-15)
    # upward shift: the positives sum to less than the total, one step ends the loop
    np.testing.assert_allclose(norm_sub(np.array([-0.1, 0.2]), total=1.0), [0.0, 1.0], atol=1e-15)
    # a second round: after the first shift 0.05 - 0.1 < 0
    np.testing.assert_allclose(norm_sub(np.array([-0.3, 0.05, 0.55, 0.7])), [0.0, 0.0, 0.425, 0.575], atol=1e-15)


def test_norm_sub_equals_the_literal_loop(rng: np.random.Generator) -> None:
    for _ in range(300):
        size = int(rng.integers(1, 40))
        v = rng.normal(0.02, 0.1, size=size)
        if not np.any(v > 0):
            continue
        total = float(rng.choice([1.0, 0.3, 250.0]))
        out = norm_sub(v, total)
        np.testing.assert_allclose(out, norm_sub_literal(v, total), rtol=0, atol=1e-12 * total)
        assert out.min() >= 0.0 and out.sum() == pytest.approx(total, rel=1e-12)


def test_norm_sub_keeps_shape_and_refuses_bad_input() -> None:
    t = np.array([[0.5, -0.1], [0.4, 0.2]])
    assert norm_sub(t).shape == (2, 2)
    with pytest.raises(EstimationError, match="at least one positive entry"):
        norm_sub(np.array([-1.0, 0.0]))
    with pytest.raises(ConfigurationError, match=r"total must be a finite number > 0, got 0"):
        norm_sub(t, total=0)


# --------------------------------------------------------------------------- consistency


def test_make_consistent_worked_example() -> None:
    a = np.array([[0.1, 0.2], [0.3, 0.4]])  # attributes (0, 1): projection on 1 = [0.4, 0.6]
    b = np.array([[0.5, 0.1], [0.2, 0.2]])  # attributes (1, 2): projection on 1 = [0.6, 0.4]
    out = make_consistent({(0, 1): a, (1, 2): b}, (2, 2, 2), nonnegative=False)
    # common value [0.5, 0.5]; each marginal moves by half the difference per cell
    np.testing.assert_allclose(out[(0, 1)], [[0.15, 0.15], [0.35, 0.35]], atol=1e-15)
    np.testing.assert_allclose(out[(1, 2)], [[0.45, 0.05], [0.25, 0.25]], atol=1e-15)
    # inverse-variance weights: variance 1 vs 3 gives weights 3/4 and 1/4 on the projections
    out = make_consistent({(0, 1): a, (1, 2): b}, (2, 2, 2), {(0, 1): 1.0, (1, 2): 3.0}, nonnegative=False)
    np.testing.assert_allclose(project(out[(0, 1)], (0, 1), (1,)), [0.45, 0.55], atol=1e-15)
    np.testing.assert_allclose(project(out[(1, 2)], (1, 2), (1,)), [0.45, 0.55], atol=1e-15)


def test_make_consistent_weights_by_cells_per_projected_cell() -> None:
    # a 1-way and a 2-way marginal of attribute 0: the 2-way projection sums 3 cells, so with
    # equal per-cell variances its weight is 1/3 of the 1-way one: common value (3 x + y) / 4
    one = np.array([0.2, 0.8])
    two = np.array([[0.2, 0.1, 0.1], [0.2, 0.2, 0.2]])  # projection [0.4, 0.6]
    out = make_consistent({(0,): one, (0, 1): two}, (2, 3), nonnegative=False)
    np.testing.assert_allclose(out[(0,)], [0.25, 0.75], atol=1e-15)
    np.testing.assert_allclose(project(out[(0, 1)], (0, 1), (0,)), [0.25, 0.75], atol=1e-15)


def noisy_family(rng: np.random.Generator, sizes: tuple[int, ...], k: int, noise: float):
    joint = rng.dirichlet(np.full(math.prod(sizes), 0.5)).reshape(sizes)
    keys = list(itertools.combinations(range(len(sizes)), k))
    exact = margins_of(joint, keys)
    noisy = {key: t + rng.normal(0, noise, t.shape) for key, t in exact.items()}
    noisy = {key: t - (t.sum() - 1.0) / t.size for key, t in noisy.items()}  # eq. (2) estimates sum to 1
    return exact, noisy


@pytest.mark.parametrize("k", [2, 3])
def test_make_consistent_agrees_on_every_common_subset_and_is_nonnegative(rng: np.random.Generator, k: int) -> None:
    sizes = (2, 3, 4, 2, 5)
    for _ in range(5):
        _, noisy = noisy_family(rng, sizes, k, 0.05)
        assert min(float(t.min()) for t in noisy.values()) < 0  # the test has negatives to remove
        raw = make_consistent(noisy, sizes, nonnegative=False)
        assert_consistent(raw)
        out = make_consistent(noisy, sizes)
        assert_consistent(out)
        assert min(float(t.min()) for t in out.values()) >= 0.0
        for t in out.values():
            assert t.sum() == pytest.approx(1.0, abs=1e-12)


def test_make_consistent_keeps_consistent_marginals(rng: np.random.Generator) -> None:
    sizes = (3, 2, 4, 2)
    joint = rng.dirichlet(np.ones(48)).reshape(sizes)
    exact = margins_of(joint, [(0, 1), (1, 2, 3), (0, 3), (2,)])
    out = make_consistent(exact, sizes, {k: float(i + 1) for i, k in enumerate(exact)})
    for key, t in exact.items():
        np.testing.assert_allclose(out[key], t, rtol=0, atol=1e-15)


def test_make_consistent_reduces_the_error_of_noisy_marginals(rng: np.random.Generator) -> None:
    sizes = (3, 3, 3, 3)
    gains = []
    for _ in range(20):
        exact, noisy = noisy_family(rng, sizes, 2, 0.01)
        out = make_consistent(noisy, sizes, nonnegative=False)
        before = sum(float(np.abs(noisy[k] - exact[k]).sum()) for k in exact)
        after = sum(float(np.abs(out[k] - exact[k]).sum()) for k in exact)
        gains.append(before - after)
    assert np.mean(gains) > 0  # averaging the shared 1-way margins removes noise


def test_make_consistent_beats_norm_sub_alone_on_noisy_marginals(rng: np.random.Generator) -> None:
    """Consistency pools the shared 1-way margins of six pair marginals; with enough rounds
    the final uniform mix is negligible, so the result is closer to the truth than Norm-Sub
    of each marginal on its own."""
    sizes = (3, 4, 5, 3)
    gains = []
    for _ in range(20):
        exact, noisy = noisy_family(rng, sizes, 2, 0.03)
        alone = sum(float(np.abs(norm_sub(noisy[k]) - exact[k]).sum()) for k in exact)
        out = make_consistent(noisy, sizes)
        error = sum(float(np.abs(out[k] - exact[k]).sum()) for k in exact)
        gains.append(alone - error)
    assert np.mean(gains) > 3 * np.std(gains) / math.sqrt(len(gains))


def test_make_consistent_mixes_with_uniform_when_rounds_run_out(rng: np.random.Generator) -> None:
    sizes = (3, 4, 2)
    _, noisy = noisy_family(rng, sizes, 2, 0.08)
    raw = make_consistent(noisy, sizes, nonnegative=False)
    assert min(float(t.min()) for t in raw.values()) < 0  # negatives left for the mix to remove
    out = make_consistent(noisy, sizes, rounds=0)
    assert_consistent(out, atol=1e-12)
    assert min(float(t.min()) for t in out.values()) == pytest.approx(0.0, abs=1e-15)  # the smallest mix
    t = float(np.max((raw[(0, 1)] - out[(0, 1)]) / (raw[(0, 1)] - 1 / 12)))  # the one mixing weight
    for key, table in raw.items():
        np.testing.assert_allclose(out[key], np.maximum((1 - t) * table + t / table.size, 0), atol=1e-15)


def test_make_consistent_refuses_bad_input() -> None:
    a = np.full((2, 2), 0.25)
    with pytest.raises(ConfigurationError, match=r"marginals\[\(0, 1\)\] must have shape \(2, 3\)"):
        make_consistent({(0, 1): a}, (2, 3))
    with pytest.raises(ConfigurationError, match=r"a key of marginals must be a tuple of strictly ascending attribute indices in \[0, 2\), got \(1, 0\)"):
        make_consistent({(1, 0): a}, (2, 2))
    with pytest.raises(ConfigurationError, match=r"variances must have one entry per marginal"):
        make_consistent({(0, 1): a}, (2, 2), {(0,): 1.0})
    with pytest.raises(ConfigurationError, match=r"variances\[\(0, 1\)\] must be a finite number > 0, got -1"):
        make_consistent({(0, 1): a}, (2, 2), {(0, 1): -1})
    with pytest.raises(ConfigurationError, match=r"rounds must be an integer >= 0, got -1"):
        make_consistent({(0, 1): a}, (2, 2), rounds=-1)
    with pytest.raises(ConfigurationError, match=r"tol must be a finite number > 0, got 0"):
        make_consistent({(0, 1): a}, (2, 2), tol=0)


# --------------------------------------------------------------------------- maximum entropy


def chain(rng: np.random.Generator, sizes: tuple[int, int, int]) -> np.ndarray:
    """p(x0) p(x1 | x0) p(x2 | x1): decomposable, X0 ⊥ X2 | X1."""
    p0 = rng.dirichlet(np.ones(sizes[0]))
    p10 = rng.dirichlet(np.ones(sizes[1]), size=sizes[0])
    p21 = rng.dirichlet(np.ones(sizes[2]), size=sizes[1])
    joint: np.ndarray = p0[:, None, None] * p10[:, :, None] * p21[None, :, :]
    return joint


def test_maxent_recovers_a_product_from_its_one_way_margins(rng: np.random.Generator) -> None:
    parts = [rng.dirichlet(np.ones(s)) for s in (3, 2, 4)]
    joint = np.einsum("a,b,c->abc", *parts)
    result = maxent_joint(margins_of(joint, [(0,), (1,), (2,)]), (3, 2, 4), tol=1e-12)
    assert result.converged and result.iterations <= 2  # one sweep fits, the next confirms
    np.testing.assert_allclose(result.table, joint, rtol=0, atol=1e-15)


def test_maxent_recovers_a_decomposable_model(rng: np.random.Generator) -> None:
    sizes = (3, 4, 2)
    joint = chain(rng, sizes)
    exact = maxent_joint(margins_of(joint, [(0, 1), (1, 2)]), sizes, tol=1e-13)
    assert exact.converged and exact.iterations <= 2  # decomposable: one sweep fits, one confirms
    np.testing.assert_allclose(exact.table, joint, rtol=0, atol=1e-14)
    # with every pair released the truth is still the log-linear (pairwise) maximum
    every = maxent_joint(margins_of(joint, [(0, 1), (0, 2), (1, 2)]), sizes, tol=1e-12, max_iter=5000)
    assert every.converged and every.constraints == ((0, 1), (0, 2), (1, 2))
    np.testing.assert_allclose(every.table, joint, rtol=0, atol=1e-10)


def test_maxent_fits_the_margins_and_has_maximal_entropy(rng: np.random.Generator) -> None:
    sizes = (2, 3, 2)
    joint = rng.dirichlet(np.ones(12)).reshape(sizes)  # has a 3-way interaction
    keys = [(0, 1), (0, 2), (1, 2)]
    result = maxent_joint(margins_of(joint, keys), sizes, tol=1e-12, max_iter=10_000)
    assert result.converged and result.max_error <= 1e-12
    for key, m in margins_of(joint, keys).items():
        np.testing.assert_allclose(project(result.table, (0, 1, 2), key), m, rtol=0, atol=1e-12)
    q = result.table
    assert entropy(q) > entropy(joint) + 1e-6  # the truth is feasible, with less entropy
    # directions that keep every 2-way margin: u_a v_b w_c with u, w = (1, -1) and Σ v = 0
    for v in ([1.0, -1.0, 0.0], [1.0, 0.0, -1.0], [1.0, -2.0, 1.0]):
        z = np.einsum("a,b,c->abc", [1.0, -1.0], v, [1.0, -1.0])
        for key in keys:
            assert np.allclose(project(z, (0, 1, 2), key), 0.0)
        for t in (1e-3, -1e-3):
            assert (q + t * z).min() > 0 and entropy(q + t * z) < entropy(q)


def test_maxent_marginal_uses_the_projections_onto_the_target(rng: np.random.Generator) -> None:
    sizes = (2, 3, 4, 2)
    joint = rng.dirichlet(np.ones(48)).reshape(sizes)
    margs = margins_of(joint, [(0, 1), (1, 2), (2, 3)])
    result = maxent_marginal(margs, sizes, (0, 2))
    assert result.constraints == ((0,), (2,)) and result.attrs == (0, 2)
    np.testing.assert_allclose(result.table, np.outer(joint.sum(axis=(1, 2, 3)), joint.sum(axis=(0, 1, 3))),
                               rtol=0, atol=1e-15)
    # (1, 2) is released whole: the target's max-ent table is that marginal
    whole = maxent_marginal(margs, sizes, (1, 2))
    np.testing.assert_allclose(whole.table, margs[(1, 2)], rtol=0, atol=1e-15)
    # nothing released on the target: uniform
    assert np.allclose(maxent_marginal({(0, 1): margs[(0, 1)]}, sizes, (2, 3)).table, 1 / 8)


def test_maxent_reports_no_convergence_for_inconsistent_margins() -> None:
    a = np.array([[0.5, 0.0], [0.0, 0.5]])
    b = np.array([[0.0, 0.5], [0.5, 0.0]])
    c = np.array([[0.5, 0.0], [0.0, 0.5]])  # x0 = x1, x1 != x2, x0 = x2: infeasible
    result = maxent_joint({(0, 1): a, (1, 2): b, (0, 2): c}, (2, 2, 2), max_iter=50)
    assert not result.converged and result.iterations == 50 and result.max_error > 0.1


def test_maxent_refuses_bad_input() -> None:
    with pytest.raises(ConfigurationError, match=r"marginals\[\(0, 1\)\] projected onto \(0, 1\) has a negative entry"):
        maxent_joint({(0, 1): np.array([[0.6, -0.1], [0.3, 0.2]])}, (2, 2))
    with pytest.raises(ConfigurationError, match=r"target must be a tuple of strictly ascending attribute indices in \[0, 2\)"):
        maxent_marginal({(0, 1): np.full((2, 2), 0.25)}, (2, 2), (0, 2))
    with pytest.raises(DomainTooLargeError, match=r"maximum-entropy joint of sizes \(2, 2\) needs 4 cells, more than max_cells=3"):
        maxent_joint({(0, 1): np.full((2, 2), 0.25)}, (2, 2), max_cells=3)
    with pytest.raises(ConfigurationError, match=r"tol must be a finite number > 0, got 0"):
        maxent_joint({(0, 1): np.full((2, 2), 0.25)}, (2, 2), tol=0)


@pytest.mark.slow
def test_maxent_joint_on_adult_pairs(adult_path) -> None:
    """The 28 two-way margins of UCI Adult (8 attributes, 1,814,400 cells)."""
    data = load_adult(adult_path)  # the shipped .gz in a bare clone, or the plain file beside it
    joint = joint_tally(data.codes, data.sizes).astype(float)
    joint /= joint.sum()
    keys = list(itertools.combinations(range(8), 2))
    margs = margins_of(joint, keys)
    result = maxent_joint(margs, data.sizes, tol=1e-3, max_iter=200)
    assert result.converged and result.max_error <= 1e-3
    assert result.table.shape == tuple(data.sizes) and result.table.sum() == pytest.approx(1.0)
    for key in keys:
        fitted = project(result.table, tuple(range(8)), key)
        assert np.abs(fitted - margs[key]).max() <= 1e-3


def test_ipf_projection_by_runs_equals_numpy_sums(rng: np.random.Generator) -> None:
    """The run-wise projection used by IPF against ``sum(axis=...)`` for every subset of
    axes (leading, trailing and middle runs, short and long)."""
    from mprr.marginals import _Fit

    sizes = (3, 1, 2, 40, 2, 5)
    q = rng.random(sizes)
    for r in range(1, len(sizes) + 1):
        for keep in itertools.combinations(range(len(sizes)), r):
            drop = tuple(i for i in range(len(sizes)) if i not in keep)
            fit = _Fit.build(sizes, keep, np.ones([sizes[a] for a in keep]))
            np.testing.assert_allclose(fit.project(q), q.sum(axis=drop).ravel(), rtol=1e-13)
