"""Field types of message classes: what the codec can carry, and coercion of values.

:func:`parse_type` turns a field annotation into a :class:`FieldType` tree (shared by message
validation and the codec); :func:`coercer` builds, once per field, the function that checks a
value and converts it to the declared type (a list becomes a tuple, a numpy integer an ``int``,
an array a read-only C-contiguous native-endian array of an allowed dtype), raising
:class:`mprr.errors.MessageError` that names the field, the bad value and what is allowed.

Supported: ``int`` (signed 64 bit), ``float`` (64 bit), ``bool``, ``str``, ``bytes``,
``tuple[X, ...]``, fixed ``tuple[X, Y]``, ``X | None`` and numpy arrays (plain
``numpy.ndarray`` = any dtype of :data:`ARRAY_DTYPES`, or ``Annotated[np.ndarray,
ArraySpec(dtypes, ndim)]``; :data:`FloatArray` / :data:`IntArray` are shorthands).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from mprr.errors import MessageError

__all__ = [
    "ARRAY_DTYPES",
    "ArraySpec",
    "FieldType",
    "FloatArray",
    "INT64_MAX",
    "INT64_MIN",
    "IntArray",
    "coercer",
    "has_array",
    "parse_type",
]

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

#: dtypes an array field may carry, in wire-code order (the code is the index + 1).
ARRAY_DTYPES: tuple[str, ...] = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float64",
)


@dataclass(frozen=True)
class ArraySpec:
    """Constraint of an array field: allowed dtypes (``None`` = any of ARRAY_DTYPES) and ndim."""

    dtypes: tuple[str, ...] | None = None
    ndim: int | None = None

    def __post_init__(self) -> None:
        for d in self.dtypes or ():
            if d not in ARRAY_DTYPES:
                raise MessageError(f"ArraySpec dtype must be one of {ARRAY_DTYPES}, got {d!r}")


FloatArray = Annotated[np.ndarray, ArraySpec(("float64",))]
"""A float64 array field of any shape."""
IntArray = Annotated[np.ndarray, ArraySpec(("int64",))]
"""An int64 array field of any shape."""


@dataclass(frozen=True)
class FieldType:
    """Parsed type of one message field (shared by validation and the codec).

    ``tag`` is one of ``int float bool str bytes array seq fixed optional``; ``items`` holds
    the element type(s) of ``seq`` (one), ``fixed`` (several) and ``optional`` (one);
    ``spec`` the array constraint.
    """

    tag: str
    items: tuple[FieldType, ...] = ()
    spec: ArraySpec | None = None

    def describe(self) -> str:
        """Human-readable type, for error messages."""
        if self.tag == "seq":
            return f"tuple[{self.items[0].describe()}, ...]"
        if self.tag == "fixed":
            return "tuple[" + ", ".join(i.describe() for i in self.items) + "]"
        if self.tag == "optional":
            return f"{self.items[0].describe()} | None"
        if self.tag == "array":
            dt = "|".join(self.spec.dtypes) if self.spec and self.spec.dtypes else "any"
            nd = f", ndim={self.spec.ndim}" if self.spec and self.spec.ndim is not None else ""
            return f"ndarray[{dt}{nd}]"
        return self.tag


_SCALARS = {int: "int", float: "float", bool: "bool", str: "str", bytes: "bytes"}


def parse_type(tp: Any, where: str) -> FieldType:
    """Turn an annotation into a :class:`FieldType`; MessageError if the codec cannot carry it."""
    if tp in _SCALARS:
        return FieldType(_SCALARS[tp])
    if tp is np.ndarray:
        return FieldType("array", spec=ArraySpec())
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is Annotated:
        base, *extras = args
        specs = [e for e in extras if isinstance(e, ArraySpec)]
        if base is np.ndarray and len(specs) == 1:
            return FieldType("array", spec=specs[0])
        return parse_type(base, where)
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return FieldType("seq", (parse_type(args[0], where),))
        if args and Ellipsis not in args:
            return FieldType("fixed", tuple(parse_type(a, where) for a in args))
    if origin in (typing.Union, types.UnionType):
        rest = [a for a in args if a is not type(None)]
        if len(rest) == 1 and len(args) == 2:
            return FieldType("optional", (parse_type(rest[0], where),))
    raise MessageError(
        f"{where}: field type {tp!r} is not supported; allowed: int, float, bool, str, bytes, "
        "numpy.ndarray (optionally Annotated with ArraySpec), tuple[X, ...], tuple[X, Y], X | None"
    )


# --------------------------------------------------------------------------- coercion


def coercer(ft: FieldType, where: str) -> Callable[[Any], Any]:
    """Build a function that checks/converts one value of type ``ft`` (MessageError if bad)."""
    tag = ft.tag

    def bad(value: Any) -> MessageError:
        text = repr(value)
        if len(text) > 80:
            text = text[:77] + "..."
        return MessageError(f"{where} must be {ft.describe()}, got {text}")

    if tag == "int":
        def c_int(v: Any) -> int:
            if type(v) is int:
                if INT64_MIN <= v <= INT64_MAX:
                    return v
                raise MessageError(f"{where} must fit in a signed 64-bit integer, got {v}")
            if isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_)):
                return c_int(int(v))
            raise bad(v)
        return c_int
    if tag == "float":
        def c_float(v: Any) -> float:
            if type(v) is float:
                return v
            if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(
                v, (bool, np.bool_)
            ):
                return float(v)
            raise bad(v)
        return c_float
    if tag == "bool":
        def c_bool(v: Any) -> bool:
            if type(v) is bool:
                return v
            if isinstance(v, np.bool_):
                return bool(v)
            raise bad(v)
        return c_bool
    if tag == "str":
        def c_str(v: Any) -> str:
            if type(v) is str:
                return v
            raise bad(v)
        return c_str
    if tag == "bytes":
        def c_bytes(v: Any) -> bytes:
            if type(v) is bytes:
                return v
            if isinstance(v, (bytearray, memoryview)):
                return bytes(v)
            raise bad(v)
        return c_bytes
    if tag == "seq":
        inner = coercer(ft.items[0], f"{where}[i]")

        def c_seq(v: Any) -> tuple[Any, ...]:
            if type(v) is tuple and not v:
                return v
            if isinstance(v, (str, bytes, np.ndarray)) or not isinstance(v, (tuple, list)):
                if isinstance(v, np.ndarray) and v.ndim == 1:
                    v = v.tolist()
                else:
                    raise bad(v)
            return tuple([inner(x) for x in v])
        return c_seq
    if tag == "fixed":
        inners = [coercer(t, f"{where}[{i}]") for i, t in enumerate(ft.items)]

        def c_fixed(v: Any) -> tuple[Any, ...]:
            if not isinstance(v, (tuple, list)) or len(v) != len(inners):
                raise bad(v)
            return tuple([f(x) for f, x in zip(inners, v)])
        return c_fixed
    if tag == "optional":
        inner = coercer(ft.items[0], where)
        return lambda v: None if v is None else inner(v)
    if tag == "array":
        spec = ft.spec or ArraySpec()
        allowed = spec.dtypes or ARRAY_DTYPES
        target = np.dtype(allowed[0]) if len(allowed) == 1 else None
        allowed_native = frozenset(np.dtype(d) for d in allowed)

        def c_array(v: Any) -> np.ndarray:
            if not isinstance(v, np.ndarray):
                if not isinstance(v, (list, tuple, int, float, np.generic)):
                    raise bad(v)
                try:
                    v = np.asarray(v)
                except (TypeError, ValueError, OverflowError) as exc:
                    raise bad(v) from exc
            dt = v.dtype
            if dt not in allowed_native and dt.newbyteorder("=") not in allowed_native:
                if target is not None and (v.size == 0 or np.can_cast(dt, target, "safe")):
                    v = v.astype(target)
                else:
                    raise MessageError(
                        f"{where} must have dtype in {allowed}, got dtype {dt.name}"
                    )
            if spec.ndim is not None and v.ndim != spec.ndim:
                raise MessageError(f"{where} must be {spec.ndim}-D, got shape {v.shape}")
            if v.flags.writeable or not v.flags.c_contiguous or not v.dtype.isnative:
                v = np.array(v, dtype=v.dtype.newbyteorder("="), order="C", copy=True)
                v.flags.writeable = False
            array: np.ndarray = v
            return array
        return c_array
    raise MessageError(f"{where}: unknown field tag {tag!r}")  # pragma: no cover




def has_array(ft: FieldType) -> bool:
    """True when a value of type ``ft`` contains an array (those need checks after decoding)."""
    return ft.tag == "array" or any(has_array(t) for t in ft.items)
