"""Actor choreographies of the one-phase protocols against the fast path (same seed, same result).

Exact/reproducibility tests: the actor run and the fast path assemble their results with the
same :mod:`mprr.protocols` functions, so every estimate is bit-identical — including the raw,
possibly negative eq. (2) estimate of ``postprocess="none"``.
"""

from __future__ import annotations

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.distributions import DenseDistribution
from mprr.errors import ConfigurationError
from mprr.protocols import lambda_protocol, rr_ind_joint, rr_joint
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.simulate import simulate

N = 120
SEED = 5


@pytest.fixture(scope="module")
def small() -> Dataset:
    data = planted_clusters(N, rng=np.random.default_rng(2), strength=0.8).dataset
    return data.select(list(data.schema.names[:3]))


def test_lambda_randomization_without_postprocessing_matches_the_fast_path(small) -> None:
    lambdas = [0.4, 0.3, 0.5]
    sim = simulate(small, "lambda-randomization", seed=SEED, timeout=5.0, lambdas=lambdas, postprocess="none")
    fast = lambda_protocol(small, lambdas, rng=PartyStreams(SEED, N), postprocess="none")
    actor = sim.result
    assert actor.postprocessing == fast.postprocessing == "none"
    assert isinstance(actor.estimate, DenseDistribution)
    assert np.array_equal(actor.estimate.tensor, fast.estimate.tensor)
    # the raw eq. (2) estimate of 120 records over 60 cells has negative cells (the case the
    # actor path used to reject); it still sums to 1
    assert actor.estimate.tensor.min() < 0
    assert actor.estimate.tensor.sum() == pytest.approx(1.0, abs=1e-12)
    assert actor.parameters == fast.parameters


@pytest.mark.parametrize(
    ("protocol", "options", "fast"),
    [
        ("RR-Ind-Joint", dict(p=0.5), lambda d, r: rr_ind_joint(d, p=0.5, rng=r, postprocess="none")),
        ("RR-Joint", dict(p=0.5), lambda d, r: rr_joint(d, p=0.5, rng=r, postprocess="none")),
    ],
)
def test_dense_estimates_without_postprocessing_match_the_fast_path(small, protocol, options, fast) -> None:
    sim = simulate(small, protocol, seed=SEED, timeout=5.0, postprocess="none", **options)
    expected = fast(small, PartyStreams(SEED, N))
    assert np.array_equal(sim.result.estimate.tensor, expected.estimate.tensor)  # type: ignore[attr-defined]
    assert sim.result.estimate.tensor.min() < 0  # type: ignore[attr-defined]
    assert sim.result.parameters == expected.parameters


def test_lambda_bounds_are_validated_as_in_the_fast_path(small) -> None:
    with pytest.raises(ConfigurationError, match="min_bits must be a finite number, got nan"):
        simulate(small, "lambda-randomization", seed=SEED, timeout=5.0, lambdas=[0.5] * 3, min_bits=float("nan"))
