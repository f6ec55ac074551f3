"""Message kinds: registration, coercion and equality (parties.wire.codec), and the validation of
the generic kinds (parties.wire.messages)."""

from __future__ import annotations

import dataclasses
import inspect
import math
from typing import Annotated

import numpy as np
import pytest

from mprr.errors import MessageError, ProtocolError
from parties.wire.codec import ArraySpec, Message, decode, encode, message, message_class, resolve_kinds
from parties.wire.messages import Abort, Ack, RandomizedValues, Refusal, ReplyBlock, values_layout

FloatArray = Annotated[np.ndarray, ArraySpec(("float64",))]
IntArray = Annotated[np.ndarray, ArraySpec(("int64",))]


@message(kind=60100)
class Sample(Message):
    """A test kind with one field of every scalar family."""

    count: int
    weight: float
    flag: bool
    label: str
    blob: bytes
    items: tuple[int, ...] = ()
    table: IntArray = dataclasses.field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    doc: Annotated[str, "a note for readers only"] = ""


@message(kind=60101)
class Shaped(Message):
    """A 2-D float array field."""

    grid: Annotated[np.ndarray, ArraySpec(("float64",), ndim=2)]


@message(kind=60106)
class Tagged(Message):
    """Nested tuples and a float array with a default."""

    topic: str
    groups: tuple[tuple[int, ...], ...] = ()
    values: FloatArray = dataclasses.field(default_factory=lambda: np.empty(0))


# ------------------------------------------------------------------ registration


def test_generic_kinds_are_registered_with_unique_numbers_and_names() -> None:
    expected = {2: "RandomizedValues", 3: "Refusal", 5: "Abort", 6: "Ack", 7: "OracleReport", 8: "ReplyBlock"}
    assert {k: message_class(k).NAME for k in expected} == expected
    assert message_class(60100).NAME == "Sample"
    assert Refusal.KIND == 3 and Refusal.NAME == "Refusal"
    assert message_class(2) is RandomizedValues
    assert message_class("Refusal") is Refusal


def test_duplicate_kind_number_is_rejected() -> None:
    with pytest.raises(MessageError, match=r"kind 3 .*already registered to parties\.wire\.messages\.Refusal"):

        @message(kind=3)
        class Clash(Message):
            x: int


def test_duplicate_name_is_rejected() -> None:
    with pytest.raises(MessageError, match=r"name 'Refusal' .*already registered"):

        @message(kind=60102, name="Refusal")
        class Other(Message):
            x: int

    with pytest.raises(MessageError, match="unknown message kind 60102"):
        message_class(60102)


@pytest.mark.parametrize("kind", [0, -3, 65536, 1.5, True])
def test_kind_out_of_range_is_rejected(kind: object) -> None:
    with pytest.raises(MessageError, match="kind must be an integer in 1..65535"):
        message(kind=kind)  # type: ignore[arg-type]


def test_only_message_subclasses_can_register() -> None:
    class Plain:
        x: int

    with pytest.raises(MessageError, match="can only decorate Message subclasses"):
        message(kind=60103)(Plain)  # type: ignore[type-var]


@pytest.mark.parametrize(
    "annotation",
    [list[int], dict[str, int], set[int], tuple[int, ...] | str, object, complex, int | None, tuple[int, str],
     tuple[()], np.ndarray, Annotated[np.ndarray, "no spec"], Annotated[int, ArraySpec(("int8",))]],
)
def test_unsupported_field_types_are_rejected(annotation: object) -> None:
    namespace = {"__annotations__": {"x": annotation}}
    cls = type("Bad", (Message,), namespace)
    with pytest.raises(MessageError, match="is not supported"):
        message(kind=60104)(cls)
    with pytest.raises(MessageError, match="unknown message kind 60104"):
        message_class(60104)


def test_unknown_kind_lookup() -> None:
    with pytest.raises(MessageError, match="unknown message kind 59999"):
        message_class(59999)
    with pytest.raises(MessageError, match="unknown message kind 'Nope'"):
        message_class("Nope")


