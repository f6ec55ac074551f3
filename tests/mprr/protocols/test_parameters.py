"""The protocols' parameter objects (mprr.protocols.parameters): bad values refused once, at
binding, naming the parameter; the object runs a protocol exactly as its keywords do."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.protocols.clusters import rr_clusters
from mprr.protocols.local import run_local
from mprr.protocols.parameters import RRClustersParameters, RRIndependentParameters
from mprr.protocols.registry import PROTOCOLS, lookup
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"p": 1.0}, r"^p must be a finite number > 0 and < 1, got 1.0 \(float\)$"),
        ({"p": [0.5, 0.0]}, r"^p\[1\] must be a finite number > 0 and < 1, got 0.0 \(float\)$"),
        ({"epsilon": -1}, r"^epsilon must be a finite number > 0, got -1 \(int\)$"),
        ({"epsilon_per_attribute": float("inf")}, r"^epsilon_per_attribute must be a finite number > 0, got inf"),
        ({"p": 0.5, "epsilon": 1.0}, r"give exactly one of p, epsilon_per_attribute, epsilon \(per respondent\) or "
                                     r"matrices for the attribute matrices, got \['p', 'epsilon'\]"),
        ({}, r"give exactly one of .*, got none"),
        ({"p": 0.5, "postprocess": "round"}, r"^postprocess must be one of 'clip-rescale', 'ibu', 'none', "
                                             r"'project-simplex', got 'round' \(str\)$"),
    ],
)
def test_rr_independent_parameters_refuse_bad_values(values: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        RRIndependentParameters(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"Tv": 0.5}, r"^Tv must be a number >= 1, got 0.5 \(float\)$"),
        ({"Td": 1.5}, r"^Td must be a finite number >= 0 and <= 1, got 1.5 \(float\)$"),
        ({"dependence": "4.4"}, r"^dependence must be one of '4.1', '4.2', '4.3', got '4.4' \(str\)$"),
        ({"tables": "raw"}, r"^tables must be one of 'estimated', 'randomized', got 'raw' \(str\)$"),
        ({"max_cells": 1}, r"^max_cells must be an integer >= 2, got 1 \(int\)$"),
        ({"p": None, "epsilon": 2.0, "discovery_share": 1.0},
         r"^discovery_share must be a finite number > 0 and < 1, got 1.0 \(float\)$"),
        ({"discovery_share": 0.3}, r"discovery_share applies with a budget per respondent \(epsilon\) only, got 0.3"),
        ({"p": None, "epsilon": 2.0, "dependence": "4.2"}, r"dependence='4.2' releases exact pair values .* cannot "
                                                           r"meet a budget of epsilon = 2.0 per respondent"),
        ({"pair_epsilon": 1.0}, r"pair_epsilon applies to dependence='4.3' only, got dependence='4.1'"),
        ({"tables": "randomized", "dependence": "4.3"}, r"tables='randomized' applies to dependence='4.1' only"),
    ],
)
def test_rr_clusters_parameters_refuse_bad_values(values: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        RRClustersParameters(**{"Tv": 50, "Td": 0.1, "p": 0.7, **values})  # type: ignore[arg-type]


def test_an_object_is_validated_once_and_is_what_the_program_takes() -> None:
    params = RRClustersParameters(Tv=60, Td=0.1, epsilon=3, discovery_share=0.4)
    assert (params.Tv, params.epsilon) == (60, 3.0)  # Tv keeps an integer, ε is a float
    entry = lookup("clusters")
    assert entry.takes_parameters and lookup("independent").takes_parameters and lookup("SPL").takes_parameters
    assert entry.bind(params) is params
    assert entry.bind({"Tv": 60, "Td": 0.1, "epsilon": 3, "discovery_share": 0.4}) == params
    data = planted_clusters(400, rng=np.random.default_rng(2)).dataset
    by_object = run_local(entry.program, data, params, rng=PartyStreams(8, data.n))
    by_keywords = rr_clusters(data, rng=PartyStreams(8, data.n), Tv=60, Td=0.1, epsilon=3, discovery_share=0.4)
    np.testing.assert_array_equal(by_object.releases[1].codes, by_keywords.releases[1].codes)
    assert by_object.parameters == by_keywords.parameters
    with pytest.raises(ConfigurationError, match=r"give the program's parameters as one object or as keywords, "
                                                 r"not both; got RRClustersParameters and \['Tv'\]"):
        run_local(entry.program, data, params, rng=PartyStreams(8, data.n), Tv=3)
    with pytest.raises(ConfigurationError, match=r"protocol 'RR-Independent' takes RRIndependentParameters, got "
                                                 r"RRClustersParameters"):
        lookup("independent").bind(params)


@pytest.mark.parametrize(
    ("protocol", "values", "match"),
    [
        ("RR-Joint", {"p": 0.5, "epsilon": 1.0}, r"give exactly one of p, epsilon or matrix, got \['p', 'epsilon'\]"),
        ("RR-Joint", {"epsilon": 1.0, "max_cells": 1}, r"^max_cells must be an integer >= 2, got 1 \(int\)$"),
        ("SPL", {"epsilon": 1.0, "oracle": "rappor"},
         r"^oracle must be one of 'adaptive', 'grr', 'oue', 'olh', got 'rappor' \(str\)$"),
        ("SMP", {"epsilon": 0}, r"^epsilon must be a finite number > 0, got 0 \(int\)$"),
        ("SMP", {"epsilon": 1.0, "p": 0.5}, r"unknown parameter\(s\) \['p'\] for protocol 'SMP'; allowed: "
                                            r"\['epsilon', 'oracle', 'postprocess'\]"),
        ("RS+FD", {"epsilon": 1.0, "postprocess": "ibu"},
         r"^postprocess must be one of 'norm-sub', 'clip-rescale', 'project-simplex', 'none', got 'ibu' \(str\)$"),
        ("RS+FD", {}, r"protocol 'RS\+FD' needs parameter\(s\) \['epsilon'\]"),
    ],
)
def test_every_object_names_the_protocol_the_parameter_and_what_is_allowed(protocol: str, values: dict[str, object],
                                                                            match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        lookup(protocol).bind(values)


@pytest.mark.parametrize(
    ("protocol", "values", "match"),
    [
        ("CALM-style", {"epsilon": 1.0, "k": 4}, r"^k must be an integer >= 2 and <= 3, got 4 \(int\)$"),
        ("RR-Clusters-Sampled", {"epsilon": 1.0, "discovery_share": 1.0},
         r"^discovery_share must be a finite number >= 0 and < 1, got 1.0 \(float\)$"),
        ("RR-Clusters-Sampled", {"epsilon": 1.0, "design": "pairs"},
         r"^design must be one of 'clusters', 'cover', 'clusters-or-cover', got 'pairs' \(str\)$"),
        ("RR-Clusters-Sampled", {"epsilon": 1.0, "Tv": 0}, r"^Tv must be an integer >= 1, got 0 \(int\)$"),
        ("RR-Clusters-Sampled", {"epsilon": 1.0, "alpha": 0.0},
         r"^alpha must be a finite number > 0 and < 1, got 0.0 \(float\)$"),
    ],
)
def test_the_sampled_protocols_objects_refuse_bad_values(protocol: str, values: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        lookup(protocol).bind(values)


@pytest.mark.parametrize("name", [n for n, e in PROTOCOLS.items() if e.parameters is not None])
def test_each_object_declares_its_programs_parameters_with_the_same_defaults(name: str) -> None:
    entry = PROTOCOLS[name]
    assert entry.parameters is not None
    if entry.takes_parameters:  # the program takes the object itself: its fields are its parameters
        (params,) = list(inspect.signature(entry.program).parameters.values())[1:]
        assert params.annotation in {c.__name__ for c in entry.parameters.__mro__}  # its own, or a base it shares
        return
    declared = {p.name: p.default for p in list(inspect.signature(entry.program).parameters.values())[1:]}
    fields = {f.name: f.default for f in dataclasses.fields(entry.parameters)}
    assert set(fields) == set(declared)
    for key, default in fields.items():
        expected = inspect.Parameter.empty if default is dataclasses.MISSING else default
        assert declared[key] == expected, key


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"lambdas": [0.5, 0.0]}, r"^lambdas\[1\] must be a finite number > 0 and <= 1, got 0.0 \(float\)$"),
        ({}, r"give lambdas \(the lambda paper's first choice\) or epsilon \(per respondent\), exactly one; got "
             r"lambdas = None, epsilon = None"),
        ({"epsilon": 2.0, "regenerate": lambda lams, check: lams},
         r"regenerate cannot be combined with epsilon: new λ would change the budget"),
        ({"lambdas": [0.5], "regenerate": 3}, r"regenerate must be a function \(lambdas, check\) -> lambdas, got 3"),
        ({"lambdas": [0.5], "min_bits": float("nan")}, r"^min_bits must be a finite number, got nan \(float\)$"),
        ({"lambdas": [0.5], "max_rounds": 0}, r"^max_rounds must be an integer >= 1, got 0 \(int\)$"),
    ],
)
def test_lambda_parameters_refuse_bad_values(values: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        lookup("lambda").bind(values)
