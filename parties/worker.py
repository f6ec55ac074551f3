"""The worker side of the ``tcp`` runtime: a process hosting a range of parties.

A worker connects to the controller process (:mod:`parties.tcp`), says which parties it hosts
(``hello``), runs a :class:`~parties.shard.PartyShard` for the run's set-up and answers the
controller's ``finish`` with its report.  Spawned by the runner it serves one run and exits
when its stdin closes (:func:`exit_with_parent`); started by hand (``mprr party``) it serves a
scenario's runs one after another, reconnecting between them (``--wait``, ``--linger``).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
from collections.abc import Callable, Sequence
from contextlib import suppress
from pathlib import Path
from typing import TextIO

from mprr.domain import check_real
from mprr.errors import ConfigurationError, MessageError, MprrError, RuntimeFailure
from parties.channel import DATA, MULTI, loads
from parties.collector import rare_full_collections
from parties.runtime import task_group
from parties.shard import PartyShard, ShardSetup
from parties.shard_report import ShardReport
from parties.tcp import StreamChannel, parse_address, parse_parties
from parties.plugins import load_plugins
from parties.tls import CONTROLLER_NAME, TlsMaterial, client_context

__all__ = ["RETRY_FIRST", "RETRY_LAST", "build_worker_parser", "exit_with_parent", "run_worker", "serve_by_options", "worker_main"]


RETRY_FIRST = 0.02
"""Seconds a worker waits before its second attempt to reach the controller; each further
attempt waits twice as long, up to :data:`RETRY_LAST` (a worker serving run after run finds the
next run's listener within tens of milliseconds, and an absent controller costs few attempts)."""
RETRY_LAST = 0.5
"""The longest wait between two attempts to reach the controller (seconds)."""


async def run_worker(address: str, parties: range, *, worker: int = 0, tls_dir: str | None = None,
                     tls: bool = True, wait: float = 0.0, linger: float = 0.0, runs: int | None = 1,
                     status: Callable[[str], None] | None = None) -> int:
    """Connect to the controller at ``address`` and host ``parties`` for its runs.

    A scenario runs several protocols, each a run of its own with a fresh shard. A worker
    started by hand serves run after run: after each one it reconnects, and it stops when no
    controller has listened at ``address`` for ``linger`` seconds (or after ``runs`` runs).

    Parameters
    ----------
    wait
        Seconds to keep trying to reach the controller for the first run (0: one attempt).
    linger
        Seconds to keep trying between runs.
    runs
        Stop after this many runs (``None``: until no controller listens for ``wait`` seconds).
    status
        Receives one line when the worker first gets a run's set-up (connected), one per run
        served and one when it stops after serving (``mprr party`` prints them on stderr).

    Returns
    -------
    int
        The number of runs served.

    Raises
    ------
    RuntimeFailure
        The controller cannot be reached for the first run, refused the worker, or closed the
        connection before a run finished.
    """
    host, port = parse_address(address)
    ctx = None
    if tls:
        if tls_dir is None:
            raise ConfigurationError("a TLS worker needs tls_dir (ca.pem, worker-<k>.pem, worker-<k>.key)")
    served = 0
    loop = asyncio.get_running_loop()
    say = status or (lambda line: None)
    me = f"worker {worker} (parties {parties.start}-{parties.stop - 1})"

    began = loop.time()  # when the run being served got its set-up

    def connected() -> None:
        nonlocal began
        began = loop.time()
        if not served:
            say(f"{me}: connected to the controller at {address}")

    while runs is None or served < runs:
        if tls and tls_dir is not None:  # re-read: the controller may have renewed the material
            material = TlsMaterial(Path(tls_dir))
            ctx = client_context(material.ca, material.cert(f"worker-{worker}"), material.key(f"worker-{worker}"))
        # between runs the controller may still be closing the last run's listener, or not yet
        # listening for the next: a refused connection or a hang-up before the set-up is retried
        deadline = loop.time() + (linger if served else wait)
        pause = RETRY_FIRST
        while True:
            try:
                reader, writer = await asyncio.open_connection(host, port, ssl=ctx,
                                                               server_hostname=CONTROLLER_NAME if ctx else None)
                await _serve_run(reader, writer, parties, worker, connected)
                break
            except (OSError, _NoSetup) as exc:
                if loop.time() >= deadline:
                    if served:
                        say(f"{me}: exiting after {served} run(s): no next run at {address} within "
                            f"{linger:g} s (--linger)")
                        return served
                    if isinstance(exc, _NoSetup):
                        raise RuntimeFailure(f"worker {worker}: {exc}") from None
                    raise RuntimeFailure(f"worker {worker}: cannot reach the controller at {address}: {exc}") from None
                await asyncio.sleep(min(pause, max(0.0, deadline - loop.time())))
                pause = min(2 * pause, RETRY_LAST)
        served += 1
        say(f"{me}: run {served} served ({loop.time() - began:.1f} s)")
    say(f"{me}: exiting after {served} run(s)")
    return served


class _NoSetup(Exception):
    """The controller hung up before sending a run's set-up (refused, or between runs)."""


async def _serve_run(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, parties: range, worker: int,
                     on_setup: Callable[[], None]) -> None:
    """Host ``parties`` for one run on an open connection, until the controller's finish
    (``on_setup``: called once the run's set-up arrived)."""
    channel = StreamChannel(reader, writer)
    channel.send_control("hello", {"worker": worker, "parties": (parties.start, parties.stop)})
    shard: PartyShard | None = None
    finished = False
    try:
        async with task_group() as tg:
            serving: asyncio.Task[None] | None = None
            async for record in channel.records():
                # frames before the set-up are dropped; the shard takes frames and crash notices
                control = shard.take(record) if shard is not None else None if record[0] in (DATA, MULTI) else loads(record)
                if control is None:
                    continue
                tag, body = control
                if tag == "setup" and shard is None and isinstance(body, ShardSetup) and body.parties == parties:
                    shard = PartyShard(body, lambda f: channel.send_frame(f, None), columns=channel.send_columns)
                    serving = tg.create_task(shard.serve())
                    channel.send_control("ready", shard.public_keys())
                    on_setup()
                elif tag == "registry" and shard is not None and isinstance(body, bytes):
                    shard.register(body)
                elif tag == "finish" and shard is not None and serving is not None:
                    shard.stop()
                    await serving
                    channel.send_control("report", ShardReport.of(shard))
                    channel.flush()
                    await writer.drain()
                    finished = True
                    break
                else:
                    raise MessageError(f"worker {worker}: unexpected control record {tag!r}")
            if shard is not None:
                shard.stop()
    finally:
        await channel.close()
    if shard is None:
        raise _NoSetup("the controller closed the connection before sending the run's set-up")
    if not finished:
        raise RuntimeFailure(f"worker {worker}: the controller closed the connection before the run finished")


def exit_with_parent() -> None:
    """Exit when stdin closes (the supervising runner is gone): no orphan worker."""
    def watch() -> None:
        with suppress(Exception):
            while os.read(0, 1024):  # the raw descriptor: no buffer lock held at interpreter shutdown
                pass
        os._exit(3)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()


def build_worker_parser(parser: argparse.ArgumentParser | None = None) -> argparse.ArgumentParser:
    """Options of a worker (``mprr party`` / ``python -m parties.worker``)."""
    p = parser or argparse.ArgumentParser(prog="python -m parties.worker", description="an mprr party worker")
    p.add_argument("--connect", required=True, metavar="HOST:PORT", help="the controller's address")
    p.add_argument("--parties", required=True, metavar="FIRST-LAST", help="party ids hosted, inclusive, e.g. 0-999")
    p.add_argument("--worker", type=int, default=0, metavar="K", help="worker number (certificate worker-K)")
    p.add_argument("--tls-dir", default=None, metavar="DIR", help="directory with ca.pem, worker-K.pem, worker-K.key")
    p.add_argument("--no-tls", action="store_true", help="plain TCP (the controller must also run without TLS)")
    p.add_argument("--wait", type=float, default=300.0, metavar="S",
                   help="keep trying to reach the controller for S seconds before the first run (default 300)")
    p.add_argument("--linger", type=float, default=30.0, metavar="S",
                   help="after a run, keep trying for S seconds to serve the controller's next run (a scenario "
                        "runs one per protocol); exit when none comes (default 30)")
    p.add_argument("--plugin", action="append", default=[], metavar="MODULE",
                   help="import MODULE (repeatable): it registers the protocols, matrix families or secure-sum "
                        "engines it defines, and the worker trusts its classes in a run's set-up")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no status lines on stderr (connected, each run served, exiting); errors still print")
    p.add_argument("--exit-with-parent", action="store_true", help=argparse.SUPPRESS)
    return p


def serve_by_options(args: argparse.Namespace, stderr: TextIO | None = None) -> int:
    """Run the worker ``args`` describe (spawned by a runner: one run, no retry, no status
    lines; by hand: many, a status line on ``stderr`` when connected, per run and on exit
    unless ``--quiet``)."""
    if args.exit_with_parent:
        exit_with_parent()
    spawned = bool(args.exit_with_parent)
    for name in ("wait", "linger"):
        check_real(f"--{name}", getattr(args, name))  # seconds
    out = sys.stderr if stderr is None else stderr

    def status(line: str) -> None:
        out.write(f"mprr party: {line}\n")
        out.flush()

    load_plugins(getattr(args, "plugin", None) or ())
    quiet = spawned or bool(getattr(args, "quiet", False))
    with rare_full_collections():  # thousands of parties live here: about 5% of the CPU of a masked secure sum
        return asyncio.run(run_worker(args.connect, parse_parties(args.parties), worker=args.worker,
                                      tls_dir=args.tls_dir, tls=not args.no_tls, wait=0.0 if spawned else args.wait,
                                      linger=args.linger, runs=1 if spawned else None,
                                      status=None if quiet else status))


def worker_main(argv: Sequence[str] | None = None, args: argparse.Namespace | None = None) -> int:
    """Run one worker; exit code 0, 2 on an mprr error (one line on stderr), 130 on Ctrl-C."""
    if args is None:
        args = build_worker_parser().parse_args(argv)
    try:
        serve_by_options(args)
    except MprrError as exc:
        sys.stderr.write(f"mprr party: error: {exc}\n")
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover - worker process entry point
    sys.exit(worker_main())
