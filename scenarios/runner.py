"""Run a validated scenario and write its report.

:func:`run` is what ``mprr run`` calls: resolve the scenario (name or TOML path), apply
overrides, check the engine, call the registered runner, fill in the run metadata (name,
parameters, seed, runs, engine, versions, elapsed time) and write ``results.json``,
``report.md`` and the PNGs.

The names a scenario author needs are re-exported here::

    from scenarios.runner import ScenarioResult, Table
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from mprr.errors import ConfigurationError
from parties.runtime import MemoryRuntime, Runtime
from scenarios.config import Overrides, ScenarioConfig
from scenarios.out_dir import removed_on_failure
from scenarios.progress import Progress, null_progress
from scenarios.registry import ScenarioSpec, load
from scenarios.report import ReportFiles, ScenarioResult, Table, git_commit, versions, write_report

__all__ = ["RunOutcome", "ScenarioResult", "Table", "data_files", "default_out_dir", "provenance", "run",
           "run_scenario"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RunOutcome:
    """A finished run: the completed result and the files written."""

    config: ScenarioConfig
    result: ScenarioResult
    files: ReportFiles


def default_out_dir(config: ScenarioConfig) -> Path:
    """``out/<name>`` relative to the working directory."""
    return Path("out") / config.name


def data_files(config: ScenarioConfig) -> dict[str, Path]:
    """Input files named by the parameters: ``data`` (a user's table) and ``adult_path``."""
    files: dict[str, Path] = {}
    if config.parameters.get("data") is not None:
        files["data"] = Path(config.parameters["data"])
    if config.parameters.get("adult_path") is not None:
        from scenarios.adult_queries import resolve_adult_path

        try:
            files["adult_path"] = resolve_adult_path(config.parameters["adult_path"])
        except ConfigurationError:
            pass
    return {k: p for k, p in files.items() if p.is_file()}


def provenance(config: ScenarioConfig, result: ScenarioResult, all_versions: Mapping[str, str]) -> dict[str, Any]:
    """``results.json["provenance"]``: git commit, versions, the input file and its SHA-256."""
    from scenarios.datasets import file_sha256

    out: dict[str, Any] = {"git_commit": git_commit(), "versions": dict(all_versions),
                           "configuration": str(config.source) if config.source else None}
    files = data_files(config)
    if files:
        key, path = next(iter(files.items()))
        out["data_file"] = str(path.resolve())
        out["data_sha256"] = file_sha256(path)
    return {**out, **result.provenance}


def run_scenario(
    config: ScenarioConfig,
    spec: ScenarioSpec,
    *,
    out_dir: Path | None = None,
    progress: Progress | None = None,
    runtime: Runtime | None = None,
) -> RunOutcome:
    """Run ``config`` with the runner of ``spec`` and write the report into ``out_dir``.

    ``runtime`` (``None``: memory) is passed to a runner that takes a ``runtime`` keyword (one
    whose actor engine hosts parties: it hands the runtime to :func:`parties.simulate.simulate`).

    Raises
    ------
    ConfigurationError
        If the configured engine is not supported by the runner, or a runtime is given to a
        runner that takes none.
    """
    if config.kind != spec.kind:
        raise ConfigurationError(
            f"scenario {config.name!r} has kind {config.kind!r} but runner {spec.kind!r} was given"
        )
    if config.engine not in spec.engines:
        raise ConfigurationError(
            f"engine {config.engine!r} is not supported by scenario {config.name!r} "
            f"(kind {spec.kind}); allowed: {', '.join(spec.engines)}"
        )
    out = Path(out_dir) if out_dir is not None else default_out_dir(config)
    created = [p for p in (out, *out.parents) if not p.exists()][::-1]
    out.mkdir(parents=True, exist_ok=True)
    hosts = "runtime" in inspect.signature(spec.runner).parameters
    if runtime is not None and not hosts:
        raise ConfigurationError(f"runtime {runtime.name!r} does not apply to scenario {config.name!r}: its runner "
                                 f"(kind {spec.kind}) takes no runtime; run it without --runtime")
    with removed_on_failure(created):  # a failed run leaves no output folder it created behind
        return _run_into(config, spec, out, progress, {"runtime": runtime} if hosts else {}, runtime)


def _run_into(config: ScenarioConfig, spec: ScenarioSpec, out: Path, progress: Progress | None,
              hosting: dict[str, Runtime | None], runtime: Runtime | None) -> RunOutcome:
    progress = progress if progress is not None else null_progress()
    log.info("scenario %s (kind %s): engine %s, runs %d, seed %d, output %s",
             config.name, config.kind, config.engine, config.runs, config.seed, out)
    log.debug("parameters given (command line: %s): %s", ", ".join(sorted(config.override_keys)) or "none",
              {k: config.parameters[k] for k in sorted(config.override_keys) if k in config.parameters})
    started = time.perf_counter()
    result = spec.runner(
        config,
        out_dir=out,
        runs=config.runs,
        seed=config.seed,
        engine=config.engine,
        progress=progress,
        **hosting,
    )
    if not isinstance(result, ScenarioResult):
        raise TypeError(
            f"runner of kind {spec.kind!r} returned {type(result).__name__}, expected ScenarioResult"
        )
    all_versions = {**versions(), **result.versions}
    where: dict[str, Any] = {}
    if config.engine == "actors":  # where the parties lived (the fast path has no actor)
        where["runtime"] = (runtime or MemoryRuntime()).options()
    result = replace(
        result,
        provenance={**provenance(config, result, all_versions), **where},
        name=config.name,
        kind=config.kind,
        title=result.title or config.title,
        description=result.description or config.description,
        parameters=result.parameters or dict(config.parameters),
        seed=config.seed,
        runs=config.runs,
        engine=config.engine,
        versions=all_versions,
        elapsed_seconds=time.perf_counter() - started,
        source=str(config.source) if config.source else "",
    )
    # what the run used, as the runner reports it (a --data run: the file's n and sizes, no synthetic settings)
    log.debug("parameters used: %s", result.parameters)
    files = write_report(result, out, keep=tuple(data_files(config).values()))
    log.info("wrote %s, %s, %d figure(s) and %d other file(s) in %.1f s", files.results_json, files.report_md,
             len(files.figures), len(files.other_files), result.elapsed_seconds or 0.0)
    return RunOutcome(config, result, files)


def run(
    target: str | Path,
    *,
    out_dir: Path | None = None,
    runs: int | None = None,
    seed: int | None = None,
    engine: str | None = None,
    parameters: Overrides | None = None,
    progress: Progress | None = None,
    runtime: Runtime | None = None,
) -> RunOutcome:
    """Load ``target`` (a shipped name or a TOML path), apply overrides, run and report.

    Parameters
    ----------
    target
        Scenario name (``mprr list``) or path of a scenario TOML file.
    out_dir
        Output directory (default ``out/<name>``).
    runs, seed, engine
        Overrides of the file's values.
    parameters
        Parameter overrides: one table (``{"n": 500}``) or several, merged in order over the
        file's (``mprr run`` passes one per ``--set``; :meth:`ScenarioConfig.with_overrides`
        merges them), validated by the scenario's schema.
    progress
        Progress reporter (default: silent).
    runtime
        Where the actor engine's parties live (:func:`parties.runtime_registry.make_runtime`; default
        memory).  A remote runtime runs the ``actors`` engine (the default engine then).
    """
    config, spec = load(target)
    if runtime is not None:
        if engine == "fast":
            raise ConfigurationError(f"runtime {runtime.name!r} hosts actor parties; engine 'fast' has none "
                                     "(use --engine actors)")
        if not spec.hosts_on_runtime:
            raise ConfigurationError(
                f"runtime {runtime.name!r} (--runtime {runtime.name}) does not apply to scenario "
                f"{config.name!r}: it sets up the network of each of its runs itself (an in-memory or a "
                "virtual-time one); run it "
                "without --runtime"
            )
        if "actors" not in spec.engines:
            raise ConfigurationError(
                f"runtime {runtime.name!r} (--runtime {runtime.name}) hosts actor parties and needs the "
                f"'actors' engine, which scenario {config.name!r} does not support (engines: "
                f"{', '.join(spec.engines)}); run it without --runtime"
            )
        engine = "actors"
    config = config.with_overrides(
        runs=runs, seed=seed, engine=engine, parameters=parameters, schema=spec.schema
    )
    return run_scenario(config, spec, out_dir=out_dir, progress=progress, runtime=runtime)
