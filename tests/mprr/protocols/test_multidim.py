"""SPL, SMP, RS+FD and the oracle-report step: budgets, unbiasedness against the closed-form
variances, draw-order reproducibility, validation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.protocols import rsfd, smp, spl
from mprr.protocols.local import run_local
from mprr.protocols.multidim import oracle_specs, smp_steps
from mprr.protocols.parameters import OracleParameters
from mprr.protocols.oracle_reports import ReportedData, rsfd_oracle_epsilon
from mprr.protocols.steps import OracleSpec, Report
from mprr.streams import PartyStreams
from tests.mprr.protocols._helpers import planted

METHODS = {"SPL": spl, "SMP": smp, "RS+FD": rsfd}


@pytest.mark.parametrize("name", list(METHODS))
@pytest.mark.parametrize("epsilon", [0.5, 3.0])
def test_every_respondent_spends_exactly_the_budget(name: str, epsilon: float) -> None:
    ds = planted(300, 1).dataset
    r = METHODS[name](ds, epsilon=epsilon, rng=np.random.default_rng(0))
    assert r.protocol == name and r.epsilon() == pytest.approx(epsilon, rel=1e-12)
    assert r.parameters["epsilon"] == epsilon
    # SPL books one release per attribute with ε/m; SMP / RS+FD one report over all attributes
    assert len(r.ledger) == (ds.m if name == "SPL" else 1)


def test_rsfd_published_epsilon_is_the_record_level_inverse() -> None:
    """RS+FD's published ε and its record-level ε' = ln(d(e^ε − 1) + 1) (Arcolezi et al. 2021)."""
    for eps, d in ((1.0, 8), (0.3, 3), (5.0, 12)):
        published = rsfd_oracle_epsilon(eps, d)
        assert math.log(d * math.expm1(published) + 1.0) == pytest.approx(eps, rel=1e-12)
    # ε = 1 published for Adult's d = 8 is ε' = 2.69 at record level (the budget issue's figure)
    assert math.log(8 * math.expm1(1.0) + 1.0) == pytest.approx(2.69, abs=0.005)
    r = rsfd(planted(100, 2).dataset, epsilon=2.69, rng=np.random.default_rng(0))
    assert r.parameters["published_epsilon"] == pytest.approx(rsfd_oracle_epsilon(2.69, 8))


@pytest.mark.parametrize("name", list(METHODS))
def test_raw_estimates_are_unbiased_within_the_closed_form_variance(name: str) -> None:
    """Mean of the raw (``postprocess="none"``) marginal estimates over R runs is within 5 SE of
    the truth, SE from each method's closed-form variance; the empirical variance matches it."""
    ds = planted(3000, 4).dataset
    runs, eps = 120, 2.0
    truth = [ds.joint_counts((j,)) / ds.n for j in range(ds.m)]
    est = [np.empty((runs, s)) for s in ds.sizes]
    var = [np.zeros(s) for s in ds.sizes]
    for k in range(runs):
        r = METHODS[name](ds, epsilon=eps, postprocess="none", rng=np.random.default_rng(k))
        data = r.releases[0]
        assert isinstance(data, ReportedData)
        for j in range(ds.m):
            est[j][k] = data.raw_frequencies(j)
            var[j] += data.variance(j, truth[j]) / runs  # n_j varies with SMP: average the closed form
    for j in range(ds.m):
        z = (est[j].mean(axis=0) - truth[j]) / np.sqrt(var[j] / runs)
        assert np.all(np.abs(z) < 5.0), (name, j, z)
        ratio = est[j].var(axis=0, ddof=1).mean() / var[j].mean()
        # the mean over cells of variance ratios with runs − 1 d.o.f.: within ±5 SE of 1
        assert abs(ratio - 1.0) < 5.0 * math.sqrt(2.0 / (runs - 1)), (name, j, ratio)


def test_same_seed_same_reports_and_party_streams_draw_in_order() -> None:
    ds = planted(200, 3).dataset
    a = smp(ds, epsilon=1.0, rng=PartyStreams(5, ds.n))
    b = smp(ds, epsilon=1.0, rng=PartyStreams(5, ds.n))
    assert np.array_equal(a.releases[0].codes, b.releases[0].codes)
    # SMP draws 1 + max(uniforms per report) per party (adaptive oracles: GRR for these sizes)
    assert a.uniforms_per_party == 2
    assigned = a.releases[0].assigned
    assert assigned is not None and set(np.unique(assigned)) == set(range(ds.m))
    codes = a.releases[0].codes
    assert np.all((codes >= 0).sum(axis=1) == 1)  # one report per party
    assert np.all(codes[np.arange(ds.n), assigned] >= 0)


