"""The ``tcp`` runtime: party shard hosts in worker processes, frames over mutual TLS.

The controller process listens (loopback by default); each worker process connects, says
which parties it hosts (``hello``), receives their setup (:class:`~parties.shard.ShardSetup`),
runs a :class:`~parties.shard.PartyShard` on its own event loop and answers ``ready`` with its
parties' verification keys (generated in the worker when the secure-sum engine signs; the
private keys never leave it).  Once every worker is ready the controller process sends each
the run's key directory (``registry``, :func:`~parties.shard_setup.directory`) before any protocol
frame: the stream is ordered, so a party holds the directory before its first session.  From
then on both directions carry ``DATA`` records — one protocol frame each, the one codec's
bytes — length-prefixed on an asyncio stream (:mod:`parties.channel`), batched per event-loop
turn into one write.  At the end the controller sends ``finish`` and each worker answers with
its ``report``.

TLS is on by default: TLS 1.3, a per-run CA, the controller and every worker authenticated
(:mod:`parties.tls`); the controller also checks that a worker's certificate is the one of the
worker number it claims.

Supervision (:class:`TcpRuntime`, ``spawn=True``): the runner starts ``workers`` processes
(``python -m parties.worker ...``) and owns them: leaving :meth:`TcpRuntime.host` — after
success, an error or Ctrl-C — closes their stdin (a worker exits when its stdin closes, so a
killed runner leaves no orphan), then terminates and finally kills what is left, and waits for
each.  A worker that exits before it is ready fails the start with
:class:`~mprr.errors.RuntimeFailure` and its last stderr lines; a worker lost during the run
crashes its parties (:meth:`~parties.router.Router.lose`).

By hand (``spawn=False``): ``mprr party --connect HOST:PORT --parties 0-999 --worker 0
--tls-dir DIR`` on any machine; the controller waits for workers covering every party.  The
worker side (connect, serve runs, options) is :mod:`parties.worker`.

Accounting (:meth:`TcpHosting.wire`): payload bytes (the codec's, identical to the in-memory
network's; a party-to-party frame crosses the channel twice, up to the router and down to its
receiver's worker, so the payload is the traffic's bytes plus ``party_to_party_bytes``),
framing bytes (record headers and length prefixes), control bytes (setup, key directory,
reports) and, from the kernel's ``TCP_INFO`` counters of the controller's sockets, the bytes really
sent and received — the difference is the TLS overhead (handshake, record headers, AEAD tags).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError, MessageError, RuntimeFailure
from parties.plugins import loaded_plugins
from parties.runtime import Hosting, HostingPlan, Runtime, task_group
from parties.shard_setup import directory, split
from parties.shard_report import ShardReport
from parties.tls import TlsMaterial, make_material, reuse_or_make_material, server_context
from parties.channel import COLUMNS, DATA, LENGTH_SIZE, RecordBatcher, StreamDecoder, loads, pack_stream, read_record

__all__ = [
    "StreamChannel",
    "TcpHosting",
    "TcpRuntime",
    "format_ranges",
    "parse_address",
    "parse_parties",
    "uncovered",
]

logger = logging.getLogger(__name__)

_TCP_INFO_BYTES = struct.Struct("QQ")  # tcpi_bytes_acked, tcpi_bytes_received (Linux >= 4.2)
_TCP_INFO_OFFSET = 120


def parse_address(text: str) -> tuple[str, int]:
    """``"HOST:PORT"`` → ``(host, port)`` (ConfigurationError otherwise)."""
    host, sep, port = str(text).rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ConfigurationError(f"address must be HOST:PORT with a port in 0..65535, got {text!r}")
    return host.strip("[]"), int(port)


def parse_parties(text: str) -> range:
    """``"0-999"`` (inclusive) → ``range(0, 1000)``; ``"7"`` → ``range(7, 8)``."""
    lo, sep, hi = str(text).partition("-")
    try:
        a = int(lo)
        b = int(hi) if sep else a
    except ValueError:
        raise ConfigurationError(f"parties must be FIRST-LAST (inclusive), e.g. 0-999, got {text!r}") from None
    if a < 0 or b < a:
        raise ConfigurationError(f"parties must be FIRST-LAST with 0 <= FIRST <= LAST, got {text!r}")
    return range(a, b + 1)


def uncovered(n: int, hosted: Sequence[range]) -> list[range]:
    """The ranges of ``0..n-1`` that no range of ``hosted`` covers, in order."""
    gaps: list[range] = []
    start = 0
    for r in sorted(hosted, key=lambda r: r.start):
        if r.start > start:
            gaps.append(range(start, min(r.start, n)))
        start = max(start, r.stop)
    if start < n:
        gaps.append(range(start, n))
    return [g for g in gaps if len(g)]


def format_ranges(ranges: Sequence[range], limit: int = 5) -> str:
    """``[range(3, 4), range(7, 10)]`` → ``"3, 7-9"`` (as ``--parties`` takes them); after
    ``limit`` ranges, ``"… (K more ranges, P parties in all)"``."""
    text = ", ".join(f"{r.start}" if len(r) == 1 else f"{r.start}-{r.stop - 1}" for r in ranges[:limit])
    if len(ranges) > limit:
        text += f", … ({len(ranges) - limit} more ranges, {sum(len(r) for r in ranges)} parties in all)"
    return text


class StreamChannel(RecordBatcher):
    """One stream: records out (batched per loop turn), records in, byte counters."""

    prefix = LENGTH_SIZE
    flush_bytes = 1 << 17

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__()
        self.reader, self.writer = reader, writer
        self.socket_bytes: tuple[int, int] | None = None

    def _write(self, records: list[bytes]) -> None:
        if not self.writer.is_closing():
            self.writer.write(pack_stream(records))

    async def records(self) -> AsyncIterator[bytes]:
        decoder = StreamDecoder()
        while True:
            data = await self.reader.read(1 << 18)
            if not data:
                return
            for record in decoder.feed(data):
                yield record


    def measure(self) -> None:
        """Read the kernel's byte counters of the socket (Linux ``TCP_INFO``; else nothing)."""
        sock = self.writer.get_extra_info("socket")
        if sock is None or not hasattr(socket, "TCP_INFO"):
            return
        try:
            info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
            acked, received = _TCP_INFO_BYTES.unpack_from(info, _TCP_INFO_OFFSET)
        except (OSError, struct.error):
            return
        self.socket_bytes = (max(acked - 1, 0), received)  # bytes_acked counts the SYN

    async def close(self) -> None:
        self.flush()
        self.writer.close()
        with suppress(Exception):
            async with asyncio.timeout(2.0):
                await self.writer.wait_closed()


