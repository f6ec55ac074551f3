"""The wire format: messages are frozen, typed, validated dataclasses, and this is their one codec.

A message kind derives from :class:`Message` and is decorated with :func:`message`, which makes
it a frozen dataclass and registers it under a unique ``KIND`` (sent in the header) and
``NAME``.  Its field annotations are its wire layout: they are read once, when the class is
defined, and the kind's encoder and decoder are generated from them on its first use.

Wire format (little endian)::

    header  magic b"MR" | version u8 (= 1) | kind u16                                 5 bytes
    fields  in declaration order, by annotation:
        int    i64                      float  f64 (IEEE 754)      bool  u8 (0 or 1)
        str    u32 length | UTF-8       bytes  u32 length | bytes
        tuple[X, ...]   u32 count | the items
        Annotated[np.ndarray, ArraySpec(dtypes, ndim)]
               u8 dtype code (index + 1 in ARRAY_DTYPES) | u8 ndim | u64 x ndim shape | C-order data

Construction converts each value to its declared type (a list becomes a tuple, a numpy integer
an ``int``, an array a read-only C-contiguous array of an allowed dtype; a value that already is
one is kept as it is, uncopied) and then runs the class's :meth:`Message.validate`, in a
constructor generated per kind.  :func:`decode` rejects a wrong magic or version, an unknown
or unexpected kind, truncated data, trailing bytes, a dtype, ndim or shape the field does not
allow, invalid UTF-8, a bool byte other than 0/1, and whatever ``validate`` refuses: a bad frame
is its sender's fault.  Every error is a :class:`mprr.errors.MessageError` naming the field, the
bad value and what is allowed.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import struct
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, TypeVar, dataclass_transform

import numpy as np

from mprr.errors import MessageError
from parties.wire.construct import constructor

__all__ = [
    "ARRAY_DTYPES", "ArraySpec", "HEADER_SIZE", "MAGIC", "Message", "VERSION", "decode", "encode",
    "known_kinds", "message", "message_class", "peek_kind", "require", "resolve_kinds",
]

MAGIC = b"MR"
VERSION = 1
_HEADER = struct.Struct("<2sBH")
HEADER_SIZE = _HEADER.size
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
    a list, ``dec`` reads a value at an offset and returns it with the next offset; ``code`` is
    the struct code of a fixed-size scalar (the generated codecs pack runs of them together);
    ``exact`` a Python condition on ``{v}`` true when ``coerce`` would return the value itself
    (the generated constructors test it inline and call ``coerce`` only when it is false).
    """

    text: str
    coerce: Callable[[Any], Any]
    enc: Encoder
    dec: Decoder
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

    return Wire(text, coerce, lambda v, out: out.append(pack(v)), dec, code, exact)


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

    return Wire(text, coerce, enc, dec, exact=f"type({{v}}) is {text}")


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

        return Wire(text, coerce, enc_numbers, dec_numbers)
    item_enc, item_dec = item.enc, item.dec

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

    return Wire(text, coerce, enc, dec)


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

    return Wire(text, coerce, enc, dec)


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


# --------------------------------------------------------------------------- messages

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
    FIELDS: ClassVar[tuple[tuple[str, Wire], ...]] = ()

    def __post_init__(self) -> None:
        """Coerce and validate (the dataclass's ``__init__`` calls this for a class whose
        constructor :func:`message` does not generate: see :mod:`parties.wire.construct`)."""
        values = self.__dict__
        for name, wire in self.FIELDS:
            values[name] = wire.coerce(values[name])
        self._validated()

    def _validated(self) -> None:
        try:
            self.validate()
        except MessageError:
            raise
        except (TypeError, ValueError, ArithmeticError) as exc:
            raise _invalid(self, exc) from exc

    def validate(self) -> None:
        """Check ranges and cross-field rules; the default accepts everything well-typed."""

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return all(_equal(getattr(self, n), getattr(other, n)) for n, _ in self.FIELDS)

    def __hash__(self) -> int:
        raise TypeError(f"unhashable type: {type(self).__name__!r} (messages may hold arrays)")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and a.shape == b.shape and bool(np.array_equal(a, b, equal_nan=a.dtype.kind == "f")))
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
        Unique integer in 1..65535.
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
            if old is not None:
                raise MessageError(
                    f"message {what} {key!r} of {cls.__module__}.{cls.__qualname__} is already "
                    f"registered to {old.__module__}.{old.__qualname__}; pick another {what}"
                )
        dc = dataclass(frozen=True, eq=False)(cls)
        hints = typing.get_type_hints(dc, include_extras=True)
        dc.FIELDS = tuple((f.name, _parse(hints[f.name], f"{label}.{f.name}"))
                          for f in dataclasses.fields(typing.cast(Any, dc)))
        dc.KIND, dc.NAME = kind, label
        init = constructor(dc, dc.FIELDS, _invalid)
        if init is not None:
            setattr(dc, "__init__", init)  # (replaces the dataclass's)
        _BY_KIND[kind], _BY_NAME[label] = dc, dc
        return typing.cast(M, dc)

    return decorate


