"""benchmarks/masked_floor.py: the memory runs paired (timed, as is), and the goal read from the runs as they are."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from mprr.synthetic import planted_clusters
from tests.benchmark_modules import benchmark_module


@pytest.fixture()
def masked_floor() -> Iterator[ModuleType]:
    with benchmark_module("masked_floor") as module:
        yield module


def test_each_memory_run_is_paired_with_one_as_it_is_in_alternating_order(masked_floor: ModuleType,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    data = planted_clusters(12, rng=np.random.default_rng(1), sizes=(2, 2), clusters=((0, 1),)).dataset
    monkeypatch.setattr("scenarios.datasets.load_adult", lambda path: data)
    made: list[tuple[str, bool, bool]] = []

    def one_run(data: Any, name: str, timed: bool, params: dict[str, Any], label: str, *, first: bool) -> Any:
        made.append((name, timed, first))
        return masked_floor.Run(name, data.n, 1.0, 1.0, 1.0, 0.0, 1.0, {} if timed else None, 1.0)

    monkeypatch.setattr(masked_floor, "one_run", one_run)
    after: list[int] = []
    runs = masked_floor.measure_runs(Path("adult.data"), 2, None, ("memory", "tcp"),
                                     after=lambda: after.append(len(made)))
    assert after == [1, 2, 3, 4, 5, 6]  # (the floor's rounds between the runs: after each)
    assert made == [("memory", True, True), ("memory", False, False), ("tcp", False, False),
                    ("memory", False, False), ("memory", True, False), ("tcp", False, False)]
    assert [r.as_is for r in runs] == [False, True, False, True, False, False]


def test_the_goal_is_read_from_the_runs_as_they_are(masked_floor: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    """The bars come from the timed runs; the ratio the goal reads, from the runs without the timers."""
    n, floor = 1_000, 1e-3  # 1 s of floor for the run
    Run = masked_floor.Run
    runs = [Run("memory", n, 2.2, 2.0, 2.2, 0.0, 1.0, {}, 2.1), Run("memory", n, 2.0, 1.9, 2.0, 0.0, 1.0, None, 1.8),
            Run("memory", n, 2.1, 1.9, 1.9, 0.0, 1.0, None, 1.6), Run("memory", n, 2.4, 2.2, 2.4, 0.0, 1.0, {}, 2.3),
            Run("tcp", n, 3.0, 2.5, 0.5, 2.5, 1.0), Run("tcp", n, 3.0, 2.5, 0.5, 2.7, 1.0)]
    parts = masked_floor.report_runs(runs, floor, 1.2e-3)
    out = capsys.readouterr().out
    assert "mean of 2 run(s) per runtime" in out
    # the timed runs: 2.3 s of CPU on average; the goal is not named beside them, nor beside tcp
    assert "run's CPU    2.3 s = 2.30 ms per party" in out and "2.30 x the cryptographic floor (min 2.20)" in out
    assert out.count("goal <=") == 1
    # the runs as they are: 1.95 s of CPU, their sums 1.8 and 1.6 s
    assert ("as is, without the timers (the goal's figure; 2 run(s)): run's CPU    1.9 s = 1.95 ms per party, "
            "1.95 x the floor (min 1.90); the secure sum alone    1.7 s = 1.70 ms per party, 1.70 x the floor "
            "(min 1.60; goal <= 1.5 x); the timers cost the run +17.9%") in out
    # the bars: the timed runs only (the rest is their CPU beyond the parts measured)
    assert parts["memory"][masked_floor.REST] == pytest.approx([2.2 - 1.2, 2.4 - 1.2])
    assert list(parts) == ["memory", "tcp"]
