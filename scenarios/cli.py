"""The ``mprr`` command line (also ``python -m mprr``).

::

    mprr --version
    mprr [-v|-vv|--log-level LEVEL] list [--json]        # shipped scenarios, one line each
    mprr show <scenario.toml|name> [--json]              # parameters: type, allowed values, default
    mprr run  <scenario.toml|name> [--out DIR [--force]] [--runs N] [--seed S] [--engine fast|actors]
              [--set KEY=VALUE ...] [--data FILE --columns a,b,c [--missing LABEL] [--ordinal NAME[=c1,...]]
              [--delimiter C] [--encoding E]] [--quiet]
              [--runtime memory|tcp|ray|virtual] [--workers P] [--listen HOST:PORT] [--tls-dir DIR]
              [--no-tls] [--external-workers] [--address auto|HOST:PORT] [--shards S]
              [--network PROFILE|FILE]
    mprr simulate <protocol> [--plugin MODULE ...] [--set KEY=VALUE ...] [--n N | --data FILE [--columns a,b,c]]
              [--seed S] [--engine fast|actors] [--secure-sum ENGINE] [--runtime ...] [--json] [--out FILE]
    mprr party --connect HOST:PORT --parties FIRST-LAST [--worker K] [--tls-dir DIR | --no-tls] [--plugin MODULE ...] [--quiet]

``simulate`` runs one registered protocol by name (``mprr.protocols.registry``), a user's own
included: ``--plugin MODULE`` (repeatable, also for ``run``) imports a module that registers
protocols, secure-sum engines or matrix families first (:mod:`scenarios.by_name`).

``--runtime`` says where the actor engine's parties live: ``memory`` (default, one process),
``tcp`` (worker processes, frames over mutual TLS; ``--external-workers`` waits for workers
started by hand with ``mprr party``), ``ray`` (party shards as Ray actors), ``virtual`` (one
process on a virtual clock: every message delivered when the ``--network`` model says it arrives).

``run`` writes ``DIR/results.json``, ``DIR/report.md`` and PNG figures (default
``DIR = out/<name>``) and prints a short summary.  Any :class:`~mprr.errors.MprrError` (bad
configuration, unknown scenario, failed protocol) ends the program with exit code 2 and a
one-line message on stderr, without a traceback.

Adding options to ``run``: write a function ``(parser) -> None`` that adds an argument group
and append it to :data:`RUN_OPTION_GROUPS`; options that are shortcuts for scenario
parameters are translated by :func:`parameter_overrides` (one entry in
:data:`PARAMETER_OPTIONS`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from mprr import __version__
from mprr.errors import ConfigurationError, MprrError
from scenarios.by_name import load_plugins, simulate_by_name, synthetic_dataset, write_summary
from scenarios.config import ENGINES, REQUIRED
from scenarios.datasets import load_table
from scenarios.out_dir import prepare_out_dir, removed_on_failure
from scenarios.overrides import parse_override
from scenarios.progress import Progress
from scenarios.registry import available, load
from scenarios.report import describe_runtime, format_value, plural, to_jsonable
from parties.runtime import Runtime
from parties.runtime_registry import RUNTIMES, make_runtime
from parties.worker import build_worker_parser, serve_by_options
from scenarios.runner import RunOutcome, run

__all__ = ["PARAMETER_OPTIONS", "RUN_OPTION_GROUPS", "build_parser", "main", "parameter_overrides"]

log = logging.getLogger("scenarios.cli")

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


# --------------------------------------------------------------------------- parser


def _plugin_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                        help="import MODULE first (repeatable): a module of yours that registers protocols "
                             "(register_protocol), secure-sum engines (register_engine) or matrix families")


def _set_option(group: argparse._ArgumentGroup | argparse.ArgumentParser) -> None:
    group.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="overrides",
                       help="set a parameter, VALUE in TOML syntax (repeatable), e.g. --set n=500, "
                            "--set 'dependence=\"4.2\"', --set 'engines=[\"paper\", \"graph\"]'")


def _scenario_options(parser: argparse.ArgumentParser) -> None:
    _plugin_option(parser)
    group = parser.add_argument_group("scenario")
    group.add_argument("--runs", type=int, default=None, metavar="N",
                       help="number of Monte Carlo runs (default: from the scenario file)")
    group.add_argument("--seed", type=int, default=None, metavar="S",
                       help="run seed, a non-negative integer (default: from the scenario file)")
    group.add_argument("--engine", choices=ENGINES, default=None,
                       help="fast (vectorized numpy) or actors (asyncio message-passing simulator); "
                            "the secure-sum engine is the parameter secure_sum")
    _set_option(group)


def _data_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "your own data", "run on a CSV or Parquet file instead of the built-in data "
                         "(scenarios with a `data` parameter, e.g. local_anonymization)")
    group.add_argument("--data", default=None, metavar="FILE",
                       help="CSV (.csv, .tsv, .txt) with a header line, or Parquet (.parquet, needs pyarrow) "
                            "file, one record per row")
    group.add_argument("--columns", default=None, metavar="a,b,c",
                       help="comma-separated categorical columns to use (default: every column)")
    group.add_argument("--missing", default=None, metavar="LABEL",
                       help="keep empty / NA cells as this category (e.g. '?'); default: they are an error")
    group.add_argument("--ordinal", action="append", default=None, metavar="NAME[=c1,c2,...]",
                       help="declare a column ordinal (repeatable): its categories in numeric, then text order, "
                            "or in the order given, e.g. --ordinal educ --ordinal 'size=S,M,L'")
    group.add_argument("--delimiter", default=None, metavar="C",
                       help="CSV field separator, one character, e.g. ';' or '\\t' for a tab "
                            "(default: a comma; a tab for .tsv)")
    group.add_argument("--encoding", default=None, metavar="E",
                       help="text encoding of a CSV file, e.g. latin-1 (default: utf-8)")


def _output_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("output")
    group.add_argument("--out", type=Path, default=None, metavar="DIR",
                       help="output directory (default: out/<name>); created if needed, removed again if the run "
                            "fails; a folder holding files mprr did not write is refused unless --force")
    group.add_argument("--force", action="store_true",
                       help="write into an --out folder that holds files mprr did not write (its results.json, "
                            "report.md and figures of the same names are replaced)")
    group.add_argument("-q", "--quiet", action="store_true", help="no progress bars")


def _runtime_options(parser: argparse.ArgumentParser) -> None:
    rt = parser.add_argument_group("runtime", "where the actor engine's parties live (docs/runtimes.md)")
    rt.add_argument("--runtime", choices=RUNTIMES, default="memory",
                    help="memory (default, one process) | tcp (worker processes over TLS) | ray (Ray actors) "
                         "| virtual (one process on a virtual clock, timed by a network model)")
    rt.add_argument("--workers", type=int, default=None, metavar="P", help="tcp: worker processes (default 2)")
    rt.add_argument("--listen", default=None, metavar="HOST:PORT",
                    help="tcp: the controller's address (default 127.0.0.1, any free port)")
    rt.add_argument("--tls-dir", default=None, metavar="DIR",
                    help="tcp: keep the run's CA and certificates in DIR (to start workers by hand)")
    rt.add_argument("--no-tls", action="store_true", help="tcp: plain TCP instead of mutual TLS")
    rt.add_argument("--external-workers", action="store_true",
                    help="tcp: do not spawn workers, wait for P workers started with `mprr party`")
    rt.add_argument("--connect-timeout", type=float, default=None, metavar="S",
                    help="tcp: seconds to wait for every worker to be ready (default 60)")
    rt.add_argument("--address", default=None, metavar="auto|HOST:PORT",
                    help="ray: cluster to connect to (default: start a local Ray)")
    rt.add_argument("--shards", type=int, default=None, metavar="S", help="ray: party shard actors")
    rt.add_argument("--network", default=None, metavar="PROFILE|FILE",
                    help="virtual: datacenter | broadband (default) | mobile, or a network model TOML "
                         "(docs/network_time.md)")


def runtime_of(args: argparse.Namespace) -> Runtime | None:
    """The runtime ``run``'s options ask for (``None``: the default, memory; ConfigurationError
    for options of another runtime)."""
    tcp = {"workers": args.workers, "listen": args.listen, "tls_dir": args.tls_dir,
           "tls": False if args.no_tls else None, "spawn": False if args.external_workers else None,
           "connect_timeout": args.connect_timeout}
    ray = {"address": args.address, "shards": args.shards}
    virtual = {"model": args.network}
    chosen: dict[str, Any] = {"memory": {}, "tcp": tcp, "ray": ray, "virtual": virtual}[args.runtime]
    stray = [k for group in (tcp, ray, virtual) if group is not chosen for k, v in group.items() if v is not None]
    if stray:
        raise ConfigurationError(f"options {stray} do not apply to --runtime {args.runtime}")
    return None if args.runtime == "memory" else make_runtime(args.runtime, **chosen)


RUN_OPTION_GROUPS: list[Callable[[argparse.ArgumentParser], None]] = [
    _scenario_options, _data_options, _output_options, _runtime_options,
]
"""Builders of the argument groups of ``mprr run`` (in help order)."""

PARAMETER_OPTIONS: dict[str, Callable[[Any], Any]] = {
    "data": str,
    "columns": lambda text: [c.strip() for c in text.split(",") if c.strip()],
    "missing": str,
    "ordinal": list,
    "delimiter": lambda text: "\t" if text == "\\t" else text,
    "encoding": str,
}
"""``mprr run`` options that are shortcuts for scenario parameters (option -> converter)."""


def _logging_options(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # sub-commands repeat the options with SUPPRESS defaults, so `mprr -v run` and
    # `mprr run -v` both work and neither overrides the other with its default
    default: Any = 0 if top else argparse.SUPPRESS
    parser.add_argument("-v", "--verbose", action="count", default=default,
                        help="log more (-v info, -vv debug) to stderr")
    parser.add_argument("--log-level", choices=LOG_LEVELS, type=str.upper,
                        default=None if top else argparse.SUPPRESS,
                        help="log level (overrides -v; default WARNING)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``mprr``."""
    parser = argparse.ArgumentParser(
        prog="mprr",
        description="Multi-dimensional randomized response: run scenarios and write reports.",
    )
    parser.add_argument("--version", action="version", version=f"mprr {__version__}")
    _logging_options(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="{run,simulate,list,show,party}")

    p_run = sub.add_parser("run", help="run a scenario and write results.json, report.md, PNGs")
    p_run.add_argument("scenario", help="scenario name (see `mprr list`) or path of a .toml file")
    for add_group in RUN_OPTION_GROUPS:
        add_group(p_run)
    _logging_options(p_run, top=False)

    p_list = sub.add_parser("list", help="list the shipped scenarios")
    p_list.add_argument("--json", action="store_true", help="machine-readable output")
    _logging_options(p_list, top=False)

    p_show = sub.add_parser("show", help="show a scenario's parameters and their allowed values")
    p_show.add_argument("scenario", help="scenario name or path of a .toml file")
    p_show.add_argument("--json", action="store_true", help="machine-readable output")
    _logging_options(p_show, top=False)

    p_sim = sub.add_parser("simulate", help="run one protocol by name (a registered one of yours too)")
    p_sim.add_argument("protocol", help="protocol name or alias (mprr.protocols.registry.PROTOCOLS)")
    _plugin_option(p_sim)
    _set_option(p_sim)
    p_sim.add_argument("--n", type=int, default=1000, metavar="N", help="parties of the synthetic data (default 1000)")
    p_sim.add_argument("--data", default=None, metavar="FILE", help="a CSV or Parquet file instead, one record per row")
    p_sim.add_argument("--columns", default=None, metavar="a,b,c", help="its categorical columns (default: all)")
    p_sim.add_argument("--seed", type=int, default=1, metavar="S", help="run seed (default 1)")
    p_sim.add_argument("--engine", choices=ENGINES, default="actors", help="fast or actors (default)")
    p_sim.add_argument("--secure-sum", default=None, metavar="ENGINE",
                       help="secure-sum engine of a protocol that yields secure sums (a registered name)")
    p_sim.add_argument("--json", action="store_true", help="print the JSON document instead of a summary")
    p_sim.add_argument("--out", type=Path, default=None, metavar="FILE", help="also write the JSON document here")
    _runtime_options(p_sim)
    _logging_options(p_sim, top=False)

    p_party = sub.add_parser("party", help="start a worker hosting parties for a `run --runtime tcp` controller")
    build_worker_parser(p_party)
    _logging_options(p_party, top=False)
    return parser


