"""Secure-sum message kinds: codec round trip and validation."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import MessageError
from parties.wire.codec import decode, encode, encoded_size
from parties.secure.messages import (
    KeyDirectory,
    MaskedInput,
    PartialSum,
    PublicKeys,
    RelayedShares,
    SealedShares,
    ShareVector,
    SurvivorSet,
    SurvivorTags,
    UnmaskRequest,
    UnmaskShares,
    _ascending,
    _ascending_vector,
    _NUMPY_FROM,
    blobs,
    bundle,
)

KEY = bytes(range(32))
SIG = bytes(range(64))
TAG = bytes(range(16))


def ids(*values: int) -> np.ndarray:
    return np.array(values, dtype=np.uint32)

EXAMPLES = [
    ShareVector("s", -1, np.arange(4, dtype=np.uint16)),
    PartialSum("s", 3, np.array([7], dtype=np.uint32)),
    PublicKeys("s", (KEY, KEY)),
    PublicKeys("s", (KEY, KEY), SIG),
    KeyDirectory("s", ids(1, 4), KEY + KEY),
    KeyDirectory("s", ids(1, 4), KEY + KEY, SIG + SIG),
    SealedShares("s", *bundle([(2, b"a" * 40), (5, b"b" * 41)])),
    RelayedShares("s", *bundle([(2, b"c" * 40)])),
    RelayedShares("s", *bundle([])),
    MaskedInput("s", np.arange(3, dtype=np.uint64)),
    UnmaskRequest("s", ids(0, 1, 2, 1, 2), ids(3, 5), ids(0, 1, 2), ids(0, 0, 1), TAG * 3),
    SurvivorSet("s", ids(0, 2, 5)),
    SurvivorTags("s", ids(1, 4, 9), TAG * 3),
    UnmaskShares("s", ids(0, 1), bytes((0, 1)), ids(1, 2), bytes(66)),
]


@pytest.mark.parametrize("msg", EXAMPLES, ids=lambda m: m.NAME)
def test_roundtrip(msg) -> None:  # noqa: ANN001
    assert decode(encode(msg)) == msg
    assert encoded_size(msg) == len(encode(msg))
    assert 64 <= msg.KIND <= 79


@pytest.mark.parametrize(("build", "match"), [
    (lambda: ShareVector("", -1, np.zeros(1, np.uint8)), "session must not be empty"),
    (lambda: ShareVector("s", -2, np.zeros(1, np.uint8)), "combination must be >= -1"),
    (lambda: ShareVector("s", -1, np.zeros(1, np.int64)), "dtype"),
    (lambda: PartialSum("s", -1, np.zeros((1, 1), np.uint8)), "1-D"),
    (lambda: PublicKeys("s", ()), "1 or 2 keys"),
    (lambda: PublicKeys("s", (b"short",)), "32-byte"),
    (lambda: KeyDirectory("s", ids(1, 1), KEY + KEY), "distinct party ids in increasing order"),
    (lambda: KeyDirectory("s", ids(1), KEY + KEY), "one 32-byte X25519 key per party"),
    (lambda: KeyDirectory("s", ids(1), KEY[:31]), "one 32-byte X25519 key per party"),
    (lambda: SealedShares("s", ids(1, 2), ids(1), b"x"), "one entry per recipient"),
    (lambda: SealedShares("s", ids(1, 2), ids(2, 1), b"xy"), "must not decrease"),
    (lambda: SealedShares("s", ids(1), ids(1), b"xy"), "end at the 2 bytes"),
    (lambda: RelayedShares("s", ids(2, 1), ids(1, 2), b"xy"), "increasing order"),
    (lambda: RelayedShares("s", np.array([-1], dtype=np.int64), ids(1), b"x"), "dtype"),
    (lambda: UnmaskRequest("s", ids(1), ids(1), ids(1, 2), ids(0), TAG * 2), "one view index and one 16-byte tag"),
    (lambda: UnmaskRequest("s", ids(1), ids(1), ids(1), ids(1), TAG), "view_of must index views"),
    (lambda: UnmaskRequest("s", ids(1, 2), ids(1), ids(1), ids(0), TAG), "end at the number of view cells"),
    (lambda: UnmaskRequest("s", ids(1), ids(1), ids(2, 1), ids(0, 0), TAG * 2), "distinct and sorted"),
    (lambda: UnmaskRequest("s", ids(1, 2), ids(), ids(), ids(), b""), "view_cells without view_ends"),
    (lambda: UnmaskRequest("s", ids(1, 2), ids(0, 2), ids(1), ids(1), TAG), "view_ends must increase"),
    (lambda: UnmaskRequest("s", ids(1, 2), ids(2, 2), ids(1), ids(1), TAG), "view_ends must increase"),
    (lambda: PublicKeys("s", (KEY,), b"x"), "64-byte signature"),
    (lambda: KeyDirectory("s", ids(1), KEY, SIG + SIG), "one 64-byte signature per party"),
    (lambda: SurvivorSet("s", ids(2, 1)), "increasing order"),
    (lambda: SurvivorTags("s", ids(1), b"x"), "16 bytes per target"),
    (lambda: SurvivorTags("s", ids(3, 3), TAG * 2), "distinct and sorted"),
    (lambda: UnmaskShares("s", ids(0), bytes((2,)), ids(1), bytes(33)), "0 \\(self mask\\) or 1"),
    (lambda: UnmaskShares("s", ids(0), bytes(1), ids(0), bytes(33)), "abscissae must be >= 1"),
    (lambda: UnmaskShares("s", ids(0), bytes(1), ids(1), bytes(32)), "33-byte"),
    (lambda: UnmaskShares("s", ids(0, 1), bytes(1), ids(1, 2), bytes(66)), "one entry per owner"),
    (lambda: UnmaskShares("s", ids(1, 0), bytes(2), ids(1, 2), bytes(66)), "increasing order"),
])
def test_validation(build, match: str) -> None:  # noqa: ANN001
    with pytest.raises(MessageError, match=match):
        build()


LONG = 40  # ids vectors this long are checked by numpy's comparison of neighbours (_NUMPY_FROM), shorter by a list


def _long(*, repeat: int | None = None, swap: int | None = None) -> np.ndarray:
    """0, 1, ..., LONG - 1, with entry ``repeat`` made equal to the one before or the entries
    ``swap``, ``swap + 1`` swapped."""
    values = list(range(LONG))
    if repeat is not None:
        values[repeat] = values[repeat - 1]
    if swap is not None:
        values[swap], values[swap + 1] = values[swap + 1], values[swap]
    return ids(*values)


@pytest.mark.parametrize(("build", "match"), [
    (lambda: KeyDirectory("s", _long(repeat=LONG - 1), KEY * LONG),
     r"KeyDirectory\.parties must be distinct party ids in increasing order, got \[0, 1, 2, 3, 4, 5, 6, 7, 8, 9\]"),
    (lambda: SurvivorSet("s", _long(swap=3)),
     r"SurvivorSet\.survivors must be distinct party ids in increasing order, got \[0, 1, 2, 4, 3, 5, 6, 7, 8, 9\]"),
    (lambda: SealedShares("s", _long(repeat=20), _long(), bytes(LONG - 1)), r"SealedShares\.recipients must be distinct"),
    (lambda: RelayedShares("s", _long(swap=30), _long(), bytes(LONG - 1)), r"RelayedShares\.senders must be distinct"),
    (lambda: UnmaskShares("s", _long(repeat=1), bytes(LONG), _long() + 1, bytes(33 * LONG)),
     r"UnmaskShares\.owners must be distinct"),
    (lambda: SurvivorTags("s", _long(repeat=LONG - 1), TAG * LONG), r"SurvivorTags\.targets must be distinct and sorted"),
    (lambda: UnmaskRequest("s", ids(*range(LONG)), _long(swap=10) + 1, ids(1), ids(0), TAG),
     r"UnmaskRequest\.view_ends must increase and end at the number of view cells"),
    (lambda: UnmaskRequest("s", ids(*range(LONG)), _long() + 1, _long(repeat=5), ids(*[0] * LONG), TAG * LONG),
     r"UnmaskRequest\.signers must be distinct and sorted"),
])
def test_validation_of_long_id_vectors(build, match: str) -> None:  # noqa: ANN001
    with pytest.raises(MessageError, match=match):
        build()


def test_long_id_vectors_in_increasing_order_are_accepted() -> None:
    msg = UnmaskRequest("s", ids(*range(LONG)), _long() + 1, _long(), ids(*[0] * LONG), TAG * LONG)
    assert decode(encode(msg)) == msg
    assert SurvivorTags("s", _long() * 3, TAG * LONG).targets[-1] == 3 * (LONG - 1)
    assert KeyDirectory("s", _long(), KEY * LONG).key(LONG - 1) == KEY


def test_a_bundle_gives_back_its_blobs() -> None:
    ids_, ends, data = bundle([(3, b"ab"), (7, b""), (9, b"xyz")])
    assert ids_.tolist() == [3, 7, 9] and ends.tolist() == [2, 2, 5] and data == b"abxyz"
    assert blobs(ends, data) == [b"ab", b"", b"xyz"]
    assert not ids_.flags.writeable


def test_an_id_vector_is_ascending_by_numpy_as_by_its_list_at_every_length() -> None:
    # (short vectors are checked as a list, long ones by numpy: both decide alike around the switch)
    rng = np.random.default_rng(3)
    for length in range(0, 3 * _NUMPY_FROM):
        for _ in range(20):
            values = np.sort(rng.integers(0, 4 * length + 2, size=length)).astype(np.uint32)
            if length > 1 and rng.random() < 0.5:
                k = int(rng.integers(0, length - 1))
                values[k], values[k + 1] = values[k + 1], values[k]
            assert _ascending_vector(values) == _ascending(values.tolist()), values.tolist()
