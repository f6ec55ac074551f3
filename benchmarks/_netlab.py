"""A shaped network on this machine: network namespaces, veth pairs, ``tc tbf`` and a latency relay.

Used by ``benchmarks/network_time.py`` (the tcp runtime on shaped links, against the network
model of :mod:`parties.netsim`) and by its test.  Needs root and iproute2 (``ip netns``, ``tc``);
the kernel needs ``tbf`` (no ``netem``: latency comes from the relay).

Topology (:class:`Testbed`)::

    controller ns (10.231.0.1)     worker ns k (10.231.0.(10 + k))
        e0 ──veth──┐                     e0 ──veth──┐
                   pc ── br0 (switch ns) ── pw<k> ──┘

Every endpoint namespace has one veth pair to a bridge in a switch namespace.  Bandwidth is
shaped by the kernel: a ``tbf`` qdisc on the endpoint's side of the pair is its uplink (what it
sends), one on the switch's side its downlink (what it receives).  The controller's pair is
shared by everything the controller sends or receives, as the model's controller link is.  Only
the namespaces' own addresses and their loopbacks are used; nothing is changed in the namespace
the benchmark starts from (apart from creating the namespaces).

Latency (:func:`relay`): a userspace TCP relay in the controller namespace, between the workers
and the controller's listener on the controller namespace's loopback.  It delays every chunk it
reads, in each direction, by the one-way latency of the path (the party's plus the
controller's) and writes chunks in the order they came: a constant delay line in front of (or
behind) the FIFO of the shaped link, which is the model's ``size / bottleneck + latency``.  It
does not pace: the kernel's ``tbf`` already serializes every link, and serializing again in the
relay would count each chunk's transmission time twice.  Because the delay is applied to the
relay's chunks and not to TCP's packets, TCP itself sees the short round trip of the veth path:
its window and slow start never add time (the model has no slow start either).

``tbf`` parameters: ``burst`` is the bucket (bytes that may leave at line rate after an idle
spell), ``limit`` the queue (bytes waiting for tokens).  :data:`BURST` is a little more than two
full Ethernet frames (the least that passes a frame and its follower without waiting for a
timer) and the queue is large enough (:data:`LIMIT`) that TCP never sees a drop (a drop costs a
200 ms retransmission timeout); :meth:`Testbed.drops` reads the qdiscs' drop counters so that a
run can prove it.

Everything created is removed by :meth:`Testbed.close` (namespaces, and with them their veths
and qdiscs; the processes started with :meth:`Testbed.popen`), also after an error or Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from types import TracebackType

__all__ = ["BURST", "LIMIT", "Link", "Testbed", "netns_unavailable", "relay"]

SUBNET = "10.231.0"
"""The /24 of the testbed's addresses (controller .1, worker k .(10 + k))."""
BURST = 3_100
"""Bytes of a tbf bucket: two 1,514-byte Ethernet frames and change."""
LIMIT = 16 * 1024 * 1024
"""Bytes a tbf queue holds before it drops (large: TCP must never see a drop)."""


def netns_unavailable() -> str | None:
    """Why a testbed cannot be built here (``None``: it can): not root, no ``ip``/``tc``, or
    ``ip netns`` / ``tbf`` refused."""
    if os.geteuid() != 0:
        return "needs root (network namespaces, veth pairs and tc qdiscs)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"needs iproute2's {tool!r} on PATH"
    probe = f"mprrprobe{os.getpid()}"
    try:
        made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
        if made.returncode != 0:
            return f"`ip netns add` failed: {made.stderr.strip()}"
        tbf = subprocess.run(["ip", "netns", "exec", probe, "tc", "qdisc", "add", "dev", "lo", "root", "tbf",
                              "rate", "8mbit", "burst", str(BURST), "limit", str(LIMIT)],
                             capture_output=True, text=True)
        if tbf.returncode != 0:
            return f"`tc qdisc ... tbf` failed: {tbf.stderr.strip()}"
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    return None


@dataclass(frozen=True)
class Link:
    """A shaped link: ``uplink`` / ``downlink`` in bytes per second (``None``: not shaped)."""

    uplink: float | None
    downlink: float | None


