"""Tests for parties.wire.requests: matrix specifications and the release request."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError, MessageError
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import cluster_optimal, grr, keep_or_uniform, kron, lambda_randomization
from mprr.protocols.steps import FAMILIES, MatrixSpec
from parties.wire.codec import decode, encode
from parties.wire.requests import ReleaseRequest


@pytest.mark.parametrize(
    ("spec", "sizes", "expected"),
    [
        (MatrixSpec.keep_or_uniform(0.7), (5,), keep_or_uniform(5, 0.7)),
        (MatrixSpec.keep_or_uniform(0.3), (2, 3), keep_or_uniform(6, 0.3)),
        (MatrixSpec.grr(1.5), (4,), grr(4, 1.5)),
        (MatrixSpec.cluster_optimal(2.25), (3, 4), cluster_optimal((3, 4), 2.25)),
    ],
)
def test_specs_build_the_fast_path_matrices_bit_for_bit(spec, sizes, expected) -> None:
    built = spec.build(sizes)
    assert np.array_equal(built.values, expected.values)
    assert np.array_equal(built.cdf, expected.cdf)


def test_lambda_spec_is_the_kronecker_product_of_lambda_matrices() -> None:
    built = MatrixSpec.lambda_kron([0.5, 0.8]).build((3, 2))
    assert isinstance(built, KroneckerMatrix)
    expected = kron(lambda_randomization(3, 0.5), lambda_randomization(2, 0.8))
    for a, b in zip(built.factors, expected.factors):
        assert np.array_equal(a.values, b.values)
    assert built.epsilon == pytest.approx(expected.epsilon)


def test_dense_spec_round_trips_an_explicit_matrix() -> None:
    P = keep_or_uniform(3, 0.4)
    spec = MatrixSpec.dense(P)
    assert spec.family == "dense" and len(spec.params) == 9
    assert np.array_equal(spec.build((3,)).values, P.values)


@pytest.mark.parametrize(
    ("spec", "sizes", "match"),
    [
        (MatrixSpec("keep-or-uniform", (1.5,)), (3,), "p"),
        (MatrixSpec("grr", (-1.0,)), (3,), "epsilon"),
        (MatrixSpec("grr", (1.0, 2.0)), (3,), "exactly one parameter"),
        (MatrixSpec("lambda-kron", (0.5,)), (3, 2), "one λ per attribute"),
        (MatrixSpec("dense", (1.0, 0.0, 0.0)), (2,), "needs 4 entries"),
        (MatrixSpec("dense", (0.5, 0.6, 0.5, 0.5)), (2,), "sum"),
    ],
)
def test_spec_build_rejects_bad_parameters(spec, sizes, match) -> None:
    with pytest.raises(ConfigurationError, match=match):
        spec.build(sizes)


def test_spec_rejects_unknown_family_and_non_finite_params() -> None:
    with pytest.raises(ConfigurationError, match="family must be one of"):
        MatrixSpec("laplace", (1.0,))
    with pytest.raises(ConfigurationError, match="finite"):
        MatrixSpec("grr", (math.inf,))
    assert set(FAMILIES) == {"keep-or-uniform", "grr", "cluster-optimal", "lambda-kron", "dense"}


def test_release_request_codec_round_trip() -> None:
    specs = [MatrixSpec.keep_or_uniform(0.7), MatrixSpec.cluster_optimal(3.5)]
    req = ReleaseRequest.build(9, "clusters", [(0,), (1, 2)], specs, plan=[(0,), (1, 2), (3,)])
    back = decode(encode(req))
    assert back == req
    assert back.specs == tuple(specs)
    assert back.plan == ((0,), (1, 2), (3,)) and back.units == ((0,), (1, 2))


def test_release_request_plan_defaults_to_units() -> None:
    req = ReleaseRequest.build(1, "attributes", [(0,), (1,)], [MatrixSpec.grr(1.0)] * 2)
    assert req.plan == req.units


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"request_id": -1}, "request_id"),
        ({"phase": ""}, "phase"),
        ({"plan": ()}, "plan must not be empty"),
        ({"units": ((),)}, "empty group"),
        ({"units": ((1, 1),)}, "repeat"),
        ({"families": ("grr", "grr")}, r"ReleaseRequest needs 1 families and params \(1 units\), got 2 and 1"),
        ({"families": ("nope",)}, "families"),
        ({"params": ((math.nan,),)}, "finite"),
    ],
)
def test_release_request_structural_validation(kwargs, match) -> None:
    base = dict(request_id=1, phase="p", plan=((0,),), units=((0,),), families=("grr",), params=((1.0,),))
    base.update(kwargs)
    with pytest.raises(MessageError, match=match):
        ReleaseRequest(**base)


def test_release_request_does_not_judge_the_plan() -> None:
    # A unit outside the plan is a privacy decision of the party, not a malformed message.
    req = ReleaseRequest(1, "p", ((0,),), ((1, 2),), ("grr",), ((1.0,),))
    assert decode(encode(req)) == req
