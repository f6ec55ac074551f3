"""Tests of ``parties.worker``: a hand-started worker's attempts to reach its controller.

The worker's retries run on the virtual clock (``tests/virtual_clock.py``): no second passes."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from mprr.errors import RuntimeFailure
from parties import worker
from parties.worker import RETRY_FIRST, RETRY_LAST, run_worker
from tests.virtual_clock import run_virtual


def test_a_worker_retries_soon_then_backs_off_until_its_wait_ends(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[float] = []

    async def refused(*args: Any, **kwargs: Any) -> Any:
        attempts.append(asyncio.get_running_loop().time())
        raise ConnectionRefusedError("refused")

    monkeypatch.setattr(worker.asyncio, "open_connection", refused)

    async def main() -> float:
        start = asyncio.get_running_loop().time()
        with pytest.raises(RuntimeFailure, match=r"worker 3: cannot reach the controller at 127\.0\.0\.1:9"):
            await run_worker("127.0.0.1:9", range(0, 4), worker=3, tls=False, wait=3.0)
        return start

    start = run_virtual(main())
    gaps = [b - a for a, b in zip([start, *attempts], attempts, strict=False)]
    assert gaps[0] == pytest.approx(0.0, abs=1e-9)  # the first attempt at once
    assert gaps[1] == pytest.approx(RETRY_FIRST, rel=1e-6)  # the next one soon
    assert all(b == pytest.approx(min(2 * a, RETRY_LAST), rel=1e-6) for a, b in zip(gaps[1:-2], gaps[2:-1], strict=False))
    assert max(gaps) <= RETRY_LAST + 1e-9
    assert attempts[-1] - start == pytest.approx(3.0, abs=1e-6)  # the last attempt at the wait's end
    # at 0, 0.02, 0.06, 0.14, 0.30, 0.62, then every 0.5 s to 2.62, and the last at 3.0 s
    assert len(attempts) == 11
