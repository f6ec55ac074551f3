"""X25519 agreement, HKDF binding and AEAD channels."""

from __future__ import annotations

import hmac
import pickle

import pytest

from mprr.errors import ConfigurationError, MessageError
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from parties.secure.crypto import (KeyPair, ParsedKeys, _hmac32, agree, agree_each, derive_key, derive_keys,
                                  derive_keys_each, exchange, exchange_each, hkdf_sha256, open_each, open_sealed, seal,
                                  seal_each)


@pytest.mark.parametrize("length", [1, 32, 33, 100])
def test_hkdf_fast_path_equals_cryptography(length: int) -> None:
    ikm, info = bytes(range(40)), b"mprr|info"
    expected = HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(ikm)
    assert hkdf_sha256(ikm, info, length) == expected


def test_derived_keys_equal_cryptography_hkdf_and_stdlib_hmac() -> None:
    shared = bytes(range(7, 39))
    info = b"mprr/secure-sum/v1|%s|sess|3|8"
    for purpose in (b"mask", b"channel", b"view"):
        expected = HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info % purpose).derive(shared)
        assert derive_key(shared, purpose=purpose.decode(), session="sess", a=8, b=3) == expected
    assert derive_keys(shared, purposes=("channel", "view"), session="sess", a=3, b=8) == tuple(
        derive_key(shared, purpose=p, session="sess", a=3, b=8) for p in ("channel", "view"))
    for key, data in ((bytes(32), b""), (bytes(range(32)), b"x" * 200), (b"\xff" * 32, bytes(range(64)))):
        assert _hmac32(key, data) == hmac.digest(key, data, "sha256")
    with pytest.raises(ConfigurationError, match="_hmac32 key must be 32 bytes, got 16"):
        _hmac32(bytes(16), b"x")


def test_the_batched_derivations_equal_one_call_per_peer() -> None:
    secrets_, peers = [bytes(range(k, k + 32)) for k in (0, 5, 9)], [8, 2, 3]
    assert derive_keys_each(secrets_, purposes=("channel", "view"), session="sess", a=3, peers=peers) == [
        derive_keys(shared, purposes=("channel", "view"), session="sess", a=3, b=b) for shared, b in zip(secrets_, peers)]
    assert derive_keys_each([], purposes=("mask",), session="sess", a=3, peers=[]) == []
    # one purpose (the masking seeds) takes its own loop: cryptography's HKDF gives the same bytes
    assert derive_keys_each(secrets_, purposes=("mask",), session="sess", a=3, peers=peers) == [
        (HKDF(algorithm=hashes.SHA256(), length=32, salt=None,
              info=b"mprr/secure-sum/v1|mask|sess|%d|%d" % (min(3, b), max(3, b))).derive(shared),)
        for shared, b in zip(secrets_, peers)]
    with pytest.raises(ConfigurationError, match="derive_keys_each needs one peer per shared secret, got 3 secrets "
                                                 "and 2 peers"):
        derive_keys_each(secrets_, purposes=("mask",), session="sess", a=3, peers=peers[:2])
    mine, others = KeyPair.generate(), [KeyPair.generate() for _ in range(3)]
    assert agree_each(mine.private, [o.public for o in others], purpose="mask", session="sess", me=4, peers=peers) == [
        agree(mine.private, o.public, purpose="mask", session="sess", me=4, peer=p) for o, p in zip(others, peers)]
    with pytest.raises(MessageError, match="public key of party 2 must be 32 bytes"):
        agree_each(mine.private, [others[0].public, bytes(31)], purpose="mask", session="sess", me=4, peers=[8, 2])
    with pytest.raises(MessageError, match="invalid X25519 public key from party 2"):
        agree_each(mine.private, [others[0].public, bytes(32)], purpose="mask", session="sess", me=4, peers=[8, 2])
    with pytest.raises(ConfigurationError, match="agree_each needs one peer per public key, got 1 keys and 2 peers"):
        agree_each(mine.private, [others[0].public], purpose="mask", session="sess", me=4, peers=[8, 2])
    # its two steps, as a batch runs them in two passes
    assert exchange_each(mine.private, [o.public for o in others], peers=peers) == [
        exchange(mine.private, o.public, peer=p) for o, p in zip(others, peers)]
    with pytest.raises(MessageError, match="invalid X25519 public key from party 2"):
        exchange_each(mine.private, [others[0].public, bytes(32)], peers=[8, 2])
    with pytest.raises(ConfigurationError, match="exchange_each needs one peer per public key, got 2 keys and 1 peers"):
        exchange_each(mine.private, [others[0].public] * 2, peers=[8])


