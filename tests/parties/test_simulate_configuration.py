"""parties.simulate's options: protocols by name and alias, and every bad configuration refused
before anything runs, with a message naming the parameter, the bad value and what is allowed."""

from __future__ import annotations

import re

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.errors import ConfigurationError
from mprr.protocols.registry import PROTOCOLS, lookup
from mprr.synthetic import planted_clusters
from parties.simulate import simulate
from tests.parties.simulate_data import SEED, data, small  # noqa: F401  (fixtures)


def test_registry_names_and_aliases() -> None:
    assert set(PROTOCOLS) == {
        "RR-Independent", "RR-Joint", "RR-Clusters", "RR-Independent+Adjustment", "RR-Clusters+Adjustment",
        "RR-Adjustment", "RR-Ind-Joint", "lambda-randomization", "SPL", "SMP", "RS+FD", "CALM-style",
        "RR-Clusters-Sampled",
    }
    assert lookup("rr_independent").name == "RR-Independent"
    assert lookup("calm").name == "CALM-style" and lookup("rs-fd").name == "RS+FD"
    assert lookup("Clusters + Adjustment".replace(" ", "")).name == "RR-Clusters+Adjustment"
    assert lookup("lambda").name == "lambda-randomization"
    assert lookup("rs_fd").name == "RS+FD" and lookup("clusters-sampled").name == "RR-Clusters-Sampled"


def test_rr_adjustment_alias_takes_a_base(data) -> None:
    sim = simulate(data, "RR-Adjustment", seed=SEED, timeout=5.0, base="RR-Clusters", p=0.7, Tv=60, Td=0.1)
    assert sim.result.protocol == "RR-Clusters+Adjustment"
    with pytest.raises(ConfigurationError, match="base must be one of"):
        simulate(data, "RR-Adjustment", seed=SEED, timeout=5.0, base="RR-Joint", p=0.7)


@pytest.mark.parametrize(
    ("protocol", "options", "match"),
    [
        ("RR-Nothing", {}, "protocol must be one of"),
        ("RR-Independent", {"p": 0.5, "Tv": 3}, r"unknown parameter\(s\) \['Tv'\]"),
        ("RR-Clusters", {"p": 0.5}, r"needs parameter\(s\) \['Td', 'Tv'\]"),
        ("RR-Clusters+Adjustment", {"p": 0.5, "Tv": 9, "Td": 0.1, "base": "RR-Clusters"}, "fixes"),
        ("RR-Independent", {"p": 0.5, "timeout": -1.0}, "timeout must be a finite number > 0, got -1.0"),
        ("RR-Independent", {"p": 0.5, "budget": -1.0}, "budget must be"),
        ("RR-Independent", {"p": 0.5, "policy": "magic"}, "policy must be one of"),
        ("RR-Independent", {"p": 0.5, "on_dropout": "ignore"}, "on_dropout must be one of"),
        ("RR-Independent", {"p": 0.5, "retries": -1}, "retries must be"),
        ("RR-Independent", {"p": 0.5, "attacks": ["steal"]}, "attacks must be among"),
        ("RR-Independent", {"p": 1.5}, r"p must be a finite number > 0 and < 1, got 1.5 \(float\)"),
    ],
)
def test_bad_configuration_is_reported(data, protocol, options, match) -> None:
    with pytest.raises(ConfigurationError, match=match):
        simulate(data, protocol, seed=1, **{"timeout": 2.0, **options})


def test_dataset_must_be_a_dataset() -> None:
    with pytest.raises(ConfigurationError, match="dataset must be a mprr.data.Dataset"):
        simulate(np.zeros((3, 2)), "RR-Independent", seed=1, p=0.5)  # type: ignore[arg-type]



@pytest.mark.parametrize("seed", ["x", 1.5, True, -1, None])
def test_seed_must_be_an_integer(small, seed) -> None:
    """Before: "x" raised a raw ValueError, 1.5 ran as seed 1, True was accepted."""
    with pytest.raises(ConfigurationError, match=rf"seed must be an integer >= 0, got {re.escape(repr(seed))}"):
        simulate(small, "RR-Independent", seed=seed, timeout=1.0, p=0.5)


def test_unknown_engine_is_refused(small) -> None:
    with pytest.raises(ConfigurationError, match="engine must be one of"):
        simulate(small, "RR-Clusters", seed=SEED, timeout=1.0, p=0.7, Tv=60, Td=0.1, dependence="4.2",
                 engine="magic")


def test_an_engine_without_a_secure_sum_in_the_plan_is_refused(small) -> None:
    with pytest.raises(ConfigurationError, match=r"engine = 'masked' has no effect: the plan of 'RR-Clusters' with "
                                                 r"these parameters has no secure sum \(release 'dependence'"):
        simulate(small, "RR-Clusters", seed=SEED, timeout=1.0, p=0.7, Tv=60, Td=0.1, engine="masked")
    with pytest.raises(ConfigurationError, match=r"engine = 'paper' has no effect: the plan of 'RR-Independent'"):
        simulate(small, "RR-Independent", seed=SEED, timeout=1.0, p=0.7, secure_sum="paper")



@pytest.mark.parametrize("name", ["graph-direct", "masked-sparse"])
def test_every_secure_sum_name_the_scenarios_offer_is_accepted(name: str) -> None:
    """The scenarios' ``secure_sum`` choices are library names too (same keyword)."""
    import numpy as np

    from mprr.protocols import rr_clusters
    from mprr.streams import PartyStreams
    from mprr.synthetic import planted_clusters

    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    sim = simulate(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2", secure_sum=name)
    fast = rr_clusters(data, p=0.7, Tv=6, Td=0.1, dependence="4.2", rng=PartyStreams(5, data.n))
    assert sim.result.clusters == fast.clusters
    with pytest.raises(ConfigurationError, match="give secure_sum or engine"):
        simulate(data, "RR-Clusters", seed=5, p=0.7, dependence="4.2", secure_sum=name, engine="paper")