def _invalid(msg: Message, exc: Exception) -> MessageError:
    return MessageError(f"{msg.NAME}: invalid message: {exc}")


def message_class(kind_or_name: int | str) -> type[Message]:
    """Return the registered class of a kind number or name (MessageError if unknown)."""
    table: dict[Any, type[Message]] = _BY_KIND if isinstance(kind_or_name, int) else _BY_NAME
    try:
        return table[kind_or_name]
    except KeyError:
        raise MessageError(f"unknown message kind {kind_or_name!r}; registered: {sorted(_BY_NAME)}") from None


def known_kinds(kinds: Iterable[int]) -> frozenset[int]:
    """The kind numbers of ``kinds`` this process has a message class for (a host told to accept
    a kind it cannot decode, an engine's it was not started with, drops it: no frame of that
    kind could be read here anyway)."""
    return frozenset(k for k in kinds if k in _BY_KIND)


Kinds = Iterable[int | str | type[Message]] | int | str | type[Message]


def resolve_kinds(kinds: Kinds | None) -> frozenset[int] | None:
    """Normalise classes / names / kind numbers into a frozenset of kind numbers (or None).

    Endpoints and :func:`decode` resolve the same few filter objects once per message, so the
    answer is memoized by the filter's identity.
    """
    if kinds is None:
        return None
    hit = _RESOLVED.get(id(kinds))
    if hit is not None and hit[0] is kinds:
        return hit[1]
    items = (kinds,) if isinstance(kinds, (int, str, type)) else kinds
    out = set()
    for k in items:
        if isinstance(k, type) and issubclass(k, Message) and k.KIND and _BY_KIND.get(k.KIND) is k:
            out.add(k.KIND)
        elif isinstance(k, (int, str)) and not isinstance(k, bool):
            out.add(message_class(k).KIND)
        else:
            raise MessageError(f"kinds must be registered Message classes, kind numbers or names, got {k!r}")
    if len(_RESOLVED) >= 1024:
        _RESOLVED.clear()
    resolved = frozenset(out)
    _RESOLVED[id(kinds)] = (kinds, resolved)  # holding ``kinds`` keeps its id from being reused
    return resolved


_RESOLVED: dict[int, tuple[Any, frozenset[int]]] = {}


def require(ok: bool, text: str) -> None:
    """Raise :class:`~mprr.errors.MessageError` with ``text`` unless ``ok`` (for :meth:`Message.validate`)."""
    if not ok:
        raise MessageError(text)


# --------------------------------------------------------------------------- the codec


