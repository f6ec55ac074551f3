"""Monte Carlo over runs: per-run seeds spawned from the run seed, a process pool, a progress bar.

The papers report medians (main paper 6.5: "median values over 1000 runs") or means over many
independent repetitions.  :func:`monte_carlo` runs ``task(run_index, seed_sequence, context)``
once per run:

- run ``i`` receives child ``i`` of ``numpy.random.SeedSequence(seed).spawn(runs)``, so the
  results depend only on ``(seed, runs)`` — never on the number of worker processes or on the
  order in which runs finish;
- with ``workers > 1`` the runs are spread over a :class:`concurrent.futures.ProcessPoolExecutor`
  (``context`` is sent once per worker through the pool initializer, not once per run);
- with ``workers="ray"`` each run is a Ray task (``context`` is put in the object store once);
  a local Ray is started when none is running (and shut down afterwards), an existing one
  (``ray.init(address=...)`` before, or ``RAY_ADDRESS``) is used as it is;
- results come back in run order; the progress bar advances as runs finish.  Same seed ⇒ the
  same results whatever the workers (a process pool, Ray or none).

``task`` must be a module-level function (picklable) and its result picklable.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any, NamedTuple, TypeVar

import numpy as np

from mprr.domain import check_int
from mprr.errors import ConfigurationError
from mprr.streams import run_seed_sequence
from scenarios.progress import Progress, null_progress

__all__ = ["RunMedian", "Task", "default_workers", "median_over_runs", "monte_carlo", "run_seeds"]

R = TypeVar("R")
Task = Callable[[int, np.random.SeedSequence, Any], R]

_WORKER_CONTEXT: dict[str, Any] = {}


def default_workers() -> int:
    """Worker processes used when none is given: the CPUs available to this process."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def run_seeds(seed: int, runs: int) -> list[np.random.SeedSequence]:
    """The per-run seed sequences: ``SeedSequence(seed).spawn(runs)``.

    Raises
    ------
    ConfigurationError
        If ``seed`` is not a non-negative integer or ``runs`` is not an integer >= 1.
    """
    return run_seed_sequence(seed).spawn(check_int("runs", runs, 1))


def _init_worker(context: Any) -> None:
    _WORKER_CONTEXT["context"] = context


def _call_in_worker(task: Task[Any], index: int, seed_seq: np.random.SeedSequence) -> Any:
    return task(index, seed_seq, _WORKER_CONTEXT["context"])


def monte_carlo(
    task: Task[Any],
    *,
    runs: int,
    seed: int,
    context: Any = None,
    workers: int | str | None = None,
    progress: Progress | None = None,
    label: str = "runs",
) -> list[Any]:
    """Run ``task`` for ``runs`` independent runs; return the results in run order.

    Parameters
    ----------
    task
        ``task(run_index, seed_sequence, context) -> result``: a module-level function.
    runs
        Number of runs, >= 1.
    seed
        Run seed; run ``i`` gets child ``i`` of ``SeedSequence(seed).spawn(runs)``.
    context
        Read-only data every run needs (data set, parameters); sent once to each worker.
    workers
        Worker processes (default :func:`default_workers`, capped at ``runs``); ``1`` runs
        everything in this process (no pool); ``"ray"``: one Ray task per run.
    progress
        Progress reporter; a task named ``label`` advances once per finished run.
    label
        Name of the progress task.

    Raises
    ------
    ConfigurationError
        For bad ``runs``, ``seed`` or ``workers``.  Exceptions raised by ``task`` propagate
        (the remaining runs are cancelled).
    """
    seeds = run_seeds(seed, runs)
    if workers == "ray":
        return _on_ray(task, seeds, context, progress if progress is not None else null_progress(), label)
    if workers is None:
        workers = default_workers()
    workers = min(check_int("workers", workers, 1), len(seeds))
    progress = progress if progress is not None else null_progress()
    results: list[Any] = [None] * len(seeds)
    with progress.task(label, total=len(seeds)) as bar:
        if workers == 1:
            for i, ss in enumerate(seeds):
                results[i] = task(i, ss, context)
                bar.advance()
            return results
        mp_context = multiprocessing.get_context()
        with ProcessPoolExecutor(
            max_workers=workers, mp_context=mp_context, initializer=_init_worker, initargs=(context,)
        ) as pool:
            pending: dict[Future[Any], int] = {
                pool.submit(_call_in_worker, task, i, ss): i for i, ss in enumerate(seeds)
            }
            try:
                while pending:
                    done, _ = wait(pending, return_when=FIRST_COMPLETED)
                    for fut in done:
                        i = pending.pop(fut)
                        results[i] = fut.result()
                        bar.advance()
            except BaseException:
                for fut in pending:
                    fut.cancel()
                raise
    return results


