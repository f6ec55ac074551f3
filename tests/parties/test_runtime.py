"""parties.runtime and parties.runtime_registry: the hosting plan, the memory runtime object."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.protocols import rr_independent
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.party import LOOP_KINDS
from parties.runtime import HostingPlan, MemoryHosting, MemoryRuntime
from parties.runtime_registry import RUNTIMES, make_runtime
from parties.simulate import simulate

DATA = planted_clusters(12, rng=np.random.default_rng(4)).dataset


def _plan(**changes: Any) -> HostingPlan:
    n = DATA.n
    fields: dict[str, Any] = dict(n=n, schema=DATA.schema, records=np.asarray(DATA.codes), seed=5,
                                  budgets=(math.inf,) * n, policy="sequential", accept=tuple(k.KIND for k in LOOP_KINDS))
    return HostingPlan(**{**fields, **changes})


def test_a_hosting_plan_is_keyword_only_and_gives_every_party() -> None:
    plan = _plan()
    assert plan.parties == range(DATA.n) and plan.budgets == (math.inf,) * DATA.n
    assert plan.engine is None and not plan.signs and plan.graph() is None  # the star
    assert _plan(mesh=True).graph().number_of_edges() == DATA.n * (DATA.n - 1) // 2  # type: ignore[union-attr]
    with pytest.raises(TypeError, match="positional"):
        HostingPlan(DATA.n, DATA.schema, DATA.codes, 5, (math.inf,) * DATA.n, "sequential", ())  # type: ignore[misc]


@pytest.mark.parametrize(
    ("changes", "match"),
    [
        ({"n": 0}, r"n must be an integer >= 1, got 0"),
        ({"records": np.zeros((3, 2), dtype=int)}, r"records must have shape \(n, m\) = \(12, 8\), got \(3, 2\)"),
        ({"seed": -1}, r"seed must be an integer >= 0, got -1"),
        ({"budgets": (1.0,) * 3}, r"budgets must hold one budget per party \(12\), got 3"),
        ({"policy": "lenient"}, r"policy must be one of \['sequential', 'parallel', 'unlinkable-pairs'\], got 'lenient'"),
        ({"timeout": 0.0}, r"timeout must be .*> 0.*got 0"),
        ({"min_roster": 0}, r"min_roster must be an integer >= 1, got 0"),
        ({"schema": "adult"}, r"schema must be a mprr.data.Schema, got str"),
    ],
)
def test_a_bad_hosting_plan_is_refused_naming_the_field(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        _plan(**changes)


def test_make_runtime_memory_is_a_runtime_object() -> None:
    runtime = make_runtime("memory")
    assert isinstance(runtime, MemoryRuntime) and runtime == MemoryRuntime() and runtime.name == "memory"
    assert runtime.options() == {"runtime": "memory", "shards": 1}
    assert make_runtime("memory", shards=3) == MemoryRuntime(shards=3)
    assert make_runtime("memory", shards=None) == MemoryRuntime()  # an option left unset takes its default
    assert "memory" in RUNTIMES
    with pytest.raises(ConfigurationError, match=r"runtime 'memory' takes the option 'shards' only, got \['workers'\]"):
        make_runtime("memory", workers=2)
    with pytest.raises(ConfigurationError, match=r"shards must be an integer >= 1, got 0"):
        make_runtime("memory", shards=0)
    with pytest.raises(ConfigurationError, match=r"runtime must be one of memory, tcp, ray, virtual, got 'carrier-pigeon'"):
        make_runtime("carrier-pigeon")


@pytest.mark.parametrize("runtime", ["memory", make_runtime("memory"), MemoryRuntime(shards=2), None])
def test_the_runtime_reaches_simulate_as_an_argument(runtime: Any) -> None:
    """By name, as the object ``make_runtime`` gives, or the default: the same result as the
    fast path, and the run says where its parties lived."""
    sim = simulate(DATA, "RR-Independent", seed=9, timeout=5.0, p=0.7, runtime=runtime)
    fast = rr_independent(DATA, rng=PartyStreams(9, DATA.n), p=0.7)
    assert np.array_equal(sim.result.releases[0].codes, fast.releases[0].codes)
    shards = runtime.shards if isinstance(runtime, MemoryRuntime) else 1
    assert sim.options["runtime"] == ("memory" if shards == 1 else {"runtime": "memory", "shards": 2})


def test_simulate_refuses_what_is_not_a_runtime() -> None:
    with pytest.raises(ConfigurationError, match=r"runtime must be a runtime name \(memory, tcp, ray, virtual\) or a "
                                                 r"parties.runtime.Runtime, got int"):
        simulate(DATA, "RR-Independent", seed=9, timeout=5.0, p=0.7, runtime=3)  # type: ignore[arg-type]


async def test_memory_hosting_runs_its_shards_and_stops_them() -> None:
    async with MemoryRuntime(shards=2).host(_plan()) as hosting:
        assert isinstance(hosting, MemoryHosting) and len(hosting.links) == 2
        assert [link.parties for link in hosting.links] == [range(0, 6), range(6, 12)]
        parties = await hosting.parties()
    assert [p.index for p in parties] == list(range(DATA.n))
    assert hosting.wire()["shards"] == 2


def test_a_masked_sum_whose_controller_messages_reach_the_host_as_they_are_equals_one_sent_as_frames(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from parties.runtime import LocalLink
    from tests.parties.equivalence import assert_same_runs

    data = planted_clusters(24, rng=np.random.default_rng(8), strength=0.8).dataset
    runs: list[int] = []
    push_each = LocalLink.push_each

    def spy(self: LocalLink, *args: Any) -> None:
        runs.append(len(args[3]))
        push_each(self, *args)

    monkeypatch.setattr(LocalLink, "push_each", spy)

    def run() -> object:
        return simulate(data, "RR-Clusters", seed=2, timeout=30.0, p=0.7, Tv=60, Td=0.1, dependence="4.2",
                        secure_sum="masked-sparse", runtime=MemoryRuntime())

    carried = run()
    assert runs == [data.n] * 4  # (the key directories, relayed shares, survivor sets, unmask requests)
    monkeypatch.setattr(LocalLink, "carries_messages", False)
    runs.clear()
    frames = run()
    assert runs == []
    assert_same_runs(carried, frames)
