"""The network model of a virtual-time run: links, framing, compute, availability.

:class:`NetworkModel` gathers everything the virtual-time runtime (:mod:`parties.netsim.runtime`)
needs to time a run: the parties' access-link :class:`~parties.netsim.profiles.LinkProfile`, the
controller's :class:`ControllerLink` (shared by every message crossing it), the per-message
:class:`~parties.netsim.framing.Framing`, the :class:`~parties.netsim.compute.CryptoCosts` of
the cryptography, the :class:`~parties.netsim.availability.Availability` of the parties, optionally the runtime's
own :class:`~parties.netsim.processing.ProcessingCosts` and how many hosts the parties share, and
the seed of its random draws.  :meth:`NetworkModel.draw` turns it into the concrete links of one run
of ``n`` parties (:class:`RunLinks`), with a keyword-only ``rng``; the runtime seeds that ``rng``
from the model's ``seed`` so the same model and seed give the same timeline.

TOML form (:func:`model_from_toml`): a ``[profile]`` table (:func:`parties.netsim.profiles.profile_from_toml`)
or ``profile = "mobile"``, and optionally::

    [controller]
    uplink_mbps = 10000
    downlink_mbps = 10000
    latency_ms = 0.25
    relay = false                  # true: party-to-party messages cross the controller's link

    [availability]
    dropout = 0.05                 # per party and round
    traces = "traces.csv"          # party,online_from,online_until (relative to the TOML file)

    [framing]
    tls = true
    tcp = true
    batched = false                # true: headers in proportion to the bytes (the tcp runtime's batching)

    [processing]
    charge = true                  # the runtime's codec, TLS and routing CPU (DEFAULT_PROCESSING)
    hosts = 2                      # the parties share 2 host CPUs (default: a device each)
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError
from parties.netsim.availability import Availability, Traces
from parties.netsim.compute import DEFAULT_COSTS, CryptoCosts
from parties.netsim.framing import Framing
from parties.netsim.processing import DEFAULT_PROCESSING, ProcessingCosts
from parties.netsim.profiles import PROFILES, LinkProfile, mbps, profile, profile_from_toml

__all__ = ["ControllerLink", "NetworkModel", "RunLinks", "model_from_toml"]


@dataclass(frozen=True)
class ControllerLink:
    """The controller's link: uplink and downlink in bytes per second, one-way latency in seconds.

    Default: a cloud server, 10 Gbit/s each way and 0.25 ms (the ``datacenter`` profile's medians).
    """

    uplink: float = mbps(10_000)
    downlink: float = mbps(10_000)
    latency: float = 0.25e-3

    def __post_init__(self) -> None:
        check_real("ControllerLink.uplink", self.uplink, strict=True, allow_inf=True)
        check_real("ControllerLink.downlink", self.downlink, strict=True, allow_inf=True)
        check_real("ControllerLink.latency", self.latency)


@dataclass(frozen=True)
class RunLinks:
    """The links of one run: per actor (``n + 1`` entries, the controller first) uplink,
    downlink (bytes/s), one-way latency (s) and device-speed factor."""

    uplink: np.ndarray
    downlink: np.ndarray
    latency: np.ndarray
    device_speed: np.ndarray

    @property
    def n(self) -> int:
        """Number of parties."""
        return int(self.uplink.size - 1)


@dataclass(frozen=True)
class NetworkModel:
    """Everything that times a run (module docstring).

    Parameters
    ----------
    profile
        The parties' access links (a :class:`LinkProfile` or a shipped profile's name).
    controller
        The controller's link.
    framing
        Per-message overhead (default: the tcp runtime's, :meth:`Framing.measured`).
    costs
        Compute cost of the cryptography (default: :data:`~parties.netsim.compute.DEFAULT_COSTS`).
    availability
        Dropouts per round and on/off traces (default: everyone always online).
    seed
        Seed of the model's draws (links, dropouts); non-negative integer.
    relay
        Party-to-party messages cross the controller's link (as between the workers of the tcp
        and ray runtimes, :meth:`LinkScheduler.transfer <parties.netsim.links.LinkScheduler.transfer>`);
        default: direct links between parties.
    processing
        CPU cost of the runtime's own work per frame (codec, channel records, TLS, the
        controller's routing; :mod:`parties.netsim.processing`), charged on the sender's, the
        controller's and the receiver's CPU; default ``None``: not charged (only the
        cryptography is, as for a deployment whose runtime cost is negligible or unknown).
    hosts
        The parties share this many host CPUs (contiguous near-equal ranges, as the tcp
        runtime's workers, :func:`parties.shard.split`): their cryptography and processing
        queue on their host's CPU.  Default ``None``: every party has a device of its own.
    """

    profile: LinkProfile
    controller: ControllerLink = field(default_factory=ControllerLink)
    framing: Framing = field(default_factory=Framing.measured)
    costs: CryptoCosts = DEFAULT_COSTS
    availability: Availability = field(default_factory=Availability)
    seed: int = 0
    relay: bool = False
    processing: ProcessingCosts | None = None
    hosts: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.profile, str):
            object.__setattr__(self, "profile", profile(self.profile))
        if not isinstance(self.profile, LinkProfile):
            raise ConfigurationError(f"profile must be a LinkProfile or one of {', '.join(PROFILES)}, "
                                     f"got {self.profile!r}")
        check_int("NetworkModel.seed", self.seed, 0)
        if self.hosts is not None:
            check_int("NetworkModel.hosts", self.hosts, 1)
        if self.processing is not None and not isinstance(self.processing, ProcessingCosts):
            raise ConfigurationError(f"NetworkModel.processing must be a ProcessingCosts or None, "
                                     f"got {self.processing!r}")

    def cpus(self, n: int) -> np.ndarray:
        """The CPU of each actor of a run of ``n`` parties (``n + 1`` entries, the controller
        first, on CPU 0): party ``i`` on CPU ``1 + i`` without ``hosts``, else on ``1 + k`` for
        the host ``k`` whose range holds it."""
        check_int("n (number of parties)", n, 1)
        if self.hosts is None:
            return np.arange(n + 1)
        if self.hosts > n:
            raise ConfigurationError(f"NetworkModel.hosts = {self.hosts} for n = {n} parties: at most one "
                                     f"host per party")
        from parties.shard import split

        out = np.zeros(n + 1, dtype=np.int64)
        for k, r in enumerate(split(n, self.hosts)):
            out[1 + r.start:1 + r.stop] = 1 + k
        return out

    def draw(self, n: int, *, rng: np.random.Generator) -> RunLinks:
        """The links of a run of ``n`` parties (the profile's draws, the controller first)."""
        check_int("n (number of parties)", n, 1)
        sample = self.profile.sample(n, rng=rng)
        c = self.controller
        return RunLinks(np.concatenate(([c.uplink], sample.uplink)), np.concatenate(([c.downlink], sample.downlink)),
                        np.concatenate(([c.latency], sample.latency)), np.concatenate(([1.0], sample.device_speed)))

    def describe(self) -> dict[str, Any]:
        """JSON-friendly summary of the model (for reports)."""
        p, c, a = self.profile, self.controller, self.availability
        return {
            "profile": p.name,
            "party_uplink_mbps": p.uplink.median * 8 / 1e6, "party_downlink_mbps": p.downlink.median * 8 / 1e6,
            "party_latency_ms": p.latency.median * 1e3, "device_speed": p.device_speed,
            "controller": {"uplink_mbps": c.uplink * 8 / 1e6, "downlink_mbps": c.downlink * 8 / 1e6,
                           "latency_ms": c.latency * 1e3},
            "framing": {"record": self.framing.record, "tls": self.framing.tls, "tcp": self.framing.tcp,
                        "batched": self.framing.batched},
            "dropout": a.dropout, "traces": None if a.traces is None else len(a.traces.parties),
            "seed": self.seed, "relay": self.relay,
            "processing": None if self.processing is None else self.processing.to_dict(), "hosts": self.hosts,
        }


def model_from_toml(source: str | Path, *, seed: int = 0) -> NetworkModel:
    """A :class:`NetworkModel` from a TOML file (module docstring); ``seed`` seeds its draws."""
    path = Path(source)
    try:
        doc = tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise ConfigurationError(f"network model TOML {str(path)!r} does not exist") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigurationError(f"network model TOML {str(path)!r} does not parse: {exc}") from None
    return model_from_mapping(doc, base=path.parent, seed=seed)


def model_from_mapping(doc: Mapping[str, Any], *, base: Path = Path("."), seed: int = 0) -> NetworkModel:
    """:func:`model_from_toml` from the parsed document (``base``: where relative trace paths start)."""
    unknown = sorted(set(doc) - {"profile", "controller", "availability", "framing", "processing"})
    if unknown:
        raise ConfigurationError(f"network model has unknown tables {unknown}; allowed: profile, controller, "
                                 f"availability, framing, processing")
    if "profile" not in doc:
        raise ConfigurationError("network model needs profile = \"datacenter\" | \"broadband\" | \"mobile\" "
                                 "or a [profile] table")
    prof = profile(doc["profile"]) if isinstance(doc["profile"], str) else profile_from_toml({"profile": doc["profile"]})
    ctrl = dict(doc.get("controller", {}))
    bad = sorted(set(ctrl) - {"uplink_mbps", "downlink_mbps", "latency_ms", "relay"})
    if bad:
        raise ConfigurationError(f"[controller] has unknown keys {bad}; allowed: uplink_mbps, downlink_mbps, "
                                 f"latency_ms, relay")
    relay = ctrl.get("relay", False)
    if not isinstance(relay, bool):
        raise ConfigurationError(f"controller.relay must be true or false, got {relay!r}")
    default = ControllerLink()
    controller = ControllerLink(
        mbps(check_real("controller.uplink_mbps", ctrl["uplink_mbps"], strict=True)) if "uplink_mbps" in ctrl
        else default.uplink,
        mbps(check_real("controller.downlink_mbps", ctrl["downlink_mbps"], strict=True)) if "downlink_mbps" in ctrl
        else default.downlink,
        check_real("controller.latency_ms", ctrl["latency_ms"]) * 1e-3 if "latency_ms" in ctrl else default.latency)
    avail = dict(doc.get("availability", {}))
    bad = sorted(set(avail) - {"dropout", "traces"})
    if bad:
        raise ConfigurationError(f"[availability] has unknown keys {bad}; allowed: dropout, traces")
    traces = Traces.from_csv(base / avail["traces"]) if "traces" in avail else None
    framing = dict(doc.get("framing", {}))
    bad = sorted(set(framing) - {"tls", "tcp", "batched"})
    if bad:
        raise ConfigurationError(f"[framing] has unknown keys {bad}; allowed: tls, tcp, batched")
    proc = dict(doc.get("processing", {}))
    bad = sorted(set(proc) - {"charge", "hosts"})
    if bad:
        raise ConfigurationError(f"[processing] has unknown keys {bad}; allowed: charge, hosts")
    charge = proc.get("charge", False)
    if not isinstance(charge, bool):
        raise ConfigurationError(f"processing.charge must be true or false, got {charge!r}")
    hosts = check_int("processing.hosts", proc["hosts"], 1) if "hosts" in proc else None
    return NetworkModel(prof, controller, Framing.measured(tls=bool(framing.get("tls", True)),
                                                           tcp=bool(framing.get("tcp", True)),
                                                           batched=bool(framing.get("batched", False))),
                        availability=Availability(avail.get("dropout", 0.0), traces), seed=seed, relay=relay,
                        processing=DEFAULT_PROCESSING if charge else None, hosts=hosts)
