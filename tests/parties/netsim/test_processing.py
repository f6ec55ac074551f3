"""The runtime's processing term: the closed form of one round with per-frame and per-byte CPU,
the controller's routing of a relayed frame, host CPUs shared by their parties, the calibration."""

from __future__ import annotations

import asyncio
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.netsim.clock import run_virtual
from parties.netsim.framing import Framing
from parties.netsim.links import LinkScheduler
from parties.netsim.model import ControllerLink, NetworkModel, model_from_toml
from parties.netsim.network import TimedNetwork
from parties.netsim.processing import DEFAULT_PROCESSING, ProcessingCosts, calibrate_processing
from parties.netsim.profiles import LinkProfile, Spread
from parties.transport import CONTROLLER
from parties.wire.codec import encode
from parties.wire.messages import RandomizedValues

# round numbers: an endpoint costs 0.5 * (3 + 2 + 1) ms + 0.5 * 6 us per byte, routing 4 ms + 4 us per byte
COSTS = ProcessingCosts(codec_fixed=3e-3, codec_per_byte=2e-6, channel_fixed=2e-3, channel_per_byte=1e-6,
                        tls_fixed=1e-3, tls_per_byte=3e-6, router_fixed=1e-3, router_per_byte=0.0)


def flat(up: float, down: float, latency: float, controller: ControllerLink, **kw: object) -> NetworkModel:
    """Every party on the same constant link; payload bytes only on the wire."""
    return NetworkModel(LinkProfile("flat", Spread(up), Spread(down), Spread(latency)), controller,
                        Framing.none(), **kw)  # type: ignore[arg-type]


def test_endpoint_and_route_are_the_halves_and_round_trips_of_the_layers() -> None:
    assert COSTS.endpoint(100) == pytest.approx(0.5 * (6e-3 + 100 * 6e-6))
    assert COSTS.route(100) == pytest.approx(1e-3 + 2e-3 + 1e-3 + 100 * (1e-6 + 3e-6))
    with pytest.raises(ConfigurationError, match="ProcessingCosts.tls_fixed"):
        ProcessingCosts(0.0, 0.0, 0.0, 0.0, -1.0, 0.0, 0.0, 0.0)


def test_one_round_takes_latency_plus_size_over_bandwidth_plus_the_processing() -> None:
    model = flat(1000.0, 8000.0, 0.02, ControllerLink(1e9, 1e9, 0.005), processing=COSTS)
    msg = RandomizedValues(1, np.arange(50))
    size = len(encode(msg))

    async def run() -> tuple[float, float, float]:
        net = TimedNetwork(1, model=model, rng=np.random.default_rng(0))
        await net.endpoint(0).send(CONTROLLER, msg, phase="collect")
        await net.endpoint(CONTROLLER).recv(kinds=RandomizedValues, timeout=60.0)
        return net.timeline.ready[0], net.timeline.arrival[0], net.timeline.processing[0]

    ready, arrival, processing = run_virtual(run())
    endpoint = 0.5 * (6e-3 + size * 6e-6)
    # the sender encodes and seals, the link carries, the controller opens and decodes
    assert ready == pytest.approx(endpoint) and processing == pytest.approx(endpoint)
    assert arrival == pytest.approx(endpoint + 0.025 + size / 1000.0 + endpoint)


def test_a_relayed_frame_is_routed_on_the_controllers_cpu_and_stored_and_forwarded() -> None:
    model = flat(1000.0, 2000.0, 0.01, ControllerLink(4000.0, 4000.0, 0.002), processing=COSTS, relay=True)
    msg = RandomizedValues(1, np.arange(30))
    size = len(encode(msg))

    async def run() -> float:
        net = TimedNetwork(2, model=model, rng=np.random.default_rng(0), topology=nx.complete_graph(2))
        await net.endpoint(0).send(1, msg, phase="p2p")
        await net.endpoint(1).recv(kinds=RandomizedValues, timeout=60.0)
        return net.timeline.arrival[0]

    endpoint = 0.5 * (6e-3 + size * 6e-6)
    up_to_controller = 0.012 + size / 1000.0  # party 0's uplink is the bottleneck
    down_to_party = 0.012 + size / 2000.0  # party 1's downlink is
    assert run_virtual(run()) == pytest.approx(endpoint + up_to_controller + COSTS.route(size) + down_to_party
                                               + endpoint)


def test_parties_of_one_host_queue_on_its_cpu_and_the_controller_on_its_own() -> None:
    fixed = ProcessingCosts(2e-3, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)  # 1 ms per endpoint
    msg = RandomizedValues(1, np.arange(3))

    def run(hosts: int | None) -> tuple[list[float], list[float]]:
        model = flat(1e12, 1e12, 0.0, ControllerLink(1e12, 1e12, 0.0), processing=fixed, hosts=hosts)

        async def go() -> tuple[list[float], list[float]]:
            net = TimedNetwork(4, model=model, rng=np.random.default_rng(0))
            for i in range(4):
                await net.endpoint(i).send(CONTROLLER, msg, phase="collect")
            await net.endpoint(CONTROLLER).gather(range(4), kinds=RandomizedValues, timeout=60.0)
            return list(net.timeline.ready), list(net.timeline.arrival)

        return run_virtual(go())

    ready, arrival = run(2)  # parties 0, 1 on one host, 2, 3 on the other
    assert ready == pytest.approx([1e-3, 2e-3, 1e-3, 2e-3])
    # the controller's one CPU takes them in the order they were charged: 1 ms each
    assert arrival == pytest.approx([2e-3, 3e-3, 4e-3, 5e-3])
    ready, arrival = run(None)  # a device each
    assert ready == pytest.approx([1e-3] * 4) and arrival == pytest.approx([2e-3, 3e-3, 4e-3, 5e-3])


