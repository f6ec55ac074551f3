"""Wire format of the frame channel between the controller process and party shard hosts.

Both multi-process runtimes (:mod:`parties.tcp`, :mod:`parties.ray_runtime`) carry the same
records between the controller process and a :class:`~parties.shard.PartyShard`:

``DATA``
    One protocol :class:`~parties.transport.Frame`: ``src``, ``dst``, ``kind``, a reorder
    ``position`` (``-1``: append) , the phase and the payload — the one codec's bytes
    (:mod:`parties.wire.codec`), untouched.  Header ``>BiiHiB`` + phase (UTF-8, ≤ 255 bytes).
``MULTI``
    One protocol frame for several destinations (a broadcast): ``src``, ``kind``, the phase,
    the destinations (int32 each) and the payload once.  Header ``>BiHBI`` (tag, src, kind,
    phase length, number of destinations) + phase + destinations + payload.  Only where the
    link opts in (:attr:`RecordBatcher.multicast`: the controller's links to a tcp worker and to
    a Ray shard): a request to 500,000 parties
    then crosses as one payload, not 500,000 copies.
``COLUMNS``
    Replies of several parties of the shard to one release request (reply columns,
    :mod:`parties.columns`): the tag, then the codec's bytes of one
    :class:`~parties.wire.messages.ReplyBlock` — senders, phase, request id, codes and the
    members' shared layout, checked by decoding (:func:`read_columns`).  Each member is counted
    at the codec size of its own message; ``columns_saved`` counts the payload bytes that did
    not cross (each member's layout carried once).  A shard sends columns of at least
    :data:`MIN_COLUMNS` members; fewer leave as ``DATA`` records (:func:`column_frames`).
``CONTROL``
    A harness record (hello, setup, crash notice, finish, report): ``(tag, body)`` pickled,
    read back by a *restricted* unpickler that only rebuilds classes of ``mprr`` /
    ``parties``, the composition rules of :mod:`mprr.privacy.composition` and a few numpy / builtin
    types (:func:`loads`) — any other name (a function, a module) is rejected.
    Control records never carry protocol messages and are not counted as protocol traffic.

On a byte stream (TCP) every record is preceded by its length (``>I``, at most
:data:`MAX_RECORD` bytes); :func:`pack_stream` / :class:`StreamDecoder` do that.  The bytes
a record adds around the payload are the *framing overhead* reported beside the payload
bytes (which are identical to the in-memory network's); bytes on the wire = payload + framing
+ control - multicast_saved - columns_saved.
"""

from __future__ import annotations

import asyncio
import io
import pickle
import struct
import sys
from abc import abstractmethod
from array import array
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from mprr.errors import MessageError
from parties.columns import ReplyColumns
from parties.link import Link
from parties.plugins import trusted
from parties.transport import CONTROLLER, Frame
from parties.wire.codec import decode, encode
from parties.wire.messages import ReplyBlock

__all__ = [
    "COLUMNS",
    "CONTROL",
    "DATA",
    "MULTI",
    "MAX_RECORD",
    "MIN_COLUMNS",
    "RecordBatcher",
    "StreamDecoder",
    "column_frames",
    "columns_record",
    "dumps",
    "frame_record",
    "loads",
    "multi_record",
    "pack_stream",
    "read_columns",
    "read_multi",
    "read_record",
]

DATA = 1
CONTROL = 2
MULTI = 3
COLUMNS = 4
MIN_COLUMNS = 8
"""Fewest members of reply columns sent as one ``COLUMNS`` record (below, the record's own
fields outweigh the layout it saves)."""
MAX_RECORD = 1 << 30
"""Largest record accepted on a stream (1 GiB: a shard's setup carries its records)."""

_DATA_HEADER = struct.Struct(">BiiHiB")
_MULTI_HEADER = struct.Struct(">BiHBI")
_LENGTH = struct.Struct(">I")

