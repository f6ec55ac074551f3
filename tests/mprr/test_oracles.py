"""Tests of mprr.oracles: hand values, the grr matrix family, worked reports, grouped support,
the draw contract, validation, and unbiasedness / variance against Wang et al.'s formulas."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

import mprr.oracles as oracles
from mprr.errors import ConfigurationError, DataError, DomainTooLargeError
from mprr.hashing import universal_hash
from mprr.matrices import grr
from mprr.oracles import GRR, OLH, OUE, FrequencyOracle, best_oracle
from mprr.randomize import randomize
from mprr.streams import PartyStreams

LN3 = math.log(3.0)


# ---------------------------------------------------------------------------- exact values


def test_grr_is_the_grr_matrix() -> None:
    for d, eps in ((2, 0.5), (7, 1.0), (240, 1.0), (16, 8.0)):
        o, m = GRR(d, eps), grr(d, eps)
        assert o.p_star == m.values[0, 0] and o.q_star == m.values[0, 1]
        assert o.epsilon_spent == pytest.approx(m.epsilon, rel=1e-12)
        assert o.matrix.values.tolist() == m.values.tolist()


def test_hand_values() -> None:
    g = GRR(4, LN3)  # e^ε = 3: p = 3/6, q = 1/6
    assert (g.p_star, g.q_star) == (pytest.approx(0.5), pytest.approx(1 / 6))
    assert g.variance(100).tolist() == pytest.approx([0.0125] * 4)  # (1/6)(5/6)/(1/3)^2 / 100
    assert (g.uniforms_per_report, g.report_bits, GRR(5, 1.0).report_bits, GRR(2, 1.0).report_bits) == (1, 2, 3, 1)
    u = OUE(8, LN3)  # p = 1/2, q = 1/4
    assert (u.p_star, u.q_star) == (0.5, pytest.approx(0.25))
    assert u.variance(10).tolist() == pytest.approx([0.3] * 8)  # (1/4)(3/4)/(1/4)^2 / 10
    assert (u.uniforms_per_report, u.report_bits, u.report_limit) == (8, 8, 256)
    h = OLH(100, LN3)  # g = round(3) + 1 = 4: p = 3/6, q* = 1/4
    assert (h.g, h.p_star, h.q_star, h.q_grr) == (4, pytest.approx(0.5), 0.25, pytest.approx(1 / 6))
    assert h.variance(10).tolist() == pytest.approx([0.3] * 100)
    assert (h.uniforms_per_report, h.report_bits, h.report_limit) == (2, 34, 4 << 32)


@pytest.mark.parametrize("eps", [0.1, 0.5, 1.0, LN3, 2.0, 5.0, 20.0])
def test_epsilon_spent_is_the_requested_epsilon(eps: float) -> None:
    for o in (GRR(10, eps), OUE(10, eps), OLH(10, eps), OLH(10, eps, g=2)):
        assert o.epsilon_spent == pytest.approx(eps, rel=1e-9), o


def test_olh_default_g() -> None:
    assert [OLH(16, e).g for e in (0.1, 0.5, 1.0, 2.0, 4.0)] == [2, 3, 4, 8, 56]
    assert OLH(16, 1.0) == OLH(16, 1.0, g=4) and OLH(16, 1.0, g=7).g == 7


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_approximate_variance_is_wang_et_al(eps: float) -> None:
    n, e = 1000, math.exp(eps)
    assert GRR(9, eps).variance(n)[0] == pytest.approx((e + 7) / (n * (e - 1) ** 2))
    assert OUE(9, eps).variance(n)[0] == pytest.approx(4 * e / (n * (e - 1) ** 2))
    olh = OLH(9, eps, g=2).variance(n)[0]  # with g = 2: q* = 1/2, p = e/(e+1)
    assert olh == pytest.approx(0.25 / (n * (e / (e + 1) - 0.5) ** 2))
    for o in (GRR(9, eps), OUE(9, eps), OLH(9, eps)):
        f = np.linspace(0, 1, 9) / np.linspace(0, 1, 9).sum()
        exact = o.variance(n, f)
        p, q = o.p_star, o.q_star
        assert exact.tolist() == pytest.approx((q * (1 - q) / (n * (p - q) ** 2) + f * (1 - p - q) / (n * (p - q))).tolist())
        assert o.variance(n, np.zeros(9)).tolist() == o.variance(n).tolist()


def test_best_oracle() -> None:
    # 3e + 2 = 10.15 at ε = 1
    assert best_oracle(10, 1.0) == GRR(10, 1.0)
    assert best_oracle(11, 1.0) == OUE(11, 1.0)
    assert best_oracle(62, 1.0) == OUE(62, 1.0)
    assert best_oracle(63, 1.0) == OLH(63, 1.0)
    assert best_oracle(165, 4.0) == GRR(165, 4.0)  # 3 e^4 + 2 = 165.8
    assert best_oracle(166, 4.0) == OLH(166, 4.0)
    for d, eps in ((5, 0.5), (16, 1.0), (240, 1.0), (100, 3.0)):
        chosen = best_oracle(d, eps)
        others = [GRR(d, eps), OUE(d, eps) if d <= 62 else OLH(d, eps)]
        assert chosen.variance(1000)[0] <= min(o.variance(1000)[0] for o in others) * (1 + 1e-12)


# ---------------------------------------------------------------------------- reports


def test_grr_reports_equal_the_grr_matrix_randomization(rng: np.random.Generator) -> None:
    for d, eps in ((2, 1.0), (7, 0.5), (240, 1.0)):
        x = rng.integers(0, d, 5000)
        u = rng.random((5000, 1))
        np.testing.assert_array_equal(GRR(d, eps).perturb(x, u), randomize(x, grr(d, eps), uniforms=u[:, 0]))


def test_grr_closed_form_above_the_matrix_limit(rng: np.random.Generator) -> None:
    d = oracles.GRR_MATRIX_MAX_D + 500
    x = np.concatenate(([0, d - 1, 0, d - 1], rng.integers(0, d, 20000)))
    u = np.concatenate(([0.0, 0.0, 0.999999999, 0.999999999], rng.random(20000)))[:, None]
    np.testing.assert_array_equal(GRR(d, 2.0).perturb(x, u), randomize(x, grr(d, 2.0), uniforms=u[:, 0]))


def test_oue_worked_report() -> None:
    o = OUE(4, LN3)  # q = 1/4 for the other bits, 1/2 for the own bit (value 2)
    u = np.array([[0.2, 0.3, 0.4, 0.9], [0.3, 0.1, 0.6, 0.24]])
    assert o.perturb([2, 1], u).tolist() == [0b0101, 0b1010]
    assert o.support([0b0101, 0b0010, 0b1111]).tolist() == [2, 2, 2, 1]


def test_oue_reports_are_the_bits(rng: np.random.Generator) -> None:
    o = OUE(62, 1.0)
    x = rng.integers(0, 62, 3000)
    u = rng.random((3000, 62))
    reports = o.perturb(x, u)
    bits = (reports[:, None] >> np.arange(62)) & 1
    expected = u < np.where(np.arange(62)[None, :] == x[:, None], o.p_star, o.q_star)
    np.testing.assert_array_equal(bits.astype(bool), expected)
    assert reports.min() >= 0
    np.testing.assert_array_equal(o.support(reports), bits.sum(axis=0))


def test_olh_worked_reports() -> None:
    o = OLH(10, LN3)  # g = 4, p = 1/2, q = 1/6
    seed = 1 << 31  # u0 = 0.5
    h = int(universal_hash([seed], [7], 4)[0])
    kept = o.perturb([7], [[0.5, 0.49]])
    assert kept.tolist() == [seed * 4 + h]
    # u1 = p + 1.5 q: the second of the other buckets (j = 1)
    other = o.perturb([7], [[0.5, 0.5 + 1.5 / 6]])
    assert other.tolist() == [seed * 4 + [b for b in range(4) if b != h][1]]


def test_olh_support_is_the_definition(rng: np.random.Generator) -> None:
    o = OLH(12, 2.0)
    reports = o.perturb_rng(rng.integers(0, 12, 300), rng=rng)
    seeds, ys = reports // o.g, reports % o.g
    brute = [sum(int(universal_hash([int(s)], [v], 8)[0]) == int(y) for s, y in zip(seeds, ys, strict=True))
             for v in range(12)]
    assert o.g == 8 and o.support(reports).tolist() == brute


@pytest.mark.parametrize("oracle", [GRR(9, 1.0), OUE(9, 1.0), OLH(9, 1.0)], ids=lambda o: o.name)
def test_chunks_and_groups(oracle: FrequencyOracle, rng: np.random.Generator,
                           monkeypatch: pytest.MonkeyPatch) -> None:
    reports = oracle.perturb_rng(rng.integers(0, 9, 2000), rng=rng)
    whole = oracle.support(reports)
    monkeypatch.setattr(oracles, "_CHUNK_CELLS", 64 * 7)  # several chunks for OUE and OLH
    np.testing.assert_array_equal(oracle.support(reports), whole)
    assert whole.sum() > 0
    groups = rng.integers(0, 4, 2000)
    by = oracle.support_by_group(reports, groups, 5)
    assert by.shape == (5, 9) and not by[4].any()
    for j in range(4):
        np.testing.assert_array_equal(by[j], oracle.support(reports[groups == j]))
    n = np.bincount(groups, minlength=4)
    est = oracle.estimate(by[:4], n)
    for j in range(4):
        np.testing.assert_allclose(est[j], oracle.estimate(by[j], int(n[j])), rtol=1e-15)


@pytest.mark.parametrize("oracle", [GRR(6, 1.0), OUE(6, 1.0), OLH(6, 1.0)], ids=lambda o: o.name)
def test_reports_follow_the_party_streams(oracle: FrequencyOracle) -> None:
    x = np.arange(50) % 6
    via_streams = oracle.perturb_rng(x, rng=PartyStreams(11, 50))
    np.testing.assert_array_equal(via_streams, oracle.perturb(x, PartyStreams(11, 50).uniforms(oracle.uniforms_per_report)))
    one = PartyStreams(11, 50).generator(3).random(oracle.uniforms_per_report)
    assert oracle.perturb(x[3:4], one[None, :]).tolist() == via_streams[3:4].tolist()
    assert oracle.perturb([], np.zeros((0, oracle.uniforms_per_report))).shape == (0,)


def test_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        GRR(4, 1.0).d = 5  # type: ignore[misc]


# ---------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("make", "match"),
    [
        (lambda: GRR(1, 1.0), r"GRR: d must be an integer >= 2, got 1"),
        (lambda: GRR(4.0, 1.0), r"GRR: d must be an integer >= 2, got 4.0"),
        (lambda: GRR(4, 0.0), r"GRR: epsilon must be finite and > 0, got 0.0"),
        (lambda: OUE(4, math.inf), r"OUE: epsilon must be finite and > 0, got inf"),
        (lambda: GRR(4, 800), r"GRR: epsilon must be finite and in \(0, 700\], got 800"),
        (lambda: OUE(63, 1.0), r"OUE: d must be an integer in \[2, 62\], got 63 \(a report is a d-bit mask in one int64\);"
                               r" use OLH for larger domains"),
        (lambda: OLH(50_000_001, 1.0), r"OLH: d must be an integer in \[2, 50,000,000\], got 50,000,001"),
        (lambda: GRR(2**40, 1.0), r"GRR: d must be an integer in \[2, 50,000,000\], got 1,099,511,627,776"),
        (lambda: OLH(4, 1.0, g=1), r"OLH: g must be an integer >= 2, got 1"),
        (lambda: OLH(4, 1.0, g=2**31 + 1), r"OLH: g must be an integer in \[2, 2,147,483,648\] .*, got 2,147,483,649"),
        (lambda: OLH(4, 30.0), r"OLH: the default g = round\(e\^epsilon\) \+ 1 must be at most 2,147,483,648, so epsilon"
                               r" must be at most 21.49 without an explicit g, got 30.0; pass g or use GRR"),
        (lambda: best_oracle(1, 1.0), r"d must be an integer >= 2, got 1"),
    ],
)
def test_construction_errors(make: object, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        make()  # type: ignore[operator]


def test_call_errors() -> None:
    g, o = GRR(4, 1.0), OUE(4, 1.0)
    with pytest.raises(DataError, match=r"values must be in \[0, 4\) \(the GRR domain size d\), got 4"):
        g.perturb([0, 4], np.zeros((2, 1)))
    with pytest.raises(DataError, match="values must be an integer array, got dtype float64"):
        g.perturb([0.5], np.zeros((1, 1)))
    with pytest.raises(ConfigurationError, match=r"u must have shape \(2, 4\) \(uniforms_per_report = 4 per value\), got \(2, 1\)"):
        o.perturb([0, 1], np.zeros((2, 1)))
    with pytest.raises(ConfigurationError, match=r"u must be finite and in \[0, 1\), got 1.0"):
        g.perturb([0], [[1.0]])
    with pytest.raises(DataError, match=r"reports must be in \[0, 16\) \(OUE report codes for d=4\), got 16"):
        o.support([3, 16])
    with pytest.raises(DataError, match=r"reports must be in \[0, 17,179,869,184\) \(OLH report codes for d=4\), got -1"):
        OLH(4, 1.0).support([-1])
    with pytest.raises(DataError, match=r"groups must be in \[0, 2\) \(n_groups\), got 2"):
        g.support_by_group([0, 1], [0, 2], 2)
    with pytest.raises(DataError, match=r"groups must have one entry per report, shape \(2,\), got \(1,\)"):
        g.support_by_group([0, 1], [0], 2)
    with pytest.raises(ConfigurationError, match=r"support must have shape \(4,\) or \(k, 4\), got \(3,\)"):
        g.estimate([1, 2, 3], 6)
    with pytest.raises(ConfigurationError, match="n must be an integer >= 1 .number of reports., got 0"):
        g.estimate([1, 2, 3, 4], 0)
    with pytest.raises(ConfigurationError, match=r"n must be an integer >= 1 \(or one per row of a \(k, d\) support\), got 2.5"):
        g.estimate([1, 2, 3, 4], 2.5)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"f must be 4 frequencies in \[0, 1\], got shape \(3,\)"):
        g.variance(10, [0.5, 0.5, 0.0])
    with pytest.raises(ConfigurationError, match="n must be an integer >= 1, got 0"):
        g.variance(0)
    with pytest.raises(DomainTooLargeError, match="max_cells"):
        _ = GRR(5000, 1.0).matrix


# ---------------------------------------------------------------------------- statistics

RUNS = 1000


@pytest.mark.parametrize(
    ("oracle", "n"),
    [(GRR(5, 1.0), 2000), (GRR(40, 2.0), 2000), (OUE(8, 1.0), 1000), (OUE(30, 0.5), 500),
     (OLH(16, 1.0), 1000), (OLH(100, 2.0), 500)],
    ids=lambda v: str(v) if isinstance(v, FrequencyOracle) else None,
)
def test_unbiased_with_the_closed_form_variance(oracle: FrequencyOracle, n: int) -> None:
    """RUNS independent surveys of the same n values: mean within 5 SE of the truth, and the
    empirical variance of every cell within the χ² bounds (α = 1e-4 in all) of the exact formula."""
    d = oracle.d
    weights = 1.0 / np.arange(1, d + 1)
    counts = np.floor(n * weights / weights.sum()).astype(np.int64)
    counts[0] += n - counts.sum()
    values = np.repeat(np.arange(d), counts)
    f = counts / n
    rng = np.random.default_rng(20261127 + d)
    reports = oracle.perturb_rng(np.tile(values, RUNS), rng=rng)
    support = oracle.support_by_group(reports, np.repeat(np.arange(RUNS), n), RUNS)
    est = oracle.estimate(support, np.full(RUNS, n))
    var = oracle.variance(n, f)
    z = (est.mean(axis=0) - f) / np.sqrt(var / RUNS)
    assert np.abs(z).max() < 5, z
    ratio = est.var(axis=0, ddof=1) / var
    alpha = 1e-4 / d
    lo, hi = stats.chi2.ppf([alpha / 2, 1 - alpha / 2], RUNS - 1) / (RUNS - 1)
    assert np.all((ratio > lo) & (ratio < hi)), (lo, hi, ratio)
