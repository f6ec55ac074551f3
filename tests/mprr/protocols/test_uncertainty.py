"""Tests of mprr.protocols.uncertainty: closed form, delta method, parametric bootstrap, coverage.

Coverage tolerances come from the binomial standard error of a coverage rate over R
independent runs, sqrt(0.95 · 0.05 / R): 0.011 at R = 400 (the ± 3 % asked of the closed form
is 2.75 SE), 0.022 at R = 100 (the bootstrap's ± 3 SE = ± 6.5 %).  Pooling the cells of a
run adds correlated trials, so the SE over runs is the conservative one.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.data import Attribute, Dataset, Schema
from mprr.errors import ConfigurationError, DomainTooLargeError
from mprr.estimation import invert
from mprr.matrices import cluster_optimal, grr, keep_or_uniform, warner
from mprr.protocols import pram, rr_adjustment, rr_clusters, rr_independent, rr_joint
from mprr.protocols.fitted_model import EstimatedUnit, FittedModel
from mprr.protocols.uncertainty import table_uncertainty
from mprr.distributions import ProductDistribution
from mprr.streams import PartyStreams

BINOMIAL_SE_400 = math.sqrt(0.95 * 0.05 / 400)
BINOMIAL_SE_100 = math.sqrt(0.95 * 0.05 / 100)


def _dataset(n: int, pi: np.ndarray, rng: np.random.Generator) -> Dataset:
    """n records of two attributes drawn from the joint ``pi`` (sizes = pi.shape)."""
    schema = Schema((Attribute("a", tuple(f"a{k}" for k in range(pi.shape[0]))),
                     Attribute("b", tuple(f"b{k}" for k in range(pi.shape[1])))))
    flat = rng.choice(pi.size, size=n, p=pi.ravel())
    return Dataset(schema, np.stack(np.unravel_index(flat, pi.shape), axis=1).astype(np.int64))


def _given_records_tallies(T: np.ndarray, P: np.ndarray, runs: int, rng: np.random.Generator) -> np.ndarray:
    """(runs, r) released tallies of records with true counts T through P, all runs at once:
    Σ_u Multinomial(T_u, P[u])."""
    return sum((rng.multinomial(int(t), P[u], size=runs) for u, t in enumerate(T) if t > 0),
               np.zeros((runs, P.shape[1]), dtype=np.int64))


def _covered(u: object, truth: np.ndarray) -> np.ndarray:
    return (np.asarray(u.low) <= truth) & (truth <= np.asarray(u.high))  # type: ignore[attr-defined]


# --------------------------------------------------------------------------- worked examples


def test_warner_closed_form_through_to_frame() -> None:
    """One binary attribute, Warner's design, raw eq. (2): the SE is Warner's (1965) formula at
    λ̂, less the sampling term for the records themselves (target "data")."""
    schema = Schema((Attribute("smoker", ("no", "yes")), Attribute("pet", ("cat", "dog"))))
    rng = np.random.default_rng(3)
    data = Dataset(schema, rng.integers(0, 2, size=(800, 2)))
    theta = 0.8
    result = rr_independent(data, matrices=[warner(theta), warner(theta)], postprocess="none", rng=rng)
    lam = result.releases[0].counts[0] / data.n
    pi = float(invert(warner(theta), lam)[1])
    population = lam[1] * (1 - lam[1]) / (data.n * (2 * theta - 1) ** 2)
    frame = result.to_frame(["smoker"], target="population")
    np.testing.assert_allclose(frame["se"], math.sqrt(population), rtol=1e-12)
    data_se = math.sqrt(population - pi * (1 - pi) / data.n)
    frame = result.to_frame(["smoker"])
    np.testing.assert_allclose(frame["se"], data_se, rtol=1e-12)
    np.testing.assert_allclose(frame["ci_high"] - frame["probability"], 1.959963984540054 * data_se, rtol=1e-9)
    assert frame.attrs["uncertainty"]["method"] == "closed-form"
    assert "Nayak eq. (3.2)" in frame.attrs["uncertainty"]["description"]


def test_delta_method_of_a_product_table() -> None:
    """A 2-way table of RR-Independent is the product of two marginals: cell variance
    (a² + v_a)(b² + v_b) − a²b² with the marginals' own closed-form variances."""
    rng = np.random.default_rng(11)
    data = _dataset(600, np.full((3, 2), 1 / 6), rng)
    result = rr_independent(data, p=0.6, postprocess="none", rng=rng)
    (a, b, ab) = result.uncertainty([["a"], ["b"], ["a", "b"]], method="closed-form")
    expected = np.multiply.outer(a.estimate ** 2 + a.se ** 2, b.estimate ** 2 + b.se ** 2) - np.multiply.outer(
        a.estimate, b.estimate) ** 2
    np.testing.assert_allclose(ab.se ** 2, expected, rtol=1e-12)
    (ba,) = result.uncertainty([["b", "a"]], method="closed-form")
    np.testing.assert_allclose(ba.se, ab.se.T, rtol=1e-12)
    assert "delta method" in ab.description