_ALLOWED_MODULES = ("mprr.", "parties.")
_ALLOWED: frozenset[tuple[str, str]] = frozenset({
    ("builtins", "frozenset"), ("builtins", "set"), ("builtins", "complex"), ("builtins", "slice"),
    ("builtins", "range"), ("builtins", "object"),
    ("collections", "OrderedDict"), ("copyreg", "_reconstructor"), ("copyreg", "__newobj__"),
    ("numpy", "ndarray"), ("numpy", "dtype"), ("numpy.core.multiarray", "_reconstruct"),
    ("numpy._core.multiarray", "_reconstruct"), ("numpy.core.multiarray", "scalar"),
    ("numpy._core.multiarray", "scalar"), ("numpy._core.numeric", "_frombuffer"),
    ("numpy.core.numeric", "_frombuffer"), ("numpy.random._pickle", "__generator_ctor"),
    ("numpy.random._pickle", "__bit_generator_ctor"), ("numpy.random.bit_generator", "SeedSequence"),
    ("numpy.random._pickle", "__randomstate_ctor"), ("numpy.random", "SeedSequence"),
    ("numpy.dtypes", "Int64DType"), ("numpy.dtypes", "Float64DType"), ("numpy.dtypes", "BoolDType"),
    ("numpy.dtypes", "Int32DType"), ("numpy.dtypes", "Int8DType"), ("numpy.dtypes", "UInt8DType"),
    ("array", "array"), ("array", "_array_reconstructor"),  # a shard's stream keys (mprr.streams.StreamTable)
})


_FUNCTION_MODULES = ("mprr.privacy.composition",)
"""Modules whose functions may be named (composition rules kept inside accountants)."""


class _Restricted(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        if (module.startswith(_ALLOWED_MODULES) or trusted(module)) and "." not in name:
            obj = super().find_class(module, name)
            if isinstance(obj, type) or (module in _FUNCTION_MODULES and callable(obj)):
                return obj
        raise MessageError(f"control record names {module}.{name}; only classes of mprr, parties and the "
                           "plugins this process loaded (--plugin), and plain numpy/builtin types are allowed")


def dumps(tag: str, body: Any) -> bytes:
    """A ``CONTROL`` record ``(tag, body)``."""
    return bytes((CONTROL,)) + pickle.dumps((tag, body), protocol=pickle.HIGHEST_PROTOCOL)


def loads(record: bytes | memoryview) -> tuple[str, Any]:
    """Read a ``CONTROL`` record back (MessageError for anything unexpected)."""
    if not record or record[0] != CONTROL:
        raise MessageError("not a control record")
    try:
        value = _Restricted(io.BytesIO(bytes(record[1:]))).load()
    except MessageError:
        raise
    except Exception as exc:  # a malformed pickle: the sender's fault
        raise MessageError(f"malformed control record: {exc}") from None
    if not (isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str)):
        raise MessageError("a control record must be a (tag, body) pair")
    return value


_PHASE_BYTES: dict[str, bytes] = {}
"""Encoded phase names (a run has a handful): encoded once per phase, not once per frame."""


def _phase_bytes(frame: Frame) -> bytes:
    phase = _PHASE_BYTES.get(frame.phase)
    if phase is None:
        phase = frame.phase.encode()
        if len(phase) > 255:
            raise MessageError(f"phase name must be at most 255 UTF-8 bytes, got {len(phase)}")
        if len(_PHASE_BYTES) >= 1024:
            _PHASE_BYTES.clear()
        _PHASE_BYTES[frame.phase] = phase
    return phase


def frame_record(frame: Frame, position: int | None = None) -> bytes:
    """A ``DATA`` record carrying ``frame`` (and a reorder position, ``None`` = append)."""
    phase = _phase_bytes(frame)
    return _DATA_HEADER.pack(DATA, frame.src, frame.dst, frame.kind, -1 if position is None else position,
                             len(phase)) + phase + frame.payload


def read_record(record: bytes) -> tuple[Frame, int | None]:
    """``(frame, position)`` of a ``DATA`` record (MessageError if malformed)."""
    size = _DATA_HEADER.size
    if len(record) < size or record[0] != DATA:
        raise MessageError(f"a data record needs a {size}-byte header, got {len(record)} bytes")
    _, src, dst, kind, position, plen = _DATA_HEADER.unpack_from(record)
    end = size + plen
    if len(record) < end:
        raise MessageError("data record shorter than its phase name")
    return Frame(src, dst, _phase(record[size:end]), kind, record[end:]), None if position < 0 else position


_PHASES: dict[bytes, str] = {}
"""Decoded phase names (a run has a handful): one ``str`` per phase, not one per frame."""


def _phase(raw: bytes) -> str:
    phase = _PHASES.get(raw)
    if phase is None:
        try:
            phase = raw.decode()
        except UnicodeDecodeError:
            raise MessageError("phase name is not UTF-8") from None
        if len(_PHASES) >= 1024:
            _PHASES.clear()
        _PHASES[raw] = phase
    return phase


def multi_record(frame: Frame, dsts: array[int]) -> bytes:
    """A ``MULTI`` record carrying ``frame``'s payload to every one of ``dsts`` (int32s)."""
    phase = _phase_bytes(frame)
    big = array("i", dsts)
    if sys.byteorder == "little":
        big.byteswap()
    return (_MULTI_HEADER.pack(MULTI, frame.src, frame.kind, len(phase), len(dsts)) + phase + big.tobytes()
            + frame.payload)


