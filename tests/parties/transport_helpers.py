"""Test utilities for the messaging layer: a seeded chaotic transport and small actors.

:class:`ChaosTransport` is a second implementation of :class:`parties.transport.Transport`
(it proves protocol code does not depend on the in-memory network): it holds every frame sent
while the event loop runs, then delivers the batch in a seeded random order, drops each frame
with probability ``drop`` and delays some by a few milliseconds.  ``log`` records the
``(src, dst, kind)`` of every delivery, in delivery order, so tests can check reproducibility.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Annotated

import numpy as np

from parties.wire.codec import ArraySpec, Message, message
from parties.wire.messages import RandomizedValues
from parties.transport import CONTROLLER, Endpoint
from parties.transport import Frame, Transport

__all__ = ["ChaosTransport", "Probe", "answer_requests", "identity_matrix", "once_before"]


@message(kind=60300)
class Probe(Message):
    """Test-only controller → party message: an id to echo, attribute indices and a matrix."""

    request_id: int
    attributes: tuple[int, ...]
    matrix: Annotated[np.ndarray, ArraySpec(("float64",))]


class ChaosTransport(Transport):
    """Seeded shuffling / dropping / delaying transport for tests.

    Parameters
    ----------
    n
        Number of parties.
    seed
        Seed of the chaos decisions.
    drop
        Probability that a frame is lost.
    delay
        Probability that a frame is delivered after a real delay of up to ``max_delay`` s.
    max_delay
        Largest delay in seconds.
    """

    def __init__(self, n: int, *, seed: int, drop: float = 0.0, delay: float = 0.0,
                 max_delay: float = 0.003, **kwargs: object) -> None:
        super().__init__(n, **kwargs)  # type: ignore[arg-type]
        self.rng = np.random.default_rng(seed)
        self.drop, self.delay, self.max_delay = drop, delay, max_delay
        self.log: list[tuple[int, int, int]] = []
        self.lost: list[tuple[int, int, int]] = []
        self._batch: list[Frame] = []
        self._scheduled = False

    def _transmit(self, frame: Frame) -> None:
        self._batch.append(frame)
        if not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        batch, self._batch, self._scheduled = self._batch, [], False
        loop = asyncio.get_running_loop()
        for i in self.rng.permutation(len(batch)):
            frame = batch[i]
            u_drop, u_delay, u_len = self.rng.random(3)
            if u_drop < self.drop:
                self.lost.append((frame.src, frame.dst, frame.kind))
            elif u_delay < self.delay:
                loop.call_later(u_len * self.max_delay, self._arrive, frame)
            else:
                self._arrive(frame)

    def _arrive(self, frame: Frame) -> None:
        self.log.append((frame.src, frame.dst, frame.kind))
        self._deliver(frame)


def identity_matrix(r: int) -> np.ndarray:
    """A valid (trivial) r×r randomization matrix for requests in tests."""
    return np.eye(r)


async def answer_requests(ep: Endpoint, count: int, *, timeout: float = 1.0) -> None:
    """A minimal party: answer ``count`` Probes with its own id (mod 4) as the released code."""
    for _ in range(count):
        env = await ep.recv(kinds=Probe, timeout=timeout)
        reply = RandomizedValues(env.message.request_id, [ep.actor % 4])
        await ep.send(CONTROLLER, reply, phase=env.phase)


def once_before(network: Transport, kind: int, act: Callable[[], object]) -> None:
    """Call ``act()`` once, just before ``network`` delivers its first frame of ``kind`` (e.g.
    kill a worker as the controller starts a secure sum)."""
    deliver, done = network._deliver, []

    def hooked(frame: Frame, position: int | None = None) -> None:
        if frame.kind == kind and not done:
            done.append(True)
            act()
        deliver(frame, position)

    network._deliver = hooked  # type: ignore[method-assign]
    broadcast = network.broadcast

    def hooked_broadcast(src: int, dsts: Sequence[int], msg: Message, phase: str, payload: bytes) -> None:
        if msg.KIND == kind and not done:  # (a broadcast reaches a shard link without _deliver)
            done.append(True)
            act()
        broadcast(src, dsts, msg, phase, payload)

    network.broadcast = hooked_broadcast  # type: ignore[method-assign]