def _run(argv: Sequence[str]) -> str:
    done = subprocess.run(list(argv), capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({done.returncode}): {done.stderr.strip()}")
    return done.stdout


class Testbed:
    """Namespaces for a controller and ``len(workers)`` workers, joined by a bridge (module docstring).

    Parameters
    ----------
    controller
        The controller's link.
    workers
        One link per worker namespace.
    tag
        Prefix of the namespace names (default ``mprr<pid>``; at most 8 characters).
    """

    def __init__(self, controller: Link, workers: Sequence[Link], *, tag: str | None = None) -> None:
        self.tag = tag or f"mprr{os.getpid() % 100000}"
        self.controller_link = controller
        self.worker_links = list(workers)
        self.switch = f"{self.tag}-sw"
        self.controller = f"{self.tag}-c"
        self.workers = [f"{self.tag}-w{k}" for k in range(len(workers))]
        self.controller_address = f"{SUBNET}.1"
        self.worker_addresses = [f"{SUBNET}.{10 + k}" for k in range(len(workers))]
        self.made: list[str] = []
        self.processes: list[subprocess.Popen[bytes]] = []

    # -- set-up / tear-down
    def __enter__(self) -> Testbed:
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def _build(self) -> None:
        for ns in (self.switch, self.controller, *self.workers):
            _run(["ip", "netns", "add", ns])
            self.made.append(ns)
            _run(["ip", "-n", ns, "link", "set", "lo", "up"])
        _run(["ip", "-n", self.switch, "link", "add", "br0", "type", "bridge"])
        _run(["ip", "-n", self.switch, "link", "set", "br0", "up"])
        ends = [(self.controller, "pc", self.controller_address, self.controller_link)]
        ends += [(ns, f"pw{k}", addr, link) for k, (ns, addr, link)
                 in enumerate(zip(self.workers, self.worker_addresses, self.worker_links))]
        for ns, port, address, link in ends:
            _run(["ip", "-n", ns, "link", "add", "e0", "type", "veth", "peer", "name", port, "netns", self.switch])
            _run(["ip", "-n", ns, "addr", "add", f"{address}/24", "dev", "e0"])
            _run(["ip", "-n", ns, "link", "set", "e0", "up"])
            _run(["ip", "-n", self.switch, "link", "set", port, "master", "br0", "up"])
            if link.uplink is not None:
                self._tbf(ns, "e0", link.uplink)
            if link.downlink is not None:
                self._tbf(self.switch, port, link.downlink)

    @staticmethod
    def _tbf(ns: str, dev: str, rate: float) -> None:
        """Shape ``dev``'s egress in ``ns`` to ``rate`` bytes per second."""
        _run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "tbf", "rate", f"{round(rate * 8)}bit",
              "burst", str(BURST), "limit", str(LIMIT)])

    def drops(self) -> int:
        """Packets the testbed's tbf qdiscs dropped so far (0 when TCP never lost a segment to them)."""
        total = 0
        devices = [(self.switch, "pc")] + [(self.switch, f"pw{k}") for k in range(len(self.workers))]
        devices += [(ns, "e0") for ns in (self.controller, *self.workers)]
        for ns, dev in devices:
            text = _run(["tc", "-n", ns, "-s", "qdisc", "show", "dev", dev])
            total += sum(int(m) for m in re.findall(r"dropped (\d+)", text))
        return total

    def popen(self, ns: str, argv: Sequence[str], **options: object) -> subprocess.Popen[bytes]:
        """Start ``argv`` in namespace ``ns`` (``ip netns exec`` execs it: the process is the
        command itself); stopped by :meth:`close` if still running."""
        proc: subprocess.Popen[bytes] = subprocess.Popen(["ip", "netns", "exec", ns, *argv], **options)  # type: ignore[call-overload]
        self.processes.append(proc)
        return proc

    def stop(self, proc: subprocess.Popen[bytes], grace: float = 3.0) -> None:
        """Terminate ``proc`` (then kill it after ``grace`` seconds) and reap it."""
        if proc.poll() is None:
            with suppress(ProcessLookupError):
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(grace)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    proc.kill()
                proc.wait()

    def close(self) -> None:
        """Stop the processes started here and delete the namespaces (their veths and qdiscs go
        with them).  Safe to call twice."""
        for proc in self.processes:
            self.stop(proc)
        self.processes.clear()
        for ns in reversed(self.made):
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self.made.clear()


# ---------------------------------------------------------------------------- latency relay
async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, delay: float) -> None:
    """Copy ``reader`` to ``writer``, each chunk ``delay`` seconds after it was read, in order."""
    loop = asyncio.get_running_loop()
    line: asyncio.Queue[tuple[float, bytes]] = asyncio.Queue()

    async def out() -> None:
        while True:
            due, chunk = await line.get()
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if not chunk:
                if writer.can_write_eof():
                    writer.write_eof()
                return
            writer.write(chunk)
            await writer.drain()

    sender = asyncio.create_task(out())
    try:
        while True:
            chunk = await reader.read(1 << 16)
            line.put_nowait((loop.time() + delay, chunk))
            if not chunk:
                break
        await sender
    finally:
        sender.cancel()


async def relay(listen: tuple[str, int], target: tuple[str, int], up: float, down: float,
                ready: asyncio.Event | None = None) -> None:
    """Serve ``listen`` forever: each connection is relayed to ``target``, what the client sends
    delayed by ``up`` seconds, what it receives by ``down`` seconds (module docstring)."""

    async def serve(client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection(*target)
        except OSError:
            client_w.close()
            return
        try:
            await asyncio.gather(_pipe(client_r, server_w, up), _pipe(server_r, client_w, down))
        except (ConnectionError, OSError):
            pass
        finally:
            for w in (client_w, server_w):
                w.close()

    server = await asyncio.start_server(serve, *listen)
    if ready is not None:
        ready.set()
    async with server:
        await server.serve_forever()


def _address(text: str) -> tuple[str, int]:
    host, _, port = text.rpartition(":")
    return host, int(port)


def main(argv: list[str] | None = None) -> int:
    """``python benchmarks/_netlab.py relay --listen H:P --to H:P --up S --down S``."""
    parser = argparse.ArgumentParser(prog="_netlab.py")
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("relay", help="a latency relay (module docstring)")
    r.add_argument("--listen", required=True)
    r.add_argument("--to", required=True)
    r.add_argument("--up", type=float, required=True, help="seconds added to what clients send")
    r.add_argument("--down", type=float, required=True, help="seconds added to what clients receive")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with suppress(KeyboardInterrupt):
        asyncio.run(relay(_address(args.listen), _address(args.to), args.up, args.down))
    return 0


if __name__ == "__main__":
    sys.exit(main())