def read_multi(record: bytes) -> tuple[Frame, np.ndarray]:
    """``(frame, destinations)`` of a ``MULTI`` record (``frame.dst`` is the first destination;
    the destinations as int64; MessageError if malformed)."""
    size = _MULTI_HEADER.size
    if len(record) < size or record[0] != MULTI:
        raise MessageError(f"a multi record needs a {size}-byte header, got {len(record)} bytes")
    _, src, kind, plen, count = _MULTI_HEADER.unpack_from(record)
    end = size + plen + 4 * count
    if count == 0 or len(record) < end:
        raise MessageError(f"multi record shorter than its phase name and {count} destinations")
    dsts = np.frombuffer(record, dtype=">i4", count=count, offset=size + plen).astype(np.int64)
    return Frame(src, int(dsts[0]), _phase(record[size:size + plen]), kind, record[end:]), dsts


def columns_record(block: ReplyColumns) -> bytes | None:
    """A ``COLUMNS`` record carrying ``block`` (``None``: fewer than :data:`MIN_COLUMNS`
    members, or no shared layout: its members leave as ``DATA`` records, :func:`column_frames`)."""
    wire = block.wire() if len(block) >= MIN_COLUMNS else None
    return None if wire is None else bytes((COLUMNS,)) + encode(wire)


def read_columns(record: bytes) -> ReplyColumns:
    """The reply columns of a ``COLUMNS`` record (MessageError if malformed: the codec's checks of
    :class:`~parties.wire.messages.ReplyBlock`; which parties the sender may speak for is the
    router's check)."""
    if not record or record[0] != COLUMNS:
        raise MessageError("not a columns record")
    block = decode(memoryview(record)[1:], expected=ReplyBlock)
    assert isinstance(block, ReplyBlock)  # (decode checked the kind)
    return ReplyColumns.of_wire(block)


def column_frames(block: ReplyColumns) -> Iterator[Frame]:
    """Each member of ``block`` as its own frame to the controller (its message and the codec's bytes)."""
    for k in range(len(block)):
        yield Frame(int(block.srcs[k]), CONTROLLER, block.phase, block.kind, block.payload(k), block.message(k))


def pack_stream(records: list[bytes]) -> bytes:
    """Length-prefix every record and join them (one write on a byte stream)."""
    out = bytearray()
    for r in records:
        out += _LENGTH.pack(len(r))
        out += r
    return bytes(out)


LENGTH_SIZE = _LENGTH.size


