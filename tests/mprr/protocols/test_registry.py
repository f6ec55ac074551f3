"""Protocol names and parameter checking (mprr.protocols.registry)."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.data import Attribute, Schema
from mprr.protocols.parameters import RRClustersAdjustmentParameters, RRIndependentAdjustmentParameters
from mprr.protocols.registry import PROTOCOLS, custom_entry, lookup, register_protocol
from mprr.protocols.steps import MatrixSpec, Program, Release


def test_bind_fills_the_fixed_parameters_and_keeps_the_rest() -> None:
    bound = lookup("clusters+adjustment").bind({"Tv": 10, "Td": 0.1, "p": 0.5, "tol": 1e-6})
    assert isinstance(bound, RRClustersAdjustmentParameters)
    assert (bound.base, bound.Tv, bound.Td, bound.p, bound.tol, bound.max_iter) == ("RR-Clusters", 10, 0.1, 0.5, 1e-6, 1000)
    # the generic RR-Adjustment builds the parameter object of its base (RR-Independent by default), once
    assert lookup("RR-Adjustment").bind({"p": 0.5, "max_iter": 3}) == RRIndependentAdjustmentParameters(p=0.5, max_iter=3)
    bound = lookup("RR-Adjustment").bind({"base": "RR-Clusters", "Tv": 10, "Td": 0.1, "p": 0.5})
    assert bound == RRClustersAdjustmentParameters(Tv=10, Td=0.1, p=0.5)
    schema = Schema((Attribute("a", ("0", "1", "2")), Attribute("b", ("0", "1"))))
    assert lookup("RR-Adjustment").bind(bound) is bound
    assert lookup("RR-Adjustment").plan(schema, bound) == lookup("RR-Clusters+Adjustment").plan(schema, bound)
    with pytest.raises(ConfigurationError, match=r"base must be one of \['RR-Independent', 'RR-Clusters'\], got 'RR-Joint'"):
        lookup("RR-Adjustment").bind({"base": "RR-Joint", "p": 0.5})
    # an object of another protocol's class is refused, a subclass's too unless the class names no protocol
    with pytest.raises(ConfigurationError, match=r"protocol 'RR-Clusters' takes RRClustersParameters, got "
                                                 r"RRClustersAdjustmentParameters"):
        lookup("RR-Clusters").bind(bound)


@pytest.mark.parametrize(
    ("name", "params", "match"),
    [
        ("RR-Independent", {"p": 0.5, "Tv": 3}, r"unknown parameter\(s\) \['Tv'\] for protocol 'RR-Independent'"),
        ("RR-Clusters", {"p": 0.5}, r"protocol 'RR-Clusters' needs parameter\(s\) \['Td', 'Tv'\]"),
        # RR-Adjustment takes its base protocol's parameters and those of Algorithm 2, no others
        ("RR-Clusters+Adjustment", {"Tv": 9, "Td": 0.1, "p": 0.5, "bogus": 1},
         r"unknown parameter\(s\) \['bogus'\] .*allowed: \[.*'Tv', 'Td', .*'tol', 'max_iter', 'exact_limit'\]"),
        ("RR-Clusters+Adjustment", {"p": 0.5}, r"needs parameter\(s\) \['Td', 'Tv'\]"),
        ("RR-Adjustment", {"p": 0.5, "Tv": 3}, r"unknown parameter\(s\) \['Tv'\] for protocol 'RR-Adjustment'"),
        ("RR-Clusters+Adjustment", {"base": "RR-Independent", "p": 0.5}, r"fixes \['base'\]"),
    ],
)
def test_bind_names_the_bad_parameter(name: str, params: dict, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        lookup(name).bind(params)


def test_bind_returns_the_driver_parameters_as_given() -> None:
    # whether a run needs them is the plan's to say (parties.simulate refuses an engine without a secure sum)
    def own_steps(schema: Schema, *, p: float = 0.5) -> Program:  # a program of one's own, taking keywords
        return (yield Release("attributes", ((0,),), (MatrixSpec.keep_or_uniform(p),)))

    bound = custom_entry(own_steps).bind({"p": 0.5, "engine": "masked"}, driver=("engine",))
    assert isinstance(bound, dict) and (bound["p"], bound["engine"]) == (0.5, "masked")
    with pytest.raises(ConfigurationError, match=r"unknown parameter\(s\) \['engine'\]"):
        custom_entry(own_steps).bind({"p": 0.5, "engine": "masked"})
    # a program that takes its parameter object receives nothing else: the driver keeps its own options
    with pytest.raises(ConfigurationError, match=r"unknown parameter\(s\) \['engine'\] for protocol 'RR-Independent'"):
        lookup("RR-Independent").bind({"p": 0.5, "engine": "masked"}, driver=("engine",))


# Protocol-specific settings needed besides the budget (Algorithm 1's thresholds, a joint small enough).
_EXTRA: dict[str, dict[str, object]] = {
    "RR-Clusters": {"Tv": 40, "Td": 0.1},
    "RR-Clusters+Adjustment": {"Tv": 40, "Td": 0.1},
    "RR-Adjustment": {"base": "RR-Independent"},
    "RR-Joint": {"max_cells": 40_000},
    "RR-Ind-Joint": {"groups": [[0, 1, 2], [3, 4]]},
    "lambda-randomization": {"max_cells": 40_000},
    "RR-Clusters-Sampled": {"n": 3000},
}


@pytest.mark.parametrize("name", sorted(PROTOCOLS))
def test_every_protocol_takes_the_budget_per_respondent_and_keeps_to_it(name: str) -> None:
    """``epsilon`` means ε per respondent for every protocol: every party's sequential ledger is at
    most it (the plan is fixed before the data; sampled phases book one report per respondent)."""
    from mprr.protocols.local import run_local
    from mprr.synthetic import planted_clusters

    ds = planted_clusters(3000, sizes=(4, 3, 5, 2, 6), clusters=((0, 1, 2), (3, 4)),
                          rng=np.random.default_rng(1)).dataset
    entry = PROTOCOLS[name]
    params = entry.bind({"epsilon": 2.0, **_EXTRA.get(name, {})})
    r = run_local(entry.program, ds, params, rng=np.random.default_rng(2))
    assert r.epsilon("sequential") <= 2.0 * (1 + 1e-9), (name, r.epsilon("sequential"))
    assert r.epsilon("sequential") >= 1.0  # and spends most of it (replays of singletons may save some)


def test_register_protocol_is_the_one_public_way_in(own_plugin) -> None:  # noqa: ANN001
    entry = lookup("PAIR_SUMS")  # registered by the plugin: found by name or alias like a shipped one
    assert (entry.name, entry.program, entry.parameters) == (
        "pair-sums", own_plugin.pair_sums_steps, own_plugin.PairsParameters)
    kwargs = entry.bind({"pairs": [[0, 1]], "epsilon": 1, "engine": "ring"}, driver=("engine",))
    assert kwargs == {"pairs": ((0, 1),), "epsilon": 1.0, "engine": "ring"}  # checked by its parameter object
    with pytest.raises(ConfigurationError, match=r"protocol name 'pairs' is already registered \(by 'pairs'\)"):
        register_protocol(own_plugin.pairs_steps, name="my-pairs", aliases=("Pairs",))
    with pytest.raises(ConfigurationError, match=r"protocol 'RR-Clusters' is already registered; pass replace=True"):
        register_protocol(own_plugin.pairs_steps, name="RR-Clusters")
    with pytest.raises(ConfigurationError, match=r"program must be a step-program function, got int"):
        register_protocol(3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"parameters must be a mprr.parameters.Parameters class, got <class "
                                                 r"'dict'>"):
        register_protocol(own_plugin.pairs_steps, name="other", parameters=dict)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"pairs must be disjoint, got \[\[0, 1\], \[1, 2\]\]"):
        lookup("pairs").bind({"pairs": [[0, 1], [1, 2]], "epsilon": 1.0})


def test_the_generic_rr_adjustment_builds_its_parameter_object_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """bind builds RR-Clusters+Adjustment's object from the keywords; the plan and the program take it."""
    from mprr.protocols.local import run_local
    from mprr.streams import PartyStreams
    from mprr.synthetic import planted_clusters

    built: list[object] = []
    validate = RRClustersAdjustmentParameters.validate
    monkeypatch.setattr(RRClustersAdjustmentParameters, "validate", lambda self: (built.append(self), validate(self))[1])
    data = planted_clusters(200, rng=np.random.default_rng(3), sizes=(3, 2, 2), clusters=((0, 1),)).dataset
    entry = lookup("RR-Adjustment")
    bound = entry.bind({"base": "RR-Clusters", "p": 0.7, "Tv": 6, "Td": 0.1})
    entry.plan(data.schema, bound)
    result = run_local(entry.program, data, bound, rng=PartyStreams(5, data.n))
    assert len(built) == 1 and result.protocol == "RR-Clusters+Adjustment"
