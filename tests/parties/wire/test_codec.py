"""parties.wire.codec: exact wire sizes, round trips of every field type, every rejection."""

from __future__ import annotations

import math
import struct
from typing import Annotated

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mprr.errors import MessageError
from parties.wire.codec import (
    ARRAY_DTYPES,
    HEADER_SIZE,
    MAGIC,
    VERSION,
    ArraySpec,
    Message,
    decode,
    encode,
    encoded_size,
    message,
    peek_kind,
)
from parties.wire.messages import Abort, Ack, OracleReport, RandomizedValues, Refusal
from parties.wire.requests import ReleaseRequest, ReportRequest, SecureRelease, SecureSumStart

AnyArray = Annotated[np.ndarray, ArraySpec(ARRAY_DTYPES)]
IntArray = Annotated[np.ndarray, ArraySpec(("int64",))]


@message(kind=60200)
class Everything(Message):
    """One field of every supported wire type (no range validation: codec tests only)."""

    i: int
    f: float
    b: bool
    s: str
    raw: bytes
    ints: tuple[int, ...]
    floats: tuple[float, ...]
    words: tuple[str, ...]
    nested: tuple[tuple[int, ...], ...]
    arr: AnyArray
    arrays: tuple[AnyArray, ...]
    flags: tuple[bool, ...]


@message(kind=60201)
class Flags(Message):
    """Two bools and an int: a run of fixed-size fields packed with one struct."""

    a: bool
    n: int
    c: bool


@message(kind=60202)
class Positive(Message):
    """A kind whose validation the decoder must run."""

    n: int
    codes: IntArray

    def validate(self) -> None:
        if self.n <= 0:
            raise MessageError(f"Positive.n must be > 0, got {self.n}")


def _everything(**overrides: object) -> Everything:
    values: dict[str, object] = dict(
        i=-(2**63), f=-0.0, b=True, s="zürich ∑", raw=b"\x00\xff", ints=(2**63 - 1, -1),
        floats=(math.inf, -1.5), words=("", "a"), nested=((), (1, 2)),
        arr=np.arange(6, dtype=np.uint16).reshape(2, 3),
        arrays=(np.zeros(0), np.array([[1]], dtype=np.int8)), flags=(False, True),
    )
    values.update(overrides)
    return Everything(**values)  # type: ignore[arg-type]


# ------------------------------------------------------------------ exact sizes


def test_header_and_hand_computed_sizes() -> None:
    assert HEADER_SIZE == 5
    data = encode(Ack(1, (1, 2)))
    assert data[:5] == struct.pack("<2sBH", MAGIC, VERSION, 6)
    # header 5 + request_id 8 + count 4 + two ids 16
    assert len(data) == 5 + 8 + 4 + 16 == 33
    assert data[5:13] == struct.pack("<q", 1)
    # RandomizedValues(7, [3]): header 5 + id 8 + array (code 1 + ndim 1 + shape 8 + data 8) + ids count 4
    assert len(encode(RandomizedValues(7, [3]))) == 5 + 8 + (2 + 8 + 8) + 4 == 35
    # Abort("x"): 5 + (4 + 1) + (4 + 0)
    assert len(encode(Abort("x"))) == 14


def test_array_wire_layout() -> None:
    data = encode(RandomizedValues(0, [1, 2]))
    body = data[13:]
    assert body[0] == ARRAY_DTYPES.index("int64") + 1 and body[1] == 1
    assert struct.unpack_from("<Q", body, 2) == (2,)
    assert np.frombuffer(body, dtype="<i8", count=2, offset=10).tolist() == [1, 2]


def test_fixed_field_runs_are_packed_together() -> None:
    data = encode(Flags(True, -5, False))
    assert data[5:] == b"\x01" + struct.pack("<q", -5) + b"\x00"
    assert decode(data) == Flags(True, -5, False)