def test_rsfd_hides_the_sampled_attribute_and_every_value_is_in_range() -> None:
    ds = planted(500, 3).dataset
    data = rsfd(ds, epsilon=1.0, rng=np.random.default_rng(1)).releases[0]
    assert isinstance(data, ReportedData) and data.assigned is None and data.fake
    assert np.all(data.codes >= 0) and np.all(data.codes < np.array(ds.sizes))
    assert data.unit_records(0).shape == (ds.n, 1)


def test_adaptive_oracles_follow_wang_et_al() -> None:
    specs = oracle_specs([(0,), (1,)], [4, 40], 1.0, "adaptive")  # 3e + 2 ≈ 10.2
    assert specs == (OracleSpec("grr", 1.0), OracleSpec("oue", 1.0))
    assert oracle_specs([(0, 1)], [40, 40], 1.0, "adaptive") == (OracleSpec("olh", 1.0),)
    with pytest.raises(ConfigurationError, match="oracle must be one of"):
        oracle_specs([(0,)], [4], 1.0, "rappor")


def test_spl_with_oue_and_olh_on_the_fast_path() -> None:
    ds = planted(2000, 5).dataset
    for oracle in ("oue", "olh"):
        r = spl(ds, epsilon=4.0, oracle=oracle, rng=np.random.default_rng(2))
        assert r.epsilon() == pytest.approx(4.0) and r.parameters["oracles"] == [oracle.upper()] * ds.m
        for j in range(ds.m):
            assert r.estimate.marginal((j,)).sum() == pytest.approx(1.0)


def test_report_step_validation() -> None:
    grr1 = OracleSpec("grr", 1.0)
    with pytest.raises(ConfigurationError, match=r"assign must be one of \['every', 'sampled', 'sampled-fake'\]"):
        Report("x", ((0,),), (grr1,), assign="some")
    with pytest.raises(ConfigurationError, match="one oracle per unit: 2 units, 1 oracles"):
        Report("x", ((0,), (1,)), (grr1,))
    with pytest.raises(ConfigurationError, match="weights apply to assign='sampled'"):
        Report("x", ((0,),), (grr1,), weights=(1.0,))
    with pytest.raises(ConfigurationError, match="weights must be 2 finite non-negative numbers"):
        Report("x", ((0,), (1,)), (grr1, grr1), assign="sampled", weights=(1.0, -1.0))
    with pytest.raises(ConfigurationError, match="fake values .* GRR oracles only"):
        Report("x", ((0,),), (OracleSpec("oue", 1.0),), assign="sampled-fake")
    with pytest.raises(ConfigurationError, match="oracle family must be one of"):
        OracleSpec("hadamard", 1.0)
    with pytest.raises(ConfigurationError, match="oracle epsilon must be finite and > 0, got 0"):
        OracleSpec("grr", 0)
    assert Report("x", ((0,), (1,)), (grr1, grr1), assign="sampled", weights=(1, 3)).probabilities == (0.25, 0.75)
    with pytest.raises(ConfigurationError, match=r"postprocess must be one of 'norm-sub'.*got 'ibu'"):
        run_local(smp_steps, planted(20, 1).dataset, OracleParameters(epsilon=1.0, postprocess="ibu"),
                  rng=np.random.default_rng(0))


@pytest.mark.parametrize("name", ["SMP", "SPL", "RS+FD"])
def test_closed_form_intervals_cover_the_marginals(name: str) -> None:
    """to_frame's 95 % intervals of a 1-way marginal cover the records' truth in 95 % ± 3 % of 400 runs."""
    from mprr.synthetic import planted_clusters

    ds = planted_clusters(3000, sizes=(3, 4, 2), clusters=((0, 1),), rng=np.random.default_rng(7)).dataset
    truth = ds.joint_counts((1,)) / ds.n
    hits = []
    for k in range(400):
        r = METHODS[name](ds, epsilon=2.0, postprocess="none", rng=np.random.default_rng(k))
        frame = r.to_frame([1])
        assert frame.attrs["uncertainty"]["method"] == "closed-form"
        hits.append((frame["ci_low"] <= truth) & (truth <= frame["ci_high"]))
    rate = float(np.mean(hits))
    assert abs(rate - 0.95) < 0.03, rate


def test_a_unit_without_any_positive_estimate_falls_back_to_uniform() -> None:
    """Tiny n at a small ε: an OUE marginal whose every raw cell is ≤ 0 carries no information left."""
    ds = planted(12, 1).dataset
    for seed in range(20):
        r = spl(ds, epsilon=0.2, oracle="oue", rng=np.random.default_rng(seed))
        for j in range(ds.m):
            marginal = r.estimate.marginal((j,))
            assert marginal.sum() == pytest.approx(1.0) and np.all(marginal >= 0.0)