class _WorkerLink(StreamChannel):
    """The controller's stream to one worker, its :class:`~parties.link.Link` once the
    worker said which parties it hosts (``hello``); a broadcast to the worker's parties leaves
    as one ``MULTI`` record (:mod:`parties.channel`)."""

    multicast = True

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        super().__init__(reader, writer)
        self.parties, self.worker, self.keys = range(0), -1, b""
        self.ready, self.done = asyncio.Event(), asyncio.Event()
        self.report: ShardReport | None = None


def _peer_worker(writer: asyncio.StreamWriter) -> str | None:
    cert = writer.get_extra_info("peercert")
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return str(value)
    return None


class TcpHosting(Hosting):
    """The controller process's view of the workers of one run."""

    def __init__(self, plan: HostingPlan, *, tls: bool, expected: Sequence[range] | None) -> None:
        super().__init__(plan)
        self._tls = tls
        self._expected = None if expected is None else {(r.start, r.stop) for r in expected}
        self.links: list[_WorkerLink] = []
        self._workers: set[int] = set()
        self._changed = asyncio.Event()
        self.processes: list[asyncio.subprocess.Process] = []  # the spawned workers (owned by the runtime)

    # -- connections
    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """One worker connection, from hello to report (never raises: a bad worker is dropped)."""
        channel = _WorkerLink(reader, writer)
        link: _WorkerLink | None = None  # the channel, once its hello is accepted
        try:
            records = channel.records()
            first = await anext(records, None)
            if first is None:
                return
            channel.count_in(first, None)
            link = self._hello(channel, first, writer)
            ingress, received, prefix = self.router.ingress, channel.received, channel.prefix
            async for record in records:
                if record[0] == DATA:
                    frame, _ = read_record(record)
                    size = len(frame.payload)  # (channel.count_in, inlined: once per frame)
                    received["payload"] += size
                    received["framing"] += len(record) - size + prefix
                    ingress(link, frame)
                    continue
                if record[0] == COLUMNS:
                    self.columns_in(link, record)
                    continue
                channel.count_in(record, None)
                tag, body = loads(record)
                if tag == "ready" and isinstance(body, bytes) and not link.ready.is_set():
                    link.keys = body
                    link.ready.set()
                    self._changed.set()
                elif tag == "report" and isinstance(body, ShardReport) and body.parties == link.parties:
                    channel.measure()
                    link.report = body
                    link.done.set()
                    return
                else:
                    raise MessageError(f"unexpected control record {tag!r} from worker {link.worker}")
        except Exception as exc:  # a bad worker is dropped, never the run's end
            self.problems.append(f"worker {getattr(link, 'worker', '?')}: {type(exc).__name__}: {exc}")
        finally:
            if link is not None and link.report is None:
                channel.measure()
                if link in self.links:
                    self.router.lose(link, "connection closed")
                link.done.set()
                self._changed.set()
            await channel.close()

    def _hello(self, link: _WorkerLink, record: bytes, writer: asyncio.StreamWriter) -> _WorkerLink:
        tag, body = loads(record)
        if tag != "hello" or not isinstance(body, dict):
            raise MessageError(f"a worker must start with hello, got {tag!r}")
        worker, span = body.get("worker"), body.get("parties")
        if not (isinstance(worker, int) and isinstance(span, tuple) and len(span) == 2
                and all(isinstance(x, int) for x in span)):
            raise MessageError(f"malformed hello {body!r}")
        if self._tls and _peer_worker(writer) != f"mprr-worker-{worker}":
            raise MessageError(f"worker {worker} presented the certificate of {_peer_worker(writer)!r}")
        if worker in self._workers:
            raise MessageError(f"worker {worker} is already connected")
        if self._expected is not None and span not in self._expected:
            raise MessageError(f"worker {worker} declares parties {span[0]}-{span[1] - 1}, not a range assigned")
        link.parties, link.worker = range(*span), worker
        self.router.attach(link)  # ConfigurationError on overlap / out of range
        self._workers.add(worker)
        self.links.append(link)
        link.send_control("setup", self.plan.setup(link.parties))
        self._changed.set()
        return link

    async def wait_ready(self, processes: Sequence[asyncio.subprocess.Process], timeout: float,
                         logs: Sequence[Path]) -> None:
        """Until workers covering every party are ready (RuntimeFailure on exit / timeout).

        Woken by every change (a connection, a worker ready or gone, a process exiting: one
        watcher task per process), under one ``asyncio.timeout``."""
        async def watch(proc: asyncio.subprocess.Process) -> None:
            await proc.wait()
            self._changed.set()

        watchers = [asyncio.ensure_future(watch(proc)) for proc in processes]
        try:
            async with asyncio.timeout(timeout):
                while not (self.router.covered() and all(link.ready.is_set() for link in self.links)):
                    for k, proc in enumerate(processes):
                        if proc.returncode is not None:
                            raise RuntimeFailure(f"worker {k} exited with code {proc.returncode} before it was "
                                                 f"ready: {_tail(logs[k]) if k < len(logs) else ''}")
                    gone = [link.worker for link in self.links if link.done.is_set()]
                    if gone:
                        exiting = [processes[k] for k in gone if k < len(processes)]
                        with suppress(TimeoutError):  # a spawned worker that hung up is exiting: its log says why
                            async with asyncio.timeout(EXIT_GRACE):
                                for proc in exiting:
                                    await proc.wait()
                        details = [_tail(logs[k]) for k in gone if k < len(logs)]
                        raise RuntimeFailure(f"worker(s) {gone} disconnected before the run started: "
                                             f"{'; '.join(self.problems + details)}")
                    self._changed.clear()
                    await self._changed.wait()
        except TimeoutError:
            hosted = sum(len(link.parties) for link in self.links)
            missing = uncovered(self.plan.n, [link.parties for link in self.links])
            unready = sorted(link.worker for link in self.links if not link.ready.is_set())
            raise RuntimeFailure(
                f"tcp runtime: workers host {hosted} of {self.plan.n} parties after {timeout} s "
                f"({len(self.links)} connected{'; ' + '; '.join(self.problems) if self.problems else ''})"
                + (f"; no worker hosts parties {format_ranges(missing)}" if missing else "")
                + (f"; worker(s) {unready} connected but not ready (setting up their parties)" if unready else "")
            ) from None
        finally:
            for watcher in watchers:
                watcher.cancel()

    def register(self) -> None:
        """Send every worker the run's key directory (when the engine signs; after
        :meth:`wait_ready`, before any protocol frame)."""
        if not self.plan.signs:
            return
        keys = directory([(link.parties, link.keys) for link in self.links], self.plan.n)
        for link in self.links:
            link.send_control("registry", keys)

    async def finish(self) -> list[ShardReport]:
        for link in self.links:
            if not link.done.is_set():
                link.send_control("finish", None)
        with suppress(TimeoutError):
            async with asyncio.timeout(self.plan.timeout):
                for link in self.links:
                    await link.done.wait()
        reports = {k: link.report for k, link in enumerate(self.links) if link.report is not None}
        return self.collected([link.parties for link in self.links], reports)

    def wire(self) -> dict[str, Any]:
        received = ("payload", "framing", "control", "columns_saved")
        out: dict[str, Any] = {
            "runtime": "tcp",
            "tls": self._tls,
            "workers": len(self.links),
            **self.byte_counts(self.links, (*received, "multicast_saved"), received),
            "lost_workers": len(self.router.lost),
            "problems": list(self.problems),
        }
        app = sum(out[k] for k in ("payload_bytes", "framing_bytes", "control_bytes")) \
            - out["columns_saved_bytes"] - out["multicast_saved_bytes"]
        measured = [link.socket_bytes for link in self.links]
        if measured and all(m is not None for m in measured):
            socket_sent = sum(m[0] for m in measured if m is not None)
            socket_recv = sum(m[1] for m in measured if m is not None)
            out["socket_bytes_sent"] = socket_sent
            out["socket_bytes_received"] = socket_recv
            out["tls_overhead_bytes"] = socket_sent + socket_recv - app
        return out