# The bytes of every generic and request kind, as the codec before the generated one wrote them
# (main at 13a0172): a change of layout must be deliberate.
GOLDEN = [
    (RandomizedValues(7, [3, 0], (1,)),
     "4d5201020007000000000000000401020000000000000003000000000000000000000000000000010000000100000000000000"),
    (Refusal(7, "budget", 1.5, math.inf),
     "4d52010300070000000000000006000000627564676574000000000000f83f000000000000f07f"),
    (Abort("stop", "collect"),
     "4d520105000400000073746f7007000000636f6c6c656374"),
    (Ack(7, (2,)),
     "4d520106000700000000000000010000000200000000000000"),
    (ReleaseRequest(1, "p", ((0, 1),), ((0, 1),), ("grr",), ((0.5,),)),
     "4d520164000100000000000000010000007001000000020000000000000000000000010000000000000001000000020000000000000000000000010000000000000001000000030000006772720100000001000000000000000000e03f"),
    (SecureRelease(2, "d", "s", ((0,),), ((0,),), True),
     "4d520165000200000000000000010000006401000000730100000001000000000000000000000001000000010000000000000000000000010000000000000000"),
    (SecureSumStart(2, "s", "masked", ((0, 3),)),
     "4d5201660002000000000000000100000073060000006d61736b6564010000000200000000000000000000000300000000000000"),
    (OracleReport(7, 1, [5]),
     "4d5201070007000000000000000100000000000000040101000000000000000500000000000000"),
    (ReportRequest(1, "p", ((0, 1),), ("grr",), (0.5,), "sampled", (2.0,), 0.25, ("d",)),
     "4d5201670001000000000000000100000070010000000200000000000000000000000100000000000000010000000300000067727201"
     "000000000000000000e03f0700000073616d706c6564010000000000000000000040000000000000d03f010000000100000064"),
]


@pytest.mark.parametrize(("msg", "wire"), GOLDEN, ids=lambda v: type(v).__name__ if isinstance(v, Message) else "")
def test_every_kind_keeps_its_bytes(msg: Message, wire: str) -> None:
    assert encode(msg).hex() == wire
    assert decode(bytes.fromhex(wire)) == msg
    assert encoded_size(msg) == len(wire) // 2


# ------------------------------------------------------------------ round trips


@pytest.mark.parametrize(
    "msg",
    [
        ReleaseRequest(3, "collect", ((2, 0), (1,)), ((2, 0),), ("keep-or-uniform",), ((0.75,),)),
        RandomizedValues(2, np.arange(5)),
        RandomizedValues(0, []),
        Refusal(1, "budget exhausted", 0.7, math.inf),
        Abort("stop", "collect"),
        Ack(12),
        OracleReport(4, -1, np.array([3, 0, 9])),
        OracleReport(4, -1, []),
        ReportRequest(5, "clusters", ((0, 2), (1,)), ("oue", "olh"), (1.0, 2.5), "every"),
    ],
    ids=lambda m: type(m).__name__,
)
def test_generic_messages_round_trip(msg: Message) -> None:
    back = decode(encode(msg))
    assert type(back) is type(msg) and back == msg
    assert encoded_size(msg) == len(encode(msg))


def test_every_field_type_round_trips() -> None:
    msg = _everything()
    back = decode(encode(msg))
    assert back == msg
    assert back.f == 0.0 and math.copysign(1.0, back.f) == -1.0
    assert back.arr.dtype == np.uint16 and back.arr.shape == (2, 3)
    assert back.arrays[1].dtype == np.int8 and back.arrays[1].shape == (1, 1)
    assert not back.arr.flags.writeable


def test_nan_and_zero_dimensional_arrays_round_trip() -> None:
    msg = _everything(f=math.nan, arr=np.array(2.5), floats=(math.nan,))
    back = decode(encode(msg))
    assert math.isnan(back.f) and math.isnan(back.floats[0])
    assert back.arr.shape == () and float(back.arr) == 2.5


@pytest.mark.parametrize("dtype", ARRAY_DTYPES)
def test_every_allowed_dtype_round_trips_including_extremes(dtype: str) -> None:
    info = np.finfo(dtype) if dtype == "float64" else np.iinfo(dtype)
    arr = np.array([[info.min, 0], [1, info.max]], dtype=dtype)
    back = decode(encode(_everything(arr=arr)))
    assert back.arr.dtype == np.dtype(dtype) and np.array_equal(back.arr, arr)


def test_big_endian_input_is_sent_little_endian() -> None:
    arr = np.array([1, 256], dtype=">i4")
    data = encode(_everything(arr=arr))
    back = decode(data)
    assert back.arr.dtype == np.int32 and back.arr.tolist() == [1, 256]


_arrays = st.sampled_from(ARRAY_DTYPES).flatmap(
    lambda d: hnp.arrays(
        np.dtype(d), hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4),
        elements=(st.floats(allow_nan=True, width=64) if d == "float64" else None),
    )
)


