"""Async tests of the actor simulator run on a virtual clock (``tests/virtual_clock.py``):
timeouts and delays take no real time and do not depend on the machine's speed."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping

import pytest

from tests.virtual_clock import VirtualClockLoop


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    """Every async test under ``tests/parties`` gets a :class:`VirtualClockLoop`."""
    return {"virtual_clock": VirtualClockLoop}
