"""scenarios.montecarlo: per-run seeds, order, worker independence, errors, median helper."""

from __future__ import annotations

import io

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from scenarios.montecarlo import median_over_runs, monte_carlo, run_seeds
from scenarios.progress import Progress


def _draw(index: int, ss: np.random.SeedSequence, context: dict) -> tuple[int, float]:
    return index, float(np.random.default_rng(ss).random() * context["scale"])


def _fail(index: int, ss: np.random.SeedSequence, context: object) -> None:
    if index == 1:
        raise ValueError("run 1 failed")


def test_runs_get_spawned_seeds_in_order() -> None:
    out = monte_carlo(_draw, runs=5, seed=7, context={"scale": 2.0}, workers=1)
    expected = [(i, 2.0 * np.random.default_rng(ss).random())
                for i, ss in enumerate(np.random.SeedSequence(7).spawn(5))]
    assert out == expected


def test_results_do_not_depend_on_workers() -> None:
    one = monte_carlo(_draw, runs=6, seed=3, context={"scale": 1.0}, workers=1)
    two = monte_carlo(_draw, runs=6, seed=3, context={"scale": 1.0}, workers=2)
    assert one == two
    assert monte_carlo(_draw, runs=6, seed=4, context={"scale": 1.0}, workers=1) != one


def test_progress_counts_every_run() -> None:
    stream = io.StringIO()
    monte_carlo(_draw, runs=3, seed=1, context={"scale": 1.0}, workers=1,
                progress=Progress(stream, enabled=True, min_interval=0.0), label="runs")
    assert "runs" in stream.getvalue() and "3/3" in stream.getvalue()


def test_task_errors_propagate() -> None:
    with pytest.raises(ValueError, match="run 1 failed"):
        monte_carlo(_fail, runs=3, seed=1, workers=1)
    with pytest.raises(ValueError, match="run 1 failed"):
        monte_carlo(_fail, runs=3, seed=1, workers=2)


@pytest.mark.parametrize(
    ("kwargs", "pattern"),
    [({"runs": 0, "seed": 1}, "runs must be an integer >= 1"),
     ({"runs": 2, "seed": -1}, "seed must be an integer >= 0"),
     ({"runs": 2, "seed": 1, "workers": 0}, "workers must be an integer >= 1")],
)
def test_bad_arguments(kwargs: dict, pattern: str) -> None:
    with pytest.raises(ConfigurationError, match=pattern):
        monte_carlo(_draw, context={"scale": 1.0}, **kwargs)


def test_run_seeds_are_the_spawned_children() -> None:
    seeds = run_seeds(11, 3)
    assert [s.spawn_key for s in seeds] == [(0,), (1,), (2,)]
    assert all(s.entropy == 11 for s in seeds)


def test_median_over_runs_ignores_nan_and_bootstraps_runs() -> None:
    values = np.array([[1.0, np.nan, 3.0], [2.0, 4.0, np.nan]])
    med, se, defined, low, high = median_over_runs(values, bootstrap=50, seed=0)
    assert med == 2.5 and defined == 4
    assert se > 0  # two different runs: resampling them moves the median
    # the resamples are the 4 pairs of runs: medians 2 (run 1 twice), 3 (run 2 twice), 2.5
    assert (low, high) == (2.0, 3.0)
    narrow = median_over_runs(values, bootstrap=50, seed=0, level=0.5)  # the same resamples
    assert narrow[:3] == (med, se, defined) and low <= narrow.low <= narrow.high <= high
    empty = median_over_runs(np.full((3, 2), np.nan))
    assert np.isnan(empty.median) and empty.defined == 0 and np.isnan(empty.low)
    same = median_over_runs(np.ones((4, 3)), bootstrap=20)
    assert same == (1.0, 0.0, 12, 1.0, 1.0)
    one_run = median_over_runs(np.ones((1, 3)), bootstrap=20)
    assert np.isnan(one_run.se) and np.isnan(one_run.low) and np.isnan(one_run.high)
    with pytest.raises(ConfigurationError, match="values must be a"):
        median_over_runs(np.ones((2, 2, 2)))
    with pytest.raises(ConfigurationError, match=r"level must be in \(0, 1\), got 1\.0"):
        median_over_runs(values, level=1.0)
