"""Secure-sum message kinds: codec round trip and validation."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import MessageError
from parties.wire.codec import decode, encode
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


def test_a_bundle_gives_back_its_blobs() -> None:
    ids_, ends, data = bundle([(3, b"ab"), (7, b""), (9, b"xyz")])
    assert ids_.tolist() == [3, 7, 9] and ends.tolist() == [2, 2, 5] and data == b"abxyz"
    assert blobs(ends, data) == [b"ab", b"", b"xyz"]
    assert not ids_.flags.writeable
