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
    summary = r.privacy_summary()
    eps = sum(r.parameters["attribute_epsilons"])
    assert summary["sequential"]["by_phase"]["clusters"] == pytest.approx(eps)
    assert summary["unlinkable-pairs"]["by_phase"]["dependence"] == pytest.approx(eps)
    assert summary["sequential"]["by_phase"]["dependence"] == pytest.approx(7 * eps)
    assert not summary["no_dp_guarantee"]
    text = json.dumps(r.summary())  # JSON-friendly
    assert '"protocol": "RR-Clusters"' in text
    # the released data set Y is the cluster release decoded into attribute codes
    assert r.released_records.shape == (1_000, 8)


def test_exact_phase_reports_infinity_as_string() -> None:
    ds = planted(200, 2).dataset
    r = rr_clusters(ds, p=0.5, Tv=50, Td=0.2, dependence="4.2", rng=np.random.default_rng(0))
    assert math.isinf(r.epsilon("parallel"))
    assert r.privacy_summary()["sequential"]["total"] == "inf"
    assert r.privacy_summary()["entropy_bits_by_phase"]["dependence"] == 0.0


def test_timings_are_left_to_the_caller() -> None:
    r = rr_independent(planted(50, 3).dataset, p=0.5, rng=np.random.default_rng(0))
    assert r.timings == {}
    r.timings["total"] = 0.01
    assert r.timings == {"total": 0.01}
    with pytest.raises(ConfigurationError, match="policy must be one of"):
        r.epsilon("advanced")