def test_a_sessions_parsed_keys_give_the_same_secrets_each_key_parsed_once() -> None:
    mine, others = KeyPair.generate(), [KeyPair.generate() for _ in range(3)]
    parsed = ParsedKeys()
    raws, peers = [o.public for o in others] * 2, [8, 2, 3] * 2
    assert agree_each(mine.private, raws, purpose="mask", session="s", me=4, peers=peers, parsed=parsed) == agree_each(
        mine.private, raws, purpose="mask", session="s", me=4, peers=peers)
    assert len(parsed) == 3 and parsed[others[0].public] is parsed[others[0].public]
    assert exchange(mine.private, others[1].public, peer=2, parsed=parsed) == exchange(mine.private, others[1].public,
                                                                                       peer=2)
    assert agree(mine.private, others[2].public, purpose="view", session="s", me=4, peer=3, parsed=parsed) == agree(
        mine.private, others[2].public, purpose="view", session="s", me=4, peer=3)
    with pytest.raises(MessageError, match="invalid X25519 public key from party 2"):  # (a low-order point)
        exchange(mine.private, bytes(32), peer=2, parsed=parsed)
    assert len(parsed) == 4  # (the point parses; the agreement refuses it)
    with pytest.raises(MessageError, match="public key of party 2 must be 32 bytes"):
        agree_each(mine.private, [bytes(31)], purpose="mask", session="s", me=4, peers=[2], parsed=parsed)
    assert len(parsed) == 4
    # a copy in another process starts empty (key objects do not cross processes)
    assert len(pickle.loads(pickle.dumps(parsed))) == 0


def test_hkdf_rfc5869_test_case_3() -> None:
    # RFC 5869 A.3: SHA-256, IKM = 22 x 0x0b, empty salt and info, L = 42
    okm = hkdf_sha256(bytes([0x0B] * 22), b"", 42)
    assert okm.hex() == ("8da4e775a563c18f715f802a063c5a31b8a11f5c5ee1879ec3454e5f3c738d2d"
                         "9d201395faa4b61a96c8")


def test_both_ends_derive_the_same_key_bound_to_purpose_and_session() -> None:
    a, b = KeyPair.generate(), KeyPair.generate()
    k_ab = agree(a.private, b.public, purpose="mask", session="s1", me=3, peer=8)
    k_ba = agree(b.private, a.public, purpose="mask", session="s1", me=8, peer=3)
    assert k_ab == k_ba and len(k_ab) == 32
    assert k_ab != agree(a.private, b.public, purpose="channel", session="s1", me=3, peer=8)
    assert k_ab != agree(a.private, b.public, purpose="mask", session="s2", me=3, peer=8)


def test_private_bytes_roundtrip() -> None:
    a = KeyPair.generate()
    assert KeyPair.from_private_bytes(a.private_bytes()).public == a.public
    with pytest.raises(ConfigurationError, match="32 bytes"):
        KeyPair.from_private_bytes(b"x")


def test_bad_public_key_is_a_message_error() -> None:
    a = KeyPair.generate()
    with pytest.raises(MessageError, match="must be 32 bytes"):
        agree(a.private, b"short", purpose="mask", session="s", me=0, peer=1)
    with pytest.raises(MessageError, match="invalid X25519 public key"):
        agree(a.private, bytes(32), purpose="mask", session="s", me=0, peer=1)  # low order


def test_aead_roundtrip_and_binding() -> None:
    key = bytes(range(32))
    blob = seal(key, b"share", session="s", sender=1, receiver=2)
    assert open_sealed(key, blob, session="s", sender=1, receiver=2) == b"share"
    for kwargs in ({"session": "t", "sender": 1, "receiver": 2},
                   {"session": "s", "sender": 2, "receiver": 1},
                   {"session": "s", "sender": 1, "receiver": 3}):
        with pytest.raises(MessageError, match="failed authentication"):
            open_sealed(key, blob, **kwargs)
    tampered = blob[:-1] + bytes([blob[-1] ^ 1])
    with pytest.raises(MessageError, match="failed authentication"):
        open_sealed(key, tampered, session="s", sender=1, receiver=2)
    with pytest.raises(MessageError, match="too short"):
        open_sealed(key, b"abc", session="s", sender=1, receiver=2)


