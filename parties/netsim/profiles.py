"""Access-link profiles: per-party uplink, downlink and one-way latency drawn from distributions.

A :class:`LinkProfile` describes the access link of a population of parties: three
:class:`Spread` distributions (uplink and downlink bandwidth in bytes per second, one-way latency
in seconds) and a device-speed factor that scales the modelled compute time of the cryptography
(:mod:`parties.netsim.compute`; 1 = this machine, 3 = three times slower).  :meth:`LinkProfile.sample`
draws one value per party with a keyword-only numpy ``rng``.

A :class:`Spread` is log-normal around its median (``median * exp(sigma * Z)``, Z standard
normal; ``sigma = 0``: every party gets the median), clipped to ``[low, high]``: bandwidths and
latencies are positive and right-skewed, and the published figures are medians.

**Shipped profiles** (:data:`PROFILES`).  The medians are published figures; the spreads (sigma) are this project's modelling choice,
stated here so that a user can change them (:func:`profile_from_toml`).

``datacenter``
    10 Gbit/s each way (the "up to 10 Gigabit" network performance of common cloud instance
    types, Amazon EC2 instance-type documentation) and 0.25 ms one way (a round trip of about
    0.5 ms inside one availability zone, where AWS documents sub-millisecond latency; the
    "single-digit millisecond" figure is between zones).  sigma 0.05 (bandwidth) and 0.2
    (latency).
``broadband``
    Fixed broadband, global medians of the Ookla Speedtest Global Index: 85.73 Mbit/s down,
    45.74 Mbit/s up (September 2020) and 10 ms latency (round trip to a nearby test server,
    November 2022), i.e. 5 ms one way on the access link.  sigma 0.8 (bandwidth), 0.5 (latency).
``mobile``
    Mobile, the same index: 35.96 Mbit/s down, 11.22 Mbit/s up (September 2020), 28 ms round
    trip (November 2022), i.e. 14 ms one way.  sigma 0.9 (bandwidth), 0.6 (latency); device
    factor 3 (a phone core is several times slower than a server core at the X25519 and
    ChaCha20 of the masked engine; the factor is a modelling choice, change it with the TOML form).

The latency of a profile is the party's access link only; the controller's own one-way latency
(:class:`parties.netsim.model.ControllerLink`) adds the distance to the controller, so a message
from party a to the controller travels ``latency_a + latency_controller``.

TOML form (:func:`profile_from_toml`)::

    [profile]
    name = "rural-lte"
    device_speed = 4.0                       # compute time x 4
    uplink = { median_mbps = 5, sigma = 1.0, low_mbps = 0.5 }
    downlink = { median_mbps = 20, sigma = 1.0 }
    latency = { median_ms = 40, sigma = 0.5, high_ms = 500 }
"""

from __future__ import annotations

import math
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from mprr.domain import check_real
from mprr.errors import ConfigurationError

__all__ = ["PROFILES", "LinkProfile", "LinkSample", "Spread", "profile", "profile_from_toml", "mbps"]


def mbps(megabits: float) -> float:
    """Bytes per second of ``megabits`` Mbit/s (10^6 bits)."""
    return megabits * 1e6 / 8


@dataclass(frozen=True)
class Spread:
    """Log-normal distribution ``median * exp(sigma * Z)`` clipped to ``[low, high]``.

    Parameters
    ----------
    median
        Median (>= 0, finite; a bandwidth of 0 is refused where links are built).
    sigma
        Standard deviation of the logarithm (>= 0; 0 = constant).
    low, high
        Clipping bounds (0 <= low <= median <= high, ``high`` may be ``inf``).
    """

    median: float
    sigma: float = 0.0
    low: float = 0.0
    high: float = math.inf

    def __post_init__(self) -> None:
        check_real("Spread.median", self.median)
        check_real("Spread.sigma", self.sigma)
        check_real("Spread.low", self.low)
        check_real("Spread.high", self.high, allow_inf=True)
        if not self.low <= self.median <= self.high:
            raise ConfigurationError(f"Spread needs low <= median <= high, got low={self.low!r}, "
                                     f"median={self.median!r}, high={self.high!r}")

    def sample(self, n: int, *, rng: np.random.Generator) -> np.ndarray:
        """``n`` draws (float64); draws nothing from ``rng`` when ``sigma`` is 0."""
        if self.sigma == 0:
            return np.full(n, self.median)
        return np.clip(self.median * np.exp(self.sigma * rng.standard_normal(n)), self.low, self.high)


@dataclass(frozen=True)
class LinkSample:
    """One draw of a profile for ``n`` parties: uplink and downlink (bytes/s), one-way latency
    (s) and device-speed factor, one entry per party."""

    uplink: np.ndarray
    downlink: np.ndarray
    latency: np.ndarray
    device_speed: np.ndarray


