"""Compute time per message from the primitives' costs; the calibration on this machine."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.netsim.compute import DEFAULT_COSTS, CryptoCosts, calibrate
from parties.secure.messages import MaskedInput, PublicKeys, SealedShares, SurvivorTags, bundle

UNIT = CryptoCosts(x25519_keygen=1.0, x25519_agree=2.0, hkdf=3.0, chacha20_fixed=4.0, chacha20_per_byte=0.5,
                   aead_fixed=5.0, aead_per_byte=0.25, shamir_share=6.0, mac=7.0, ed25519_sign=8.0)


def test_message_costs_worked_examples() -> None:
    assert UNIT.message_cost(PublicKeys("s", (bytes(32),))) == 1.0
    assert UNIT.message_cost(PublicKeys("s", (bytes(32),), bytes(64))) == 9.0
    sealed = SealedShares("s", *bundle((j, bytes(40)) for j in (1, 2, 3)))
    # 3 x (agree 2 + 2 hkdf 6 + aead(40) = 5 + 10) + 2 x 4 abscissae x shamir 6
    assert UNIT.message_cost(sealed) == 3 * (2 + 6 + 15) + 8 * 6
    masked = MaskedInput("s", np.zeros(4, dtype=np.uint32))  # 16 bytes
    # 3 x (aead(40) = 15 + agree 2 + hkdf 3) + 4 keystreams of 16 bytes (4 + 8)
    assert UNIT.message_cost(masked, degree=3, blob=40) == 3 * (15 + 2 + 3) + 4 * 12
    assert UNIT.message_cost(SurvivorTags("s", np.array([1, 2], dtype=np.uint32), bytes(32))) == 14.0


def test_calibration_measures_every_primitive() -> None:
    costs = calibrate(repeat=5)
    assert all(v >= 0 for v in costs.to_dict().values())
    assert costs.x25519_agree > 0 and costs.hkdf > 0 and costs.shamir_share > 0
    # the stored defaults are such a calibration: an X25519 agreement costs more than an HKDF
    assert DEFAULT_COSTS.x25519_agree > DEFAULT_COSTS.hkdf > 0


def test_costs_are_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"CryptoCosts.mac must be"):
        CryptoCosts(**{**UNIT.to_dict(), "mac": -1.0})
