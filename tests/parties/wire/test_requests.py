"""Tests for parties.wire.requests: matrix specifications and the release request."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError, MessageError
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import cluster_optimal, grr, keep_or_uniform, kron, lambda_randomization
from mprr.matrix_families import MATRIX_FAMILIES
from mprr.protocols.steps import MatrixSpec, OracleSpec, Report
from parties.wire.codec import decode, encode
from parties.wire.messages import OracleReport
from parties.wire.requests import ReleaseRequest, ReportRequest


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
        (MatrixSpec("grr", (1.0, 2.0)), (3,), r"a grr matrix over a unit of sizes \(3,\) takes 1 parameter\(s\) \(epsilon\), got 2"),
        (MatrixSpec("lambda-kron", (0.5,)), (3, 2), r"takes 2 parameter\(s\) \(lambda of each attribute\), got 1"),
        (MatrixSpec("dense", (1.0, 0.0, 0.0)), (2,), r"a dense matrix over a unit of sizes \(2,\) takes 4 parameter\(s\)"),
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
    assert set(MATRIX_FAMILIES) == {"keep-or-uniform", "grr", "cluster-optimal", "lambda-kron", "dense"}


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
        # the first bad group (or family, or parameters) among good ones is named
        ({"plan": ((0, 1), (2, -1))}, r"ReleaseRequest\.plan must hold attribute indices >= 0, got \(2, -1\)"),
        ({"plan": ((0,), (3, 1, 3))}, r"ReleaseRequest\.plan groups must not repeat an attribute, got \(3, 1, 3\)"),
        ({"plan": ((0,), ())}, r"ReleaseRequest\.plan must not contain an empty group, got \(\(0,\), \(\)\)"),
        ({"units": ((0,), (1,)), "families": ("grr", "nope"), "params": ((1.0,), (1.0,))},
         r"ReleaseRequest\.families must be in \[.*\], got 'nope'"),
        ({"units": ((0,), (1,)), "families": ("grr", "grr"), "params": ((1.0,), (1.0, math.inf))},
         r"ReleaseRequest\.params must be finite, got \(1\.0, inf\)"),
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


# ---------------------------------------------------------------------- report requests and replies
def test_a_report_request_rebuilds_its_step_with_the_same_probabilities() -> None:
    # weights whose normalised values do not sum to exactly 1.0: normalising twice would move them
    weights = (0.43788759365057206, 0.49581224138185065, 0.23308445025757263, 0.2308665415409843)
    once = tuple(w / math.fsum(weights) for w in weights)
    assert tuple(w / math.fsum(once) for w in once) != once
    step = Report("clusters", ((0,), (1, 2), (3,), (4, 5)), (OracleSpec("grr", 1.0), OracleSpec("oue", 2.0),
                                                            OracleSpec("olh", 0.5), OracleSpec("grr", 3.0)),
                  "sampled", weights, 0.25, ("discovery",))
    back = decode(encode(ReportRequest.build(9, step)))
    assert isinstance(back, ReportRequest) and back.request_id == 9
    rebuilt = back.step
    assert (rebuilt.units, rebuilt.oracles, rebuilt.assign, rebuilt.abstain, rebuilt.exclude) == (
        step.units, step.oracles, step.assign, step.abstain, step.exclude)
    assert rebuilt.probabilities == step.probabilities  # bit for bit: the same draws pick the same units
    assert ReportRequest.build(1, Report("p", ((0,),), (OracleSpec("grr", 1.0),))).weights == ()


def test_report_request_size_is_its_fields() -> None:
    # header 5 + id 8 + phase 4+1 + units 4+(4+8) + families 4+(4+3) + epsilons 4+8 + assign 4+5
    # + weights 4 + abstain 8 + exclude 4
    request = ReportRequest(1, "p", ((0,),), ("grr",), (1.0,), "every")
    assert len(encode(request)) == 5 + 8 + 5 + 16 + 11 + 12 + 9 + 4 + 8 + 4


def test_oracle_report_size_is_31_bytes_plus_8_per_report() -> None:
    for k in (0, 1, 8):
        assert len(encode(OracleReport(1, 0 if k == 1 else -1, np.zeros(k, dtype=np.int64)))) == 31 + 8 * k


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(units=()), "units must not be empty"),
        (dict(units=((0, 0),)), "must not repeat"),
        (dict(families=("grr", "grr")), "needs 1 families and epsilons"),
        (dict(families=("dense",)), "families must be in"),
        (dict(epsilons=(math.nan,)), "epsilons must be finite"),
        (dict(assign="all"), "assign must be in"),
        (dict(weights=(1.0, 2.0)), "one weight per unit"),
        (dict(weights=(-1.0,)), "weights must be finite and >= 0"),
        (dict(abstain=1.0), r"abstain must be in \[0, 1\)"),
        (dict(exclude=("",)), "non-empty phase names"),
        (dict(phase=""), "phase must not be empty"),
    ],
)
def test_report_request_rejects_what_it_does_not_expect(kwargs, match) -> None:
    fields = dict(request_id=1, phase="p", units=((0,),), families=("grr",), epsilons=(1.0,), assign="sampled")
    with pytest.raises(MessageError, match=match):
        ReportRequest(**{**fields, **kwargs})


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((1, -2, [1]), "unit must be >= -1"),
        ((1, 0, [1, 2]), "exactly one report for the drawn unit 0"),
        ((1, 0, []), "exactly one report"),
        ((1, -1, [-3]), "reports must be >= 0"),
        ((-1, -1, []), "request_id must be >= 0"),
    ],
)
def test_oracle_report_rejects_what_it_does_not_expect(args, match) -> None:
    with pytest.raises(MessageError, match=match):
        OracleReport(*args)
