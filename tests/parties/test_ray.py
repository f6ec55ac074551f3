"""The ``ray`` runtime: memory ≡ ray for every case of the equivalence matrix (every protocol,
dependence method and engine; replies as reply columns; the signing engines' keys born in the
shard actors, the key directory installed by the driver) on one pool of shard actors serving run
after run; consecutive runs on pooled actors give the runs of fresh actors; closing the pool kills
its actors, a dead one is replaced at the next run; a dead shard actor drops its parties, also in
the middle of a secure sum (one local Ray and one pool for the module)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import numpy as np
import pytest

from mprr.errors import ConfigurationError, PartyDropped, RuntimeFailure
from mprr.synthetic import planted_clusters
from parties.runtime import Hosting, HostingPlan

ray = pytest.importorskip("ray")

from parties.ray_runtime import RayPool, RayRuntime, ShardActor  # noqa: E402
from parties.shard import ShardSetup  # noqa: E402
from parties.shard_report import ShardReport  # noqa: E402
from parties.simulate import simulate  # noqa: E402
from tests.parties.equivalence import assert_same_runs  # noqa: E402
from tests.parties.equivalence_cases import matrix_cases, reference, simulate_case  # noqa: E402
from tests.parties.transport_helpers import once_before  # noqa: E402

pytestmark = pytest.mark.ray

N = 150


@pytest.fixture(scope="module", autouse=True)
def local_ray() -> Iterator[None]:
    """One local Ray for the module (a start costs about 10 s); the runtime reuses it."""
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level="ERROR",
             configure_logging=False)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def pool(local_ray) -> Iterator[RayPool]:  # type: ignore[no-untyped-def]
    """Three shard actors for the module, serving run after run (killed at its end)."""
    with RayPool(shards=3, num_cpus=0.25) as actors:
        yield actors


@pytest.fixture(scope="module")
def data():  # type: ignore[no-untyped-def]
    return planted_clusters(N, rng=np.random.default_rng(11), strength=0.8).dataset


CASES = matrix_cases()

SPLIT = {"graph-direct": "party-to-party frames between actors", "masked-sparse": "the key directory across actors"}
"""Engines whose cases run on two shard actors, and what crosses between them there."""


def shards(case) -> int:  # type: ignore[no-untyped-def]
    """Two shard actors for the engines of :data:`SPLIT`, else one (the memory (three shards)
    and tcp (two workers) matrices split every case)."""
    return 2 if case.engine in SPLIT else 1


def test_a_plugins_engine_runs_on_shard_actors(own_plugin, pool) -> None:  # noqa: ANN001
    """The plugin's ``ring`` engine (tests/own_plugin.py, registered by importing it): the set-up
    names its class by module, so a shard actor imports the plugin, which registers its
    messages there too: the memory run, traffic included."""
    case = next(c for c in matrix_cases() if c.engine == "ring")
    on_ray = simulate_case(case, pool.runtime(shards=2))
    assert_same_runs(reference(case), on_ray)
    assert on_ray.traffic.by_kind["SealedShares"].messages > 0 and not any(p.errors for p in on_ray.parties)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_the_matrix_on_shard_actors_gives_the_memory_runs(case, pool) -> None:  # type: ignore[no-untyped-def]
    """Every case of the equivalence matrix (tests/parties/equivalence_cases.py) on the pool's
    shard actors: its memory run, traffic statistics included; the actor calls carry the
    in-memory payload, a party-to-party frame twice (up to the driver's router, down to its
    receiver's shard)."""
    if case.missing:
        pytest.fail(case.missing)
    memory = reference(case)
    on_ray = simulate_case(case, pool.runtime(shards=shards(case)))
    assert_same_runs(memory, on_ray)
    assert not any(p.errors for p in on_ray.parties)
    wire = on_ray.wire
    assert wire is not None and wire["shards"] == shards(case) and wire["lost_shards"] == 0 and not wire["problems"]
    assert wire["payload_bytes"] == memory.traffic.bytes + wire["party_to_party_bytes"]


def test_consecutive_runs_on_pooled_actors_give_the_runs_of_fresh_actors(data, pool) -> None:  # type: ignore[no-untyped-def]
    """Two runs with different seeds and protocols on the same actors, then the first again: each
    is the run of fresh actors (no parties, streams, keys or counters carried from run to run)."""
    signing = next(c for c in CASES if c.engine == "masked-sparse")  # keys born in the actors, per run

    def independent(runtime: RayRuntime):  # type: ignore[no-untyped-def]
        return simulate(data, "RR-Independent", seed=1, timeout=10.0, p=0.6, runtime=runtime)

    first = independent(pool.runtime(shards=2))
    second = simulate_case(signing, pool.runtime(shards=2))
    again = independent(pool.runtime(shards=2))
    fresh = [independent(RayRuntime(shards=2, num_cpus=0.25)), simulate_case(signing, RayRuntime(shards=2, num_cpus=0.25))]
    for one, other in ((first, fresh[0]), (again, fresh[0]), (second, fresh[1])):
        assert_same_runs(other, one)
        assert one.wire is not None and other.wire is not None and not one.wire["problems"]
        assert [one.wire[k] for k in ("payload_bytes", "party_to_party_bytes", "lost_shards")] == \
            [other.wire[k] for k in ("payload_bytes", "party_to_party_bytes", "lost_shards")]
    with pytest.raises(ConfigurationError, match="shards must be an integer >= 1 and <= the pool's 3 actors, got 4"):
        pool.runtime(shards=4)


def test_a_dead_pooled_actor_is_replaced_at_the_next_run(data, pool) -> None:  # type: ignore[no-untyped-def]
    memory = simulate(data, "RR-Independent", seed=5, timeout=10.0, p=0.6)
    dead = pool.actors[1]
    ray.kill(dead)
    on_ray = simulate(data, "RR-Independent", seed=5, timeout=10.0, p=0.6, runtime=pool.runtime(shards=2))
    assert_same_runs(memory, on_ray)
    wire = on_ray.wire
    assert wire is not None and not wire["problems"] and len(wire["replaced_actors"]) == 1
    assert wire["replaced_actors"][0].startswith("shard 1 (parties 75-149): its actor died since the last run")
    assert pool.actors[1] is not dead


def test_closing_a_pool_kills_every_actor(data) -> None:  # type: ignore[no-untyped-def]
    with RayPool(shards=2, num_cpus=0.25) as own:
        simulate(data, "RR-Independent", seed=1, timeout=10.0, p=0.6, runtime=own.runtime())
        actors = own.actors
    for actor in actors:
        with pytest.raises(ray.exceptions.RayActorError):
            ray.get(actor.peak_rss.remote(), timeout=30)
    with pytest.raises(RuntimeFailure, match="the pool is closed"):
        simulate(data, "RR-Independent", seed=1, timeout=10.0, p=0.6, runtime=own.runtime())


def test_a_shard_actor_gives_an_earlier_runs_calls_nothing_of_the_next(data) -> None:  # type: ignore[no-untyped-def]
    """:class:`ShardActor` in this process: a pull of run 0 pending when run 1 starts returns
    ``[]``; a crash notice of run 0 pushed after it crashes no party of run 1 (run 1's own does),
    and run 1's parties are fresh (no draws)."""
    import asyncio

    from parties.channel import dumps

    n = 12
    plan = HostingPlan(n=n, schema=data.schema, records=np.asarray(data.codes)[:n], seed=1, budgets=(1.0,) * n,
                       policy="sequential", accept=())

    async def runs() -> tuple[list[bytes], ShardReport]:
        actor = ShardActor()
        await actor.start(0, plan.setup(range(n)))
        stale = asyncio.get_running_loop().create_task(actor.pull(0))
        await asyncio.sleep(0)
        await actor.start(1, plan.setup(range(n)))
        await asyncio.sleep(0)  # (its parties served, as when the driver's pushes arrive)
        await actor.push(0, [dumps("crash", tuple(range(n // 2)))])
        await actor.push(1, [dumps("crash", tuple(range(n // 2, n)))])
        return await asyncio.wait_for(stale, 5.0), await actor.finish(1)

    pulled, report = asyncio.run(runs())
    assert pulled == []
    status = [report.statuses[k] for k in report.status_of]
    assert report.parties == range(n) and not report.errors
    assert status == ["running"] * (n // 2) + ["crashed"] * (n - n // 2)
    assert not report.draws.any()


class _Broken(ShardActor):
    """A shard actor that cannot build its parties."""

    async def start(self, run: int, setup: ShardSetup) -> bytes:
        raise OSError("no room for the parties")


def test_a_shard_actor_that_cannot_start_fails_the_run_naming_the_shard(data) -> None:  # type: ignore[no-untyped-def]
    with RayPool(shards=2, num_cpus=0.25, actor=_Broken) as broken:
        # (both shards fail; the first failure to arrive is reported)
        with pytest.raises(RuntimeFailure, match=r"ray runtime: shard (0 \(parties 0-74\)|1 \(parties 75-149\)): "
                                                 r"its actor failed to start: "
                                                 r"(.|\n)*no room for the parties"):
            simulate(data, "RR-Independent", seed=1, timeout=10.0, p=0.6, runtime=broken.runtime())


def test_three_shard_actors_send_their_replies_as_columns(data, pool) -> None:  # type: ignore[no-untyped-def]
    """Released values come up as reply columns (one record per shard and request): the memory
    run's results, view and traffic, with fewer bytes on the Ray link than one frame per party."""
    params = dict(p=0.7, Tv=60, Td=0.1)
    memory = simulate(data, "RR-Clusters", seed=4, timeout=10.0, **params)
    on_ray = simulate(data, "RR-Clusters", seed=4, timeout=10.0, runtime=pool.runtime(shards=3), **params)
    assert_same_runs(memory, on_ray)
    wire = on_ray.wire
    assert wire is not None and wire["shards"] == 3 and wire["payload_bytes"] == memory.traffic.bytes
    assert wire["columns_saved_bytes"] > 0


class _KillShard(RayRuntime):
    """Kills the last shard actor as soon as every shard is ready."""

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        async with super().host(plan) as hosting:
            ray.kill(hosting.links[-1].actor)  # type: ignore[attr-defined]
            yield hosting


def test_a_dead_shard_actor_drops_its_parties(data, pool) -> None:  # type: ignore[no-untyped-def]
    runtime = _KillShard(shards=2, pool=pool)
    with pytest.raises(PartyDropped, match="crashed") as info:
        simulate(data, "RR-Independent", seed=1, timeout=2.0, p=0.6, runtime=runtime)
    assert set(info.value.parties) == set(range(N // 2, N))
    # exact exclusions: a live party slower than the round timeout would be excluded too, so this
    # run gives the survivors a wide margin on a loaded machine (it waits that long once, for the dead)
    sim = simulate(data, "RR-Independent", seed=1, timeout=6.0, p=0.6, runtime=runtime, on_dropout="exclude")
    assert sim.degraded and set(sim.excluded) == set(range(N // 2, N))
    assert sim.wire is not None and [r.split(":")[0] for r in sim.wire["replaced_actors"]] == ["shard 1 (parties 75-149)"]
    with pytest.raises(ConfigurationError, match="shards must be an integer >= 1, got 0"):
        RayRuntime(shards=0)


class _KillShardDuringSum(RayRuntime):
    """Kills the last shard actor when the controller starts the secure sum."""

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        from parties.wire.requests import SecureSumStart

        async with super().host(plan) as hosting:
            victim = hosting.links[-1].actor  # type: ignore[attr-defined]
            once_before(hosting.router, SecureSumStart.KIND, lambda: ray.kill(victim))
            yield hosting


def test_a_shard_killed_during_a_secure_sum_ends_in_an_error_or_a_degraded_sum(pool) -> None:  # type: ignore[no-untyped-def]
    n = 30
    small = planted_clusters(n, rng=np.random.default_rng(11), strength=0.8).dataset
    params = dict(p=0.7, Tv=60, Td=0.1, dependence="4.3", secure_sum="masked")
    # the masked engine recovers from dropouts: two shards of three survive, a majority of holders
    # (exact exclusions: the round timeout leaves the survivors a wide margin on a loaded machine)
    sim = simulate(small, "RR-Clusters", seed=2, timeout=8.0, runtime=_KillShardDuringSum(shards=3, pool=pool),
                   on_dropout="exclude", **params)
    lost = set(range(20, n))
    assert sim.degraded and set(sim.excluded) == lost
    assert sim.result.details["secure_sum"]["contributors"] == n - len(lost) == sim.result.n
    # the paper engine cannot lose a party: a clear error naming the lost parties, never a hang
    with pytest.raises(PartyDropped, match=r"paper secure sum: no broadcast r_j from \d+ parties") as info:
        simulate(small, "RR-Clusters", seed=2, timeout=2.5, runtime=_KillShardDuringSum(shards=2, pool=pool),
                 **{**params, "dependence": "4.2", "secure_sum": "paper"})
    assert set(range(15, n)) <= set(info.value.parties)


def _draws(index: int, seed_seq: np.random.SeedSequence, context: int) -> float:
    return float(np.random.default_rng(seed_seq).random() * context + index)


def test_monte_carlo_on_ray_gives_the_same_runs_as_in_process() -> None:
    from scenarios.config import Workers
    from scenarios.montecarlo import monte_carlo

    local = monte_carlo(_draws, runs=6, seed=9, context=10, workers=1)
    on_ray = monte_carlo(_draws, runs=6, seed=9, context=10, workers="ray")
    assert on_ray == local
    assert Workers().check("ray", "workers") == "ray"
    with pytest.raises(ConfigurationError, match='workers must be an integer >= 0 and <= 256 or "ray", got'):
        Workers().check("dask", "workers")
