"""The virtual runtime: the real protocol under the model; closed form, availability, same seed
same timeline, the critical-path breakdown."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.errors import ConfigurationError
from mprr.synthetic import planted_clusters
from parties.netsim.availability import Availability, Traces
from parties.netsim.framing import Framing
from parties.netsim.model import ControllerLink, NetworkModel
from parties.netsim.profiles import PROFILES, LinkProfile, Spread
from parties.netsim.runtime import VirtualRuntime
from parties.runtime_registry import make_runtime
from parties.simulate import simulate, simulate_async

INF = float("inf")


@pytest.fixture(scope="module")
def data() -> Dataset:
    return planted_clusters(12, rng=np.random.default_rng(8), strength=0.8).dataset


def flat(**kw: object) -> NetworkModel:
    return NetworkModel(LinkProfile("flat", Spread(1000.0), Spread(4000.0), Spread(0.02)),
                        ControllerLink(INF, INF, 0.005), Framing.none(), **kw)  # type: ignore[arg-type]


def test_one_round_protocol_matches_the_closed_form(data: Dataset) -> None:
    runtime = VirtualRuntime(model=flat())
    sim = simulate(data, "RR-Independent", seed=1, runtime=runtime, p=0.7)
    request = sim.traffic.by_kind["ReleaseRequest"].bytes // data.n
    answer = sim.traffic.by_kind["RandomizedValues"].bytes // data.n
    # request down the party's 4000 B/s downlink, answer up its 1000 B/s uplink, 2 x (20 + 5) ms
    closed = 2 * 0.025 + request / 4000 + answer / 1000
    assert runtime.timeline.finished == pytest.approx(closed)
    assert sim.wire is not None and sim.wire["completion"] == pytest.approx(closed)
    b = runtime.timeline.breakdown()
    assert (b["latency"], b["bandwidth"], b["waiting"]) == (pytest.approx(0.05), pytest.approx(closed - 0.05), 0.0)


def test_traces_drop_exactly_the_parties_away(data: Dataset) -> None:
    away = {3, 8}
    model = flat(availability=Availability(traces=Traces({p: ((1e6, INF),) for p in away})))
    runtime = VirtualRuntime(model=model)
    sim = simulate(data, "RR-Independent", seed=1, runtime=runtime, p=0.7, timeout=2.0, on_dropout="exclude")
    assert set(sim.excluded) == away
    assert runtime.timeline.missed() == {"attributes": sorted(away)}
    assert runtime.timeline.finished == pytest.approx(2.0)  # the round waited its timeout for them
    assert runtime.timeline.breakdown()["waiting"] == pytest.approx(2.0 - runtime.timeline.report()["rounds"][0]["end"])


def test_dropouts_per_round_miss_the_round_and_are_excluded(data: Dataset) -> None:
    runs = []
    for _ in range(2):
        runtime = VirtualRuntime(model=flat(availability=Availability(dropout=0.3), seed=5))
        sim = simulate(data, "RR-Independent", seed=1, runtime=runtime, p=0.7, timeout=2.0, on_dropout="exclude")
        runs.append((set(sim.excluded), runtime.timeline.missed()))
    (excluded, missed), again = runs
    assert missed["attributes"] and set(missed["attributes"]) == excluded and runs[1] == again


def test_same_seed_same_timeline_with_the_masked_engine(data: Dataset) -> None:
    def timeline(model_seed: int) -> dict[str, np.ndarray]:
        runtime = VirtualRuntime(model=NetworkModel(PROFILES["mobile"], seed=model_seed))
        simulate(data, "RR-Clusters", seed=2, runtime=runtime, timeout=30.0, p=0.7, Tv=60, Td=0.1,
                 dependence="4.3", secure_sum="masked-sparse")
        return runtime.timeline.columns()

    a, b, c = timeline(0), timeline(0), timeline(1)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    # other links, other timeline: the same messages (their order may change), other arrivals
    assert np.array_equal(np.sort(a["payload"]), np.sort(c["payload"])) and a["arrival"].max() != c["arrival"].max()
    compute = a["ready"] - a["sent"]
    assert compute.max() > 0  # the masked engine's cryptography is charged


def test_breakdown_adds_up_to_the_completion_time(data: Dataset) -> None:
    runtime = VirtualRuntime(model=NetworkModel(PROFILES["broadband"], availability=Availability(dropout=0.1)))
    simulate(data, "RR-Clusters", seed=3, runtime=runtime, timeout=5.0, p=0.7, Tv=60, Td=0.1, on_dropout="exclude")
    report = runtime.timeline.report()
    parts = sum(report["breakdown"][k] for k in ("compute", "queueing", "bandwidth", "latency", "waiting"))
    assert parts == pytest.approx(report["completion"])
    for r in report["rounds"]:
        assert 0 <= r["median"] <= r["p95"] <= r["duration"] + 1e-12


def test_the_virtual_runtime_by_name_and_its_loop() -> None:
    runtime = make_runtime("virtual", model="mobile")
    assert isinstance(runtime, VirtualRuntime) and runtime.model.profile == PROFILES["mobile"]
    with pytest.raises(ConfigurationError, match=r"runtime 'virtual' needs an event loop on a virtual clock"):
        asyncio.run(simulate_async(planted_clusters(4, rng=np.random.default_rng(1)).dataset, "RR-Independent",
                                   seed=1, p=0.7, runtime=VirtualRuntime()))
    with pytest.raises(ConfigurationError, match=r"has run nothing yet"):
        VirtualRuntime().timeline
