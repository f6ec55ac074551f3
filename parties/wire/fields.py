"""The field types of the wire format: what each annotation of a message kind means on the wire.

:func:`parties.wire.codec.message` reads a kind's annotations once; :func:`_parse` turns each into
a :class:`Wire` — how a value is converted to the declared type (``coerce``), written
(``enc``) and read back (``dec``, rejecting what the field does not allow with a
:class:`mprr.errors.MessageError` naming the field).  Scalars (``int``, ``float``, ``bool``),
``str`` and ``bytes``, ``tuple[X, ...]`` and ``Annotated[numpy.ndarray, ArraySpec(dtypes,
ndim)]``; the byte layout is in :mod:`parties.wire.codec`'s docstring.
"""

from __future__ import annotations

import itertools
import math
import struct
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np

from mprr.errors import MessageError

__all__ = ["ARRAY_DTYPES", "ArraySpec", "Decoder", "Encoder", "Wire"]

_U32 = struct.Struct("<I")

#: dtypes an array field may carry, in wire-code order (the code is the index + 1).
ARRAY_DTYPES: tuple[str, ...] = (
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float64",
)
_WIRE_DTYPES = tuple(np.dtype(d).newbyteorder("<") for d in ARRAY_DTYPES)
_DTYPE_CODE = {np.dtype(d): i + 1 for i, d in enumerate(ARRAY_DTYPES)}
_MAX_NDIM = 32
_ARRAY_HEAD = tuple(struct.Struct(f"<BB{n}Q") for n in range(_MAX_NDIM + 1))  # dtype code, ndim, shape
_SHAPE = tuple(struct.Struct(f"<{n}Q") for n in range(_MAX_NDIM + 1))
_MAX_BYTES = 2**48  # no shape may describe more than 256 TiB, even with a zero-length axis
_LITTLE = np.little_endian
_TUPLE = frozenset({tuple})


@dataclass(frozen=True)
class ArraySpec:
    """What an array field allows: ``Annotated[np.ndarray, ArraySpec(dtypes, ndim)]``.

    ``dtypes`` are names from :data:`ARRAY_DTYPES`; ``ndim`` a number of dimensions (``None``:
    any).  A value of a single-dtype field may be given in any dtype that casts to it safely.
    """

    dtypes: tuple[str, ...]
    ndim: int | None = None

    def __post_init__(self) -> None:
        if not self.dtypes or not set(self.dtypes) <= set(ARRAY_DTYPES):
            raise MessageError(f"ArraySpec dtypes must be a non-empty subset of {ARRAY_DTYPES}, got {self.dtypes!r}")


# --------------------------------------------------------------------------- field types

Encoder = Callable[[Any, list[Any]], None]
Decoder = Callable[[bytes, int], tuple[Any, int]]


@dataclass(frozen=True)
class Wire:
    """One field's type, parsed from its annotation once: its text, conversion and wire form.

    ``coerce`` checks and converts a constructor argument, ``enc`` appends the value's bytes to
    a list, ``dec`` reads a value at an offset and returns it with the next offset, ``size`` is
    the number of bytes ``enc`` appends (computed from the value, none written); ``code`` is
    the struct code of a fixed-size scalar (the generated codecs pack runs of them together);
    ``exact`` a Python condition on ``{v}`` true when ``coerce`` would return the value itself
    (the generated constructors test it inline and call ``coerce`` only when it is false).
    """

    text: str
    coerce: Callable[[Any], Any]
    enc: Encoder
    dec: Decoder
    size: Callable[[Any], int]
    code: str = ""
    exact: str = ""


def _bad(where: str, text: str, value: Any) -> MessageError:
    shown = repr(value)
    return MessageError(f"{where} must be {text}, got {shown if len(shown) <= 80 else shown[:77] + '...'}")


def _truncated(where: str, n: int, buf: bytes, off: int) -> MessageError:
    return MessageError(f"{where}: truncated: need {n} more bytes at offset {off}, have {len(buf) - off}")


def _count(buf: bytes, off: int, size: int, where: str) -> int:
    """The u32 count at ``off``, checked against the bytes left (every item takes ``size`` or more)."""
    if off + 4 > len(buf):
        raise _truncated(where, 4, buf, off)
    (n,) = _U32.unpack_from(buf, off)
    if off + 4 + n * size > len(buf):
        raise _truncated(where, n * size, buf, off + 4)
    n_items: int = n
    return n_items


def _scalar(text: str, code: str, where: str, coerce: Callable[[Any], Any], exact: str) -> Wire:
    st = struct.Struct("<" + code)
    pack, unpack, size = st.pack, st.unpack_from, st.size

    def dec(buf: bytes, off: int) -> tuple[Any, int]:
        if off + size > len(buf):
            raise _truncated(where, size, buf, off)
        (v,) = unpack(buf, off)
        if code == "B":
            if v > 1:
                raise MessageError(f"{where}: bool byte must be 0 or 1, got {v}")
            v = v == 1
        return v, off + size

    return Wire(text, coerce, lambda v, out: out.append(pack(v)), dec, lambda v: size, code, exact)