def test_resolve_kinds_accepts_classes_names_and_numbers() -> None:
    assert resolve_kinds(None) is None
    assert resolve_kinds(Refusal) == frozenset({3})
    assert resolve_kinds([Refusal, "Ack", 2]) == frozenset({2, 3, 6})
    with pytest.raises(MessageError, match="kinds must be registered Message classes"):
        resolve_kinds([3.5])  # type: ignore[list-item]
    with pytest.raises(MessageError, match="kinds must be registered Message classes"):
        resolve_kinds([Message])


def test_resolve_kinds_is_memoized_by_the_filter_object() -> None:
    filt = (Refusal, "Ack")
    assert resolve_kinds(filt) is resolve_kinds(filt) == frozenset({3, 6})


def test_message_error_is_a_protocol_error() -> None:
    assert issubclass(MessageError, ProtocolError)


# ------------------------------------------------------------------ coercion


def test_values_are_coerced_to_the_declared_types() -> None:
    s = Sample(np.int32(3), 2, np.bool_(True), "x", bytearray(b"ab"), [1, np.int64(2)], [4, 5])
    assert type(s.count) is int and s.count == 3
    assert type(s.weight) is float and s.weight == 2.0
    assert s.flag is True
    assert s.blob == b"ab" and type(s.blob) is bytes
    assert s.items == (1, 2) and all(type(i) is int for i in s.items)
    assert s.table.dtype == np.int64 and s.table.tolist() == [4, 5]


def test_arrays_are_read_only_copies() -> None:
    grid = np.ones((2, 2))
    msg = Shaped(grid)
    grid[0, 0] = 5.0
    assert msg.grid[0, 0] == 1.0
    with pytest.raises(ValueError, match="read-only"):
        msg.grid[0, 0] = 3.0


def test_non_contiguous_and_big_endian_arrays_are_normalised() -> None:
    base = np.arange(12, dtype=">f8").reshape(3, 4)
    msg = Shaped(base[:, ::2])
    assert msg.grid.flags.c_contiguous and msg.grid.dtype.isnative
    assert msg.grid.tolist() == [[0.0, 2.0], [4.0, 6.0], [8.0, 10.0]]


def test_safe_integer_arrays_widen_to_the_declared_dtype() -> None:
    msg = RandomizedValues(1, np.array([1, 2], dtype=np.uint8))
    assert msg.codes.dtype == np.int64


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda: Sample(True, 1.0, True, "x", b""), r"Sample\.count must be int, got True"),
        (lambda: Sample(1.0, 1.0, True, "x", b""), r"Sample\.count must be int, got 1\.0"),
        (lambda: Sample(2**63, 1.0, True, "x", b""), r"Sample\.count must fit in a signed 64-bit"),
        (lambda: Sample(1, "1", True, "x", b""), r"Sample\.weight must be float, got '1'"),
        (lambda: Sample(1, 1.0, 1, "x", b""), r"Sample\.flag must be bool, got 1"),
        (lambda: Sample(1, 1.0, True, b"x", b""), r"Sample\.label must be str"),
        (lambda: Sample(1, 1.0, True, "x", "s"), r"Sample\.blob must be bytes"),
        (lambda: Sample(1, 1.0, True, "x", b"", "12"), r"Sample\.items must be tuple\[int, \.\.\.\]"),
        (lambda: Sample(1, 1.0, True, "x", b"", (1, "2")), r"Sample\.items\[i\] must be int"),
        (lambda: Sample(1, 1.0, True, "x", b"", doc=3), r"Sample\.doc must be str"),
        (lambda: Sample("x" * 200, 1.0, True, "x", b""), r"Sample\.count must be int, got 'x{70,}\.\.\.$"),
        (lambda: Sample(1, 1.0, True, "x", b"", table=[1.5]), r"Sample\.table must have dtype in \('int64',\), got dtype float64"),
        (lambda: Sample(1, 1.0, True, "x", b"", table={1}), r"Sample\.table must be ndarray\[int64\]"),
        (lambda: Shaped(np.ones(3)), r"Shaped\.grid must be 2-D, got shape \(3,\)"),
        (lambda: Shaped(np.ones((2, 2), dtype=np.complex128)), r"Shaped\.grid must have dtype in \('float64',\), got dtype complex128"),
        (lambda: RandomizedValues(1, np.array([1], dtype=np.uint64)), r"must have dtype in \('int64',\), got dtype uint64"),
    ],
)
def test_wrong_types_are_rejected_naming_field_and_value(make, pattern: str) -> None:
    with pytest.raises(MessageError, match=pattern):
        make()


