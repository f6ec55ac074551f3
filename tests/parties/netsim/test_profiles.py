"""Link profiles: log-normal spreads around published medians, the TOML form."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.netsim.profiles import PROFILES, LinkProfile, Spread, mbps, profile, profile_from_toml


def test_mbps_is_megabits_per_second_in_bytes() -> None:
    assert mbps(8) == 1_000_000


def test_zero_sigma_gives_the_median_and_draws_nothing() -> None:
    rng = np.random.default_rng(1)
    state = rng.bit_generator.state
    assert np.array_equal(Spread(5.0).sample(3, rng=rng), [5.0, 5.0, 5.0])
    assert rng.bit_generator.state == state


def test_sample_median_matches_the_spread_median() -> None:
    # the sample median of log X is normal around log(median) with sd sqrt(pi/2) sigma / sqrt(n)
    n, sigma = 40_001, 0.9
    draws = Spread(100.0, sigma).sample(n, rng=np.random.default_rng(2))
    assert abs(math.log(np.median(draws)) - math.log(100.0)) < 4 * math.sqrt(math.pi / 2) * sigma / math.sqrt(n)


def test_draws_are_clipped_to_the_bounds() -> None:
    draws = Spread(1.0, 3.0, low=0.5, high=2.0).sample(1000, rng=np.random.default_rng(3))
    assert draws.min() == 0.5 and draws.max() == 2.0


def test_spread_bounds_are_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"low <= median <= high, got low=2.0, median=1.0"):
        Spread(1.0, low=2.0)
    with pytest.raises(ConfigurationError, match=r"Spread.median must be a finite number >= 0, got -1"):
        Spread(-1.0)


def test_shipped_profiles_state_their_sources_figures() -> None:
    assert PROFILES["mobile"].uplink.median == mbps(11.22) and PROFILES["mobile"].latency.median == 0.014
    assert PROFILES["broadband"].downlink.median == mbps(85.73) and PROFILES["broadband"].latency.median == 0.005
    assert PROFILES["datacenter"].uplink.median == mbps(10_000)
    with pytest.raises(ConfigurationError, match=r"profile must be one of datacenter, broadband, mobile, got 'lte'"):
        profile("lte")


def test_a_profile_samples_one_value_per_party_reproducibly() -> None:
    a = PROFILES["mobile"].sample(5, rng=np.random.default_rng(4))
    b = PROFILES["mobile"].sample(5, rng=np.random.default_rng(4))
    assert np.array_equal(a.uplink, b.uplink) and a.latency.shape == (5,) and set(a.device_speed) == {3.0}


def test_toml_profile() -> None:
    p = profile_from_toml("""
[profile]
name = "rural-lte"
device_speed = 4.0
uplink = { median_mbps = 5, sigma = 1.0, low_mbps = 0.5 }
downlink = { median_bps = 2500000 }
latency = { median_ms = 40, sigma = 0.5, high_s = 0.5 }
""")
    assert p == LinkProfile("rural-lte", Spread(mbps(5), 1.0, low=mbps(0.5)), Spread(2_500_000.0),
                            Spread(0.04, 0.5, high=0.5), 4.0)


def test_toml_profile_errors_name_the_key() -> None:
    with pytest.raises(ConfigurationError, match=r"profile.uplink has unknown keys \['median_kbps'\]"):
        profile_from_toml({"profile": {"uplink": {"median_kbps": 1}, "downlink": {"median_mbps": 1},
                                       "latency": {"median_ms": 1}}})
    with pytest.raises(ConfigurationError, match=r"\[profile\] needs latency"):
        profile_from_toml({"profile": {"uplink": {"median_mbps": 1}, "downlink": {"median_mbps": 1}}})
    with pytest.raises(ConfigurationError, match=r"profile.latency needs a median"):
        profile_from_toml({"profile": {"uplink": {"median_mbps": 1}, "downlink": {"median_mbps": 1},
                                       "latency": {"sigma": 1}}})
