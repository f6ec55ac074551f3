"""Matrix families as registered objects (mprr.matrix_families): the shipped ones rebuild the
papers' constructors exactly; a family of one's own runs by name on both drivers."""

from __future__ import annotations

import math
from collections.abc import Iterator

import numpy as np
import pytest

from mprr.data import Schema
from mprr.errors import ConfigurationError
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import circulant, cluster_optimal, grr, keep_or_uniform, kron, lambda_randomization
from mprr.matrix_families import MATRIX_FAMILIES, MatrixFamily, register_matrix_family
from mprr.protocols.estimate import product_estimate
from mprr.protocols.result import release_result
from mprr.protocols.local import run_local
from mprr.protocols.steps import MatrixSpec, Program, Release, singletons
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters


def test_the_shipped_families_rebuild_the_constructors() -> None:
    assert list(MATRIX_FAMILIES) == ["keep-or-uniform", "grr", "cluster-optimal", "lambda-kron", "dense"]
    cases = [
        ("keep-or-uniform", (0.7,), (2, 3), keep_or_uniform(6, 0.7)),
        ("grr", (1.5,), (4,), grr(4, 1.5)),
        ("cluster-optimal", (2.0,), (2, 3), cluster_optimal((2, 3), 2.0)),
        ("lambda-kron", (0.5, 0.8), (2, 3), kron(lambda_randomization(2, 0.5), lambda_randomization(3, 0.8))),
    ]
    for name, params, sizes, expected in cases:
        built = MATRIX_FAMILIES.lookup(name).build(params, sizes)
        assert type(built) is type(expected)
        np.testing.assert_array_equal(_dense(built), _dense(expected))
    values = [[0.9, 0.1], [0.2, 0.8]]
    dense = MATRIX_FAMILIES.lookup("dense").build([0.9, 0.1, 0.2, 0.8], (2,))
    np.testing.assert_array_equal(dense.values, values)  # type: ignore[union-attr]
    assert MATRIX_FAMILIES.lookup("keep_or_uniform").name == "keep-or-uniform"  # the constructor's spelling
    assert MatrixSpec("keep_or_uniform", (0.5,)).family == "keep-or-uniform"  # specs carry the canonical name


def _dense(matrix: object) -> np.ndarray:
    return matrix.todense() if isinstance(matrix, KroneckerMatrix) else np.asarray(matrix)


@pytest.mark.parametrize(
    ("name", "params", "sizes", "match"),
    [
        ("grr", (1.0, 2.0), (3,), r"a grr matrix over a unit of sizes \(3,\) takes 1 parameter\(s\) \(epsilon\), got 2"),
        ("lambda-kron", (0.5,), (3, 2), r"lambda-kron matrix over a unit of sizes \(3, 2\) takes 2 parameter\(s\)"),
        ("dense", (1.0, 0.0, 0.0), (2,), r"a dense matrix over a unit of sizes \(2,\) takes 4 parameter\(s\)"),
        ("keep-or-uniform", (math.nan,), (2,), r"params of a keep-or-uniform matrix must be finite, got \(nan,\)"),
        ("keep-or-uniform", (1.5,), (2,), r"p must be"),
    ],
)
def test_bad_parameters_are_refused_naming_the_family(name: str, params: tuple[float, ...], sizes: tuple[int, ...],
                                                      match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        MATRIX_FAMILIES.lookup(name).build(params, sizes)


@pytest.fixture()
def rotation() -> Iterator[MatrixFamily]:
    """A family of one's own: the circulant matrix keeping a value with probability p and moving
    it one step on (mod R) otherwise (bistochastic paper eq. (6))."""
    family = register_matrix_family(MatrixFamily(
        "rotate", ("p",), lambda sizes: 1,
        lambda v, s: circulant([v[0], 1.0 - v[0]] + [0.0] * (math.prod(s) - 2))))
    yield family
    MATRIX_FAMILIES.unregister("rotate")


def rotate_steps(schema: Schema, *, p: float) -> Program:
    """Release every attribute through the ``rotate`` family; the raw eq. (2) estimates."""
    got = yield Release("attributes", singletons(schema.m), (MatrixSpec("rotate", (p,)),) * schema.m)
    return release_result("rotate", n=got.n, parameters={"p": p}, schema=schema,
                          estimate=product_estimate(got.data, schema.sizes, "none"), releases=(got.data,),
                          postprocessing="none", clusters=got.data.units)


def test_a_family_of_ones_own_runs_by_name_on_the_fast_path_and_the_actors(rotation: MatrixFamily) -> None:
    import asyncio

    from parties.simulate import simulate_async
    from parties.wire.requests import ReleaseRequest

    assert rotation.build((0.75,), (3,)).values[0].tolist() == [0.75, 0.25, 0.0]
    with pytest.raises(ConfigurationError, match=r"matrix family 'rotate' is already registered"):
        register_matrix_family(MatrixFamily("rotate", ("p",), lambda s: 1, lambda v, s: grr(2, 1.0)))
    request = ReleaseRequest.build(1, "attributes", [(0,)], [MatrixSpec("rotate", (0.75,))])
    request.validate()  # a party accepts the family's name on the wire
    data = planted_clusters(2000, rng=np.random.default_rng(4), sizes=(3, 4), clusters=()).dataset
    fast = run_local(rotate_steps, data, rng=PartyStreams(5, data.n), p=0.75)
    sim = asyncio.run(simulate_async(data, rotate_steps, seed=5, p=0.75))
    np.testing.assert_array_equal(fast.releases[0].codes, sim.result.releases[0].codes)  # same seed, same release
    assert fast.epsilon() == sim.result.epsilon() == math.inf  # a column mixes 0 and 0.25: ε = ∞ (eq. 4)
    for j, k in enumerate(data.sizes):
        truth = np.bincount(data.codes[:, j], minlength=k) / data.n
        estimate = fast.estimate.marginal([j])
        # eq. (2): π̂ = A λ̂ with A = (Pᵀ)⁻¹; each λ̂_v has sd ≤ 1/(2√n), so sd(π̂_u) ≤ Σ_v |A[u, v]| / (2√n)
        A = np.linalg.inv(rotation.build((0.75,), (k,)).values.T)  # type: ignore[union-attr]
        sd = np.abs(A).sum(axis=1) / (2 * math.sqrt(data.n))
        assert np.all(np.abs(estimate - truth) < 4 * sd)