@settings(max_examples=150, deadline=None)
@given(
    i=st.integers(-(2**63), 2**63 - 1),
    f=st.floats(allow_nan=False),
    b=st.booleans(),
    s=st.text(max_size=20),
    raw=st.binary(max_size=20),
    ints=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5).map(tuple),
    floats=st.lists(st.floats(allow_nan=False), max_size=5).map(tuple),
    words=st.lists(st.text(max_size=5), max_size=4).map(tuple),
    nested=st.lists(st.lists(st.integers(0, 9), max_size=3).map(tuple), max_size=3).map(tuple),
    arr=_arrays,
    arrays=st.lists(_arrays, max_size=2).map(tuple),
    flags=st.lists(st.booleans(), max_size=4).map(tuple),
)
def test_round_trip_property(**values: object) -> None:
    msg = Everything(**values)  # type: ignore[arg-type]
    data = encode(msg)
    assert decode(data) == msg
    assert encode(decode(data)) == data  # canonical: re-encoding gives the same bytes
    assert encoded_size(msg) == len(data)  # (non-ASCII text, nested tuples, 0-d and empty arrays)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_every_strict_prefix_is_rejected_as_truncated(data: st.DataObject) -> None:
    msg = _everything(s=data.draw(st.text(max_size=6)), ints=tuple(data.draw(st.lists(st.integers(0, 9), max_size=3))))
    wire = encode(msg)
    cut = data.draw(st.integers(0, len(wire) - 1))
    with pytest.raises(MessageError, match="truncated"):
        decode(wire[:cut])


# ------------------------------------------------------------------ rejections


def test_rejects_bad_magic() -> None:
    data = bytearray(encode(Ack(1)))
    data[0:2] = b"XX"
    with pytest.raises(MessageError, match=r"bad magic b'XX', expected b'MR'"):
        decode(bytes(data))


def test_rejects_wrong_version() -> None:
    data = bytearray(encode(Ack(1)))
    data[2] = 9
    with pytest.raises(MessageError, match="unsupported codec version 9, this codec speaks 1"):
        decode(bytes(data))


def test_rejects_unknown_kind() -> None:
    data = struct.pack("<2sBH", MAGIC, VERSION, 59998) + b"\x00" * 8
    with pytest.raises(MessageError, match="unknown message kind 59998"):
        decode(data)


def test_rejects_short_header() -> None:
    with pytest.raises(MessageError, match="shorter than the 5-byte header"):
        decode(b"MR\x01")


def test_rejects_extra_bytes() -> None:
    with pytest.raises(MessageError, match="Ack: 2 extra bytes after the last field"):
        decode(encode(Ack(1)) + b"\x00\x00")


def test_rejects_truncated_fixed_field() -> None:
    with pytest.raises(MessageError, match=r"Ack: truncated at field 'request_id'"):
        decode(encode(Ack(1))[:9])


def test_rejects_bad_dtype_code() -> None:
    data = bytearray(encode(RandomizedValues(1, [1])))
    data[13] = 42
    with pytest.raises(MessageError, match=r"RandomizedValues\.codes: bad dtype code 42; allowed 1\.\.9"):
        decode(bytes(data))


def test_rejects_dtype_the_field_does_not_allow() -> None:
    data = bytearray(encode(RandomizedValues(1, [1])))
    data[13] = ARRAY_DTYPES.index("float64") + 1
    with pytest.raises(MessageError, match=r"RandomizedValues\.codes must have dtype in \('int64',\), got dtype float64"):
        decode(bytes(data))


def test_rejects_a_dtype_the_field_does_not_allow_even_if_it_casts_safely() -> None:
    data = bytearray(encode(RandomizedValues(1, [1])))
    data[13] = ARRAY_DTYPES.index("int8") + 1
    forged = bytes(data[:-12] + b"\x01" + data[-4:])  # the value 1 as one int8 byte, then no ids
    with pytest.raises(MessageError, match=r"RandomizedValues\.codes must have dtype in \('int64',\), got dtype int8"):
        decode(forged)


def test_rejects_wrong_ndim_for_the_field() -> None:
    wire = encode(RandomizedValues(1, [1, 2]))
    # rewrite the array as 2-D (1, 2) with the same data
    head, rest = wire[:13], wire[13:]
    forged = head + bytes([rest[0], 2]) + struct.pack("<2Q", 1, 2) + rest[10:]
    with pytest.raises(MessageError, match=r"RandomizedValues\.codes must be 1-D, got shape \(1, 2\)"):
        decode(forged)


def test_rejects_too_many_dimensions() -> None:
    data = bytearray(encode(RandomizedValues(1, [1])))
    data[14] = 200
    with pytest.raises(MessageError, match="ndim must be <= 32, got 200"):
        decode(bytes(data))


def test_rejects_bool_byte_other_than_zero_or_one() -> None:
    data = bytearray(encode(Flags(True, 1, False)))
    data[5] = 2
    with pytest.raises(MessageError, match=r"Flags\.a: bool byte must be 0 or 1, got 2"):
        decode(bytes(data))


def test_rejects_a_bool_byte_in_a_tuple_other_than_zero_or_one() -> None:
    wire = encode(_everything())
    flags_at = len(wire) - 2  # the two bools of 'flags' are the last bytes
    bad = bytearray(wire)
    bad[flags_at] = 3
    with pytest.raises(MessageError, match=r"Everything\.flags\[i\]: bool byte must be 0 or 1, got 3"):
        decode(bytes(bad))


