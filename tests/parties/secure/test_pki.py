"""The simulated PKI: signing keys only where an engine signs."""

from __future__ import annotations

import numpy as np
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from mprr.errors import ConfigurationError, MessageError
from mprr.synthetic import planted_clusters
from parties.secure import pki
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.simulate import simulate
from tests.parties.secure.helpers import run


def test_signing_keys_sign_and_verify_and_static_keys_agree() -> None:
    signers, registry = pki.setup_pki(range(3))
    sig = signers[0].sign("p", "s", b"x")
    assert registry.verify(0, "p", "s", b"x", sig) and not registry.verify(1, "p", "s", b"x", sig)
    assert signers[0].exchange(registry, 2) == signers[2].exchange(registry, 0)


def test_a_party_agrees_with_all_its_neighbours_at_once() -> None:
    signers, registry = pki.setup_pki(range(4), signing=False)
    assert signers[0].exchange_each(registry, [3, 1]) == [signers[0].exchange(registry, 3),
                                                          signers[0].exchange(registry, 1)]
    with pytest.raises(MessageError, match="party 9 has no key in the PKI registry"):
        signers[0].exchange_each(registry, [1, 9, 8])
    keys = registry.static_keys([2, 0, 2])  # each parsed once, on its first use
    assert keys[0] is keys[2] is registry.static_key(2) and keys[1] is registry.static_key(0)
    with pytest.raises(KeyError, match="7"):
        registry.static_keys([1, 7, 8])


def test_a_registered_static_key_that_x25519_refuses_is_a_message_error_naming_its_party() -> None:
    # a low-order point in the directory (here the all-zero one): the agreement with that party
    # fails as a MessageError naming it, alone or among a party's neighbours (the first such one)
    signers, registry = pki.setup_pki(range(4), signing=False)
    bad = pki.KeyRegistry({p: registry.key(p)[:32] + (bytes(32) if p in (2, 3) else registry.key(p)[32:])
                           for p in range(4)})
    with pytest.raises(MessageError, match=r"party 0: the X25519 static key registered for party 2 \(0{64}\) is "
                                           r"refused by the agreement .*must not be a low-order point"):
        signers[0].exchange(bad, 2)
    with pytest.raises(MessageError, match=r"party 0: the X25519 static key registered for party 3 "):
        signers[0].exchange_each(bad, [1, 3, 2])
    with pytest.raises(MessageError, match="party 9 has no key in the PKI registry"):  # (a missing key first)
        signers[0].exchange_each(bad, [3, 9])
    assert signers[0].exchange_each(bad, [1]) == [signers[0].exchange(registry, 1)]


def test_without_signing_keys_nothing_is_signed_and_static_keys_still_agree() -> None:
    signers, registry = pki.setup_pki(range(3), signing=False)
    assert all(s.public[:32] == bytes(32) and len(s.public) == pki.PUBLIC_KEY_BYTES for s in signers.values())
    with pytest.raises(ConfigurationError, match=r"party 0 has no signing key: it was set up with signing=False"):
        signers[0].sign("p", "s", b"x")
    other, _ = pki.setup_pki(range(1))
    assert not registry.verify(0, "p", "s", b"x", other[0].sign("p", "s", b"x"))  # no key verifies anything
    assert not registry.verify(0, "p", "s", b"x", bytes(pki.SIGNATURE_BYTES))
    assert signers[0].exchange(registry, 1) == signers[1].exchange(registry, 0)
    assert signers[0].exchange(registry, 1) != signers[0].exchange(registry, 2)


def _no_ed25519(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Count Ed25519 key generations in the PKI (and still generate them)."""
    made: list[int] = []
    real = Ed25519PrivateKey.generate

    class Counting:
        @staticmethod
        def generate() -> Ed25519PrivateKey:
            made.append(1)
            return real()

    monkeypatch.setattr(pki, "Ed25519PrivateKey", Counting)
    return made


def test_the_masked_engine_generates_no_signing_key(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _no_ed25519(monkeypatch)
    assert MaskedEngine.signs and not MaskedEngine.pki_signing
    x = np.eye(6, 4, dtype=np.uint8)
    result, _ = run(MaskedEngine(topology="regular", degree=4, round_timeout=5), x)
    assert result.total.tolist() == x.sum(axis=0).tolist() and made == []
    # the graph engine's relay signs its keys: its parties get signing keys
    result, _ = run(GraphEngine(topology="regular", degree=3, relay=True, round_timeout=5), x)
    assert result.total.tolist() == x.sum(axis=0).tolist() and len(made) == 6


def test_the_party_shards_generate_no_signing_key_for_the_masked_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    made = _no_ed25519(monkeypatch)
    small = planted_clusters(12, rng=np.random.default_rng(8), strength=0.8).dataset
    sim = simulate(small, "RR-Clusters", seed=3, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.2",
                   engine="masked-sparse")
    assert sim.result.details["secure_sum"]["engine"] == "masked" and made == []