class StreamDecoder:
    """Split a byte stream into records (length-prefixed); rejects oversized lengths."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[bytes]:
        """Add ``data``; return the complete records now available."""
        buf = self._buf
        buf += data
        out: list[bytes] = []
        off = 0
        n = len(buf)
        while n - off >= 4:
            (length,) = _LENGTH.unpack_from(buf, off)
            if length > MAX_RECORD:
                raise MessageError(f"record length {length} exceeds the limit {MAX_RECORD}")
            if n - off - 4 < length:
                break
            out.append(bytes(buf[off + 4:off + 4 + length]))
            off += 4 + length
        if off:
            del buf[:off]
        return out


class RecordBatcher(Link):
    """Records out to one peer, batched per event-loop turn, with the sent-byte counters.

    In the controller process it is the router's :class:`~parties.link.Link` to a remote party
    host (the tcp stream to a worker, the link to a Ray shard actor): ``push`` / ``push_many``
    write frames, ``crash`` a crash notice.

    ``sent`` counts payload bytes (the codec's, identical to the in-memory network's: one copy
    per destination), the framing a record adds around them, and control records; ``prefix``
    is what the carrier adds per record (the TCP length prefix; 0 for Ray).  With
    :attr:`multicast`, consecutive frames of one broadcast (the same payload object from the
    same sender, phase and kind, no reorder position) leave as one ``MULTI`` record;
    ``sent["multicast_saved"]`` counts the payload copies that did not cross (bytes on the
    wire = payload + framing + control - multicast_saved).  Subclasses write a batch in
    :meth:`_write`.
    """

    prefix: int = 0
    multicast: bool = False
    flush_bytes: int | None = None
    """Write as soon as this many bytes are queued (``None``: once per loop turn only), so that
    a long loop of sends (a controller's round to 32,561 parties) keeps the peer busy while it
    runs instead of handing it everything at its end."""

    def __init__(self) -> None:
        self._out: list[bytes] = []
        self._queued = 0
        self._scheduled = False
        self._group: Frame | None = None  # first frame of the broadcast being gathered
        self._dsts: array[int] | None = None  # all its destinations, once it has a second one
        self.sent = {"payload": 0, "framing": 0, "control": 0, "multicast_saved": 0, "columns_saved": 0}
        self.received = {"payload": 0, "framing": 0, "control": 0, "columns_saved": 0}

    def count_in(self, record: bytes, payload: int | None) -> None:
        """Count one record received from the peer: a frame's ``payload`` bytes and the framing
        around them (``payload`` None: a control record, all of it)."""
        if payload is None:
            self.received["control"] += len(record) + self.prefix
        else:
            self.received["payload"] += payload
            self.received["framing"] += len(record) - payload + self.prefix

    def count_columns_in(self, record: bytes, payload: int) -> None:
        """Count one ``COLUMNS`` record received: its members' ``payload`` (each at its codec
        size) and the payload bytes the record saved."""
        self.received["payload"] += payload
        self.received["columns_saved"] += payload - len(record) - self.prefix

    def send_frame(self, frame: Frame, position: int | None) -> None:
        """Queue one protocol frame (``position``: reorder slot, None = append)."""
        self.sent["payload"] += len(frame.payload)
        if self.multicast and position is None:
            group = self._group
            if group is not None:
                if frame.payload is group.payload and frame.src == group.src \
                        and frame.phase == group.phase and frame.kind == group.kind:
                    dsts = self._dsts
                    if dsts is None:
                        self._dsts = array("i", (group.dst, frame.dst))
                    else:
                        dsts.append(frame.dst)
                    return
                self._close_group()
            self._group = frame
            if not self._scheduled:
                self._schedule()
            return
        self._close_group()
        record = frame_record(frame, position)
        self.sent["framing"] += len(record) - len(frame.payload) + self.prefix
        self._queue(record)

    def send_columns(self, block: ReplyColumns) -> None:
        """Queue reply columns as one ``COLUMNS`` record (or, below :data:`MIN_COLUMNS`
        members, one ``DATA`` record each)."""
        record = columns_record(block)
        if record is None:
            for frame in column_frames(block):
                self.send_frame(frame, None)
            return
        self._close_group()
        payload = int(block.sizes.sum())
        self.sent["payload"] += payload
        self.sent["columns_saved"] += payload - len(record) - self.prefix
        self._queue(record)

    def _close_group(self) -> None:
        """Queue the broadcast being gathered as one record."""
        group = self._group
        if group is None:
            return
        self._group = None
        size = len(group.payload)
        dsts = self._dsts
        if dsts is None:
            record = frame_record(group)
        else:
            self._dsts = None
            record = multi_record(group, dsts)
            self.sent["multicast_saved"] += (len(dsts) - 1) * size
        self.sent["framing"] += len(record) - size + self.prefix
        self._queue(record)

    def send_control(self, tag: str, body: Any) -> None:
        """Queue one harness record ``(tag, body)``."""
        self._close_group()
        record = dumps(tag, body)
        self.sent["control"] += len(record) + self.prefix
        self._queue(record)

    def _queue(self, record: bytes) -> None:
        self._out.append(record)
        self._queued += len(record)
        if self.flush_bytes is not None and self._queued >= self.flush_bytes and self._group is None:
            self.flush()
        else:
            self._schedule()

    def _schedule(self) -> None:
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self.flush)

    def flush(self) -> None:
        """Write what is queued now (also called by the loop once per turn)."""
        self._scheduled = False
        self._close_group()
        out, self._out = self._out, []
        self._queued = 0
        if out:
            self._write(out)

    @abstractmethod
    def _write(self, records: list[bytes]) -> None:
        """Carry ``records`` to the peer, in order."""

    # the Link (parties.link) to a party host that reads these records
    def push(self, frame: Frame, position: int | None) -> None:
        self.send_frame(frame, position)

    def push_many(self, frame: Frame, dsts: np.ndarray) -> None:
        if not self.multicast:
            for dst in dsts.tolist():
                self.send_frame(frame._replace(dst=dst), None)
            return
        count = int(dsts.shape[0])
        self.send_frame(frame._replace(dst=int(dsts[0])), None)  # opens or joins the group
        if count > 1:
            self.sent["payload"] += len(frame.payload) * (count - 1)
            group = self._group
            assert group is not None  # (the frame just sent opened or joined it)
            if self._dsts is None:
                self._dsts = array("i", (group.dst,))
            self._dsts.frombytes(dsts[1:].astype(np.int32).tobytes())

    def crash(self, parties: Sequence[int]) -> None:
        self.send_control("crash", tuple(parties))

    def buffered(self, party: int) -> int:
        return 0  # the host's buffers are not visible here
