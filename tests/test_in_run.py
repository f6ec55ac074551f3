"""benchmarks/_in_run.py: the masked engine's cryptography and programs timed inside a run.

What ``benchmarks/masked_floor.py`` reports rests on it: every group must be reached by a
masked-sparse run (a wrapper on a name the engine no longer calls would read 0 s and shift that
time into "the rest"), each call counted once, and the engine left exactly as it was.
"""

from __future__ import annotations

import asyncio
import importlib.util
import mmap
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from mprr.synthetic import planted_clusters
from parties import party_sum
from parties.controller import Controller
from parties.secure.registry import make_engine
from parties.secure import crypto, masked_party, party_crypto, pki
from parties.simulate import simulate

ROOT = Path(__file__).resolve().parents[1]


def _load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def in_run() -> ModuleType:
    return _load("_in_run")


def test_every_group_is_timed_in_a_masked_sparse_run_and_the_engine_is_restored(in_run: ModuleType) -> None:
    originals = {(id(owner), name): owner.__dict__[name] for g in in_run.GROUPS for owner, name in g.targets}
    release = Controller.__dict__["secure_release"]
    rounds = {name: masked_party.MaskedParty.__dict__[name] for _, name in in_run.ROUNDS}
    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    started = time.process_time()
    with in_run.InRun() as timing:
        inside = simulate(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2",
                          secure_sum="masked-sparse")
        assert party_crypto.__dict__["exchange_each"] is not originals[(id(party_crypto), "exchange_each")]
        assert Controller.__dict__["secure_release"] is not release
    # the sum's CPU: some, and within the whole run's
    assert 0 < timing.sum_cpu <= time.process_time() - started
    assert Controller.__dict__["secure_release"] is release
    assert {name for name, seconds in timing.seconds.items() if seconds <= 0} == set()
    assert all(owner.__dict__[name] is originals[(id(owner), name)] for g in in_run.GROUPS for owner, name in g.targets)
    assert isinstance(crypto.KeyPair.__dict__["generate"], classmethod)
    # the programs hold the calls: their time is at least the calls' (each call timed once)
    calls = sum(seconds for name, seconds in timing.seconds.items()
                if next(g for g in in_run.GROUPS if g.name == name).floor)
    assert timing.seconds[in_run.PARTY_PROGRAMS] >= calls
    assert timing.seconds[in_run.CONTROLLER_PROGRAM] >= timing.seconds[in_run.UNMASKING]
    # every round of the party timed, with the calls made inside it: each call in its own round (this
    # run has no placeholder parties: every floor call is a real party's), the rounds within the programs
    assert all(method >= made > 0 for method, made in timing.rounds.values())
    by_label = dict(timing.rounds)
    assert by_label["0: masking key advertised"][1] == pytest.approx(timing.seconds["X25519 masking key pair"])
    assert by_label["3: survivor view stated and tagged"][1] == pytest.approx(timing.seconds["view tags written"])
    assert by_label["4: views checked, shares revealed"][1] == pytest.approx(
        timing.seconds["consistency check (tags checked, majorities counted)"])
    assert sum(made for _, made in timing.rounds.values()) == pytest.approx(calls, rel=1e-9)
    assert sum(method for method, _ in timing.rounds.values()) <= timing.seconds[in_run.PARTY_PROGRAMS]
    # timed while the sum ran: the sum's calls, not the PKI's set-up before the run (the shard's hosting)
    in_sums = timing.seconds_in_sums
    assert timing.seconds[in_run.PKI] > 0 and in_sums[in_run.PKI] == 0
    assert all(0 <= in_sums[name] <= seconds for name, seconds in timing.seconds.items())
    assert in_sums["X25519 static agreements"] == pytest.approx(timing.seconds["X25519 static agreements"])
    # (on the groups' clock, so exactly: the sum's CPU is another clock, behind it while the process waits)
    assert in_sums[in_run.PARTY_PROGRAMS] + in_sums[in_run.CONTROLLER_PROGRAM] <= timing.sum_wall * (1 + 1e-9)
    assert timing.sum_wall > 0
    # timing changes nothing the run computes
    plain = simulate(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2", secure_sum="masked-sparse")
    assert inside.result.clusters == plain.result.clusters
    assert all(masked_party.MaskedParty.__dict__[name] is rounds[name] for _, name in in_run.ROUNDS)
    assert party_sum.step is originals[(id(party_sum), "step")] and pki.Signer.exchange_each is originals[
        (id(pki.Signer), "exchange_each")]


def test_a_batchs_round_timer_runs_inside_the_programs_timer(in_run: ModuleType,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A round's batch is timed twice, as its round and among the parties' programs: the round's
    timer inside the programs', so the rounds never add up to more than the programs.  On a clock
    that ticks once a reading, the round takes 1 tick and the programs 3 (the other way round
    when the round's timer is outside)."""
    from types import SimpleNamespace

    from parties.secure import masked

    monkeypatch.setattr(masked, "state_views", lambda calls: [None] * len(calls))  # (the batch: a stub)
    party = SimpleNamespace(crypto=SimpleNamespace(real=True))  # (a real party's round: timed by round)
    ticks = iter(range(1_000))
    with monkeypatch.context() as clock:  # (the timers read the clock they find when they are made)
        clock.setattr(time, "perf_counter", lambda: float(next(ticks)))
        timing = in_run.InRun().__enter__()
    try:
        assert masked.state_views([(party, None)]) == [None]
    finally:
        timing.__exit__(None, None, None)
    assert timing.rounds["3: survivor view stated and tagged"] == [1.0, 0.0]
    assert timing.seconds[in_run.PARTY_PROGRAMS] == 3.0


def test_a_placeholder_partys_round_is_not_timed_by_round(in_run: ModuleType) -> None:
    """The counting driver's parties (no PKI key: placeholder cryptography) run outside the rounds' timing."""
    ctx = make_engine("masked-sparse").context(range(12), 4, session="placeholders")
    party = masked_party.MaskedParty(0, np.zeros(4, dtype=np.int64), ctx, masked_party.PartyCryptography(None, None), 2)
    with in_run.InRun() as timing:
        keys = party.advertise()
    assert keys.keys == (bytes(32),)
    assert timing.rounds["0: masking key advertised"] == [0.0, 0.0]
    assert timing.seconds["X25519 masking key pair"] == 0.0


def test_a_run_as_is_times_its_sum_alone(in_run: ModuleType) -> None:
    """``InRun(groups=False)``: the sum's CPU, with nothing else of the engine wrapped (the goal's runs)."""
    originals = {(id(owner), name): owner.__dict__[name] for g in in_run.GROUPS for owner, name in g.targets}
    rounds = {name: masked_party.MaskedParty.__dict__[name] for _, name in in_run.ROUNDS}
    release = Controller.__dict__["secure_release"]
    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    started = time.process_time()
    with in_run.InRun(groups=False) as timing:
        assert all(owner.__dict__[name] is originals[(id(owner), name)] for g in in_run.GROUPS
                   for owner, name in g.targets)
        assert all(masked_party.MaskedParty.__dict__[name] is rounds[name] for _, name in in_run.ROUNDS)
        assert Controller.__dict__["secure_release"] is not release
        simulate(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2", secure_sum="masked-sparse")
    assert 0 < timing.sum_cpu <= time.process_time() - started
    assert 0 <= timing.sum_system <= timing.sum_cpu + 0.01  # (getrusage and process_time)
    assert Controller.__dict__["secure_release"] is release
    assert set(timing.seconds.values()) == {0.0}
    assert all(made == [0.0, 0.0] for made in timing.rounds.values())


def _touched() -> int:
    """16 MiB of fresh 4 KiB pages (an anonymous map, never memory malloc kept, huge pages declined),
    each written once."""
    with mmap.mmap(-1, 16 << 20) as memory:
        if hasattr(mmap, "MADV_NOHUGEPAGE"):  # (Linux: else a system with huge pages always on faults 8 times)
            memory.madvise(mmap.MADV_NOHUGEPAGE)
        memory[::4096] = b"\1" * 4096
        return sum(memory[::4096])


PAGES = (16 << 20) // 4096


def test_the_sums_kernel_time_and_page_faults_are_those_of_their_interval(
        in_run: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a secure release touches first is counted in faults; what runs before or after it is not."""

    async def release(self: object) -> int:
        return _touched()

    monkeypatch.setattr(Controller, "secure_release", release)
    with in_run.InRun(groups=False) as timing:
        _touched()  # (before a release: not counted)
        wrapped = getattr(Controller, "secure_release")  # (InRun's wrapper around the stand-in)
        assert asyncio.run(wrapped(object())) == PAGES
        _touched()  # (after it: not counted either)
    assert PAGES * 3 // 4 <= timing.sum_faults < PAGES * 7 // 4  # (the release's own allocations add a few)
    assert 0.0 <= timing.sum_system <= timing.sum_cpu + 0.01


def test_overlapping_sums_are_one_interval(in_run: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three releases at once, each touching 16 MiB: their faults counted once each, not once per
    release that was running meanwhile."""

    async def release(self: object) -> int:
        await asyncio.sleep(0)  # (the three overlap)
        return _touched()

    async def together() -> list[int]:
        wrapped = getattr(Controller, "secure_release")
        return list(await asyncio.gather(*(wrapped(object()) for _ in range(3))))

    monkeypatch.setattr(Controller, "secure_release", release)
    with in_run.InRun(groups=False) as timing:
        assert asyncio.run(together()) == [PAGES] * 3
    assert 3 * PAGES * 3 // 4 <= timing.sum_faults < 3 * PAGES * 5 // 4


def test_a_group_names_floor_rows_that_exist(in_run: ModuleType) -> None:
    rows = {"X25519 key pair (generate, raw public key)": 2e-6, "HMAC-SHA256 in HKDF": 1e-6}
    pair, hkdf = in_run.GROUPS[0], in_run.GROUPS[2]
    assert in_run.floor_of(pair, rows) == pytest.approx(2e-6)
    assert in_run.floor_of(hkdf, rows) == pytest.approx(40e-6)
    with pytest.raises(LookupError, match=r"floor row 'X25519 static agreement' matches 0 rows"):
        in_run.floor_of(in_run.GROUPS[1], rows)


def test_the_floor_groups_cover_every_floor_item_once(in_run: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    """The groups' floor rows, counts included, add up to the floor's items per party (_floor_items)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))  # (its sibling modules, as when run as a script)
    floor_items = _load("_floor_items")
    rows = floor_items.items(2)
    for floors, per_party in (({r.name: r.floor for r in rows}, sum(r.calls * r.floor for r in rows)),
                              ({r.name: r.floor_mean for r in rows}, sum(r.calls * r.floor_mean for r in rows))):
        assert sum(in_run.floor_of(g, floors) for g in in_run.GROUPS if g.floor) == pytest.approx(per_party, rel=1e-12)


def test_timings_keep_each_items_best_round_and_the_mean_of_its_rounds(monkeypatch: pytest.MonkeyPatch) -> None:
    """_floor_items.Timings on a fake CPU clock: per call, the least of the rounds and their mean."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    floor_items = _load("_floor_items")
    clock = [0.0]
    costs = iter([0.03,  # the calibration: one call takes >= 20 ms, so one call per round
                  0.03, 0.05, 0.04])
    monkeypatch.setattr(floor_items.time, "process_time", lambda: clock[0])

    def call() -> None:
        clock[0] += next(costs)

    timings = floor_items.Timings()
    k = timings.add(call)
    timings.run(3)
    assert timings.best(k) == pytest.approx(0.03)
    assert timings.mean(k) == pytest.approx(0.04)


def test_the_floor_takes_each_items_best_round_over_every_round_timed_so_far(monkeypatch: pytest.MonkeyPatch) -> None:
    """_floor_items.Floor: rounds timed later (between a benchmark's runs) lower the floor when
    they are faster, and the mean is over every round (fake CPU clock)."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    floor_items = _load("_floor_items")
    clock = [0.0]
    costs = iter([0.03,  # the calibration: one call per round
                  0.05, 0.04,  # two rounds before the runs
                  0.03, 0.08,  # two rounds after the first run: one faster
                  0.07])  # one after the second: slower than the best
    monkeypatch.setattr(floor_items.time, "process_time", lambda: clock[0])

    def call() -> None:
        clock[0] += next(costs)

    def rows() -> tuple[Any, list[tuple[Any, ...]]]:
        timings = floor_items.Timings()
        return timings, [("an item", 2, [timings.add(call)], None)]

    monkeypatch.setattr(floor_items, "_timed_rows", rows)
    floor = floor_items.Floor()
    floor.run(2)
    (before,) = floor.items()
    assert (before.floor, before.floor_mean, floor.rounds) == (pytest.approx(0.04), pytest.approx(0.045), 2)
    floor.run(2)
    floor.run(1)
    (after,) = floor.items()  # the best and the mean of all 5 rounds
    assert (after.calls, after.floor, after.floor_mean, after.engine) == (2, pytest.approx(0.03), pytest.approx(0.054),
                                                                          None)
    assert floor.rounds == 5
    assert floor_items.per_party([after]) == (pytest.approx(0.06), pytest.approx(0.108))
