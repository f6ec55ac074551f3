"""Helpers for the secure-sum engine tests: a network that records the controller's view,
a one-call runner (on the virtual clock of ``tests/virtual_clock.py``), and the check that the
controller never saw a raw input vector."""

from __future__ import annotations

from typing import Any

import networkx as nx
import numpy as np

from parties.wire.codec import decode
from parties.faults import FaultPlan
from parties.router import Router
from parties.transport import CONTROLLER, Frame
from parties.secure.engine import SecureSumEngine
from parties.secure.run import SecureSumResult, run_secure_sum
from tests.virtual_clock import run_virtual


class RecordingNetwork(Router):
    """In-memory network that keeps a copy of every frame delivered to the controller."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.controller_view: list[Frame] = []

    def _deliver(self, frame: Frame, position: int | None = None) -> None:
        if frame.dst == CONTROLLER:
            self.controller_view.append(frame)
        super()._deliver(frame, position)


def complete(n: int) -> nx.Graph:
    return nx.complete_graph(n)


def run(engine: SecureSumEngine, vectors: np.ndarray, *, topology: nx.Graph | None = None,
        faults: FaultPlan | None = None, timeout: float = 20.0) -> tuple[SecureSumResult, RecordingNetwork]:
    net = RecordingNetwork(len(vectors), topology=topology, faults=faults)
    result = run_virtual(run_secure_sum(engine, net, vectors, timeout=timeout))
    return result, net


def assert_controller_saw_no_input(net: RecordingNetwork, vectors: np.ndarray,
                                   allowed_kinds: set[str]) -> None:
    """No message delivered to the controller carries a party's raw vector, in any field."""
    raw = [np.asarray(v, dtype=np.int64) for v in vectors]
    raw_bytes = [np.asarray(v, dtype=dt).tobytes() for v in vectors
                 for dt in (np.uint8, np.uint16, np.uint32, np.uint64)]
    assert net.controller_view, "the controller received nothing"
    for frame in net.controller_view:
        msg = decode(frame.payload)
        assert msg.NAME in allowed_kinds, f"controller received a {msg.NAME}"
        for name, _ in msg.FIELDS:
            value = getattr(msg, name)
            items = value if isinstance(value, tuple) else (value,)
            for item in items:
                if isinstance(item, np.ndarray):
                    assert not any(np.array_equal(item.astype(np.int64), r) for r in raw), (
                        f"{msg.NAME}.{name} from party {frame.src} equals a raw input vector")
                if isinstance(item, bytes) and len(item) >= 4:
                    assert not any(rb in item for rb in raw_bytes if len(rb) >= 8), (
                        f"{msg.NAME}.{name} from party {frame.src} contains a raw input vector")