def parameter_overrides(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Parameter overrides of a ``run``, parsed, one table each: every ``--set`` in order, then
    the shortcut options (the runner merges them over the scenario file's,
    :meth:`scenarios.config.ScenarioConfig.with_overrides`)."""
    tables = [parse_override(text) for text in args.overrides]
    shortcuts = {option: convert(getattr(args, option)) for option, convert in PARAMETER_OPTIONS.items()
                 if getattr(args, option, None) is not None}
    return [*tables, shortcuts] if shortcuts else tables


# --------------------------------------------------------------------------- commands


def _cmd_list(stdout: TextIO, *, as_json: bool) -> None:
    entries = available()
    if as_json:
        doc = [{"name": e.name, "kind": e.kind, "description": e.description, "path": str(e.path),
                **({"problem": e.problem} if e.problem else {})} for e in entries]
        stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return
    width = max((len(e.name) for e in entries), default=0)
    for e in entries:
        text = e.description or f"(kind {e.kind})"
        if e.problem:
            text = f"(invalid file: {e.problem})"
        stdout.write(f"{e.name:<{width}}  {text}\n")
    if not entries:
        stdout.write("no scenarios are shipped\n")


def _cmd_show(target: str, stdout: TextIO, *, as_json: bool) -> None:
    config, spec = load(target)
    fields = spec.schema.fields()
    if as_json:
        doc = {
            "name": config.name, "kind": spec.kind,
            "description": config.description or spec.description,
            "engines": list(spec.engines), "runs": config.runs, "seed": config.seed,
            "source": str(config.source) if config.source else None,
            "parameters": [
                {"key": f.key, "value": to_jsonable(config.parameters.get(f.key)),
                 "type": f.type.describe(), "required": f.default is REQUIRED,
                 "default": None if f.default is REQUIRED else to_jsonable(f.default), "help": f.help}
                for f in fields
            ],
        }
        stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return
    stdout.write(f"{config.name} (kind {spec.kind}): {config.description or spec.description}\n")
    stdout.write(f"engines: {', '.join(spec.engines)}; runs {config.runs}; seed {config.seed}\n")
    for f in fields:
        value = config.parameters.get(f.key)
        default = "required" if f.default is REQUIRED else format_value(f.default)
        stdout.write(f"  {f.key} = {format_value(value)}    # {f.type.describe()}; "
                     f"default {default}{'; ' + f.help if f.help else ''}\n")


def _summary(outcome: RunOutcome, stdout: TextIO) -> None:
    result, files = outcome.result, outcome.files
    runtime = result.provenance.get("runtime")
    written = [str(files.report_md), files.results_json.name, *(p.name for p in files.other_files)]
    if files.figures:
        written.append(plural(len(files.figures), "figure"))
    runs = "" if result.runs is None else f", {plural(result.runs, 'run')}"
    stdout.write(
        f"{result.name}: wrote {', '.join(written[:-1])} and {written[-1]}"
        f" ({result.elapsed_seconds or 0.0:.1f} s, seed {result.seed}{runs}, "
        f"engine {result.engine}{', runtime ' + describe_runtime(runtime) if runtime else ''})\n"
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
    if files.removed:
        stdout.write(f"  removed {', '.join(p.name for p in files.removed)}: written by the previous run into "
                     f"{files.report_md.parent}, not by this one\n")


def _check_shortcuts(args: argparse.Namespace) -> None:
    """Options such as ``--data`` need a scenario that declares the parameter."""
    given = [o for o in PARAMETER_OPTIONS if getattr(args, o, None) is not None]
    if not given:
        return
    config, spec = load(args.scenario)
    missing = [o for o in given if o not in spec.schema.keys()]
    if missing:
        takers = []
        for entry in available():
            try:
                if all(o in load(entry.path)[1].schema.keys() for o in missing):
                    takers.append(entry.name)
            except MprrError:
                continue
        raise ConfigurationError(
            f"--{missing[0]}: scenario {config.name!r} takes no {missing[0]!r} parameter; "
            f"scenarios that do: {', '.join(takers) or 'none'}"
        )


def _cmd_run(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
    load_plugins(args.plugin)
    _check_shortcuts(args)
    overrides = parameter_overrides(args)
    created = [] if args.out is None else prepare_out_dir(args.out, force=args.force)
    progress = Progress(stderr, enabled=False if args.quiet else None)
    log.info("running %s (overrides %s)", args.scenario, overrides or "none")
    with removed_on_failure(created):  # a rejected or interrupted run leaves no --out folder behind
        outcome = run(
            args.scenario,
            out_dir=args.out,
            runs=args.runs,
            seed=args.seed,
            engine=args.engine,
            parameters=overrides or None,
            progress=progress,
            runtime=runtime_of(args),
        )
    _summary(outcome, stdout)


def _cmd_simulate(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
    load_plugins(args.plugin)
    parameters = [parse_override(text) for text in args.overrides]
    if args.seed < 0:
        raise ConfigurationError(f"--seed must be a non-negative integer, got {args.seed}")
    if args.data is not None:
        columns = None if args.columns is None else [c.strip() for c in args.columns.split(",") if c.strip()]
        dataset = load_table(args.data, columns)
    elif args.columns is not None:
        raise ConfigurationError("--columns applies to --data FILE only")
    else:
        if args.n < 2:
            raise ConfigurationError(f"--n must be an integer >= 2, got {args.n}")
        dataset = synthetic_dataset(args.n, args.seed)
    runtime = runtime_of(args) if args.engine == "actors" else None
    summary = simulate_by_name(args.protocol, dataset, seed=args.seed, engine=args.engine, parameters=parameters,
                               secure_sum=args.secure_sum, runtime=runtime)
    write_summary(summary, stdout, as_json=args.json, out=args.out)


def _cmd_party(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
    serve_by_options(args, stderr)


COMMANDS: Mapping[str, Callable[[argparse.Namespace, TextIO, TextIO], None]] = {
    "list": lambda a, out, err: _cmd_list(out, as_json=a.json),
    "show": lambda a, out, err: _cmd_show(a.scenario, out, as_json=a.json),
    "run": _cmd_run,
    "simulate": _cmd_simulate,
    "party": _cmd_party,
}


class _CliHandler(logging.StreamHandler[TextIO]):
    """The log handler the command line installs (and replaces when it runs again)."""


def configure_logging(args: argparse.Namespace, stderr: TextIO) -> None:
    """Route :mod:`logging` to ``stderr`` at the level of ``--log-level`` / ``-v``."""
    if args.log_level:
        level = getattr(logging, args.log_level)
    else:
        level = {0: logging.WARNING, 1: logging.INFO}.get(args.verbose, logging.DEBUG)
    handler = _CliHandler(stderr)
    handler.setFormatter(logging.Formatter("mprr: %(levelname)s: %(name)s: %(message)s"))
    root = logging.getLogger()
    for old in [h for h in root.handlers if isinstance(h, _CliHandler)]:
        root.removeHandler(old)
    root.addHandler(handler)
    for name in ("mprr", "parties", "scenarios"):
        logging.getLogger(name).setLevel(level)
    # where a controller waiting for hand-started workers listens is what the person starting
    # them needs: said by default (parties.tcp logs nothing else at INFO)
    by_hand = getattr(args, "external_workers", False) and not args.log_level
    logging.getLogger("parties.tcp").setLevel(min(level, logging.INFO) if by_hand else logging.NOTSET)
    logging.captureWarnings(True)


def main(
    argv: Sequence[str] | None = None,
    *,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Entry point of the ``mprr`` console script; returns the exit code.

    Exit codes: 0 success, 2 bad usage or :class:`~mprr.errors.MprrError` (one-line message on
    stderr), 1 an operating-system error writing the output, 130 interrupted.  A closed
    stdout (``mprr list | head``) ends the program quietly.
    """
    stdout = sys.stdout if stdout is None else stdout
    stderr = sys.stderr if stderr is None else stderr
    args = build_parser().parse_args(argv)
    configure_logging(args, stderr)
    try:
        COMMANDS[args.command](args, stdout, stderr)
        stdout.flush()
    except BrokenPipeError:
        # the reader went away (`mprr list | head`): nothing more to say; point stdout at
        # devnull so that the interpreter's final flush does not raise again
        if stdout is sys.stdout:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        return 0
    except MprrError as exc:
        stderr.write(f"mprr: error: {exc}\n")
        return 2
    except OSError as exc:
        where = f" (--out {str(args.out)!r})" if getattr(args, "out", None) is not None else ""
        stderr.write(f"mprr: error: {exc}{where}\n")
        return 1
    except KeyboardInterrupt:
        stderr.write("mprr: interrupted\n")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
