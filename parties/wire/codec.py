"""The wire format: messages are frozen, typed, validated dataclasses, and this is their one codec.

A message kind derives from :class:`Message` and is decorated with :func:`message`, which makes
it a frozen dataclass and registers it under a unique ``KIND`` (sent in the header) and
``NAME``.  Its field annotations are its wire layout: they are read once, when the class is
defined, and the kind's encoder, decoder and sizer are generated from them on its first use
(:func:`encoded_size`: an encoding's length, no byte written, for a receiver in the sender's
process that takes the message itself).

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
from typing import Any, ClassVar, TypeVar, dataclass_transform

import numpy as np

from mprr.errors import MessageError
from parties.wire.construct import constructor
from parties.wire.fields import ARRAY_DTYPES, ArraySpec, Wire, _parse

__all__ = [
    "ARRAY_DTYPES", "ArraySpec", "HEADER_SIZE", "MAGIC", "Message", "VERSION", "decode", "encode", "encoded_size",
    "known_kinds", "message", "message_class", "peek_kind", "require", "resolve_kinds",
]

MAGIC = b"MR"
VERSION = 1
_HEADER = struct.Struct("<2sBH")
HEADER_SIZE = _HEADER.size

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


def _compile(cls: type[Message]) -> tuple[Callable[[Message], bytes], Callable[[bytes], Message],
                                          Callable[[Message], int]]:
    """Generate the encoder, decoder and sizer (the encoding's length, nothing written) of ``cls``
    from its fields.

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
    fixed_bytes, sized = HEADER_SIZE, []  # the sizer: the fixed runs' bytes, plus each other field's
    for fixed, run in itertools.groupby(enumerate(cls.FIELDS), key=lambda f: bool(f[1][1].code)):
        fields = list(run)
        if fixed:
            st = env[f"S{fields[0][0]}"] = struct.Struct("<" + "".join(w.code for _, (_, w) in fields))
            names = [n for _, (n, _) in fields]
            enc.append(f"    out.append(S{fields[0][0]}.pack({', '.join('m.' + n for n in names)}))")
            fixed_bytes += st.size
            dec += [f"    if off + {st.size} > end: raise truncated({names[0]!r}, {st.size}, off, end)",
                    f"    {', '.join('v_' + n for n in names)}, = S{fields[0][0]}.unpack_from(buf, off)",
                    f"    off += {st.size}"]
            for n in (n for _, (n, w) in fields if w.code == "B"):
                dec += [f"    if v_{n} > 1: raise badbool({n!r}, v_{n})", f"    v_{n} = v_{n} == 1"]
        else:
            for i, (n, w) in fields:
                env[f"E{i}"], env[f"D{i}"], env[f"Z{i}"] = w.enc, w.dec, w.size
                enc.append(f"    E{i}(m.{n}, out)")
                sized.append(f"Z{i}(m.{n})")
                dec.append(f"    v_{n}, off = D{i}(buf, off)")
    enc.append("    return b''.join(out)")
    dec += ["    if off != end: raise extra(end - off)", "    m = new(cls)",
            f"    m.__dict__.update({', '.join(f'{n}=v_{n}' for n, _ in cls.FIELDS)})",
            "    try:", "        m.validate()", "    except MessageError:", "        raise",
            "    except (TypeError, ValueError, ArithmeticError) as exc:", "        raise invalid(m, exc) from exc",
            "    return m"]
    size = ["def size(m):", f"    return {' + '.join([str(fixed_bytes), *sized])}"]
    exec("\n".join(enc + dec + size), env)  # noqa: S102 - source built above from the class's own fields
    return (typing.cast(Callable[[Message], bytes], env["encode"]), typing.cast(Callable[[bytes], Message], env["decode"]),
            typing.cast(Callable[[Message], int], env["size"]))


_ENCODERS: dict[type, Callable[[Message], bytes]] = {}
_DECODERS: dict[int, Callable[[bytes], Message]] = {}
_SIZERS: dict[type, Callable[[Message], int]] = {}


def _generated(msg: Message, table: dict[type, Any], which: int, what: str) -> Any:
    """The generated function ``which`` (0: encoder, 2: sizer) of ``msg``'s kind, compiled on
    its first use and kept in ``table``; ``what`` names the caller in the error for anything
    but a registered message."""
    cls = type(msg)
    if not (isinstance(msg, Message) and cls.KIND and _BY_KIND.get(cls.KIND) is cls):
        raise MessageError(f"{what} needs a registered Message instance, got {cls.__name__}")
    table[cls] = generated = _compile(cls)[which]
    return generated


def encode(msg: Message) -> bytes:
    """Serialize a registered message to bytes (see the module docstring for the format).

    Raises
    ------
    MessageError
        If ``msg`` is not an instance of a registered message class, or a value does not fit
        its wire type.
    """
    enc = _ENCODERS.get(type(msg)) or _generated(msg, _ENCODERS, 0, "encode")
    try:
        return enc(msg)
    except (struct.error, OverflowError, UnicodeEncodeError, KeyError) as exc:
        raise MessageError(f"cannot encode {msg.NAME}: {exc}") from exc


def encoded_size(msg: Message) -> int:
    """``len(encode(msg))``, computed from the message's fields without writing the bytes: what
    a runtime that hands the message itself to its receiver counts on the wire.

    Raises
    ------
    MessageError
        As :func:`encode`.
    """
    size = _SIZERS.get(type(msg)) or _generated(msg, _SIZERS, 2, "encoded_size")
    try:
        return size(msg)
    except UnicodeEncodeError as exc:
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
