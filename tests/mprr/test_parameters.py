"""Value types and frozen parameter objects (mprr.parameters)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import pytest

from mprr.errors import ConfigurationError
from mprr.parameters import (REQUIRED, Choice, Float, Int, List, Parameters, ParameterSpec, PerAttribute, Registered,
                             checked_parameters, parameter)
from mprr.registry import Registry


@dataclass(frozen=True)
class _Named:
    name: str
    aliases: tuple[str, ...] = ()


def test_per_attribute_takes_a_scalar_or_one_value_per_attribute() -> None:
    kind = PerAttribute(Float(min=0.0, max=1.0, min_exclusive=True, max_exclusive=True))
    assert kind.check(0.5, "p") == 0.5 and kind.check([0.5, 1 / 4], "p") == (0.5, 0.25)
    assert kind.describe() == "a finite number > 0 and < 1, or a non-empty list of them (one per attribute)"
    with pytest.raises(ConfigurationError, match=r"p\[1\] must be a finite number > 0 and < 1, got 1 \(int\)"):
        kind.check([0.5, 1], "p")
    with pytest.raises(ConfigurationError, match=r"p must be a finite number > 0 and < 1, or a non-empty list .*, "
                                                 r"got \[\] \(list\)"):
        kind.check([], "p")
    with pytest.raises(ConfigurationError, match=r"p must be .*, got '0.5' \(str\)"):
        kind.check("0.5", "p")


def test_registered_checks_against_the_registry_as_it_is_now() -> None:
    things: Registry[_Named] = Registry("thing")
    things.register(_Named("alpha", ("a",)))
    kind = Registered(things)
    assert kind.check("A", "what") == "alpha"
    with pytest.raises(ConfigurationError, match=r"what must be one of the things 'alpha', got 'beta' \(str\)"):
        kind.check("beta", "what")
    things.register(_Named("beta"))  # registered later: accepted from then on
    assert kind.check("beta", "what") == "beta" and kind.describe() == "one of the things 'alpha', 'beta'"


@dataclass(frozen=True, kw_only=True)
class Example(Parameters):
    protocol: ClassVar[str] = "example"

    k: int = parameter(Int(min=2), help="categories")
    mode: str = parameter(Choice(("a", "b")), "a", help="the mode")
    weights: tuple[float, ...] | None = parameter(List(Float(min=0.0)), None)

    def validate(self) -> None:
        if self.mode == "b" and self.weights is None:
            raise ConfigurationError("mode 'b' needs weights")


def test_a_parameter_object_validates_once_and_is_frozen() -> None:
    e = Example(k=3, weights=[1, 2.5])
    assert (e.k, e.mode, e.weights) == (3, "a", (1.0, 2.5))  # normalised by the value types
    assert e.as_kwargs() == {"k": 3, "mode": "a", "weights": (1.0, 2.5)} and e.given() == {"k": 3, "weights": (1.0, 2.5)}
    with pytest.raises(dataclasses.FrozenInstanceError):
        e.k = 4  # type: ignore[misc]
    assert Example.specs() == (ParameterSpec("k", Int(min=2), REQUIRED, "categories"),
                               ParameterSpec("mode", Choice(("a", "b")), "a", "the mode"),
                               ParameterSpec("weights", List(Float(min=0.0)), None, ""))
    assert Example(k=2, weights=None).weights is None  # an optional parameter's None is not checked


@pytest.mark.parametrize(
    ("values", "match"),
    [
        ({"k": 1}, r"k must be an integer >= 2, got 1 \(int\)"),
        ({"k": 2, "mode": "c"}, r"mode must be one of 'a', 'b', got 'c' \(str\)"),
        ({"k": 2, "mode": "b"}, r"mode 'b' needs weights"),
        ({"k": 2, "size": 3}, r"unknown parameter\(s\) \['size'\] for protocol 'example'; allowed: \['k', 'mode', "
                              r"'weights'\]"),
        ({"mode": "a"}, r"protocol 'example' needs parameter\(s\) \['k'\]"),
    ],
)
def test_bad_values_are_refused_naming_the_parameter(values: dict[str, object], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        Example.from_mapping(values)


def test_spec_names_the_declared_parameters() -> None:
    assert Example.spec("mode").default == "a"
    with pytest.raises(ConfigurationError, match=r"Example declares no parameter 'p'; declared: \['k', 'mode', 'weights'\]"):
        Example.spec("p")


def test_checked_parameters_names_the_callers_key_of_a_refused_value() -> None:
    assert checked_parameters(Example, {"k": 3}, prefix="parameters") == Example(k=3)
    with pytest.raises(ConfigurationError, match=r"^parameters\.k must be an integer >= 2, got 1 \(int\)$") as refused:
        checked_parameters(Example, {"k": 1}, prefix="parameters")
    assert refused.value.parameter == "parameters.k"
    # a rule between parameters is the object's own wording
    with pytest.raises(ConfigurationError, match=r"^mode 'b' needs weights$"):
        checked_parameters(Example, {"k": 3, "mode": "b"}, prefix="parameters")
