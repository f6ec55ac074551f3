"""The virtual clock of the async tests: :mod:`parties.netsim.clock`, re-exported.

Async tests under ``tests/parties`` run on it (the ``pytest_asyncio_loop_factories`` hook in
``tests/parties/conftest.py``); sync code calls ``run_virtual(coro)`` instead of
``asyncio.run(coro)``.  (``selectors`` is the module the loop wraps, patched by the clock's tests.)
"""

from __future__ import annotations

import selectors

from parties.netsim.clock import VirtualClockLoop, run_virtual

__all__ = ["VirtualClockLoop", "run_virtual", "selectors"]
