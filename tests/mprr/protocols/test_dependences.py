"""Tests for mprr.protocols.dependences (RR-Clusters phase 1: main paper 4.1, 4.2, 4.3)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.dependence import bivariate_tables, dependence_matrix
from mprr.errors import ConfigurationError
from mprr.estimation import covariance
from mprr.privacy.ledger import Ledger
from mprr.matrices import kron
from mprr.protocols.budget import attribute_matrices
from mprr.protocols.dependences import dependence_phase
from mprr.protocols.release import all_pairs
from mprr.streams import PartyStreams

from tests.mprr.protocols._helpers import five_sigma, planted, replay


def _run(ds, method, rng, **kw):
    mats = attribute_matrices(ds.sizes, p=kw.pop("p", 0.5))
    method_pp = kw.pop("postprocess", "clip-rescale")
    return mats, dependence_phase(ds, method, mats, rng=rng, postprocess=method_pp, **kw)


def test_4_2_exact_tables_no_uniforms_no_dp() -> None:
    ds = planted(400, 1).dataset
    streams = PartyStreams(3, ds.n)
    _, ph = _run(ds, "4.2", streams)
    exact = bivariate_tables(ds.codes, ds.sizes)
    for pair in all_pairs(ds.m):
        np.testing.assert_array_equal(ph.tables[pair], exact[pair])
    np.testing.assert_allclose(ph.dependence, dependence_matrix(exact, ds.schema.kinds))
    assert ph.released.uniforms_per_party == 0
    np.testing.assert_array_equal(streams.uniforms(1), PartyStreams(3, ds.n).uniforms(1))
    ledger = Ledger(ph.released.ledger_entries(ds.schema.names))
    assert ledger.no_dp_guarantee and math.isinf(ledger.total("unlinkable-pairs"))


def test_4_1_randomized_and_estimated_tables() -> None:
    ds = planted(300, 2).dataset
    mats, raw = _run(ds, "4.1", np.random.default_rng(5), tables="randomized")
    _, est = _run(ds, "4.1", np.random.default_rng(5), tables="estimated", postprocess="none")
    np.testing.assert_array_equal(raw.released.codes, est.released.codes)
    released = bivariate_tables(raw.released.codes, ds.sizes)
    for (i, j) in all_pairs(ds.m):
        np.testing.assert_array_equal(raw.tables[(i, j)], released[(i, j)])
        expected = kron(mats[i], mats[j]).inverse_factors()
        lam = released[(i, j)] / ds.n
        np.testing.assert_allclose(est.tables[(i, j)], expected[0].T @ lam @ expected[1], atol=1e-12)
    assert raw.released.uniforms_per_party == ds.m and raw.released.linkable


def test_4_1_replays_with_party_streams() -> None:
    ds = planted(40, 3).dataset
    mats, ph = _run(ds, "4.1", PartyStreams(8, ds.n))
    (expected,) = replay(ds, PartyStreams(8, ds.n), [(tuple((j,) for j in range(ds.m)), mats)])
    np.testing.assert_array_equal(ph.released.codes, expected)


def test_4_3_pairs_in_lexicographic_order_and_unlinkable_budget() -> None:
    ds = planted(40, 4).dataset
    mats, ph = _run(ds, "4.3", PartyStreams(2, ds.n))
    pairs = all_pairs(ds.m)
    assert ph.released.units == pairs and not ph.released.linkable
    (expected,) = replay(ds, PartyStreams(2, ds.n), [(pairs, ph.released.matrices)])
    np.testing.assert_array_equal(ph.released.codes, expected)
    eps = [P.epsilon for P in mats]
    ledger = Ledger(ph.released.ledger_entries(ds.schema.names))
    # sequential: every attribute counted m - 1 times; unlinkable-pairs: once per attribute, at
    # its largest share; a pair matrix's eq. (4) ε is ε_i + ε_j, split equally (nobody's claim)
    assert ledger.total("sequential") == pytest.approx((ds.m - 1) * sum(eps))
    equal_split = sum(max((eps[a] + eps[b]) / 2 for b in range(ds.m) if b != a) for a in range(ds.m))
    assert ledger.total("unlinkable-pairs") == pytest.approx(equal_split)
    assert sum(eps) <= equal_split + 1e-12  # never below the paper's "each attribute once"
    _, fixed = _run(ds, "4.3", np.random.default_rng(0), pair_epsilon=1.0)
    ledger = Ledger(fixed.released.ledger_entries(ds.schema.names))
    assert ledger.total("unlinkable-pairs") == pytest.approx(ds.m * 1.0 / 2)
    assert ledger.total("sequential") == pytest.approx(len(pairs) * 1.0)


@pytest.mark.parametrize("method", ["4.1", "4.3"])
def test_estimated_pair_tables_unbiased_within_five_sigma(method: str) -> None:
    n = 40_000
    sd = planted(n, 77, strength=0.8)
    mats, ph = _run(sd.dataset, method, np.random.default_rng(1), postprocess="none", p=0.6)
    pairs = all_pairs(sd.dataset.m)
    for k, (i, j) in enumerate(pairs[:7]):  # the pairs of attribute 0
        truth = sd.truth.marginal((i, j))
        P = kron(mats[i], mats[j]) if method == "4.1" else ph.released.matrices[k]
        err, tol = five_sigma(ph.tables[(i, j)], truth, covariance(P, truth.ravel(), n))
        assert err <= tol


def test_strong_pairs_rank_above_independent_ones() -> None:
    ds = planted(5_000, 5, strength=0.8).dataset
    for method in ("4.1", "4.2", "4.3"):
        _, ph = _run(ds, method, np.random.default_rng(0), p=0.7)
        d = ph.dependence
        inside = min(d[0, 1], d[0, 2], d[1, 2], d[3, 4])
        outside = max(d[i, j] for i, j in all_pairs(ds.m) if (i, j) not in {(0, 1), (0, 2), (1, 2), (3, 4)})
        assert inside > outside, method


def test_bad_method_combinations() -> None:
    ds = planted(20, 6).dataset
    mats = attribute_matrices(ds.sizes, p=0.5)
    rng = np.random.default_rng(0)
    with pytest.raises(ConfigurationError, match=r"dependence must be one of \['4.1', '4.2', '4.3'\]"):
        dependence_phase(ds, "4.4", mats, rng=rng, postprocess="clip-rescale")
    with pytest.raises(ConfigurationError, match="tables must be one of"):
        dependence_phase(ds, "4.1", mats, rng=rng, postprocess="clip-rescale", tables="raw")
    with pytest.raises(ConfigurationError, match="pair_epsilon applies to dependence='4.3' only"):
        dependence_phase(ds, "4.1", mats, rng=rng, postprocess="clip-rescale", pair_epsilon=1.0)
    with pytest.raises(ConfigurationError, match="tables='randomized' applies to dependence='4.1' only"):
        dependence_phase(ds, "4.2", mats, rng=rng, postprocess="clip-rescale", tables="randomized")