@dataclass(frozen=True)
class LinkProfile:
    """Access links of a population of parties (module docstring).

    Parameters
    ----------
    name
        Profile name (for reports).
    uplink, downlink
        Bandwidth distributions in bytes per second.
    latency
        One-way access latency distribution in seconds.
    device_speed
        Compute-time factor of these parties' devices (> 0; 1 = this machine).
    """

    name: str
    uplink: Spread
    downlink: Spread
    latency: Spread
    device_speed: float = 1.0

    def __post_init__(self) -> None:
        check_real("LinkProfile.device_speed", self.device_speed, strict=True)

    def sample(self, n: int, *, rng: np.random.Generator) -> LinkSample:
        """One value per party for ``n`` parties (uplink, downlink, latency drawn in that order)."""
        up = self.uplink.sample(n, rng=rng)
        down = self.downlink.sample(n, rng=rng)
        lat = self.latency.sample(n, rng=rng)
        return LinkSample(up, down, lat, np.full(n, self.device_speed))


PROFILES: Mapping[str, LinkProfile] = {
    "datacenter": LinkProfile("datacenter", Spread(mbps(10_000), 0.05), Spread(mbps(10_000), 0.05),
                              Spread(0.25e-3, 0.2), 1.0),
    "broadband": LinkProfile("broadband", Spread(mbps(45.74), 0.8, low=mbps(0.5)),
                             Spread(mbps(85.73), 0.8, low=mbps(1.0)), Spread(5e-3, 0.5, high=0.5), 1.0),
    "mobile": LinkProfile("mobile", Spread(mbps(11.22), 0.9, low=mbps(0.1)),
                          Spread(mbps(35.96), 0.9, low=mbps(0.25)), Spread(14e-3, 0.6, high=1.0), 3.0),
}
"""The shipped profiles by name (sources in the module docstring)."""


def profile(name: str) -> LinkProfile:
    """The shipped profile called ``name``."""
    try:
        return PROFILES[name]
    except KeyError:
        raise ConfigurationError(f"profile must be one of {', '.join(PROFILES)}, got {name!r}") from None


_UNITS = {"mbps": mbps(1.0), "bps": 1.0, "ms": 1e-3, "s": 1.0}


def _spread(table: Any, key: str, units: tuple[str, ...]) -> Spread:
    """A :class:`Spread` from a TOML table ``{median_<unit>, sigma, low_<unit>, high_<unit>}``."""
    if not isinstance(table, dict):
        raise ConfigurationError(f"profile.{key} must be a table such as {{ median_{units[0]} = ... }}, got {table!r}")
    allowed = {f"{b}_{u}" for b in ("median", "low", "high") for u in units} | {"sigma"}
    unknown = sorted(set(table) - allowed)
    if unknown:
        raise ConfigurationError(f"profile.{key} has unknown keys {unknown}; allowed: {sorted(allowed)}")
    values: dict[str, float] = {}
    for bound in ("median", "low", "high"):
        given = [u for u in units if f"{bound}_{u}" in table]
        if len(given) > 1:
            raise ConfigurationError(f"profile.{key} gives {bound} in several units {given}; give one")
        if given:
            raw = check_real(f"profile.{key}.{bound}_{given[0]}", table[f"{bound}_{given[0]}"], allow_inf=bound == "high")
            values[bound] = raw * _UNITS[given[0]]
    if "median" not in values:
        raise ConfigurationError(f"profile.{key} needs a median (median_{units[0]} = ...), got {table!r}")
    return Spread(values["median"], float(table.get("sigma", 0.0)), values.get("low", 0.0), values.get("high", math.inf))


def profile_from_toml(source: str | Path | Mapping[str, Any]) -> LinkProfile:
    """A :class:`LinkProfile` from a TOML file, a TOML string or its parsed ``[profile]`` table.

    Bandwidths in ``mbps`` (Mbit/s) or ``bps`` (bytes/s), latencies in ``ms`` or ``s``
    (module docstring).
    """
    if isinstance(source, Mapping):
        doc: Mapping[str, Any] = source
    else:
        text = Path(source).read_text() if isinstance(source, Path) or "\n" not in source and Path(source).is_file() \
            else str(source)
        try:
            doc = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigurationError(f"profile TOML does not parse: {exc}") from None
    table = doc.get("profile", doc)
    unknown = sorted(set(table) - {"name", "uplink", "downlink", "latency", "device_speed"})
    if unknown:
        raise ConfigurationError(f"[profile] has unknown keys {unknown}; allowed: name, uplink, downlink, "
                                 f"latency, device_speed")
    for key in ("uplink", "downlink", "latency"):
        if key not in table:
            raise ConfigurationError(f"[profile] needs {key} = {{ median_... = ... }}")
    return LinkProfile(str(table.get("name", "custom")), _spread(table["uplink"], "uplink", ("mbps", "bps")),
                       _spread(table["downlink"], "downlink", ("mbps", "bps")),
                       _spread(table["latency"], "latency", ("ms", "s")),
                       check_real("profile.device_speed", table.get("device_speed", 1.0), strict=True))
