"""The virtual clock of the async tests: jumps to the next timer when every task waits."""

from __future__ import annotations

import asyncio
import selectors

import pytest

from tests import virtual_clock
from tests.virtual_clock import VirtualClockLoop, run_virtual


def test_sleeps_and_timeouts_take_virtual_time_only(monkeypatch: pytest.MonkeyPatch) -> None:
    waits: list[float | None] = []

    class Recording(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
        """The real selector under the virtual clock: records how long each select may block."""

        def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
            waits.append(timeout)
            return super().select(timeout)

    monkeypatch.setattr(virtual_clock.selectors, "DefaultSelector", Recording)

    async def main() -> tuple[float, list[str]]:
        loop = asyncio.get_running_loop()
        order: list[str] = []

        async def sleeper(name: str, seconds: float) -> None:
            await asyncio.sleep(seconds)
            order.append(f"{name}@{loop.time():g}")

        async with asyncio.TaskGroup() as tg:
            tg.create_task(sleeper("late", 300.0))
            tg.create_task(sleeper("early", 0.25))
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(30.0):
                await asyncio.Event().wait()
        return loop.time(), order

    now, order = run_virtual(main())
    assert now == pytest.approx(330.0)
    assert order == ["early@0.25", "late@300"]
    assert waits and all(w == 0 for w in waits)  # 330 virtual seconds, the loop only ever polled


def test_ready_work_runs_before_the_clock_moves() -> None:
    async def main() -> float:
        loop = asyncio.get_running_loop()
        for _ in range(1000):  # busy but never waiting on a timer: the clock stays put
            await asyncio.sleep(0)
        return loop.time()

    assert run_virtual(main()) == 0.0


def test_advance_checks_its_argument() -> None:
    loop = VirtualClockLoop()
    try:
        loop.advance(1.5)
        assert loop.time() == 1.5
        with pytest.raises(ValueError, match="seconds must be >= 0, got -1"):
            loop.advance(-1)
    finally:
        loop.close()