def _compile(cls: type[Message]) -> tuple[Callable[[Message], bytes], Callable[[bytes], Message]]:
    """Generate the encoder and decoder of ``cls`` from its fields.

    A run of fixed-size fields (int, float, bool) is packed and unpacked by one ``struct``; the
    other fields call their :class:`Wire`'s ``enc`` / ``dec``.  For ``Ack`` (``request_id: int,
    ids: tuple[int, ...]``) the decoder reads::

        if off + 8 > end: raise truncated('request_id', 8, off, end)
        v_request_id, = S0.unpack_from(buf, off); off += 8
        v_ids, off = D1(buf, off)
        if off != end: raise extra(end - off)
        m = new(cls); m.__dict__.update(request_id=v_request_id, ids=v_ids)
        (then ``m.validate()``, its errors handled as :meth:`Message._validated` does)
    """
    label = cls.NAME
    env: dict[str, Any] = {
        "cls": cls, "new": object.__new__, "H": _HEADER.pack(MAGIC, VERSION, cls.KIND),
        "MessageError": MessageError, "invalid": _invalid,
        "truncated": lambda field, n, off, end: MessageError(
            f"{label}: truncated at field {field!r}: need {n} bytes at offset {off}, have {end - off}"),
        "extra": lambda n: MessageError(f"{label}: {n} extra bytes after the last field"),
        "badbool": lambda field, v: MessageError(f"{label}.{field}: bool byte must be 0 or 1, got {v}"),
    }
    enc = ["def encode(m):", "    out = [H]"]
    dec = ["def decode(buf):", f"    off, end = {HEADER_SIZE}, len(buf)"]
    for fixed, run in itertools.groupby(enumerate(cls.FIELDS), key=lambda f: bool(f[1][1].code)):
        fields = list(run)
        if fixed:
            st = env[f"S{fields[0][0]}"] = struct.Struct("<" + "".join(w.code for _, (_, w) in fields))
            names = [n for _, (n, _) in fields]
            enc.append(f"    out.append(S{fields[0][0]}.pack({', '.join('m.' + n for n in names)}))")
            dec += [f"    if off + {st.size} > end: raise truncated({names[0]!r}, {st.size}, off, end)",
                    f"    {', '.join('v_' + n for n in names)}, = S{fields[0][0]}.unpack_from(buf, off)",
                    f"    off += {st.size}"]
            for n in (n for _, (n, w) in fields if w.code == "B"):
                dec += [f"    if v_{n} > 1: raise badbool({n!r}, v_{n})", f"    v_{n} = v_{n} == 1"]
        else:
            for i, (n, w) in fields:
                env[f"E{i}"], env[f"D{i}"] = w.enc, w.dec
                enc.append(f"    E{i}(m.{n}, out)")
                dec.append(f"    v_{n}, off = D{i}(buf, off)")
    enc.append("    return b''.join(out)")
    dec += ["    if off != end: raise extra(end - off)", "    m = new(cls)",
            f"    m.__dict__.update({', '.join(f'{n}=v_{n}' for n, _ in cls.FIELDS)})",
            "    try:", "        m.validate()", "    except MessageError:", "        raise",
            "    except (TypeError, ValueError, ArithmeticError) as exc:", "        raise invalid(m, exc) from exc",
            "    return m"]
    exec("\n".join(enc + dec), env)  # noqa: S102 - source built above from the class's own fields
    return typing.cast(Callable[[Message], bytes], env["encode"]), typing.cast(Callable[[bytes], Message], env["decode"])


_ENCODERS: dict[type, Callable[[Message], bytes]] = {}
_DECODERS: dict[int, Callable[[bytes], Message]] = {}


def encode(msg: Message) -> bytes:
    """Serialize a registered message to bytes (see the module docstring for the format).

    Raises
    ------
    MessageError
        If ``msg`` is not an instance of a registered message class, or a value does not fit
        its wire type.
    """
    enc = _ENCODERS.get(type(msg))
    if enc is None:
        cls = type(msg)
        if not (isinstance(msg, Message) and cls.KIND and _BY_KIND.get(cls.KIND) is cls):
            raise MessageError(f"encode needs a registered Message instance, got {cls.__name__}")
        enc = _ENCODERS[cls] = _compile(cls)[0]
    try:
        return enc(msg)
    except (struct.error, OverflowError, UnicodeEncodeError, KeyError) as exc:
        raise MessageError(f"cannot encode {msg.NAME}: {exc}") from exc


def peek_kind(data: bytes) -> int:
    """Check the header of ``data`` and return its kind number (no body decoding)."""
    if len(data) < HEADER_SIZE:
        raise MessageError(f"truncated: {len(data)} bytes is shorter than the {HEADER_SIZE}-byte header")
    magic, version, kind = _HEADER.unpack_from(data, 0)
    if magic != MAGIC:
        raise MessageError(f"bad magic {magic!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise MessageError(f"unsupported codec version {version}, this codec speaks {VERSION}")
    return int(kind)


def decode(data: bytes | bytearray | memoryview, *, expected: Kinds | None = None) -> Message:
    """Deserialize bytes produced by :func:`encode`.

    Parameters
    ----------
    data
        The encoded message.
    expected
        Optional message classes / names / kind numbers allowed here; any other kind is
        rejected before its body is read.

    Raises
    ------
    MessageError
        On a wrong magic/version, unknown or unexpected kind, truncated or extra bytes, a dtype,
        ndim or shape the field does not allow, invalid UTF-8, or a value the class refuses.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    kind = peek_kind(data)
    dec = _DECODERS.get(kind)
    if dec is None:
        dec = _DECODERS[kind] = _compile(message_class(kind))[1]  # MessageError "unknown message kind"
    if expected is not None:
        allowed = resolve_kinds(expected)
        if allowed is not None and kind not in allowed:
            names = sorted(message_class(k).NAME for k in allowed)
            raise MessageError(f"unexpected message kind {message_class(kind).NAME} ({kind}); expected one of {names}")
    return dec(data)
