"""An asyncio event loop on a virtual clock: time jumps ahead whenever every task is waiting.

Modelled on Trio's ``MockClock(autojump_threshold=0)``.  :class:`VirtualClockLoop` is a
selector event loop whose :meth:`~VirtualClockLoop.time` is a virtual clock starting at 0.
When the loop has nothing ready to run and would block until its next timer (an
``asyncio.sleep``, an ``asyncio.timeout`` deadline, a ``call_later``), it first polls its file
descriptors without blocking and, if nothing is ready, moves the clock to that timer at once.
So a 30 s round timeout takes microseconds of real time, and what a run does depends only on
the order of events, never on the machine's speed or load.

The loop still blocks for real when there is no timer at all.  Work done outside the loop
(threads, processes) does not hold the clock back, and CPU spent on the loop takes no virtual
time: the virtual-time runtime (:mod:`parties.netsim.runtime`) charges modelled compute
instead, and the tests run on this loop (``tests/virtual_clock.py`` re-exports it).

Use: ``run_virtual(coro)`` instead of ``asyncio.run(coro)``, e.g.
``run_virtual(simulate_async(data, "RR-Clusters", seed=1, runtime=VirtualRuntime(model=model), ...))``.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = ["VirtualClockLoop", "run_virtual"]


class _AutojumpSelector(selectors.BaseSelector):
    """Wraps the loop's selector: a blocking ``select(timeout)`` with nothing ready advances the
    virtual clock by ``timeout`` instead of sleeping."""

    def __init__(self, inner: selectors.BaseSelector, loop: VirtualClockLoop) -> None:
        self._inner = inner
        self._loop = loop

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None:  # no timer: only I/O can wake the loop, so wait for it for real
            return self._inner.select(None)
        events = self._inner.select(0)
        if events or timeout <= 0:
            return events
        self._loop.advance(timeout)  # every task waits: jump to the next timer
        return []

    def close(self) -> None:
        self._inner.close()

    def get_map(self) -> Mapping[Any, selectors.SelectorKey]:
        return self._inner.get_map()


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """Selector event loop on a virtual clock that autojumps (see the module docstring)."""

    def __init__(self) -> None:
        self._virtual_now = 0.0
        super().__init__(_AutojumpSelector(selectors.DefaultSelector(), self))

    def time(self) -> float:
        """Virtual seconds since the loop was created."""
        return self._virtual_now

    def advance(self, seconds: float) -> None:
        """Move the virtual clock ``seconds`` (>= 0) ahead."""
        if not seconds >= 0:
            raise ValueError(f"seconds must be >= 0, got {seconds!r}")
        self._virtual_now += seconds


def run_virtual(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(coro)`` on a fresh :class:`VirtualClockLoop`."""
    with asyncio.Runner(loop_factory=VirtualClockLoop) as runner:
        return runner.run(coro)