# --------------------------------------------------------------------------- coverage: closed form


def test_closed_form_covers_the_records_distribution_in_95_percent_of_400_runs() -> None:
    """Target "data": the records fixed, 400 randomizations (tallies of all runs drawn at once).
    RR-Independent's marginals and their product (a 2-way table), and a jointly released
    cluster with its 1-way marginal (a linear map of the cluster estimate)."""
    rng = np.random.default_rng(2024)
    n, runs = 1500, 400
    pi = np.array([[0.20, 0.05, 0.10], [0.05, 0.25, 0.05], [0.05, 0.05, 0.20]])
    codes = rng.choice(9, size=n, p=pi.ravel())
    joint_counts = np.bincount(codes, minlength=9)
    truth = joint_counts.reshape(3, 3) / n
    Pa, Pb, Pc = keep_or_uniform(3, 0.5), grr(3, 1.2), cluster_optimal((3, 3), 2.5)
    ta = _given_records_tallies(truth.sum(1) * n, Pa.values, runs, rng)
    tb = _given_records_tallies(truth.sum(0) * n, Pb.values, runs, rng)
    tc = _given_records_tallies(joint_counts, Pc.values, runs, rng)
    covered: dict[str, list[np.ndarray]] = {"a": [], "b": [], "a x b": [], "cluster": [], "cluster a": []}
    for k in range(runs):
        units = (EstimatedUnit((0,), (3,), Pa, ta[k].astype(float), invert(Pa, ta[k])),
                 EstimatedUnit((1,), (3,), Pb, tb[k].astype(float), invert(Pb, tb[k])))
        model = FittedModel(n, (3, 3), units, "none",
                            ProductDistribution(((0,), (1,)), [u.estimate for u in units], (3, 3), allow_negative=True))
        a, b, ab = table_uncertainty(model, [(0,), (1,), (0, 1)], method="closed-form")
        covered["a"].append(_covered(a, truth.sum(1)))
        covered["b"].append(_covered(b, truth.sum(0)))
        covered["a x b"].append(_covered(ab, np.multiply.outer(truth.sum(1), truth.sum(0))))
        raw = invert(Pc, tc[k]).reshape(3, 3)
        cluster = EstimatedUnit((0, 1), (3, 3), Pc, tc[k].reshape(3, 3).astype(float), raw)
        model = FittedModel(n, (3, 3), (cluster,), "none",
                            ProductDistribution(((0, 1),), [raw], (3, 3), allow_negative=True))
        c, ca = table_uncertainty(model, [(0, 1), (0,)], method="closed-form")
        covered["cluster"].append(_covered(c, truth))
        covered["cluster a"].append(_covered(ca, truth.sum(1)))
    rates = {k: float(np.mean(v)) for k, v in covered.items()}
    assert all(abs(r - 0.95) <= 0.03 for r in rates.values()), rates
    per_cell = {k: np.mean(v, axis=0) for k, v in covered.items()}
    assert all(np.all(np.abs(c - 0.95) <= 4 * BINOMIAL_SE_400) for c in per_cell.values()), per_cell


