"""Tests of mprr.distributions: dense, product and weighted-sample distributions, sampling."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.distributions import (
    DenseDistribution,
    JointDistribution,
    ProductDistribution,
    WeightedSample,
    sample,
)
from mprr.errors import ConfigurationError, DataError, DomainTooLargeError

SIZES = (2, 3, 4, 2)


def _product() -> ProductDistribution:
    """Clusters (2, 0) and (1,) and (3,): factor axes follow the cluster tuple order."""
    f20 = np.arange(1, 9, dtype=float).reshape(4, 2)
    f20 /= f20.sum()
    f1 = np.array([0.5, 0.3, 0.2])
    f3 = np.array([0.9, 0.1])
    return ProductDistribution(((2, 0), (1,), (3,)), (f20, f1, f3), SIZES)


def _dense_of_product() -> np.ndarray:
    p = _product()
    f20, f1, f3 = p.factors
    # joint[x0, x1, x2, x3] = f20[x2, x0] * f1[x1] * f3[x3]
    return np.einsum("ca,b,d->abcd", f20, f1, f3)


def test_protocol_is_satisfied() -> None:
    dense = DenseDistribution(_dense_of_product())
    ws = WeightedSample(np.array([[0, 1, 2, 1]]), np.array([1.0]), SIZES)
    for dist in (dense, _product(), ws):
        assert isinstance(dist, JointDistribution)
        assert dist.sizes == SIZES


@pytest.mark.parametrize("axes", [(0,), (3, 1), (2, 0), (0, 2), (1, 3, 2), (3, 2, 1, 0), (0, 1, 2, 3)])
def test_product_marginal_equals_dense(axes: tuple[int, ...]) -> None:
    p, joint = _product(), _dense_of_product()
    dense = DenseDistribution(joint)
    expected = np.transpose(
        joint.sum(axis=tuple(a for a in range(4) if a not in axes)),
        np.argsort(np.argsort(axes)),
    )
    np.testing.assert_allclose(dense.marginal(axes), expected, atol=1e-15)
    np.testing.assert_allclose(p.marginal(axes), expected, atol=1e-15)
    assert p.marginal(axes).shape == tuple(SIZES[a] for a in axes)


def test_marginal_exact_small_example() -> None:
    t = np.array([[0.1, 0.2, 0.0], [0.3, 0.0, 0.4]])
    d = DenseDistribution(t)
    np.testing.assert_allclose(d.marginal((0,)), [0.3, 0.7])
    np.testing.assert_allclose(d.marginal((1,)), [0.4, 0.2, 0.4])
    np.testing.assert_allclose(d.marginal((1, 0)), t.T)
    assert d.probability(np.array([[0, 1], [1, 2]])).tolist() == [0.2, 0.4]
    mask = np.array([[True, False, False], [False, False, True]])
    assert d.probability(mask) == pytest.approx(0.5)


def test_product_probability_cells_and_mask() -> None:
    p, joint = _product(), _dense_of_product()
    cells = np.array([[0, 0, 0, 0], [1, 2, 3, 1], [1, 1, 2, 0]])
    np.testing.assert_allclose(p.probability(cells), joint[tuple(cells.T)])
    mask = joint > 0.02
    assert p.probability(mask) == pytest.approx(joint[mask].sum())
    np.testing.assert_allclose(p.todense(), joint)
    with pytest.raises(DomainTooLargeError, match=r"a dense tensor of sizes \(2, 3, 4, 2\) needs 48 cells, more than max_cells=10"):
        p.todense(max_cells=10)


def test_product_never_materializes_large_domain() -> None:
    sizes = (50,) * 6  # 1.56e10 cells
    factors = tuple(np.full(50, 1 / 50) for _ in sizes)
    p = ProductDistribution(tuple((i,) for i in range(6)), factors, sizes)
    m = p.marginal((5, 0))
    assert m.shape == (50, 50)
    np.testing.assert_allclose(m, 1 / 2500)
    assert p.probability(np.zeros((1, 6), dtype=int))[0] == pytest.approx(50.0**-6)


def test_weighted_sample_marginals_and_probability() -> None:
    codes = np.array([[0, 1, 2, 1], [1, 0, 0, 0], [0, 1, 2, 1], [1, 2, 3, 0]])
    w = np.array([1.0, 2.0, 3.0, 0.0])
    ws = WeightedSample(codes, w, SIZES)
    np.testing.assert_allclose(ws.weights, [1 / 6, 2 / 6, 3 / 6, 0])
    np.testing.assert_allclose(ws.marginal((0,)), [4 / 6, 2 / 6])
    np.testing.assert_allclose(ws.marginal((3, 0)), [[0, 2 / 6], [4 / 6, 0]])
    cells = np.array([[0, 1, 2, 1], [1, 2, 3, 0], [1, 1, 1, 1]])
    np.testing.assert_allclose(ws.probability(cells), [4 / 6, 0, 0])
    dense = ws.todense()
    mask = np.zeros(SIZES, dtype=bool)
    mask[1] = True
    assert ws.probability(mask) == pytest.approx(dense[mask].sum()) == pytest.approx(2 / 6)
    np.testing.assert_allclose(DenseDistribution(dense).marginal((2, 1)), ws.marginal((2, 1)))


@pytest.mark.parametrize(
    ("tensor", "kw", "match"),
    [
        (np.array([0.5, 0.6]), {}, "must sum to 1"),
        (np.array([1.2, -0.2]), {}, "must be non-negative"),
        (np.array([np.nan, 1.0]), {}, "finite"),
        (np.array(1.0), {}, "at least one axis"),
    ],
)
def test_dense_rejects(tensor: np.ndarray, kw: dict, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        DenseDistribution(tensor, **kw)


def test_dense_allow_negative_estimates_cannot_be_sampled(rng: np.random.Generator) -> None:
    d = DenseDistribution(np.array([1.2, -0.2]), allow_negative=True)
    assert d.marginal((0,))[1] == pytest.approx(-0.2)
    with pytest.raises(ConfigurationError, match="negative entries; post-process"):
        sample(d, 3, rng=rng)
    neg = ProductDistribution(((0,), (1,)), (np.array([1.2, -0.2]), np.array([0.5, 0.5])), (2, 2), allow_negative=True)
    np.testing.assert_allclose(neg.marginal((1, 0)), [[0.6, -0.1], [0.6, -0.1]])
    with pytest.raises(ConfigurationError, match="negative entries; post-process"):
        sample(neg, 3, rng=rng)
    with pytest.raises(ConfigurationError, match=r"factor 0 \(cluster \(0,\)\) must be non-negative"):
        ProductDistribution(((0,), (1,)), (np.array([1.2, -0.2]), np.array([0.5, 0.5])), (2, 2))


def test_product_rejects() -> None:
    f = np.array([0.5, 0.5])
    with pytest.raises(ConfigurationError, match="partition the attributes 0..1"):
        ProductDistribution(((0,),), (f,), (2, 2))
    with pytest.raises(ConfigurationError, match="partition"):
        ProductDistribution(((0, 1), (1,)), (np.full((2, 2), 0.25), f), (2, 2))
    with pytest.raises(ConfigurationError, match="one factor per cluster: 2 clusters, 1 factors"):
        ProductDistribution(((0,), (1,)), (f,), (2, 2))
    with pytest.raises(ConfigurationError, match=r"factor 1 \(cluster \(1,\)\) must have shape \(3,\)"):
        ProductDistribution(((0,), (1,)), (f, f), (2, 3))
    with pytest.raises(ConfigurationError, match=r"factor 0 \(cluster \(0,\)\) must sum to 1"):
        ProductDistribution(((0,), (1,)), (np.array([0.5, 0.6]), f), (2, 2))
    with pytest.raises(ConfigurationError, match=r"sizes\[0\] must be an integer >= 1, got 0"):
        ProductDistribution(((0,),), (f,), (0,))


def test_weighted_sample_rejects() -> None:
    with pytest.raises(DataError, match=r"codes must lie in \[0, size\)"):
        WeightedSample(np.array([[2, 0]]), np.ones(1), (2, 2))
    with pytest.raises(DataError, match=r"shape \(n, 2\)"):
        WeightedSample(np.array([[0, 0, 0]]), np.ones(1), (2, 2))
    with pytest.raises(DataError, match="at least one record"):
        WeightedSample(np.zeros((0, 2), dtype=int), np.ones(0), (2, 2))
    with pytest.raises(ConfigurationError, match="positive sum"):
        WeightedSample(np.array([[0, 0]]), np.zeros(1), (2, 2))
    with pytest.raises(ConfigurationError, match=r"weights must have shape \(1,\)"):
        WeightedSample(np.array([[0, 0]]), np.ones(2), (2, 2))


def test_axes_and_probability_argument_errors() -> None:
    p = _product()
    with pytest.raises(ConfigurationError, match=r"axes must be attribute indices in \[0, 4\), got \(4,\)"):
        p.marginal((4,))
    with pytest.raises(ConfigurationError, match="axes must be distinct attribute indices"):
        p.marginal((1, 1))
    with pytest.raises(ConfigurationError, match=r"mask must have the domain shape \(2, 3, 4, 2\)"):
        p.probability(np.zeros((2, 3), dtype=bool))
    with pytest.raises(ConfigurationError, match=r"cells must have codes in \[0, size\)"):
        p.probability(np.array([[0, 3, 0, 0]]))
    with pytest.raises(ConfigurationError, match="boolean mask .* or integer cells"):
        p.probability(np.array([[0.0, 0, 0, 0]]))


def test_sample_reproducible_and_shapes() -> None:
    for dist in (_product(), DenseDistribution(_dense_of_product())):
        a = sample(dist, 100, rng=np.random.default_rng(7))
        b = sample(dist, 100, rng=np.random.default_rng(7))
        assert a.shape == (100, 4) and a.dtype == np.int64
        np.testing.assert_array_equal(a, b)
        assert np.all(a < np.asarray(SIZES))
    assert sample(_product(), 0, rng=np.random.default_rng(0)).shape == (0, 4)
    with pytest.raises(ConfigurationError, match="n must be an integer >= 0, got -1"):
        sample(_product(), -1, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match="rng must be a numpy.random.Generator, got int"):
        sample(_product(), 3, rng=7)  # type: ignore[arg-type]


def test_sample_never_draws_zero_probability_cells(rng: np.random.Generator) -> None:
    t = np.zeros((3, 3))
    t[0, 2] = 0.5
    t[2, 0] = 0.5
    draws = sample(DenseDistribution(t), 2000, rng=rng)
    assert set(map(tuple, draws.tolist())) == {(0, 2), (2, 0)}
    ws = WeightedSample(np.array([[0, 0], [1, 1], [2, 2]]), np.array([0.0, 1.0, 0.0]), (3, 3))
    assert np.all(sample(ws, 500, rng=rng) == 1)


@pytest.mark.parametrize("kind", ["product", "dense", "weighted"])
def test_sample_frequencies_match_distribution(kind: str, rng: np.random.Generator) -> None:
    joint = _dense_of_product()
    if kind == "product":
        dist = _product()
    elif kind == "dense":
        dist = DenseDistribution(joint)
    else:
        cells = np.stack(np.unravel_index(np.arange(joint.size), SIZES), axis=1)
        dist = WeightedSample(cells, joint.ravel() * 7.0, SIZES)
    n = 200_000
    draws = sample(dist, n, rng=rng)
    freq = np.bincount(np.ravel_multi_index(tuple(draws.T), SIZES), minlength=joint.size) / n
    # each cell frequency is binomial: 5 standard errors sqrt(p(1-p)/n) (+ tiny slack for p=0)
    tol = 5 * np.sqrt(joint.ravel() * (1 - joint.ravel()) / n) + 1e-12
    assert np.all(np.abs(freq - joint.ravel()) <= tol)


# --------------------------------------------------------------------------- property test


@st.composite
def _product_and_axes(draw: st.DrawFn) -> tuple[ProductDistribution, tuple[int, ...]]:
    m = draw(st.integers(1, 4))
    sizes = tuple(draw(st.lists(st.integers(1, 3), min_size=m, max_size=m)))
    perm = draw(st.permutations(range(m)))
    cuts = sorted(draw(st.sets(st.integers(1, m - 1), max_size=m - 1))) if m > 1 else []
    bounds = [0, *cuts, m]
    clusters = tuple(tuple(perm[a:b]) for a, b in zip(bounds[:-1], bounds[1:]))
    seed = draw(st.integers(0, 2**32 - 1))
    gen = np.random.default_rng(seed)
    factors = []
    for c in clusters:
        f = gen.random(tuple(sizes[a] for a in c)) + 0.01
        factors.append(f / f.sum())
    k = draw(st.integers(1, m))
    axes = tuple(draw(st.permutations(range(m)))[:k])
    return ProductDistribution(clusters, tuple(factors), sizes), axes


@settings(max_examples=60, deadline=None)
@given(_product_and_axes())
def test_product_marginal_matches_brute_force(case: tuple[ProductDistribution, tuple[int, ...]]) -> None:
    p, axes = case
    joint = np.ones(p.sizes)
    for c, f in zip(p.clusters, p.factors):
        # broadcast factor f (axes in cluster order) onto the full domain
        shape = [1] * p.m
        for a in c:
            shape[a] = p.sizes[a]
        joint = joint * np.transpose(f, np.argsort(c)).reshape(shape)
    assert joint.sum() == pytest.approx(1.0)
    expected = DenseDistribution(joint).marginal(axes)
    np.testing.assert_allclose(p.marginal(axes), expected, atol=1e-14)
