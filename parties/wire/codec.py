"""The one wire codec: :class:`parties.wire.messages.Message` <-> bytes (struct based, no pickle).

Wire format (little endian)::

    header  = magic b"MR" | version u8 (=1) | kind u16                      5 bytes
    fields  in declaration order, by declared type:
        int      i64                      float   f64 (IEEE 754)
        bool     u8 (0 or 1)              str     u32 length | UTF-8 bytes
        bytes    u32 length | bytes       X|None  u8 flag (0 none, 1 some) | X
        tuple[X, ...]  u32 count | items  tuple[X, Y]  X | Y
        ndarray  u8 dtype code (index+1 in ARRAY_DTYPES) | u8 ndim | u64 x ndim shape
                 | C-order little-endian data

``decode`` rejects, with :class:`mprr.errors.MessageError`: a wrong magic or version, an
unknown kind, a kind not in ``expected``, truncated data, extra trailing bytes, a bad dtype
code, invalid UTF-8, a bool byte other than 0/1, and any value the message class's validation
refuses.  Encoding/decoding plans are compiled once per class (runs of fixed-size fields are
packed with one precompiled ``struct.Struct``), so the per-message cost has no reflection.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable
from operator import attrgetter
from typing import Any

import numpy as np

from mprr.errors import MessageError
from parties.wire.messages import (
    ARRAY_DTYPES,
    FieldType,
    Message,
    message_class,
    resolve_kinds,
)

__all__ = ["HEADER_SIZE", "MAGIC", "VERSION", "decode", "encode", "peek_kind"]

MAGIC = b"MR"
VERSION = 1
_HEADER = struct.Struct("<2sBH")
HEADER_SIZE = _HEADER.size
_U32 = struct.Struct("<I")
_I64 = struct.Struct("<q")
_F64 = struct.Struct("<d")
_DTYPES = tuple(np.dtype(d).newbyteorder("<") for d in ARRAY_DTYPES)
_DTYPE_CODE = {np.dtype(d): i + 1 for i, d in enumerate(ARRAY_DTYPES)}
_MAX_NDIM = 32
_MAX_BYTES = 2**48  # no shape may describe more than 256 TiB, even with a zero-length axis

Encoder = Callable[[Any, list[bytes]], None]
Decoder = Callable[[bytes, int], tuple[Any, int]]
_FIXED = {"int": "q", "float": "d", "bool": "B"}


# --------------------------------------------------------------------------- encoders


def _field_encoder(ft: FieldType) -> Encoder:
    tag = ft.tag
    if tag == "int":
        pack_q = _I64.pack
        return lambda v, out: out.append(pack_q(v))
    if tag == "float":
        pack_d = _F64.pack
        return lambda v, out: out.append(pack_d(v))
    if tag == "bool":
        return lambda v, out: out.append(b"\x01" if v else b"\x00")
    if tag in ("str", "bytes"):
        pack_i = _U32.pack
        if tag == "str":
            def enc_str(v: str, out: list[bytes]) -> None:
                b = v.encode("utf-8")
                out.append(pack_i(len(b)))
                out.append(b)
            return enc_str

        def enc_bytes(v: bytes, out: list[bytes]) -> None:
            out.append(pack_i(len(v)))
            out.append(v)
        return enc_bytes
    if tag == "seq":
        item = ft.items[0]
        if item.tag in ("int", "float"):
            code = _FIXED[item.tag]
            return lambda v, out: out.append(struct.pack(f"<I{len(v)}{code}", len(v), *v))
        inner = _field_encoder(item)

        def enc_seq(v: tuple[Any, ...], out: list[bytes]) -> None:
            out.append(_U32.pack(len(v)))
            for x in v:
                inner(x, out)
        return enc_seq
    if tag == "fixed":
        inners = [_field_encoder(t) for t in ft.items]

        def enc_fixed(v: tuple[Any, ...], out: list[bytes]) -> None:
            for f, x in zip(inners, v):
                f(x, out)
        return enc_fixed
    if tag == "optional":
        inner = _field_encoder(ft.items[0])

        def enc_opt(v: Any, out: list[bytes]) -> None:
            if v is None:
                out.append(b"\x00")
            else:
                out.append(b"\x01")
                inner(v, out)
        return enc_opt
    if tag == "array":
        def enc_array(v: np.ndarray, out: list[bytes]) -> None:
            code = _DTYPE_CODE.get(v.dtype) or _DTYPE_CODE[v.dtype.newbyteorder("=")]
            out.append(struct.pack(f"<BB{v.ndim}Q", code, v.ndim, *v.shape))
            if v.dtype.byteorder == ">" or (v.dtype.byteorder == "=" and not _LITTLE):
                v = v.astype(v.dtype.newbyteorder("<"))
            out.append(v.tobytes(order="C"))
        return enc_array
    raise MessageError(f"cannot encode field type {ft.describe()}")  # pragma: no cover


_LITTLE = np.little_endian

Step = Callable[[Message, list[bytes]], None]


def _packed(pack: Callable[..., bytes], get: Callable[[Message], Any], many: bool) -> Step:
    """A step appending a run of fixed-size fields packed by one struct."""
    if many:
        return lambda m, out: out.append(pack(*get(m)))
    return lambda m, out: out.append(pack(get(m)))


def _field_step(encode: Encoder, get: Callable[[Message], Any]) -> Step:
    """A step appending one variable-size field."""
    return lambda m, out: encode(get(m), out)


def _compile_encoder(cls: type[Message]) -> Callable[[Message], bytes]:
    header = _HEADER.pack(MAGIC, VERSION, cls.KIND)
    steps: list[Step] = []
    run: list[tuple[str, str]] = []

    def flush() -> None:
        if not run:
            return
        st = struct.Struct("<" + "".join(code for _, code in run))
        names = [n for n, _ in run]
        get = attrgetter(*names)
        steps.append(_packed(st.pack, get, len(names) > 1))
        run.clear()

    for name, ft in cls.FIELDS:
        if ft.tag in _FIXED:
            run.append((name, _FIXED[ft.tag]))
            continue
        flush()
        enc = _field_encoder(ft)
        steps.append(_field_step(enc, attrgetter(name)))
    flush()

    if len(steps) == 1 and not any(ft.tag not in _FIXED for _, ft in cls.FIELDS):
        only = steps[0]

        def encode_fixed(msg: Message) -> bytes:
            out = [header]
            only(msg, out)
            return b"".join(out)
        return encode_fixed

    def encode_message(msg: Message) -> bytes:
        out = [header]
        for step in steps:
            step(msg, out)
        return b"".join(out)
    return encode_message


_ENCODERS: dict[type, Callable[[Message], bytes]] = {}


def encode(msg: Message) -> bytes:
    """Serialize a registered message to bytes (see the module docstring for the format).

    Raises
    ------
    MessageError
        If ``msg`` is not an instance of a registered message class, or a value does not fit
        its wire type.
    """
    cls = type(msg)
    enc = _ENCODERS.get(cls)
    if enc is None:
        if not (isinstance(msg, Message) and cls.KIND and message_class(cls.KIND) is cls):
            raise MessageError(f"encode needs a registered Message instance, got {type(msg).__name__}")
        enc = _ENCODERS[cls] = _compile_encoder(cls)
    try:
        return enc(msg)
    except (struct.error, OverflowError, UnicodeEncodeError, KeyError) as exc:
        raise MessageError(f"cannot encode {cls.NAME}: {exc}") from exc


# --------------------------------------------------------------------------- decoders


def _need(buf: bytes, off: int, n: int) -> None:
    if off + n > len(buf):
        raise MessageError(f"truncated: need {n} more bytes at offset {off}, have {len(buf) - off}")


def _field_decoder(ft: FieldType, where: str) -> Decoder:
    tag = ft.tag
    if tag in ("int", "float"):
        st = _I64 if tag == "int" else _F64
        unpack, size = st.unpack_from, st.size

        def dec_num(buf: bytes, off: int) -> tuple[Any, int]:
            _need(buf, off, size)
            return unpack(buf, off)[0], off + size
        return dec_num
    if tag == "bool":
        def dec_bool(buf: bytes, off: int) -> tuple[bool, int]:
            _need(buf, off, 1)
            b = buf[off]
            if b > 1:
                raise MessageError(f"{where}: bool byte must be 0 or 1, got {b}")
            return b == 1, off + 1
        return dec_bool
    if tag in ("str", "bytes"):
        as_str = tag == "str"

        def dec_blob(buf: bytes, off: int) -> tuple[Any, int]:
            _need(buf, off, 4)
            (n,) = _U32.unpack_from(buf, off)
            off += 4
            _need(buf, off, n)
            raw = buf[off : off + n]
            if as_str:
                try:
                    return raw.decode("utf-8"), off + n
                except UnicodeDecodeError as exc:
                    raise MessageError(f"{where}: invalid UTF-8 ({exc.reason})") from None
            return bytes(raw), off + n
        return dec_blob
    if tag == "seq":
        item = ft.items[0]
        if item.tag in ("int", "float"):
            code = _FIXED[item.tag]

            def dec_numseq(buf: bytes, off: int) -> tuple[tuple[Any, ...], int]:
                if off + 4 > len(buf):
                    _need(buf, off, 4)
                (n,) = _U32.unpack_from(buf, off)
                off += 4
                if n == 0:
                    return (), off
                if off + 8 * n > len(buf):
                    _need(buf, off, 8 * n)
                return struct.unpack_from(f"<{n}{code}", buf, off), off + 8 * n
            return dec_numseq
        inner = _field_decoder(item, f"{where}[i]")

        def dec_seq(buf: bytes, off: int) -> tuple[tuple[Any, ...], int]:
            _need(buf, off, 4)
            (n,) = _U32.unpack_from(buf, off)
            off += 4
            _need(buf, off, n)  # every item takes at least one byte
            items = []
            for _ in range(n):
                x, off = inner(buf, off)
                items.append(x)
            return tuple(items), off
        return dec_seq
    if tag == "fixed":
        inners = [_field_decoder(t, f"{where}[{i}]") for i, t in enumerate(ft.items)]

        def dec_fixed(buf: bytes, off: int) -> tuple[tuple[Any, ...], int]:
            items = []
            for f in inners:
                x, off = f(buf, off)
                items.append(x)
            return tuple(items), off
        return dec_fixed
    if tag == "optional":
        inner = _field_decoder(ft.items[0], where)

        def dec_opt(buf: bytes, off: int) -> tuple[Any, int]:
            _need(buf, off, 1)
            flag = buf[off]
            if flag == 0:
                return None, off + 1
            if flag != 1:
                raise MessageError(f"{where}: optional flag must be 0 or 1, got {flag}")
            return inner(buf, off + 1)
        return dec_opt
    if tag == "array":
        def dec_array(buf: bytes, off: int) -> tuple[np.ndarray, int]:
            _need(buf, off, 2)
            code, ndim = buf[off], buf[off + 1]
            off += 2
            if not 1 <= code <= len(_DTYPES):
                raise MessageError(
                    f"{where}: bad dtype code {code}; allowed 1..{len(_DTYPES)} for {ARRAY_DTYPES}"
                )
            if ndim > _MAX_NDIM:
                raise MessageError(f"{where}: ndim must be <= {_MAX_NDIM}, got {ndim}")
            _need(buf, off, 8 * ndim)
            shape = struct.unpack_from(f"<{ndim}Q", buf, off)
            off += 8 * ndim
            dtype = _DTYPES[code - 1]
            count = extent = 1
            for s in shape:
                count *= s
                extent *= max(s, 1)
            if extent * dtype.itemsize > _MAX_BYTES:
                raise MessageError(f"{where}: declared shape {shape} is too large for an array")
            nbytes = count * dtype.itemsize
            _need(buf, off, nbytes)
            arr = np.frombuffer(buf, dtype=dtype, count=count, offset=off).reshape(shape)
            if not _LITTLE:  # pragma: no cover - big-endian hosts
                arr = arr.astype(dtype.newbyteorder("="))
                arr.flags.writeable = False
            return arr, off + nbytes
        return dec_array
    raise MessageError(f"cannot decode field type {ft.describe()}")  # pragma: no cover


def _compile_decoder(cls: type[Message]) -> Callable[[bytes, int], Message]:
    steps: list[tuple[str, Any, Any]] = []  # (kind, names | name, struct | decoder)
    run: list[tuple[str, str]] = []

    def flush() -> None:
        if run:
            st = struct.Struct("<" + "".join(c for _, c in run))
            steps.append(("fixed", tuple(n for n, _ in run), st))
            run.clear()

    for name, ft in cls.FIELDS:
        if ft.tag in _FIXED:
            run.append((name, _FIXED[ft.tag]))
        else:
            flush()
            steps.append(("var", name, _field_decoder(ft, f"{cls.NAME}.{name}")))
    flush()
    bool_fields = {n for n, ft in cls.FIELDS if ft.tag == "bool"}
    label = cls.NAME

    def decode_body(buf: bytes, off: int) -> Message:
        values: dict[str, Any] = {}
        for kind, names, how in steps:
            if kind == "fixed":
                if off + how.size > len(buf):
                    raise MessageError(
                        f"{label}: truncated at field {names[0]!r}: need {how.size} bytes at "
                        f"offset {off}, have {len(buf) - off}"
                    )
                for n, v in zip(names, how.unpack_from(buf, off)):
                    if n in bool_fields:
                        if v > 1:
                            raise MessageError(f"{label}.{n}: bool byte must be 0 or 1, got {v}")
                        v = v == 1
                    values[n] = v
                off += how.size
            else:
                try:
                    values[names], off = how(buf, off)
                except MessageError as exc:
                    raise MessageError(f"{label}: at field {names!r}: {exc}") from None
        if off != len(buf):
            raise MessageError(f"{label}: {len(buf) - off} extra bytes after the last field")
        return cls._from_wire(values)

    return decode_body


_DECODERS: dict[type, Callable[[bytes, int], Message]] = {}


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


def decode(
    data: bytes | bytearray | memoryview,
    *,
    expected: Iterable[int | str | type[Message]] | int | str | type[Message] | None = None,
) -> Message:
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
        On a wrong magic/version, unknown or unexpected kind, truncated or extra bytes, bad
        dtype code, invalid UTF-8, or a value the message class does not accept.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    kind = peek_kind(data)
    cls = message_class(kind)  # MessageError "unknown message kind"
    dec = _DECODERS.get(cls)
    if dec is None:
        dec = _DECODERS[cls] = _compile_decoder(cls)
    if expected is not None:
        allowed = resolve_kinds(expected)
        if allowed is not None and kind not in allowed:
            names = sorted(message_class(k).NAME for k in allowed)
            raise MessageError(
                f"unexpected message kind {cls.NAME} ({kind}); expected one of {names}"
            )
    return dec(data, HEADER_SIZE)