def _int(where: str) -> Wire:
    def coerce(v: Any) -> int:
        if type(v) is not int:
            if not isinstance(v, (int, np.integer)) or isinstance(v, (bool, np.bool_)):
                raise _bad(where, "int", v)
            v = int(v)
        value: int = v
        if -(2**63) <= value < 2**63:
            return value
        raise MessageError(f"{where} must fit in a signed 64-bit integer, got {v}")
    return _scalar("int", "q", where, coerce, "type({v}) is int and -9223372036854775808 <= {v} <= 9223372036854775807")


def _float(where: str) -> Wire:
    def coerce(v: Any) -> float:
        if type(v) is float:
            return v
        if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_)):
            return float(v)
        raise _bad(where, "float", v)
    return _scalar("float", "d", where, coerce, "type({v}) is float")


def _bool(where: str) -> Wire:
    def coerce(v: Any) -> bool:
        if type(v) is bool or isinstance(v, np.bool_):
            return bool(v)
        raise _bad(where, "bool", v)
    return _scalar("bool", "B", where, coerce, "type({v}) is bool")


def _blob(as_str: bool, where: str) -> Wire:
    text = "str" if as_str else "bytes"

    def coerce(v: Any) -> Any:
        if type(v) is (str if as_str else bytes):
            return v
        if not as_str and isinstance(v, (bytearray, memoryview)):
            return bytes(v)
        raise _bad(where, text, v)

    def enc(v: Any, out: list[Any]) -> None:
        raw = v.encode() if as_str else v
        out += (_U32.pack(len(raw)), raw)

    def dec(buf: bytes, off: int) -> tuple[Any, int]:
        n = _count(buf, off, 1, where)
        raw = buf[off + 4 : off + 4 + n]
        if not as_str:
            return raw, off + 4 + n
        try:
            return raw.decode(), off + 4 + n
        except UnicodeDecodeError as exc:
            raise MessageError(f"{where}: invalid UTF-8 ({exc.reason})") from None

    def size(v: Any) -> int:
        return 4 + (len(v) if not as_str or v.isascii() else len(v.encode()))  # (ASCII: one byte a character)

    return Wire(text, coerce, enc, dec, size, exact=f"type({{v}}) is {text}")


def _seq(item: Wire, where: str) -> Wire:
    text = f"tuple[{item.text}, ...]"
    inner = item.coerce
    # a tuple whose items all have the item's exact type (and, for int, fit in 64 bits) is
    # returned as it is: coercing each item would return that item itself
    # (a tuple of such tuples likewise, checked over all their items at once)
    nested = item.text.startswith("tuple[")
    scalar = item.text[6:-6] if nested else item.text
    only = frozenset(t for t in (int, float, bool, str, bytes) if scalar == t.__name__)
    bounded = scalar == "int"

    def plain(v: tuple[Any, ...]) -> bool:
        if nested:
            if not _TUPLE.issuperset(map(type, v)):
                return False
            v = tuple(itertools.chain.from_iterable(v))
        return not v or (only.issuperset(map(type, v))
                         and (not bounded or (-(2**63) <= min(v) and max(v) < 2**63)))

    def coerce(v: Any) -> tuple[Any, ...]:
        if type(v) is tuple:
            if not v or (only and plain(v)):
                return v
        elif not isinstance(v, (tuple, list)):
            if not (isinstance(v, np.ndarray) and v.ndim == 1):
                raise _bad(where, text, v)
            v = v.tolist()
        return tuple([inner(x) for x in v])

    if item.code in ("q", "d"):  # a vector of numbers: one struct call each way
        code = item.code

        def enc_numbers(v: tuple[Any, ...], out: list[Any]) -> None:
            out.append(struct.pack(f"<I{len(v)}{code}", len(v), *v))

        def dec_numbers(buf: bytes, off: int) -> tuple[tuple[Any, ...], int]:
            n = _count(buf, off, 8, where)
            return (struct.unpack_from(f"<{n}{code}", buf, off + 4) if n else ()), off + 4 + 8 * n

        return Wire(text, coerce, enc_numbers, dec_numbers, lambda v: 4 + 8 * len(v))
    item_enc, item_dec, item_size = item.enc, item.dec, item.size

    def enc(v: tuple[Any, ...], out: list[Any]) -> None:
        out.append(_U32.pack(len(v)))
        for x in v:
            item_enc(x, out)

    def dec(buf: bytes, off: int) -> tuple[tuple[Any, ...], int]:
        n = _count(buf, off, 1, where)  # every item takes a byte or more
        off += 4
        items = []
        for _ in range(n):
            x, off = item_dec(buf, off)
            items.append(x)
        return tuple(items), off

    return Wire(text, coerce, enc, dec, lambda v: 4 + sum([item_size(x) for x in v]))