def test_shared_hosts_queue_the_cryptography_too() -> None:
    s = LinkScheduler(np.ones(5), np.ones(5), np.zeros(5), cpus=np.array([0, 1, 1, 2, 2]))
    assert [s.compute(i, 0.0, 1.0) for i in range(4)] == [1.0, 2.0, 1.0, 2.0]
    assert s.busy == [0.0, 2.0, 2.0, 0.0, 0.0]
    with pytest.raises(ConfigurationError, match="cpus needs one integer in 0..4 per actor"):
        LinkScheduler(np.ones(5), np.ones(5), np.zeros(5), cpus=np.array([0, 1, 5, 1, 1]))


def test_hosts_split_the_parties_as_the_tcp_runtimes_workers() -> None:
    model = NetworkModel("broadband", hosts=2)
    assert model.cpus(5).tolist() == [0, 1, 1, 2, 2, 2]
    assert NetworkModel("broadband").cpus(3).tolist() == [0, 1, 2, 3]
    with pytest.raises(ConfigurationError, match="NetworkModel.hosts = 4 for n = 3 parties"):
        NetworkModel("broadband", hosts=4).cpus(3)
    with pytest.raises(ConfigurationError, match="NetworkModel.hosts must be an integer >= 1, got 0"):
        NetworkModel("broadband", hosts=0)


def test_processing_is_off_by_default_and_on_from_toml(tmp_path: Path) -> None:
    assert NetworkModel("mobile").processing is None and NetworkModel("mobile").hosts is None
    path = tmp_path / "net.toml"
    path.write_text('profile = "mobile"\n[processing]\ncharge = true\nhosts = 2\n[framing]\nbatched = true\n')
    model = model_from_toml(path)
    assert model.processing == DEFAULT_PROCESSING and model.hosts == 2 and model.framing.batched
    assert model.describe()["processing"] == DEFAULT_PROCESSING.to_dict()
    path.write_text('profile = "mobile"\n[processing]\ncharge = 1\n')
    with pytest.raises(ConfigurationError, match="processing.charge must be true or false, got 1"):
        model_from_toml(path)
    path.write_text('profile = "mobile"\n[processing]\nspeed = 2\n')
    with pytest.raises(ConfigurationError, match=r"\[processing\] has unknown keys \['speed'\]"):
        model_from_toml(path)


def test_charged_cpu_is_reported() -> None:
    model = flat(1e6, 1e6, 0.0, ControllerLink(1e9, 1e9, 0.0), processing=COSTS)
    msg = RandomizedValues(1, np.arange(10))
    size = len(encode(msg))

    async def run() -> dict[str, float]:
        net = TimedNetwork(2, model=model, rng=np.random.default_rng(0))
        for i in range(2):
            await net.endpoint(i).send(CONTROLLER, msg, phase="collect")
        await net.endpoint(CONTROLLER).gather(range(2), kinds=RandomizedValues, timeout=60.0)
        await asyncio.sleep(0)
        cpu: dict[str, float] = net.timeline.report()["cpu"]
        return cpu

    cpu = run_virtual(run())
    assert cpu["controller"] == pytest.approx(2 * COSTS.endpoint(size))
    assert cpu["parties"] == pytest.approx(2 * COSTS.endpoint(size))
    assert cpu["busiest_party_cpu"] == pytest.approx(COSTS.endpoint(size))


def test_calibration_measures_every_layer() -> None:
    costs = calibrate_processing(repeat=20)
    for name in ("codec_fixed", "channel_fixed", "tls_fixed", "router_fixed"):
        value = getattr(costs, name)
        # CPU seconds (process_time): a few microseconds on the build machine; within a factor
        # of 20 of the stored defaults on any machine this suite runs on
        assert DEFAULT_PROCESSING.to_dict()[name] / 20 < value < 20 * DEFAULT_PROCESSING.to_dict()[name], name
    assert costs.tls_per_byte > 0 and costs.endpoint(16_384) > costs.endpoint(0)


def test_batched_framing_charges_the_headers_in_proportion_to_the_bytes() -> None:
    batched, single = Framing(10, batched=True), Framing(10)
    # 1,000 payload + 10 record bytes: 1,010 * (1 + 22/16,384) * (1 + 52/1,448)
    assert batched.wire_size(1000) == round(1010 * (1 + 22 / 16384) * (1 + 52 / 1448)) == 1048
    assert single.wire_size(1000) == 1010 + 22 + 52
    assert Framing(0, tls=False, tcp=False, batched=True).wire_size(1000) == 1000


def test_a_cpu_serves_frames_in_the_order_they_reach_it() -> None:
    # the controller's reply reaches party 0 at 1 s; the party's own send at 0.1 s is not held
    # behind that later work on its CPU
    model = flat(1e12, 1e12, 0.5, ControllerLink(1e12, 1e12, 0.0), processing=COSTS)
    msg = RandomizedValues(1, np.arange(3))
    endpoint = COSTS.endpoint(len(encode(msg)))

    async def run() -> tuple[float, float]:
        net = TimedNetwork(1, model=model, rng=np.random.default_rng(0))
        await net.endpoint(CONTROLLER).send(0, msg, phase="ask")
        await asyncio.sleep(0.1)
        await net.endpoint(0).send(CONTROLLER, msg, phase="answer")
        await net.endpoint(0).recv(kinds=RandomizedValues, timeout=60.0)
        await net.endpoint(CONTROLLER).recv(kinds=RandomizedValues, timeout=60.0)
        return net.timeline.ready[1], net.timeline.arrival[0]

    ready, arrival = run_virtual(run())
    assert ready == pytest.approx(0.1 + endpoint)
    assert arrival == pytest.approx(endpoint + 0.5 + endpoint)
