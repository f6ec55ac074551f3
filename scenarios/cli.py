"""The ``mprr`` command line.

::

    mprr list                                   # shipped scenarios, one line each
    mprr show <scenario.toml|name>              # its parameters: type, allowed values, default
    mprr run  <scenario.toml|name> [--out DIR] [--runs N] [--seed S] [--engine fast|actors]
              [--set KEY=VALUE ...] [--quiet]

``run`` writes ``DIR/results.json``, ``DIR/report.md`` and PNG figures (default
``DIR = out/<name>``) and prints a short summary.  Any :class:`~mprr.errors.MprrError` (bad
configuration, unknown scenario, failed protocol) ends the program with exit code 2 and a
one-line message on stderr, without a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from mprr.errors import MprrError
from scenarios.config import ENGINES, REQUIRED, merge_tables, parse_override
from scenarios.progress import Progress
from scenarios.registry import available, load
from scenarios.report import format_value
from scenarios.runner import RunOutcome, run

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``mprr``."""
    parser = argparse.ArgumentParser(
        prog="mprr",
        description="Multi-dimensional randomized response: run scenarios and write reports.",
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="{run,list,show}")

    p_run = sub.add_parser("run", help="run a scenario and write results.json, report.md, PNGs")
    p_run.add_argument("scenario", help="scenario name (see `mprr list`) or path of a .toml file")
    p_run.add_argument("--out", type=Path, default=None, metavar="DIR",
                       help="output directory (default: out/<name>)")
    p_run.add_argument("--runs", type=int, default=None, metavar="N",
                       help="number of Monte Carlo runs (default: from the scenario file)")
    p_run.add_argument("--seed", type=int, default=None, metavar="S",
                       help="run seed, a non-negative integer (default: from the scenario file)")
    p_run.add_argument("--engine", choices=ENGINES, default=None,
                       help="fast (vectorized numpy) or actors (asyncio message-passing simulator)")
    p_run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                       help="override a parameter, VALUE in TOML syntax (repeatable), e.g. --set n=500")
    p_run.add_argument("-q", "--quiet", action="store_true", help="no progress bars")

    sub.add_parser("list", help="list the shipped scenarios")

    p_show = sub.add_parser("show", help="show a scenario's parameters and their allowed values")
    p_show.add_argument("scenario", help="scenario name or path of a .toml file")
    return parser


def _cmd_list(stdout: TextIO) -> None:
    entries = available()
    width = max((len(e.name) for e in entries), default=0)
    for e in entries:
        text = e.description or f"(kind {e.kind})"
        if e.problem:
            text = f"(invalid file: {e.problem})"
        stdout.write(f"{e.name:<{width}}  {text}\n")
    if not entries:
        stdout.write("no scenarios are shipped\n")


def _cmd_show(target: str, stdout: TextIO) -> None:
    config, spec = load(target)
    stdout.write(f"{config.name} (kind {spec.kind}): {config.description or spec.description}\n")
    stdout.write(f"engines: {', '.join(spec.engines)}; runs {config.runs}; seed {config.seed}\n")
    for f in spec.schema.fields():
        value = config.parameters.get(f.key)
        default = "required" if f.default is REQUIRED else format_value(f.default)
        stdout.write(f"  {f.key} = {format_value(value)}    # {f.type.describe()}; "
                     f"default {default}{'; ' + f.help if f.help else ''}\n")


def _summary(outcome: RunOutcome, stdout: TextIO) -> None:
    result, files = outcome.result, outcome.files
    n_fig = len(files.figures)
    stdout.write(
        f"{result.name}: wrote {files.report_md}, {files.results_json.name}"
        f"{f' and {n_fig} figure' + ('s' if n_fig != 1 else '') if n_fig else ''}"
        f" ({result.elapsed_seconds or 0.0:.1f} s, seed {result.seed}, runs {result.runs}, "
        f"engine {result.engine})\n"
    )
    lines = list(result.summary)
    if not lines:
        scalars = [
            (k, v) for k, v in result.metrics.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        lines = [f"{k} = {format_value(v)}" for k, v in scalars[:8]]
    for line in lines:
        stdout.write(f"  {line}\n")


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Entry point of the ``mprr`` console script; returns the exit code.

    Exit codes: 0 success, 2 bad usage or :class:`~mprr.errors.MprrError` (one-line message on
    stderr), 1 an operating-system error writing the output, 130 interrupted.
    """
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    args = build_parser().parse_args(argv)
    try:
        if args.command == "list":
            _cmd_list(stdout)
        elif args.command == "show":
            _cmd_show(args.scenario, stdout)
        else:
            overrides: dict = {}
            for text in args.overrides:
                overrides = merge_tables(overrides, parse_override(text))
            progress = Progress(stderr, enabled=False if args.quiet else None)
            outcome = run(
                args.scenario,
                out_dir=args.out,
                runs=args.runs,
                seed=args.seed,
                engine=args.engine,
                parameters=overrides or None,
                progress=progress,
            )
            _summary(outcome, stdout)
    except MprrError as exc:
        stderr.write(f"mprr: error: {exc}\n")
        return 2
    except OSError as exc:
        stderr.write(f"mprr: error: {exc}\n")
        return 1
    except KeyboardInterrupt:
        stderr.write("mprr: interrupted\n")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