def test_closed_form_covers_the_population_in_95_percent_of_400_runs() -> None:
    """Target "population" (Nayak's setting): new records from π in every run, through the
    protocol itself; the intervals of the 1-way marginal and of the product table cover π."""
    rng = np.random.default_rng(99)
    pi = np.array([[0.3, 0.1], [0.1, 0.2], [0.2, 0.1]])
    hits: dict[str, list[np.ndarray]] = {"a": [], "a x b": []}
    for _ in range(400):
        data = _dataset(800, pi, rng)
        result = rr_independent(data, p=0.5, postprocess="none", rng=rng)
        a, ab = result.uncertainty([["a"], ["a", "b"]], method="closed-form", target="population")
        hits["a"].append(_covered(a, pi.sum(1)))
        hits["a x b"].append(_covered(ab, np.multiply.outer(pi.sum(1), pi.sum(0))))
    rates = {k: float(np.mean(v)) for k, v in hits.items()}
    assert all(abs(r - 0.95) <= 0.03 for r in rates.values()), rates


# --------------------------------------------------------------------------- coverage: bootstrap


@pytest.mark.slow
def test_bootstrap_covers_the_records_distribution_after_clip_rescale() -> None:
    """100 randomizations of fixed records with a rare category (1.5 % + 0.5 %) at p = 0.3,
    so that clip-rescale acts in about a third of the runs; 100 bootstrap replicates each;
    pooled coverage of both marginals within 3 binomial SE (over runs) of 95 %."""
    rng = np.random.default_rng(7)
    pi = np.array([[0.30, 0.10], [0.30, 0.10], [0.15, 0.03], [0.015, 0.005]])
    data = _dataset(1000, pi, rng)
    truth_a = np.bincount(data.codes[:, 0], minlength=4) / data.n
    truth_b = np.bincount(data.codes[:, 1], minlength=2) / data.n
    hits, clipped = [], 0
    for _ in range(100):
        result = rr_independent(data, p=0.3, rng=rng)
        (a, b) = result.uncertainty([["a"], ["b"]], replicates=100, rng=rng)
        clipped += int(a.method == "parametric-bootstrap")
        if a.method == "closed-form":  # auto: the post-processing left this run's estimate alone
            (a, b) = result.uncertainty([["a"], ["b"]], method="bootstrap", replicates=100, rng=rng)
        hits += [_covered(a, truth_a), _covered(b, truth_b)]
        assert a.method == "parametric-bootstrap" and a.replicates == 100
    rate = float(np.mean(np.concatenate(hits)))
    assert abs(rate - 0.95) <= 3 * BINOMIAL_SE_100, rate
    assert 10 <= clipped <= 90, clipped  # clip-rescale acted in some runs and not in others


@pytest.mark.slow
def test_bootstrap_covers_the_records_distribution_after_adjustment() -> None:
    """RR-Independent+Adjustment: the adjusted 1-way marginals equal the unit estimates, so the
    bootstrap of Algorithm 2 must cover the records' own marginal like any interval: 100 runs,
    100 replicates each, within 3 binomial SE of 95 %."""
    rng = np.random.default_rng(8)
    data = _dataset(500, np.array([[0.30, 0.10], [0.20, 0.10], [0.15, 0.15]]), rng)
    truth = np.bincount(data.codes[:, 0], minlength=3) / data.n
    hits = []
    for _ in range(100):
        result = rr_adjustment(rr_independent(data, p=0.5, rng=rng))
        (a,) = result.uncertainty([["a"]], replicates=100, rng=rng)
        hits.append(_covered(a, truth))
    rate = float(np.mean(hits))
    assert abs(rate - 0.95) <= 3 * BINOMIAL_SE_100, rate


# --------------------------------------------------------------------------- method choice


def _small() -> Dataset:
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, 3, 400), rng.integers(0, 2, 400)], axis=1)
    codes[:200, 1] = 0
    schema = Schema((Attribute("colour", ("red", "green", "blue")), Attribute("size", ("S", "L"))))
    return Dataset(schema, codes)


def test_auto_picks_the_bootstrap_after_adjustment_and_reproduces_with_the_seed() -> None:
    data = _small()
    result = rr_adjustment(rr_independent(data, p=0.7, rng=PartyStreams(1, data.n)))
    one = result.to_frame(["colour", "size"], replicates=50, rng=np.random.default_rng(5))
    two = result.to_frame(["colour", "size"], replicates=50, rng=np.random.default_rng(5))
    assert one.equals(two) and one.attrs["uncertainty"]["method"] == "parametric-bootstrap"
    assert "RR-Adjustment" in one.attrs["uncertainty"]["description"]
    assert np.all(one["ci_low"] <= one["ci_high"]) and np.all(one["se"] > 0)
    # the adjusted 1-way marginals match the unit estimates: their SEs agree with the closed form
    (boot,) = result.uncertainty([["colour"]], replicates=400, rng=np.random.default_rng(6))
    base = rr_independent(data, p=0.7, rng=PartyStreams(1, data.n))
    (closed,) = base.uncertainty([["colour"]], method="closed-form")
    np.testing.assert_allclose(boot.se, closed.se, rtol=0.2)


