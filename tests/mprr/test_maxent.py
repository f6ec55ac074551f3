"""Tests of mprr.maxent: maximum-entropy reconstruction (IPF) of a marginal or the joint."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mprr.domain import joint_tally
from mprr.errors import ConfigurationError, DomainTooLargeError
from mprr.marginals import project
from mprr.maxent import maxent_joint, maxent_marginal
from scenarios.datasets import load_adult
from tests.mprr.test_marginals import margins_of


def entropy(p: np.ndarray) -> float:
    q = p[p > 0]
    return float(-np.sum(q * np.log(q)))


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
    from mprr.maxent import _Fit

    sizes = (3, 1, 2, 40, 2, 5)
    q = rng.random(sizes)
    for r in range(1, len(sizes) + 1):
        for keep in itertools.combinations(range(len(sizes)), r):
            drop = tuple(i for i in range(len(sizes)) if i not in keep)
            fit = _Fit.build(sizes, keep, np.ones([sizes[a] for a in keep]))
            np.testing.assert_allclose(fit.project(q), q.sum(axis=drop).ravel(), rtol=1e-13)
