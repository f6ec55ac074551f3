"""parties.secure.suite: the sizing stand-ins have the real operations' lengths."""

from __future__ import annotations

import numpy as np

from parties.secure.pki import setup_pki
from parties.secure.ring import ZMod
from parties.secure.suite import REAL, SIZING


def test_sizing_outputs_have_the_real_lengths() -> None:
    signers, registry = setup_pki(range(2))
    for suite in (REAL, SIZING):
        assert len(suite.stream().read(40)) == 40
    a, b = REAL.keypair(), REAL.keypair()
    key = REAL.agree(a, b.public, purpose="channel", session="s", me=0, peer=1)
    assert len(SIZING.agree(SIZING.keypair(), b.public, purpose="channel", session="s", me=0, peer=1)) == len(key)
    assert len(SIZING.keypair().public) == len(a.public)
    sig = REAL.sign(signers[0], "p", "s", b"x")
    assert len(SIZING.sign(None, "p", "s", b"x")) == len(sig)
    assert REAL.verify(registry, 0, "p", "s", b"x", sig) and SIZING.verify(None, 0, "p", "s", b"x", sig)
    sealed = REAL.seal(key, b"12345", session="s", sender=0, receiver=1)
    assert len(SIZING.seal(key, b"12345", session="s", sender=0, receiver=1)) == len(sealed)
    assert REAL.open(key, sealed, session="s", sender=0, receiver=1) == b"12345"
    assert len(SIZING.open(key, sealed, session="s", sender=0, receiver=1)) == 5


def test_sizing_keystream_draws_ring_elements_of_the_right_shape() -> None:
    ring = ZMod(1001)
    real, sized = ring.random(REAL.stream(), (3, 4)), ring.random(SIZING.stream(), (3, 4))
    assert sized.shape == real.shape == (3, 4) and sized.dtype == real.dtype and not sized.any()
    assert SIZING.stream().words(3, np.uint32).tolist() == [0, 0, 0]


def test_the_real_suite_needs_the_pki() -> None:
    import pytest

    from mprr.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="sign needs the party's PKI signer, got None"):
        REAL.sign(None, "p", "s", b"x")
    with pytest.raises(ConfigurationError, match="verify needs the PKI's key registry, got None"):
        REAL.verify(None, 0, "p", "s", b"x", bytes(64))