def test_messages_are_frozen_and_unhashable() -> None:
    msg = Ack(1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.request_id = 2  # type: ignore[misc]
    with pytest.raises(TypeError, match="unhashable"):
        hash(msg)


def test_equality_compares_arrays_by_dtype_shape_and_values() -> None:
    a = Tagged("clusters", ((0, 1), (2,)), [1.0, math.nan])
    b = Tagged("clusters", [[0, 1], [2]], np.array([1.0, math.nan]))
    assert a == b
    assert a != Tagged("clusters", ((0, 1), (2,)), [1.0, 2.0])
    assert a != Tagged("clusters", ((0, 1),), [1.0, math.nan])
    assert Ack(1) != Abort("x")
    assert RandomizedValues(1, [1, 2]) != RandomizedValues(1, [1, 3])
    assert RandomizedValues(1, [1, 2]) == RandomizedValues(1, np.array([1, 2]))
    assert Shaped(np.ones((1, 2))) != Shaped(np.ones((2, 1)))


def test_values_already_of_their_type_are_kept_uncopied() -> None:
    codes = np.arange(3, dtype=np.int64)
    codes.flags.writeable = False
    ids = (1, 2**63 - 1)
    msg = RandomizedValues(4, codes, ids)
    assert msg.codes is codes and msg.ids is ids
    groups = ((0, 1), (2,))
    assert Tagged("t", groups).groups is groups
    writable = np.arange(3, dtype=np.int64)
    assert RandomizedValues(4, writable).codes is not writable  # (a writable array is copied)


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda: Ack(1, (True,)), r"Ack\.ids\[i\] must be int, got True"),
        (lambda: Ack(1, (1, 2**63)), r"Ack\.ids\[i\] must fit in a signed 64-bit integer, got 9223372036854775808"),
        (lambda: Ack(1, (-(2**63) - 1,)), r"Ack\.ids\[i\] must fit in a signed 64-bit integer"),
        (lambda: Ack(2**63), r"Ack\.request_id must fit in a signed 64-bit integer"),
        (lambda: Tagged("t", ((0,), (1, 2.0))), r"Tagged\.groups\[i\]\[i\] must be int, got 2\.0"),
        (lambda: Tagged("t", ((0,), [1, False])), r"Tagged\.groups\[i\]\[i\] must be int, got False"),
    ],
)
def test_tuples_that_are_not_already_plain_are_checked_item_by_item(make, pattern: str) -> None:
    with pytest.raises(MessageError, match=pattern):
        make()


def test_tuple_subclasses_and_numpy_items_become_plain_tuples_of_int() -> None:
    class Ids(tuple[int, ...]):
        pass

    for given in (Ids((1, 2)), (np.int64(1), 2), [1, 2]):
        ids = Ack(3, given).ids  # type: ignore[arg-type]
        assert type(ids) is tuple and ids == (1, 2) and all(type(i) is int for i in ids)


def test_generated_constructor_is_frozen_and_reruns_validation() -> None:
    msg = Ack(1, (2,))
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.ids = ()  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del msg.ids
    assert dataclasses.replace(msg, request_id=5) == Ack(5, (2,))
    with pytest.raises(MessageError, match=r"Ack\.request_id must be >= 0, got -1"):
        dataclasses.replace(msg, request_id=-1)
    with pytest.raises(TypeError, match=r"Ack\.__init__\(\) missing 1 required positional argument: 'request_id'"):
        Ack()  # type: ignore[call-arg]
    assert Ack(request_id=1, ids=[2]) == msg and Ack(1) == Ack(1, ())
    # the signature the dataclass's __init__ had (inspect, Sphinx)
    assert str(inspect.signature(Ack)) == "(request_id: 'int', ids: 'tuple[int, ...]' = ()) -> None"
    assert str(inspect.signature(Tagged)).endswith("values: 'FloatArray' = <factory>) -> None")