def _array(spec: ArraySpec, where: str) -> Wire:
    allowed, ndim = spec.dtypes, spec.ndim
    text = f"ndarray[{'|'.join(allowed)}{'' if ndim is None else f', ndim={ndim}'}]"
    native = frozenset(np.dtype(d) for d in allowed)
    codes = frozenset(ARRAY_DTYPES.index(d) + 1 for d in allowed)
    target = np.dtype(allowed[0]) if len(allowed) == 1 else None

    def coerce(v: Any) -> np.ndarray:
        if type(v) is np.ndarray and v.dtype in native and (ndim is None or v.ndim == ndim):
            flags = v.flags
            if not flags.writeable and flags.c_contiguous:  # already what the field holds
                return v
        if not isinstance(v, np.ndarray):
            if not isinstance(v, (list, tuple, int, float, np.generic)):
                raise _bad(where, text, v)
            try:
                v = np.asarray(v)
            except (TypeError, ValueError, OverflowError) as exc:
                raise _bad(where, text, v) from exc
        dt = v.dtype
        if dt not in native and dt.newbyteorder("=") not in native:
            if target is None or not (v.size == 0 or np.can_cast(dt, target, "safe")):
                raise MessageError(f"{where} must have dtype in {allowed}, got dtype {dt.name}")
            v = v.astype(target)
        if ndim is not None and v.ndim != ndim:
            raise MessageError(f"{where} must be {ndim}-D, got shape {v.shape}")
        if v.flags.writeable or not v.flags.c_contiguous or not v.dtype.isnative:
            v = v.copy() if v.dtype.isnative else v.astype(v.dtype.newbyteorder("="), order="C")
            v.flags.writeable = False
        array: np.ndarray = v
        return array

    def enc(v: np.ndarray, out: list[Any]) -> None:
        out += (_ARRAY_HEAD[v.ndim].pack(_DTYPE_CODE[v.dtype], v.ndim, *v.shape),
                v if _LITTLE else v.astype(v.dtype.newbyteorder("<")))

    def dec(buf: bytes, off: int) -> tuple[np.ndarray, int]:
        if off + 2 > len(buf):
            raise _truncated(where, 2, buf, off)
        code, dims = buf[off], buf[off + 1]
        if not 1 <= code <= len(ARRAY_DTYPES):
            raise MessageError(f"{where}: bad dtype code {code}; allowed 1..{len(ARRAY_DTYPES)} for {ARRAY_DTYPES}")
        if dims > _MAX_NDIM:
            raise MessageError(f"{where}: ndim must be <= {_MAX_NDIM}, got {dims}")
        if off + 2 + 8 * dims > len(buf):
            raise _truncated(where, 8 * dims, buf, off + 2)
        shape = _SHAPE[dims].unpack_from(buf, off + 2)
        off += 2 + 8 * dims
        dtype = _WIRE_DTYPES[code - 1]
        if code not in codes:
            raise MessageError(f"{where} must have dtype in {allowed}, got dtype {dtype.name}")
        if ndim is not None and dims != ndim:
            raise MessageError(f"{where} must be {ndim}-D, got shape {shape}")
        count = shape[0] if dims == 1 else math.prod(shape)
        if (count if dims == 1 else math.prod(max(s, 1) for s in shape)) * dtype.itemsize > _MAX_BYTES:
            raise MessageError(f"{where}: declared shape {shape} is too large for an array")
        if off + count * dtype.itemsize > len(buf):
            raise _truncated(where, count * dtype.itemsize, buf, off)
        arr = np.frombuffer(buf, dtype=dtype, count=count, offset=off)  # read-only
        if dims != 1:
            arr = arr.reshape(shape)
        if not _LITTLE:  # pragma: no cover - big-endian hosts
            arr = arr.astype(dtype.newbyteorder("="))
            arr.flags.writeable = False
        return arr, off + count * dtype.itemsize

    def size(v: np.ndarray) -> int:
        return _ARRAY_HEAD[v.ndim].size + v.nbytes

    return Wire(text, coerce, enc, dec, size)


def _parse(tp: Any, where: str) -> Wire:
    """The :class:`Wire` of annotation ``tp`` (MessageError if the codec cannot carry it)."""
    scalars: dict[Any, Callable[[str], Wire]] = {
        int: _int, float: _float, bool: _bool,
        str: lambda w: _blob(True, w), bytes: lambda w: _blob(False, w),
    }
    if tp in scalars:
        return scalars[tp](where)
    args = typing.get_args(tp)
    if typing.get_origin(tp) is Annotated:
        specs = [a for a in args[1:] if isinstance(a, ArraySpec)]
        if args[0] is np.ndarray and len(specs) == 1:
            return _array(specs[0], where)
        if args[0] is not np.ndarray and not specs:
            return _parse(args[0], where)
    if typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis:
        return _seq(_parse(args[0], f"{where}[i]"), where)
    raise MessageError(
        f"{where}: field type {tp!r} is not supported; allowed: int, float, bool, str, bytes, "
        "tuple[X, ...] and Annotated[numpy.ndarray, ArraySpec(dtypes, ndim)]"
    )
