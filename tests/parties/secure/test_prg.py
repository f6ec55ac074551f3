"""ChaCha20 keystream PRG: determinism per seed, RFC 8439 test vector, validation."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.secure.prg import SEED_BYTES, Keystream, fresh_seed, keystream, keystream_into


def test_same_seed_same_stream_and_streaming_is_consistent() -> None:
    seed = bytes(range(32))
    a = Keystream(seed)
    b = Keystream(seed)
    assert a.read(10) + a.read(90) == b.read(100)


def test_rfc8439_block_function_keystream() -> None:
    # RFC 8439 section 2.4.2 uses key 00..1f, nonce 000000000000004a00000000, counter 1; with
    # counter 0 and a zero nonce the first keystream block of the all-zero key is the classic
    # ChaCha20 test vector (RFC 8439 appendix A.1, test vector #1).
    first = Keystream(bytes(32)).read(16)
    assert first.hex() == "76b8e0ada0f13d90405d6ae55386bd28"


def test_different_seeds_differ_and_fresh_seeds_are_random() -> None:
    assert Keystream(bytes(32)).read(32) != Keystream(bytes(31) + b"\x01").read(32)
    assert fresh_seed() != fresh_seed()
    assert len(fresh_seed()) == SEED_BYTES


def test_words_dtype_and_counts() -> None:
    words = Keystream(bytes(32)).words(5, np.uint32)
    assert words.dtype == np.uint32 and words.shape == (5,) and words.flags.writeable
    assert int(words[0]) == int.from_bytes(bytes.fromhex("76b8e0ad"), "little")


@pytest.mark.parametrize("seed", [b"short", bytes(33), "x" * 32])
def test_bad_seed_rejected(seed: object) -> None:
    with pytest.raises(ConfigurationError, match="seed must be 32 bytes"):
        Keystream(seed)  # type: ignore[arg-type]


def test_bad_dtype_rejected() -> None:
    with pytest.raises(ConfigurationError, match="unsigned integer"):
        Keystream(bytes(32)).words(3, np.int32)


def test_keystream_into_writes_the_keystream_into_the_buffer() -> None:
    out = bytearray(b"\xff" * 100)
    keystream_into(bytes(32), out)
    assert bytes(out[:16]).hex() == "76b8e0ada0f13d90405d6ae55386bd28"  # RFC 8439 A.1 #1, as above
    assert bytes(out) == keystream(bytes(32), 100) == Keystream(bytes(32)).read(100)


@pytest.mark.parametrize("seed", [b"short", bytes(33), "x" * 32])
def test_keystream_into_refuses_bad_seeds(seed: object) -> None:
    with pytest.raises(ConfigurationError, match="seed must be 32 bytes"):
        keystream_into(seed, bytearray(8))  # type: ignore[arg-type]