def test_a_class_the_constructor_is_not_generated_for_coerces_and_validates_alike() -> None:
    @message(kind=60107)
    class Named(Message):
        type: str  # (a name the generated constructor uses: the dataclass's __init__ runs)
        n: int = dataclasses.field(default=0, kw_only=True)

        def validate(self) -> None:
            if self.n < 0:
                raise MessageError(f"Named.n must be >= 0, got {self.n}")

    assert "__post_init__" in Named.__init__.__code__.co_names  # (the dataclass's, which calls it)
    assert "__post_init__" not in Ack.__init__.__code__.co_names  # (the generated one, which does not)
    msg = Named("x", n=np.int16(3))  # type: ignore[arg-type]
    assert type(msg.n) is int and msg == decode(encode(msg))
    with pytest.raises(MessageError, match=r"Named\.n must be >= 0, got -1"):
        Named("x", n=-1)
    with pytest.raises(MessageError, match=r"Named\.type must be str, got 1"):
        Named(1)  # type: ignore[arg-type]


# ------------------------------------------------------------------ validation of generic kinds


@pytest.mark.parametrize(
    ("make", "pattern"),
    [
        (lambda: RandomizedValues(-1, [0]), r"RandomizedValues\.request_id must be >= 0"),
        (lambda: RandomizedValues(1, [0, -1]), r"RandomizedValues\.codes must be >= 0"),
        (lambda: RandomizedValues(1, -np.ones(100, dtype=np.int64)), r"RandomizedValues\.codes must be >= 0"),
        (lambda: RandomizedValues(1, [[0]]), r"RandomizedValues\.codes must be 1-D"),
        (lambda: Refusal(1, "", 1.0, 0.5), r"Refusal\.reason must not be empty"),
        (lambda: Refusal(1, "budget", -1.0, 0.5), r"Refusal\.requested must be >= 0"),
        (lambda: Refusal(1, "budget", 1.0, math.nan), r"Refusal\.remaining must be >= 0"),
        (lambda: Refusal(-4, "budget", 1.0, 0.5), r"Refusal\.request_id must be >= 0, got -4"),
        (lambda: Abort(""), r"Abort\.reason must not be empty"),
        (lambda: Ack(-1), r"Ack\.request_id must be >= 0"),
        (lambda: Ack(1, (-2,)), r"Ack\.ids must contain integers >= 0"),
    ],
)
def test_generic_kind_validation(make, pattern: str) -> None:
    with pytest.raises(MessageError, match=pattern):
        make()


def test_valid_generic_messages() -> None:
    assert RandomizedValues(0, np.arange(40)).codes.sum() == 780
    assert Refusal(2, "budget exhausted", math.inf, 0.0).requested == math.inf
    assert Abort("party 3 crashed", "collect").phase == "collect"
    assert Ack(5, (1, 2)).ids == (1, 2)


def test_validate_errors_of_other_types_become_message_errors() -> None:
    @message(kind=60105)
    class Fussy(Message):
        x: int

        def validate(self) -> None:
            if self.x == 0:
                raise ZeroDivisionError("x must not be zero")

    with pytest.raises(MessageError, match="Fussy: invalid message: x must not be zero"):
        Fussy(0)
    assert Fussy(2).x == 2


def test_float_array_and_default_factory() -> None:
    ann = Tagged("x")
    assert ann.values.dtype == np.float64 and ann.values.size == 0


def test_array_specs_name_only_wire_dtypes() -> None:
    with pytest.raises(MessageError, match=r"ArraySpec dtypes must be a non-empty subset of .*got \('float32',\)"):
        ArraySpec(("float32",))
    with pytest.raises(MessageError, match=r"ArraySpec dtypes must be a non-empty subset"):
        ArraySpec(())