def _tail(path: Path, lines: int = 5) -> str:
    try:
        text = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return " | ".join(text[-lines:])


@dataclass(frozen=True)
class TcpRuntime(Runtime):
    """Parties in worker processes, frames over (mutual) TLS on TCP (module docstring).

    Parameters
    ----------
    workers
        Number of worker processes (spawned), or of workers expected (by hand).
    listen
        ``HOST:PORT`` the controller listens on (default ``127.0.0.1:0``, any free port).
    spawn
        Start and supervise the workers here (default) or wait for workers started by hand.
    tls
        Mutual TLS (default); ``False`` sends plain TCP (measure the TLS overhead).
    tls_dir
        Keep the run's TLS material there (needed to start workers by hand); default a
        temporary directory removed after the run.
    connect_timeout
        Seconds to wait for every worker to be ready.
    """

    workers: int = 2
    listen: str = "127.0.0.1:0"
    spawn: bool = True
    tls: bool = True
    tls_dir: str | None = None
    connect_timeout: float = 60.0
    name: str = field(default="tcp", init=False)

    def __post_init__(self) -> None:
        check_int("workers", self.workers, 1)
        parse_address(self.listen)
        check_real("connect_timeout", self.connect_timeout, strict=True)
        if not self.spawn and self.tls and self.tls_dir is None:
            raise ConfigurationError("workers started by hand need tls_dir (where their certificates are written) "
                                     "or tls=False")

    def options(self) -> dict[str, Any]:
        return {"runtime": "tcp", "workers": self.workers, "listen": self.listen, "spawn": self.spawn,
                "tls": self.tls}

    def _by_hand(self, port: int, n: int) -> str:
        """What the person starting the workers needs: how long the controller waits, the
        command, and the ranges of ``workers`` workers."""
        shown = split(n, min(self.workers, n))
        ranges = ", ".join(f"--worker {k} --parties {r.start}-{r.stop - 1}" for k, r in enumerate(shown[:4]))
        ranges += ", …" if len(shown) > 4 else ""
        tls = "--tls-dir DIR" if self.tls else "--no-tls"
        return (f"; waiting up to {self.connect_timeout:g} s for workers started with `mprr party --connect "
                f"HOST:{port} --parties FIRST-LAST --worker K {tls}` covering every party, e.g. {ranges}")

    @asynccontextmanager
    async def host(self, plan: HostingPlan) -> AsyncIterator[Hosting]:
        ranges = split(plan.n, self.workers) if self.spawn else None
        host, port = parse_address(self.listen)
        with tempfile.TemporaryDirectory(prefix="mprr-tcp-") as scratch:
            material: TlsMaterial | None = None
            if self.tls:
                extra = () if host in ("127.0.0.1", "localhost", "0.0.0.0", "::") else (host,)
                # by hand: keep the certificates the workers were given for the next runs
                material = (make_material(Path(scratch), self.workers, hosts=extra) if self.tls_dir is None
                            else reuse_or_make_material(Path(self.tls_dir), self.workers, hosts=extra))
            hosting = TcpHosting(plan, tls=self.tls, expected=ranges)
            pending: asyncio.Queue[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = asyncio.Queue()
            closing = False

            def arrived(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
                # a worker reconnecting for the next run can reach this run's server while it
                # closes: hang up on it (it retries) rather than leave it waiting for a set-up
                if closing:
                    writer.close()
                else:
                    pending.put_nowait((reader, writer))

            server = await asyncio.start_server(arrived, host, port,
                                                ssl=None if material is None else server_context(material))
            bound = server.sockets[0].getsockname()[1]
            logger.info("tcp runtime: listening on %s:%d for workers of parties 0-%d%s", host, bound, plan.n - 1,
                        "" if self.spawn else self._by_hand(bound, plan.n))
            processes = hosting.processes
            logs: list[Path] = []
            try:
                async with task_group() as tg:
                    connections: list[asyncio.Task[None]] = []

                    async def accept() -> None:
                        while True:
                            reader, writer = await pending.get()
                            connections.append(tg.create_task(hosting.serve(reader, writer)))

                    acceptor = tg.create_task(accept())
                    try:
                        for k, r in enumerate(ranges or ()):
                            log = Path(scratch) / f"worker-{k}.log"
                            logs.append(log)
                            processes.append(await _spawn(k, r, f"127.0.0.1:{bound}" if host in ("0.0.0.0", "::")
                                                          else f"{host}:{bound}", material, log,
                                                          worker_plugins(plan)))
                        await hosting.wait_ready(processes, self.connect_timeout, logs)
                        server.close()  # every worker is in: one reconnecting for the next run waits for that run
                        hosting.register()
                        yield hosting
                    finally:
                        closing = True
                        server.close()
                        acceptor.cancel()
                        for t in connections:
                            t.cancel()
                        while not pending.empty():
                            pending.get_nowait()[1].close()
            finally:
                closing = True
                server.close()
                await _reap(processes)


EXIT_GRACE = 2.0
"""Seconds a spawned worker that hung up before its run started is given to exit, so that the
error names what its log says (a set-up it refused, say)."""


def worker_plugins(plan: HostingPlan) -> tuple[str, ...]:
    """The plugin modules a spawned worker loads (:mod:`parties.plugins`): those this process
    loaded, and the module of the run's engine where it is not one of ``mprr`` / ``parties``
    (a user's engine registered by importing its module)."""
    modules = dict.fromkeys(loaded_plugins())
    if plan.engine is not None:
        module = type(plan.engine).__module__
        if not module.startswith(("mprr.", "parties.")):
            modules[module] = None
    return tuple(modules)


async def _spawn(k: int, parties: range, address: str, material: TlsMaterial | None,
                 log: Path, plugins: Sequence[str]) -> asyncio.subprocess.Process:
    cmd = [sys.executable, "-m", "parties.worker", "--connect", address, "--parties",
           f"{parties.start}-{parties.stop - 1}", "--worker", str(k), "--exit-with-parent"]
    cmd += [arg for module in plugins for arg in ("--plugin", module)]
    cmd += ["--no-tls"] if material is None else ["--tls-dir", str(material.directory)]
    with open(log, "wb") as err:
        return await asyncio.create_subprocess_exec(*cmd, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.DEVNULL, stderr=err)


async def _reap(processes: Sequence[asyncio.subprocess.Process]) -> None:
    """Stop owned workers: close stdin, then terminate, then kill; wait for each."""
    for proc in processes:
        if proc.stdin is not None:
            with suppress(Exception):
                proc.stdin.close()
    for signal_step in ("wait", "terminate", "kill"):
        alive = [p for p in processes if p.returncode is None]
        if not alive:
            return
        for p in alive:
            with suppress(ProcessLookupError):
                if signal_step == "terminate":
                    p.terminate()
                elif signal_step == "kill":
                    p.kill()
        with suppress(TimeoutError):
            async with asyncio.timeout(2.0):
                for p in alive:
                    await p.wait()


# ---------------------------------------------------------------------------- worker side
