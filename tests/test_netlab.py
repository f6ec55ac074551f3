"""benchmarks/_netlab.py: a transfer across a tbf-shaped veth pair and the latency relay takes
size on the wire / rate + the relay's two delays.

Builds network namespaces (root only): marked ``process`` like the other tests that start
processes, skipped with the reason when ``ip netns`` or ``tbf`` is not available here.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

pytestmark = pytest.mark.process

ROOT = Path(__file__).resolve().parents[1]


def _netlab() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_netlab", ROOT / "benchmarks" / "_netlab.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_netlab"] = module
    spec.loader.exec_module(module)
    return module


netlab = _netlab()
UNAVAILABLE = netlab.netns_unavailable()

RATE = 1_000_000.0  # bytes/s (8 Mbit/s), the worker's uplink
SIZE = 1_000_000  # payload bytes sent by the worker
UP, DOWN = 0.040, 0.060  # relay delays (s)
MSS, HEADERS = 1_448, 14 + 20 + 20 + 12  # Ethernet + IPv4 + TCP + timestamps, per segment

RECEIVER = """
import socket, sys
s = socket.create_server(("127.0.0.1", 47000)); print("ready", flush=True)
c, _ = s.accept(); left = int(sys.argv[1])
while left > 0:
    left -= len(c.recv(1 << 16))
c.sendall(b"k"); c.close()
"""
SENDER = """
import socket, sys, time
c = socket.create_connection((sys.argv[1], 47001)); time.sleep(0.3)
t = time.perf_counter(); c.sendall(bytes(int(sys.argv[2]))); c.recv(1)
print(time.perf_counter() - t)
"""


@pytest.mark.skipif(UNAVAILABLE is not None, reason=f"shaped testbed unavailable: {UNAVAILABLE}")
def test_shaped_transfer_takes_wire_size_over_rate_plus_the_relay_delays() -> None:
    with netlab.Testbed(netlab.Link(None, None), [netlab.Link(RATE, None)], tag=f"mprrt{os.getpid() % 1000}") as bed:
        receiver = bed.popen(bed.controller, [sys.executable, "-c", RECEIVER, str(SIZE)], stdout=subprocess.PIPE)
        assert receiver.stdout is not None and receiver.stdout.readline().strip() == b"ready"
        bed.popen(bed.controller, [sys.executable, str(ROOT / "benchmarks" / "_netlab.py"), "relay", "--listen",
                                   f"{bed.controller_address}:47001", "--to", "127.0.0.1:47000",
                                   "--up", str(UP), "--down", str(DOWN)])
        sender = None
        for _ in range(50):  # until the relay listens
            sender = bed.popen(bed.workers[0], [sys.executable, "-c", SENDER, bed.controller_address, str(SIZE)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            out, _ = sender.communicate(timeout=30)
            if sender.returncode == 0:
                break
            subprocess.run(["sleep", "0.1"])
        assert sender is not None and sender.returncode == 0
        measured = float(out)
        assert bed.drops() == 0
    segments = -(-SIZE // MSS)
    expected = (SIZE + segments * HEADERS) / RATE + UP + DOWN
    # tolerance: the bucket lets BURST bytes through at line rate (3 ms here) and four processes on a
    # loaded machine wait for a core (tens of ms); unshaped, the transfer would take ~UP + DOWN = 0.1 s
    assert measured == pytest.approx(expected, rel=0.08), (measured, expected)
