"""Message kinds exchanged by the actors: frozen, typed, validated dataclasses.

Every message class is a frozen dataclass registered with :func:`message`, which gives it a
unique small integer ``KIND`` (what travels in the wire header, see :mod:`parties.wire.codec`) and a
unique ``NAME``.  Registration works across modules: the secure-sum engines define their own
kinds in their own modules with the same decorator; a duplicate kind number or name is refused.

Kind numbers (unsigned 16 bit, 1..65535) are allocated by range so modules never collide:

==============  ==========================================================
1 .. 15         generic kinds of this module (RandomizedValues, Refusal, ...)
64 .. 79        secure-sum engines (:mod:`parties.secure.messages`)
100 .. 102      release requests (:mod:`parties.wire.requests`)
60000 .. 65535  tests
==============  ==========================================================

Field types (the only ones the codec can carry): ``int`` (signed 64 bit), ``float`` (64 bit),
``bool``, ``str`` (UTF-8), ``bytes``, ``tuple[X, ...]`` and fixed ``tuple[X, Y]`` of supported
types (nesting allowed), ``X | None``, and numpy arrays: plain ``numpy.ndarray`` (any dtype of
:data:`ARRAY_DTYPES`), or :data:`FloatArray` / :data:`IntArray` / ``Annotated[np.ndarray,
ArraySpec(...)]`` to constrain dtype and number of dimensions.

Construction coerces values to the declared type (a list becomes a tuple, a numpy integer an
``int``, an array a read-only array of the declared dtype) and then runs the class's
:meth:`Message.validate`; anything wrong raises :class:`mprr.errors.MessageError` naming the
class, the field, the bad value and what is allowed.  Arrays inside messages are read-only.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar, dataclass_transform

import numpy as np

from mprr.errors import MessageError
from parties.wire.fields import (
    ARRAY_DTYPES,
    ArraySpec,
    FieldType,
    FloatArray,
    IntArray,
    coercer,
    has_array,
    parse_type,
)

if TYPE_CHECKING:
    from mprr.privacy import Refusal as PrivacyRefusal

__all__ = [
    "ARRAY_DTYPES",
    "Abort",
    "Ack",
    "ArraySpec",
    "FieldType",
    "FloatArray",
    "IntArray",
    "Message",
    "RandomizedValues",
    "Refusal",
    "message",
    "message_class",
    "require",
]

# --------------------------------------------------------------------------- registry

_BY_KIND: dict[int, type[Message]] = {}
_BY_NAME: dict[str, type[Message]] = {}


class Message:
    """Base of every message.  Subclass it and decorate with :func:`message`.

    Subclasses override :meth:`validate` for range checks (raise :class:`MessageError` naming
    the field, the value and what is allowed).  Equality compares the class and every field
    (arrays by dtype, shape and values); messages are not hashable.
    """

    KIND: ClassVar[int] = 0
    NAME: ClassVar[str] = ""
    FIELDS: ClassVar[tuple[tuple[str, FieldType], ...]] = ()
    _COERCE: ClassVar[tuple[tuple[str, Callable[[Any], Any]], ...]] = ()
    _WIRE_CHECK: ClassVar[tuple[tuple[str, Callable[[Any], Any]], ...]] = ()

    def __post_init__(self) -> None:
        setter = object.__setattr__
        for name, coerce in self._COERCE:
            value = self.__dict__[name]
            new = coerce(value)
            if new is not value:
                setter(self, name, new)
        self._validated()

    @classmethod
    def _from_wire(cls, values: dict[str, Any]) -> Message:
        """Build from codec output (used by :func:`parties.wire.codec.decode`).

        The codec already produced exact Python types, so only array constraints (dtype, ndim)
        are re-checked before :meth:`validate` runs.
        """
        obj = object.__new__(cls)
        d = obj.__dict__
        d.update(values)
        for name, coerce in cls._WIRE_CHECK:
            value = d[name]
            new = coerce(value)
            if new is not value:
                d[name] = new
        obj._validated()
        return obj

    def _validated(self) -> None:
        try:
            self.validate()
        except MessageError:
            raise
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise MessageError(f"{self.NAME}: invalid message: {exc}") from exc

    def validate(self) -> None:
        """Check ranges and cross-field rules; the default accepts everything well-typed."""

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_equal(getattr(self, n), getattr(other, n)) for n, _ in self.FIELDS)

    __hash__ = None  # type: ignore[assignment]


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f"))
        )
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


M = TypeVar("M", bound=type[Message])


@dataclass_transform(frozen_default=True, eq_default=False)
def message(*, kind: int, name: str | None = None) -> Callable[[M], M]:
    """Class decorator: make ``cls`` a frozen dataclass message with wire ``kind`` and ``name``.

    Parameters
    ----------
    kind
        Unique integer in 1..65535 (see the module docstring for the ranges).
    name
        Unique name (default: the class name).

    Raises
    ------
    MessageError
        If the kind or name is already registered to another class, the kind is out of range,
        the class does not derive from :class:`Message`, or a field type is not supported.
    """
    if isinstance(kind, bool) or not isinstance(kind, int) or not 1 <= kind <= 65535:
        raise MessageError(f"message kind must be an integer in 1..65535, got {kind!r}")

    def decorate(cls: M) -> M:
        if not (isinstance(cls, type) and issubclass(cls, Message)):
            raise MessageError(f"@message can only decorate Message subclasses, got {cls!r}")
        label = name or cls.__name__
        for what, key, old in (("kind", kind, _BY_KIND.get(kind)), ("name", label, _BY_NAME.get(label))):
            if old is not None and not _same_definition(old, cls):
                raise MessageError(
                    f"message {what} {key!r} of {cls.__module__}.{cls.__qualname__} is already "
                    f"registered to {old.__module__}.{old.__qualname__}; pick another {what}"
                )
        dc = dataclass(frozen=True, eq=False)(cls)
        hints = typing.get_type_hints(dc, include_extras=True)
        fields = tuple(
            (f.name, parse_type(hints[f.name], f"{label}.{f.name}"))
            for f in dataclasses.fields(typing.cast(Any, dc))
        )
        dc.KIND = kind
        dc.NAME = label
        dc.FIELDS = fields
        dc._COERCE = tuple((n, coercer(t, f"{label}.{n}")) for n, t in fields)
        dc._WIRE_CHECK = tuple(
            (n, c) for (n, t), (_, c) in zip(fields, dc._COERCE) if has_array(t)
        )
        for k in [k for k, v in _BY_KIND.items() if _same_definition(v, dc)]:
            del _BY_KIND[k]
        for n in [n for n, v in _BY_NAME.items() if _same_definition(v, dc)]:
            del _BY_NAME[n]
        _BY_KIND[kind] = dc
        _BY_NAME[label] = dc
        _RESOLVED.clear()
        return typing.cast(M, dc)

    return decorate


def _same_definition(a: type, b: type) -> bool:
    """True when ``b`` re-defines ``a`` (same module and qualified name, e.g. a reload)."""
    return a.__module__ == b.__module__ and a.__qualname__ == b.__qualname__


def message_class(kind_or_name: int | str) -> type[Message]:
    """Return the registered class of a kind number or name (MessageError if unknown)."""
    table: dict[Any, type[Message]] = _BY_KIND if isinstance(kind_or_name, int) else _BY_NAME
    try:
        return table[kind_or_name]
    except KeyError:
        raise MessageError(
            f"unknown message kind {kind_or_name!r}; registered: {sorted(_BY_NAME)}"
        ) from None


def resolve_kinds(kinds: Iterable[int | str | type[Message]] | type[Message] | int | str | None) -> frozenset[int] | None:
    """Normalise classes / names / kind numbers into a frozenset of kind numbers (or None)."""
    if kinds is None:
        return None
    hit = _RESOLVED.get(id(kinds))
    if hit is not None and hit[0] is kinds:
        return hit[1]
    resolved = _resolve(kinds)
    if len(_RESOLVED) >= _RESOLVED_MAX:
        _RESOLVED.clear()
    _RESOLVED[id(kinds)] = (kinds, resolved)  # holding ``kinds`` keeps its id from being reused
    return resolved


_RESOLVED: dict[int, tuple[Any, frozenset[int]]] = {}
"""Memo of :func:`resolve_kinds` by the identity of its argument: endpoints and the codec
resolve the same few filter objects (a class, a tuple of classes, an endpoint's frozenset of
kind numbers) once per message.  Cleared whenever a message class is registered."""
_RESOLVED_MAX = 1024


def _resolve(kinds: Iterable[int | str | type[Message]] | int | str | type[Message]) -> frozenset[int]:
    items = (kinds,) if isinstance(kinds, (int, str, type)) else kinds
    out = set()
    for k in items:
        if isinstance(k, type) and issubclass(k, Message) and k.KIND and _BY_KIND.get(k.KIND) is k:
            out.add(k.KIND)
        elif isinstance(k, (int, str)) and not isinstance(k, bool):
            out.add(message_class(k).KIND)
        else:
            raise MessageError(
                f"kinds must be registered Message classes, kind numbers or names, got {k!r}"
            )
    return frozenset(out)


# --------------------------------------------------------------------------- validation helpers


def require(ok: bool, text: str) -> None:
    """Raise :class:`~mprr.errors.MessageError` with ``text`` unless ``ok`` (for :meth:`Message.validate`)."""
    if not ok:
        raise MessageError(text)


def _check_ids(where: str, values: tuple[int, ...], *, distinct: bool = False) -> None:
    for v in values:
        require(v >= 0, f"{where} must contain integers >= 0, got {v}")
    if distinct:
        require(len(set(values)) == len(values), f"{where} must be distinct, got {values}")


def _min(values: np.ndarray) -> float | int:
    """Smallest entry (Python path for tiny arrays, which is several times faster)."""
    smallest: float | int = min(values.flat) if values.size <= 32 else values.min()
    return smallest


def _check_epsilon(where: str, value: float) -> None:
    require(not math.isnan(value) and value >= 0, f"{where} must be >= 0 (inf allowed), got {value}")


# --------------------------------------------------------------------------- generic kinds

@message(kind=2)
class RandomizedValues(Message):
    """Party → controller: the randomized codes released for ``request_id``.

    ``codes`` is int64 1-D, every code >= 0 (one code per release in the request order).
    """

    request_id: int
    codes: Annotated[np.ndarray, ArraySpec(("int64",), ndim=1)]
    ids: tuple[int, ...] = ()

    def validate(self) -> None:
        require(self.request_id >= 0, f"RandomizedValues.request_id must be >= 0, got {self.request_id}")
        require(
            self.codes.size == 0 or _min(self.codes) >= 0,
            "RandomizedValues.codes must be >= 0",
        )
        _check_ids("RandomizedValues.ids", self.ids)


@message(kind=3)
class Refusal(Message):
    """Party → controller: ``request_id`` refused, e.g. it would exceed the privacy budget.

    ``requested`` is the ε the release would cost, ``remaining`` the ε left (both >= 0, inf
    allowed), ``reason`` a non-empty explanation.
    """

    request_id: int
    reason: str
    requested: float
    remaining: float

    @classmethod
    def of(cls, refusal: PrivacyRefusal) -> Refusal:
        """The wire form of a party's :class:`mprr.privacy.Refusal` record of a controller request."""
        return cls(int(refusal.request_id or 0), f"{refusal.reason}: {refusal.message}", refusal.requested,
                   refusal.remaining)

    def validate(self) -> None:
        require(self.request_id >= 0, f"Refusal.request_id must be >= 0, got {self.request_id}")
        require(bool(self.reason), "Refusal.reason must not be empty")
        _check_epsilon("Refusal.requested", self.requested)
        _check_epsilon("Refusal.remaining", self.remaining)


@message(kind=5)
class Abort(Message):
    """Any actor → others: the run stops; ``reason`` non-empty, ``phase`` where it happened."""

    reason: str
    phase: str = ""

    def validate(self) -> None:
        require(bool(self.reason), "Abort.reason must not be empty")


@message(kind=6)
class Ack(Message):
    """Acknowledges ``request_id`` (>= 0); ``ids`` free identifiers (>= 0)."""

    request_id: int
    ids: tuple[int, ...] = ()

    def validate(self) -> None:
        require(self.request_id >= 0, f"Ack.request_id must be >= 0, got {self.request_id}")
        _check_ids("Ack.ids", self.ids)