def test_adjusted_intervals_surround_the_estimate_when_records_are_many_and_distinct() -> None:
    """RR-Adjustment weights n released records, most of them distinct, each n·w near 1: rounding
    them to whole records moves the fitted records' marginals off the estimate (here by up to
    0.016, five SE), and the intervals must still be around the estimate (recentred replicates)."""
    rng = np.random.default_rng(4)
    schema = Schema(tuple(Attribute(f"x{k}", tuple("abcdefgh")) for k in range(7)))
    data = Dataset(schema, rng.choice(8, size=(5000, 7), p=[0.8] + [0.2 / 7] * 7))
    result = rr_adjustment(rr_independent(data, p=0.8, rng=rng))
    for u in result.uncertainty([[k] for k in range(7)], replicates=40, rng=rng):
        assert np.all((u.low <= u.estimate) & (u.estimate <= u.high)), (u.axes, u.low, u.estimate, u.high)


def test_clusters_and_joint_state_what_they_take_as_given() -> None:
    data = _small()
    clusters = rr_clusters(data, Tv=6, Td=0.05, p=0.8, postprocess="none", rng=PartyStreams(2, data.n))
    (u,) = clusters.uncertainty([["size"]])
    assert u.method == "closed-form" and "given the clusters Algorithm 1 formed" in u.description
    joint = rr_joint(data, p=0.8, postprocess="none", rng=PartyStreams(2, data.n))
    (j,) = joint.uncertainty([["colour"]])
    assert j.method == "closed-form" and j.estimate.shape == (3,)


def test_errors_name_the_parameter() -> None:
    data = _small()
    result = rr_independent(data, p=0.7, rng=PartyStreams(1, data.n))
    adjusted = rr_adjustment(result)
    with pytest.raises(ConfigurationError, match=r"rng must be a numpy.random.Generator for the parametric "
                                                 r"bootstrap \(RR-Adjustment's weights depend on the data\), got NoneType"):
        adjusted.to_frame(["colour"])
    with pytest.raises(ConfigurationError, match="method 'closed-form' needs a direct estimate"):
        adjusted.to_frame(["colour"], method="closed-form")
    with pytest.raises(ConfigurationError, match=r"method must be one of \['auto', 'closed-form', 'bootstrap'\], got 'exact'"):
        result.to_frame(["colour"], method="exact")
    with pytest.raises(ConfigurationError, match=r"target must be one of \['data', 'population'\], got 'sample'"):
        result.to_frame(["colour"], target="sample")
    with pytest.raises(ConfigurationError, match="confidence"):
        result.to_frame(["colour"], confidence=1.0)
    with pytest.raises(ConfigurationError, match="replicates"):
        result.to_frame(["colour"], method="bootstrap", replicates=1, rng=np.random.default_rng(0))
    wide = Dataset(Schema(tuple(Attribute(f"x{k}", tuple(str(v) for v in range(40))) for k in range(4))),
                   np.random.default_rng(1).integers(0, 40, size=(50, 4)))
    wide_result = rr_independent(wide, p=0.7, rng=np.random.default_rng(2))
    with pytest.raises(DomainTooLargeError, match=r"20 bootstrap replicates of the table of attributes \[0, 1, 2, 3\] "
                                                  r"\(2,560,000 cells\) needs 51,200,000 cells, more than "
                                                  r"MAX_TENSOR_CELLS=50,000,000; pick fewer attributes or fewer replicates"):
        wide_result.to_frame(method="bootstrap", replicates=20, rng=np.random.default_rng(3), max_cells=3_000_000)
    invariant = pram(data, invariant="mixture", theta=0.5, rng=np.random.default_rng(0))
    with pytest.raises(ConfigurationError, match=r"details\['variance'\]"):
        invariant.to_frame(["colour"])
