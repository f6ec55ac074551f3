"""Tests of mprr.marginals: projection, Norm-Sub, PriView/CALM consistency."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError, EstimationError
from mprr.marginals import make_consistent, norm_sub, project


def margins_of(joint: np.ndarray, keys: list[tuple[int, ...]]) -> dict[tuple[int, ...], np.ndarray]:
    every = tuple(range(joint.ndim))
    return {k: project(joint, every, k) for k in keys}


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