def _on_ray(task: Task[Any], seeds: Sequence[np.random.SeedSequence], context: Any, progress: Progress,
            label: str) -> list[Any]:
    """One Ray task per run; results in run order; unfinished tasks cancelled on error."""
    from parties.ray_runtime import import_ray

    ray = import_ray()
    started_here = not ray.is_initialized()
    if started_here:
        ray.init(address=os.environ.get("RAY_ADDRESS"), include_dashboard=False, log_to_driver=False,
                 logging_level="ERROR", configure_logging=False)
    try:
        remote = ray.remote(_call_with_context)
        ctx = ray.put(context)
        pending = {remote.remote(task, i, ss, ctx): i for i, ss in enumerate(seeds)}
        results: list[Any] = [None] * len(seeds)
        with progress.task(label, total=len(seeds)) as bar:
            try:
                while pending:
                    done, _ = ray.wait(list(pending), num_returns=1)
                    for ref in done:
                        results[pending.pop(ref)] = ray.get(ref)
                        bar.advance()
            except BaseException:
                for ref in pending:
                    ray.cancel(ref, force=True)
                raise
        return results
    finally:
        if started_here:
            ray.shutdown()


def _call_with_context(task: Task[Any], index: int, seed_seq: np.random.SeedSequence, context: Any) -> Any:
    return task(index, seed_seq, context)


class RunMedian(NamedTuple):
    """The median of per-run values pooled over runs (:func:`median_over_runs`)."""

    median: float
    se: float
    """Bootstrap standard error of the median."""
    defined: int
    """Number of defined (not NaN) values."""
    low: float
    high: float
    """Percentile bootstrap interval of the median: unlike median ± SE it stays inside the range
    of the data (never below 0 for an error)."""


def median_over_runs(values: np.ndarray, *, bootstrap: int = 200, seed: int = 0, level: float = 0.95) -> RunMedian:
    """Median of per-run values pooled over runs, with its bootstrap standard error and interval.

    Parameters
    ----------
    values
        ``(runs, k)`` array: ``k`` values (e.g. query errors) per run; NaN entries (undefined
        values, e.g. relative errors of queries with a true count of 0) are ignored.
    bootstrap
        Number of bootstrap resamples *of whole runs* (values of one run share its
        randomization, so runs, not values, are the independent units); 0 skips it.
    seed
        Seed of the bootstrap resampling.
    level
        Coverage of the interval: the ``(1 − level)/2`` and ``(1 + level)/2`` quantiles of the
        resamples' medians.

    Returns
    -------
    RunMedian
        ``nan`` median when no value is defined; ``nan`` standard error and interval with fewer
        than 2 runs, no defined value or ``bootstrap = 0``.
    """
    v = np.asarray(values, dtype=float)
    if v.ndim == 1:
        v = v[:, None]
    if v.ndim != 2:
        raise ConfigurationError(f"values must be a (runs, k) array, got shape {v.shape}")
    if not 0.0 < level < 1.0:
        raise ConfigurationError(f"level must be in (0, 1), got {level!r}")
    nan = float("nan")
    defined = int((~np.isnan(v)).sum())
    med = float(np.nanmedian(v)) if defined else nan
    runs = v.shape[0]
    if not defined or bootstrap <= 0 or runs < 2:
        return RunMedian(med, nan, defined, nan, nan)
    idx = np.random.default_rng(seed).integers(0, runs, size=(int(bootstrap), runs))  # resampled runs
    meds = np.array([np.nanmedian(v[row]) if (~np.isnan(v[row])).any() else np.nan for row in idx])
    lo, hi = np.nanquantile(meds, [(1.0 - level) / 2.0, (1.0 + level) / 2.0])
    return RunMedian(med, float(np.nanstd(meds, ddof=1)), defined, float(lo), float(hi))