def test_errors_describe_nested_and_array_types() -> None:
    with pytest.raises(MessageError, match=r"Tagged\.groups must be tuple\[tuple\[int, \.\.\.\], \.\.\.\], got 'x'"):
        Tagged("t", "x")
    with pytest.raises(MessageError, match=r"Tagged\.groups\[i\] must be tuple\[int, \.\.\.\], got 3"):
        Tagged("t", (3,))
    with pytest.raises(MessageError, match=r"Shaped\.grid must be ndarray\[float64, ndim=2\], got \{\}"):
        Shaped({})


def test_one_dimensional_arrays_become_tuples_of_a_tuple_field() -> None:
    assert Sample(1, 1.0, True, "x", b"", np.array([3, 4])).items == (3, 4)
    with pytest.raises(MessageError, match=r"Sample\.items must be tuple\[int, \.\.\.\], got array"):
        Sample(1, 1.0, True, "x", b"", np.ones((1, 1), dtype=np.int64))


# ------------------------------------------------------------------ reply blocks (reply columns' wire form)


def _block(**change: object) -> ReplyBlock:
    codes = np.array([[1, 2], [0, 5], [3, 3]], dtype=np.int64)
    prefix, suffix = values_layout(4, 2) or (b"", b"")
    fields: dict[str, object] = dict(request_id=4, phase="collect", srcs=np.array([7, 3, 9]), codes=codes,
                                     prefix=prefix, suffix=suffix)
    fields.update(change)
    return ReplyBlock(**fields)  # type: ignore[arg-type]


def test_values_layout_is_where_the_codec_writes_the_codes() -> None:
    prefix, suffix = values_layout(4, 3) or (b"", b"")
    for codes in ([0, 0, 0], [5, 1, 2**40]):
        assert prefix + np.array(codes, dtype="<i8").tobytes() + suffix == encode(RandomizedValues(4, codes))
    assert values_layout(4, 0) is None and values_layout(-1, 2) is None


def test_a_reply_block_carries_each_members_codec_encoding() -> None:
    block = _block()
    assert decode(encode(block)) == block
    for k in range(3):  # member k's bytes are its own message's
        assert block.prefix + block.codes[k].tobytes() + block.suffix == encode(RandomizedValues(4, block.codes[k]))


@pytest.mark.parametrize(
    ("change", "pattern"),
    [
        (dict(request_id=-1), r"ReplyBlock\.request_id must be >= 0, got -1"),
        (dict(phase=""), r"ReplyBlock\.phase must not be empty"),
        (dict(srcs=np.zeros(0, dtype=np.int64), codes=np.zeros((0, 2), dtype=np.int64)),
         r"ReplyBlock\.srcs must hold at least one party, got none"),
        (dict(srcs=np.array([7, 3])), r"ReplyBlock\.codes must have one row per party of srcs \(2\), got shape \(3, 2\)"),
        (dict(codes=np.zeros((3, 0), dtype=np.int64)), r"ReplyBlock\.codes must have at least one code per party"),
        (dict(srcs=np.array([7, -3, 9])), r"ReplyBlock\.srcs must be party ids >= 0, got -3"),
        (dict(srcs=np.array([7, 3, 7])), r"ReplyBlock\.srcs must be distinct parties"),
        (dict(codes=np.array([[1, 2], [0, -5], [3, 3]])), r"ReplyBlock\.codes must be >= 0"),
        (dict(prefix=b"MR"), r"ReplyBlock\.prefix and suffix must be the codec's layout of RandomizedValues\(4, 2 codes\)"),
        (dict(suffix=b"\x01\x00\x00\x00"), r"ReplyBlock\.prefix and suffix must be the codec's layout"),
        (dict(request_id=5), r"ReplyBlock\.prefix and suffix must be the codec's layout of RandomizedValues\(5, "),
    ],
)
def test_a_reply_block_must_be_each_members_own_message(change: dict[str, object], pattern: str) -> None:
    with pytest.raises(MessageError, match=pattern):
        _block(**change)