def test_rejects_invalid_utf8() -> None:
    wire = bytearray(encode(Abort("ab")))
    wire[9] = 0xFF
    with pytest.raises(MessageError, match=r"Abort\.reason: invalid UTF-8"):
        decode(bytes(wire))


def test_rejects_a_kind_not_expected() -> None:
    data = encode(Ack(1))
    assert decode(data, expected=[Ack, Refusal]) == Ack(1)
    assert decode(data, expected="Ack") == Ack(1)
    with pytest.raises(MessageError, match=r"unexpected message kind Ack \(6\); expected one of \['RandomizedValues', 'Refusal'\]"):
        decode(data, expected=[Refusal, RandomizedValues])


def test_rejects_values_that_fail_validation() -> None:
    forged = struct.pack("<2sBH", MAGIC, VERSION, 6) + struct.pack("<q", -3) + struct.pack("<I", 0)
    with pytest.raises(MessageError, match=r"Ack\.request_id must be >= 0, got -3"):
        decode(forged)
    wire = encode(Positive(1, [1]))
    forged = wire[:5] + struct.pack("<q", 0) + wire[13:]
    with pytest.raises(MessageError, match=r"Positive\.n must be > 0, got 0"):
        decode(forged)


def test_rejects_counts_longer_than_the_data() -> None:
    wire = bytearray(encode(Ack(1, (1,))))
    wire[13:17] = struct.pack("<I", 2**31)
    with pytest.raises(MessageError, match="truncated: need"):
        decode(bytes(wire))


def test_encode_rejects_non_messages() -> None:
    with pytest.raises(MessageError, match="encode needs a registered Message instance, got dict"):
        encode({"kind": 1})  # type: ignore[arg-type]

    class Unregistered(Ack):
        pass

    with pytest.raises(MessageError, match="got Unregistered"):
        encode(Unregistered(1))
    with pytest.raises(MessageError, match="encoded_size needs a registered Message instance, got Unregistered"):
        encoded_size(Unregistered(1))


def test_encoded_size_fails_where_encode_fails() -> None:
    msg = _everything(s="\ud800")  # a lone surrogate: a str, but no UTF-8
    with pytest.raises(MessageError, match="cannot encode Everything: 'utf-8' codec can't encode"):
        encode(msg)
    with pytest.raises(MessageError, match="cannot encode Everything: 'utf-8' codec can't encode"):
        encoded_size(msg)


def test_peek_kind_and_accepted_buffer_types() -> None:
    data = encode(Refusal(1, "no", 1.0, 0.0))
    assert peek_kind(data) == 3
    assert decode(bytearray(data)) == Refusal(1, "no", 1.0, 0.0)
    assert decode(memoryview(data)) == Refusal(1, "no", 1.0, 0.0)


def test_decoded_arrays_are_read_only_views() -> None:
    back = decode(encode(RandomizedValues(1, [1, 2, 3])))
    with pytest.raises(ValueError, match="read-only"):
        back.codes[0] = 9


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_corrupted_bytes_raise_only_message_error(data: st.DataObject) -> None:
    """Fuzz: flipping, inserting or deleting bytes never escapes as another exception type."""
    msg = data.draw(
        st.sampled_from(
            [
                _everything(),
                ReleaseRequest(3, "collect", ((2, 0), (1,)), ((2, 0),), ("keep-or-uniform",), ((0.75,),)),
                RandomizedValues(2, np.arange(3)),
                Refusal(1, "budget exhausted", 0.7, math.inf),
            ]
        )
    )
    wire = bytearray(encode(msg))
    for _ in range(data.draw(st.integers(1, 3))):
        pos = data.draw(st.integers(0, len(wire) - 1))
        action = data.draw(st.sampled_from(["flip", "insert", "delete"]))
        if action == "flip":
            wire[pos] = data.draw(st.integers(0, 255))
        elif action == "insert":
            wire.insert(pos, data.draw(st.integers(0, 255)))
        elif len(wire) > 1:
            del wire[pos]
    try:
        back = decode(bytes(wire))
    except MessageError:
        return
    assert isinstance(back, Message)


def test_huge_declared_shapes_are_rejected_without_allocating() -> None:
    wire = encode(_everything(arr=np.zeros((0, 3))))
    header = struct.pack("<BB2Q", ARRAY_DTYPES.index("float64") + 1, 2, 0, 3)
    assert header in wire
    for shape in ((0, 2**63), (2**62, 2**62), (2**40, 1)):
        forged = wire.replace(header, struct.pack("<BB2Q", ARRAY_DTYPES.index("float64") + 1, 2, *shape))
        with pytest.raises(MessageError, match="Everything"):
            decode(forged)
