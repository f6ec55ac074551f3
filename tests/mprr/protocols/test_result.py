"""Tests for mprr.protocols.result (ProtocolResult)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.protocols import rr_clusters, rr_independent

from tests.mprr.protocols._helpers import planted


def test_phases_matrices_and_privacy_summary() -> None:
    ds = planted(1_000, 1, strength=0.8).dataset
    r = rr_clusters(ds, p=0.5, Tv=100, Td=0.2, dependence="4.3", rng=np.random.default_rng(0))
    assert r.phases == ("dependence", "clusters")
    assert r.n == 1_000 and r.uniforms_per_party == 28 + len(r.clusters)
    assert set(r.matrices) == {"dependence", "clusters"}
    assert len(r.matrices["dependence"]) == 28
    with pytest.raises(ConfigurationError, match=r"phase must be one of \['dependence', 'clusters'\]"):
        r.release("attributes")
    summary = json.loads(json.dumps(r.summary()))["privacy"]  # JSON-friendly
    eps = sum(r.parameters["attribute_epsilons"])
    assert summary["sequential"]["phases"]["clusters"]["epsilon"]["max"] == pytest.approx(eps)
    # each pair matrix's own ε (ε_a + ε_b) split equally; per attribute the largest share
    e = r.parameters["attribute_epsilons"]
    split = sum(max((e[a] + e[b]) / 2 for b in range(8) if b != a) for a in range(8))
    assert summary["unlinkable-pairs"]["phases"]["dependence"]["epsilon"]["max"] == pytest.approx(split)
    assert split >= eps - 1e-9  # at least the paper's "each attribute once"
    assert summary["sequential"]["phases"]["dependence"]["epsilon"]["max"] == pytest.approx(7 * eps)
    assert summary["sequential"]["epsilon"]["max"] == pytest.approx(8 * eps)
    assert summary["sequential"]["parties"] == 1 and not summary["sequential"]["no_dp_guarantee"]
    assert r.summary()["protocol"] == "RR-Clusters"
    # the released data set Y is the cluster release decoded into attribute codes
    assert r.released_records.shape == (1_000, 8)


def test_exact_phase_reports_infinity_as_string() -> None:
    ds = planted(200, 2).dataset
    r = rr_clusters(ds, p=0.5, Tv=50, Td=0.2, dependence="4.2", rng=np.random.default_rng(0))
    assert math.isinf(r.epsilon("parallel"))
    summary = r.summary()["privacy"]
    assert summary["sequential"]["epsilon"]["max"] == "inf" and summary["sequential"]["no_dp_guarantee"]
    assert summary["sequential"]["phases"]["dependence"]["entropy_bits"]["max"] == 0.0  # exact: no entropy


def test_timings_are_left_to_the_caller() -> None:
    r = rr_independent(planted(50, 3).dataset, p=0.5, rng=np.random.default_rng(0))
    assert r.timings == {}
    r.timings["total"] = 0.01
    assert r.timings == {"total": 0.01}
    with pytest.raises(ConfigurationError, match="policy must be one of"):
        r.epsilon("advanced")


# --------------------------------------------------------------------------- to_frame


def _labelled_result():  # type: ignore[no-untyped-def]
    from mprr.data import Attribute, Dataset, Schema
    from mprr.protocols import rr_clusters
    from mprr.streams import PartyStreams

    schema = Schema((Attribute("colour", ("red", "green", "blue")), Attribute("size", ("S", "L")),
                     Attribute("pet", ("cat", "dog"))))
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, 3, 500), rng.integers(0, 2, 500), rng.integers(0, 2, 500)], axis=1)
    codes[:, 2] = codes[:, 1]  # size and pet dependent
    data = Dataset(schema, codes)
    return data, rr_clusters(data, Tv=4, Td=0.2, p=0.8, rng=PartyStreams(7, data.n))


def test_to_frame_joint_and_marginal_with_labels() -> None:
    data, result = _labelled_result()
    joint = result.to_frame()
    assert list(joint.columns) == ["colour", "size", "pet", "probability", "count", "se", "ci_low", "ci_high"]
    assert len(joint) == 12 and joint.attrs["uncertainty"]["method"] == "closed-form"
    assert list(result.to_frame(confidence=None).columns) == ["colour", "size", "pet", "probability", "count"]
    assert list(joint["colour"].cat.categories) == ["red", "green", "blue"]
    # rows in joint-code order (last attribute fastest), probabilities = the estimate's tensor
    assert list(joint.iloc[1][["colour", "size", "pet"]]) == ["red", "S", "dog"]
    np.testing.assert_allclose(joint["probability"], result.estimate.marginal((0, 1, 2)).ravel())
    np.testing.assert_allclose(joint["count"].sum(), data.n)
    pets = result.to_frame(["pet"])
    assert list(pets["pet"]) == ["cat", "dog"]
    np.testing.assert_allclose(pets["probability"], joint.groupby("pet", observed=True)["probability"].sum().to_numpy())
    swapped = result.to_frame(["pet", "colour"])
    assert list(swapped.columns[:2]) == ["pet", "colour"] and len(swapped) == 6


def test_to_frame_errors() -> None:
    from mprr.errors import DataError

    _, result = _labelled_result()
    with pytest.raises(DataError, match="attribute must be a name or an index in \\[0, 3\\), got 7"):
        result.to_frame([7])
    with pytest.raises(ConfigurationError, match=r"attributes must be distinct, got \['pet', 'pet'\]"):
        result.to_frame(["pet", "pet"])
    with pytest.raises(ConfigurationError, match=r"span 12 value combinations, more than max_cells = 5"):
        result.to_frame(max_cells=5)
