"""Typed, validated parameters: value types, and the frozen parameter objects of the protocols.

A :class:`ValueType` checks one value (``check(value, key)`` returns it normalised or raises
:class:`~mprr.errors.ConfigurationError` naming the key, the bad value and what is allowed):
:class:`Int`, :class:`Float`, :class:`Bool`, :class:`Str`, :class:`Choice`, :class:`List` and
:class:`PerAttribute` (a scalar for every attribute, or one value per attribute, spread over
the attributes by :func:`mprr.protocols.budget.per_attribute`) and :class:`Registered` (a name of
a :class:`~mprr.registry.Registry`).

A :class:`Parameters` subclass is a frozen dataclass whose fields are declared with
:func:`parameter` (a value type, a default, one line of help): building one validates every
field once, then the cross-field rules of :meth:`Parameters.validate`; :func:`checked_parameters`
builds one from a caller's table, its refusals naming the caller's key.  The protocols'
parameter objects (:mod:`mprr.protocols.parameters`) are made this way, and the scenario
schemas (``scenarios.config``) are derived from their fields and these value types, so a
parameter's type, range and help are written once.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from mprr.errors import ConfigurationError
from mprr.registry import Registry

__all__ = [
    "REQUIRED",
    "Bool",
    "Choice",
    "Float",
    "Int",
    "List",
    "ParameterSpec",
    "Parameters",
    "PerAttribute",
    "Registered",
    "Str",
    "ValueType",
    "checked_parameters",
    "parameter",
    "show_value",
]


class _Required:
    """Marker for a parameter without a default."""

    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()
"""The default of a parameter that must be given."""


def show_value(value: Any) -> str:
    """Render a user value for an error message (TOML-like, with its type)."""
    return f"{value!r} ({type(value).__name__})"


# --------------------------------------------------------------------------- value types


class ValueType:
    """A type descriptor: ``check(value, key)`` returns the normalised value or raises."""

    def describe(self) -> str:
        raise NotImplementedError

    def check(self, value: Any, key: str) -> Any:
        raise NotImplementedError

    def _fail(self, value: Any, key: str) -> ConfigurationError:
        return ConfigurationError(f"{key} must be {self.describe()}, got {show_value(value)}", parameter=key)


def _bound(x: float) -> str:
    """A range bound as a person writes it: 1,000,000 rather than 1e+06; 0.5 as 0.5."""
    return f"{int(x):,}" if float(x).is_integer() and abs(x) < 1e15 else f"{x:g}"


def _range_text(lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> str:
    parts = []
    if lo is not None:
        parts.append(f"{'>' if lo_open else '>='} {_bound(lo)}")
    if hi is not None:
        parts.append(f"{'<' if hi_open else '<='} {_bound(hi)}")
    return " and ".join(parts)


def _in_range(x: float, lo: float | None, hi: float | None, lo_open: bool, hi_open: bool) -> bool:
    if lo is not None and (x <= lo if lo_open else x < lo):
        return False
    if hi is not None and (x >= hi if hi_open else x > hi):
        return False
    return True


@dataclass(frozen=True)
class Int(ValueType):
    """An integer (TOML booleans and floats are rejected), optionally within [min, max]."""

    min: int | None = None
    max: int | None = None

    def describe(self) -> str:
        rng = _range_text(self.min, self.max, False, False)
        return f"an integer {rng}".rstrip() if rng else "an integer"

    def check(self, value: Any, key: str) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._fail(value, key)
        if not _in_range(value, self.min, self.max, False, False):
            raise self._fail(value, key)
        return int(value)


@dataclass(frozen=True)
class Float(ValueType):
    """A real number (integers accepted), finite unless ``allow_inf``, optionally bounded."""

    min: float | None = None
    max: float | None = None
    min_exclusive: bool = False
    max_exclusive: bool = False
    allow_inf: bool = False
    integers_kept: bool = False
    """Return an integer as given (``Tv = 100`` stays ``100``) instead of as a float."""

    def describe(self) -> str:
        head = "a number" if self.allow_inf else "a finite number"
        rng = _range_text(self.min, self.max, self.min_exclusive, self.max_exclusive)
        return f"{head} {rng}" if rng else head

    def check(self, value: Any, key: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._fail(value, key)
        x = float(value)
        if math.isnan(x) or (math.isinf(x) and not self.allow_inf):
            raise self._fail(value, key)
        if not _in_range(x, self.min, self.max, self.min_exclusive, self.max_exclusive):
            raise self._fail(value, key)
        return value if self.integers_kept and isinstance(value, int) else x


@dataclass(frozen=True)
class Bool(ValueType):
    """``true`` or ``false``."""

    def describe(self) -> str:
        return "true or false"

    def check(self, value: Any, key: str) -> bool:
        if not isinstance(value, bool):
            raise self._fail(value, key)
        return value


@dataclass(frozen=True)
class Str(ValueType):
    """A non-empty string (empty allowed with ``allow_empty``)."""

    allow_empty: bool = False

    def describe(self) -> str:
        return "a string" if self.allow_empty else "a non-empty string"

    def check(self, value: Any, key: str) -> str:
        if not isinstance(value, str) or (not value and not self.allow_empty):
            raise self._fail(value, key)
        return value


@dataclass(frozen=True)
class Choice(ValueType):
    """One string out of a fixed set (a number written for one of them, such as ``4.2`` for
    ``"4.2"``, is taken as that string)."""

    choices: tuple[str, ...]

    def describe(self) -> str:
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def check(self, value: Any, key: str) -> str:
        if isinstance(value, (int, float)) and not isinstance(value, bool) and repr(value) in self.choices:
            value = repr(value)  # a choice such as "4.2" written unquoted: TOML reads it as a number
        if not isinstance(value, str) or value not in self.choices:
            raise self._fail(value, key)
        return value


@dataclass(frozen=True)
class List(ValueType):
    """A list whose items all have type ``item``; returned as a tuple."""

    item: ValueType
    min_len: int = 0
    max_len: int | None = None

    def describe(self) -> str:
        size = ""
        if self.max_len is not None and self.max_len == self.min_len:
            size = f" of exactly {self.min_len} item{'s' if self.min_len != 1 else ''}"
        elif self.min_len and self.max_len is not None:
            size = f" of {self.min_len} to {self.max_len} items"
        elif self.min_len:
            size = f" of at least {self.min_len} item{'s' if self.min_len > 1 else ''}"
        elif self.max_len is not None:
            size = f" of at most {self.max_len} items"
        return f"a list{size}, each {self.item.describe()}"

    def check(self, value: Any, key: str) -> tuple[Any, ...]:
        if not isinstance(value, (list, tuple)):
            raise self._fail(value, key)
        if len(value) < self.min_len or (self.max_len is not None and len(value) > self.max_len):
            raise ConfigurationError(
                f"{key} must be {self.describe()}, got {len(value)} items: {value!r}", parameter=key
            )
        return tuple(self.item.check(v, f"{key}[{i}]") for i, v in enumerate(value))


@dataclass(frozen=True)
class PerAttribute(ValueType):
    """One value for every attribute (a scalar of type ``item``) or one per attribute (a list)."""

    item: ValueType

    def describe(self) -> str:
        return f"{self.item.describe()}, or a non-empty list of them (one per attribute)"

    def check(self, value: Any, key: str) -> Any:
        if isinstance(value, (list, tuple)):
            if not value:
                raise self._fail(value, key)
            return tuple(self.item.check(v, f"{key}[{i}]") for i, v in enumerate(value))
        if isinstance(value, (str, bytes, Mapping)) or not _scalar(value):
            raise self._fail(value, key)
        return self.item.check(value, key)


def _scalar(value: Any) -> bool:
    return isinstance(value, (int, float, bool)) or (hasattr(value, "__float__") and not hasattr(value, "__len__"))


@dataclass(frozen=True)
class Registered(ValueType):
    """A name registered in ``registry`` (:class:`mprr.registry.Registry`), as registered when the
    value is checked (so a user's later registration counts); returns the canonical name."""

    registry: Registry[Any]

    def describe(self) -> str:
        kind = self.registry.kind
        kinds = kind[:-1] + "ies" if kind.endswith("y") else kind + "s"
        return f"one of the {kinds} " + ", ".join(repr(n) for n in self.registry)

    def check(self, value: Any, key: str) -> str:
        if not self.registry.accepts(value):
            raise self._fail(value, key)
        return str(self.registry.lookup(value).name)


# --------------------------------------------------------------------------- parameter objects


@dataclass(frozen=True)
class ParameterSpec:
    """One declared parameter: its name, value type, default (:data:`REQUIRED` if none) and help."""

    name: str
    type: ValueType
    default: Any
    help: str


def parameter(type: ValueType, default: Any = REQUIRED, *, help: str = "") -> Any:
    """Declare a field of a :class:`Parameters` class: its value type, default and help.

    ``default=None`` makes the parameter optional (``None`` is accepted and not checked).
    """
    meta = {"type": type, "help": help}
    if default is REQUIRED:
        return dataclasses.field(metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


P = TypeVar("P", bound="Parameters")


@dataclass(frozen=True, kw_only=True)
class Parameters:
    """Base of the frozen, validated parameter objects (module docstring).

    Subclasses are ``@dataclass(frozen=True, kw_only=True)`` with fields from :func:`parameter`
    and may override :meth:`validate` for rules between fields.

    Raises
    ------
    ConfigurationError
        At construction, for a value of the wrong type or range (naming the parameter, the bad
        value and what is allowed) or a broken cross-field rule.
    """

    protocol: ClassVar[str] = ""
    """The protocol these parameters belong to (for messages)."""

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            kind = f.metadata.get("type")
            value = getattr(self, f.name)
            if kind is None or (value is None and f.default is None):
                continue
            object.__setattr__(self, f.name, kind.check(value, f.name))
        self.validate()

    def validate(self) -> None:
        """Rules between parameters (none by default); raise ConfigurationError naming them."""

    @classmethod
    def specs(cls) -> tuple[ParameterSpec, ...]:
        """Every declared parameter, in declaration order."""
        return tuple(
            ParameterSpec(f.name, f.metadata["type"], REQUIRED if f.default is dataclasses.MISSING else f.default,
                          f.metadata.get("help", ""))
            for f in dataclasses.fields(cls) if "type" in f.metadata
        )

    @classmethod
    def spec(cls, name: str) -> ParameterSpec:
        """The declared parameter ``name`` (ConfigurationError naming the declared ones)."""
        for s in cls.specs():
            if s.name == name:
                return s
        raise ConfigurationError(
            f"{cls.__name__} declares no parameter {name!r}; declared: {[s.name for s in cls.specs()]}"
        )

    @classmethod
    def from_mapping(cls: type[P], values: Mapping[str, Any], *, protocol: str | None = None) -> P:
        """Build from a mapping of parameter names to values (``protocol``: the name messages use,
        by default :attr:`protocol`).

        Raises
        ------
        ConfigurationError
            For an unknown or a missing parameter (naming the allowed ones), or a bad value.
        """
        names = [f.name for f in dataclasses.fields(cls)]
        name = protocol or cls.protocol
        what = f" for protocol {name!r}" if name else f" of {cls.__name__}"
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ConfigurationError(f"unknown parameter(s) {unknown}{what}; allowed: {names}")
        missing = sorted(s.name for s in cls.specs() if s.default is REQUIRED and s.name not in values)
        if missing:
            raise ConfigurationError(f"protocol {name or cls.__name__!r} needs parameter(s) {missing}")
        return cls(**values)

    def as_kwargs(self) -> dict[str, Any]:
        """The parameters as keyword arguments of the protocol's step program."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def given(self) -> dict[str, Any]:
        """The parameters that differ from their defaults."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if f.default is dataclasses.MISSING or getattr(self, f.name) != f.default}


def checked_parameters(parameters: type[P], values: Mapping[str, Any], *, prefix: str) -> P:
    """Build ``parameters`` from a caller's table ``values``: the one check of those values, whose
    refusal names the caller's key (``prefix`` and the parameter, e.g. ``parameters.epsilon`` for
    a scenario's ``[parameters]`` table).

    Raises
    ------
    ConfigurationError
        The object's: for a refused value given in ``values``, naming ``prefix.name``, the bad
        value and what is allowed (its ``parameter`` is ``prefix.name`` too); for a rule between
        parameters, as the object words it.
    """
    try:
        return parameters(**values)
    except ConfigurationError as error:
        name = error.parameter
        if name is None or name.split("[")[0] not in values:
            raise
        raise ConfigurationError(f"{prefix}.{error}", parameter=f"{prefix}.{name}") from None