def test_seal_each_seals_every_plaintext_for_its_own_receiver_under_a_fresh_nonce() -> None:
    keys = [bytes([k]) * 32 for k in range(8)]
    plaintexts = [b"share %d" % k for k in range(8)]
    receivers = tuple(range(10, 18))
    blobs = seal_each(keys, plaintexts, session="s", sender=1, receivers=receivers)
    assert len(blobs) == 8 and len({blob[:12] for blob in blobs}) == 8  # 8 distinct 96-bit nonces
    for key, plaintext, receiver, blob in zip(keys, plaintexts, receivers, blobs):
        assert open_sealed(key, blob, session="s", sender=1, receiver=receiver) == plaintext
        with pytest.raises(MessageError, match="failed authentication"):  # bound to its receiver
            open_sealed(key, blob, session="s", sender=1, receiver=receiver + 1)
    with pytest.raises(ConfigurationError, match="got 8 keys, 7 plaintexts, 8 receivers"):
        seal_each(keys, plaintexts[:7], session="s", sender=1, receivers=receivers)


def test_open_each_opens_what_seal_each_sealed_and_checks_every_blob_as_open_sealed_does() -> None:
    keys = [bytes([k]) * 32 for k in range(4)]
    senders = [3, 5, 8, 13]
    blobs = [seal(key, b"share %d" % j, session="s", sender=j, receiver=2) for key, j in zip(keys, senders)]
    assert open_each(keys, blobs, session="s", senders=senders, receiver=2) == [b"share %d" % j for j in senders]
    with pytest.raises(MessageError, match=r"ciphertext from party 5 to party 2 failed authentication \(session 's'\)"):
        open_each(keys, [blobs[0], blobs[0][:-1] + bytes([blobs[0][-1] ^ 1]), *blobs[2:]], session="s",
                  senders=senders, receiver=2)
    with pytest.raises(MessageError, match="ciphertext from party 3 to party 7 failed authentication"):  # its receiver
        open_each(keys, blobs, session="s", senders=senders, receiver=7)
    with pytest.raises(MessageError, match=r"ciphertext from party 8 is too short \(3 bytes\)"):
        open_each(keys, [*blobs[:2], b"abc", blobs[3]], session="s", senders=senders, receiver=2)
    with pytest.raises(ConfigurationError, match="got 4 keys, 3 blobs, 4 senders"):
        open_each(keys, blobs[:3], session="s", senders=senders, receiver=2)


def test_every_aead_function_leaves_the_vector_state_settled(monkeypatch: pytest.MonkeyPatch) -> None:
    """ChaCha20-Poly1305 leaves wide vector registers dirty on AVX-512 CPUs (what follows it runs
    slower: ``benchmarks/vector_state.py``): each AEAD function settles them once, after its loop."""
    from parties.secure import crypto

    calls: list[str] = []
    monkeypatch.setattr(crypto, "settle_vector_state", lambda: calls.append("settled"))
    key = bytes(range(32))
    blob = crypto.seal(key, b"share", session="s", sender=1, receiver=2)
    assert calls == ["settled"]
    assert crypto.open_sealed(key, blob, session="s", sender=1, receiver=2) == b"share"
    assert len(calls) == 2
    blobs = crypto.seal_each([key] * 3, [b"a", b"b", b"c"], session="s", sender=1, receivers=(2, 2, 2))
    assert len(calls) == 3
    assert crypto.open_each([key] * 3, blobs, session="s", senders=[1] * 3, receiver=2) == [b"a", b"b", b"c"]
    assert len(calls) == 4


def test_settle_vector_state_keeps_its_scratch_zero() -> None:
    """The settling ufunc writes its own scratch only: zeros plus zeros, never anything else."""
    from parties.secure import crypto

    crypto.settle_vector_state()
    assert not crypto._SETTLE.any()
