"""Tests for mprr.protocols.budget (main paper 6.3 matrices)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.domain import check_epsilon
from mprr.matrices import grr, keep_or_uniform
from mprr.protocols.budget import (
    attribute_epsilons,
    attribute_matrices,
    attribute_specs,
    chosen_specs,
    cluster_spec,
    keep_epsilon,
    keep_for_budget,
    pair_spec,
    per_attribute,
)
from mprr.protocols.steps import MatrixSpec


@pytest.mark.parametrize("k, p", [(2, 0.5), (9, 0.1), (16, 0.7), (5, 0.3)])
def test_attribute_epsilon_of_the_stochastic_6_3_1_matrix(k: int, p: float) -> None:
    # Keep-or-uniform: diagonal p + (1-p)/k, off (1-p)/k, so eq. (4) gives ln(1 + pk/(1-p)).
    (P,) = attribute_matrices([k], p=p)
    assert np.allclose(np.diag(P.values), p + (1 - p) / k)
    assert attribute_epsilons([P])[0] == pytest.approx(math.log(1 + p * k / (1 - p)), rel=1e-12)


def test_published_6_3_1_epsilon_differs_from_the_matrix() -> None:
    # Main paper 6.3.1 prints eps_A = |ln(p / ((1-p)/|A|))| for a matrix whose rows do not sum
    # to 1; for |A| = 2, p = 0.5 that is ln 2 = 0.693, while the stochastic matrix has ln 3.
    (P,) = attribute_matrices([2], p=0.5)
    printed = abs(math.log(0.5 / (0.5 / 2)))  # ln 2
    assert P.epsilon == pytest.approx(math.log(3))
    assert P.epsilon != pytest.approx(printed)


def test_cluster_matrix_carries_the_sum_of_attribute_epsilons() -> None:
    sizes = [9, 16, 7]
    mats = attribute_matrices(sizes, p=0.5)
    eps = attribute_epsilons(mats)
    C = cluster_spec(eps).build(sizes)
    assert C.size == 9 * 16 * 7
    assert C.epsilon == pytest.approx(sum(eps), rel=1e-12)
    assert np.allclose(C.values.sum(axis=1), 1.0)


def test_singleton_cluster_matrix_is_the_attribute_matrix() -> None:
    # The 6.3.2 matrix of a one-attribute cluster is the 6.3.1 matrix itself (same eps, optimal).
    (P,) = attribute_matrices([6], p=0.3)
    C = cluster_spec([P.epsilon]).build([6])
    assert np.allclose(C.values, P.values, atol=1e-12)


def test_pair_matrix_epsilon() -> None:
    assert pair_spec((0.5, 1.0)).build((3, 4)).epsilon == pytest.approx(1.5)
    assert pair_spec((0.5, 1.0), epsilon_pair=0.7).build((3, 4)).epsilon == pytest.approx(0.7)
    assert pair_spec((0.5, 1.0)).build((3, 4)).size == 12


def test_budget_per_respondent_is_the_papers_matrices_with_one_keep_probability() -> None:
    """``epsilon`` is the respondent's whole budget: keep_or_uniform(|A|, p) with the one p whose
    attribute ε add up to it (larger domains get larger shares)."""
    mats = attribute_matrices([3, 4, 2, 5], epsilon=2.0)
    assert sum(m.epsilon for m in mats) == pytest.approx(2.0, rel=1e-12)
    p = keep_for_budget([3, 4, 2, 5], 2.0)
    assert [m.epsilon for m in mats] == pytest.approx([keep_epsilon(k, p) for k in (3, 4, 2, 5)])
    assert mats[3].epsilon > mats[0].epsilon > mats[2].epsilon
    specs, _ = attribute_specs([3, 4], epsilon=1.0)
    assert specs == (MatrixSpec.keep_or_uniform(keep_for_budget([3, 4], 1.0)),) * 2
    # one attribute: p solves ln(1 + p·k/(1 − p)) = ε exactly
    assert keep_epsilon(6, keep_for_budget([6], 0.7)) == pytest.approx(0.7, rel=1e-12)
    with pytest.raises(ConfigurationError, match="epsilon must be finite and > 0, got 0"):
        keep_for_budget([3, 4], 0)


def test_epsilon_and_matrices_choices() -> None:
    mats = attribute_matrices([3, 4], epsilon_per_attribute=[1.0, 2.0])
    assert [m.epsilon for m in mats] == pytest.approx([1.0, 2.0])
    given = (grr(3, 1.0), keep_or_uniform(4, 0.2))
    assert attribute_matrices([3, 4], matrices=given) == given


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({}, r"exactly one of p, epsilon_per_attribute, epsilon \(per respondent\) or matrices.*got none"),
        ({"p": 0.5, "epsilon": 1.0}, r"exactly one of p, .* got \['p', 'epsilon'\]"),
        ({"epsilon": [1.0, 2.0]}, "epsilon is the budget of one respondent .* use epsilon_per_attribute"),
        ({"epsilon_per_attribute": [1.0]}, "epsilon_per_attribute must give one value per attribute"),
        ({"p": 1.0}, r"p must be a real number in \(0, 1\) \(p = 0 is singular, p = 1 has ε = ∞\), got 1.0"),
        ({"p": 0.0}, r"p must be a real number in \(0, 1\) .*, got 0.0"),
        ({"p": [0.5]}, "one value per attribute"),
        ({"epsilon": -1.0}, "epsilon must be finite and > 0, got -1.0"),
        ({"epsilon": math.inf}, "epsilon must be finite and > 0"),
        ({"matrices": (grr(3, 1.0),)}, "one matrix per attribute"),
        ({"matrices": (grr(3, 1.0), grr(3, 1.0))}, r"matrices\[1\] must be 4x4"),
        ({"matrices": (grr(3, 1.0), "x")}, r"matrices\[1\] must be a RandomizationMatrix"),
    ],
)
def test_bad_choices(kwargs: dict, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        attribute_matrices([3, 4], **kwargs)


def test_check_epsilon() -> None:
    assert check_epsilon(2) == 2.0
    with pytest.raises(ConfigurationError, match="epsilon must be finite and > 0, got True"):
        check_epsilon(True)
    with pytest.raises(ConfigurationError, match="epsilon must be finite and > 0, got '0.5'"):
        check_epsilon("0.5")  # one strict check for every ε: numbers only, no parsing of strings
    with pytest.raises(ConfigurationError, match="cluster attribute epsilon must be finite"):
        cluster_spec([1.0, math.inf])


def test_per_attribute_spreads_a_scalar_or_takes_exactly_one_value_per_attribute() -> None:
    assert per_attribute(0.5, 3, "p") == [0.5, 0.5, 0.5]
    assert per_attribute((0.5, 0.25), 2, "p") == [0.5, 0.25]
    assert per_attribute(np.array([0.5, 0.25]), 2, "p") == [0.5, 0.25]
    with pytest.raises(ConfigurationError, match=r"^p must give one value per attribute \(3\), got 2 values$"):
        per_attribute([0.5, 0.25], 3, "p")
    with pytest.raises(ConfigurationError, match=r"^p must be a number or a sequence of 2 numbers, got '0.5'$"):
        per_attribute("0.5", 2, "p")


@pytest.mark.parametrize("choice", [{"p": 0.3}, {"p": [0.3, 0.6]}, {"epsilon_per_attribute": [1.0, 2.0]},
                                    {"epsilon": 1.5}, {"matrices": (grr(3, 1.0), keep_or_uniform(4, 0.2))}])
def test_chosen_specs_are_attribute_specs_of_a_validated_choice(choice: dict) -> None:
    """The step programs' path (values a parameter object checked) gives exactly the specs and the
    matrices of the public, checking attribute_specs."""
    specs, mats = chosen_specs([3, 4], **choice)
    assert (specs, mats) == attribute_specs([3, 4], **choice)
    assert tuple(spec.build([k]) for spec, k in zip(specs, (3, 4))) == mats


def test_chosen_specs_check_what_needs_the_attributes() -> None:
    with pytest.raises(ConfigurationError, match=r"^p must give one value per attribute \(3\), got 2 values$"):
        chosen_specs([3, 4, 2], p=[0.3, 0.6])
    with pytest.raises(ConfigurationError, match=r"matrices must give one matrix per attribute \(3\), got 1"):
        chosen_specs([3, 4, 2], matrices=(grr(3, 1.0),))
