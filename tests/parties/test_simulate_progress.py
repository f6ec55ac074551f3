"""parties.simulate announces an expensive secure sum with its closed-form cost and reports the
run's progress (on the virtual clock: the reports come at exact multiples of the interval)."""

from __future__ import annotations

import re

import pytest

from mprr.errors import ConfigurationError
from parties.simulate import simulate_async


async def test_expensive_secure_sum_is_announced_with_its_closed_form_cost_and_progress_reported(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On the virtual clock, with every message delayed up to 0.1 s, the run lasts virtual time:
    the heartbeat's reports come at exact multiples of its interval, whatever the machine's speed."""
    import logging

    import numpy as np

    import parties.simulate as simulate_module
    from mprr.synthetic import planted_clusters
    from parties.faults import FaultPlan

    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    seen: list[tuple[float, int, int]] = []
    monkeypatch.setattr(simulate_module, "EXPENSIVE_BYTES", 1_000)
    with caplog.at_level(logging.INFO, logger="parties.simulate"):
        await simulate_async(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2",
                             secure_sum="paper", faults=FaultPlan(delay=1.0, max_delay=0.1),
                             progress=lambda *a: seen.append(a), progress_interval=0.025)
    warning = next(r for r in caplog.records if r.levelno == logging.WARNING)
    # paper engine, 16 pair cells (2·3 + 2·2 + 3·2): (2n − 1) messages per party; a short
    # headline, then the parties, cells and closed form wrapped for a terminal, then the advice
    text = warning.getMessage()
    headline, *details = text.splitlines()
    # (counted until the traffic crossed the threshold: at least that much)
    assert re.match(r"expensive configuration: the paper secure sum sends at least ([\d,]+) messages, ", headline)
    assert "or 1,000,000 messages or 1,000 bytes counted) counted (paper, n = 24" in " ".join(
        line.strip() for line in text.splitlines())
    assert "(24 parties, secure sum 'dependence' of 16 cells; closed form: " in " ".join(line.strip() for line in details)
    assert details[-1] == "  a sparse engine (graph, masked-sparse) or fewer parties costs less"
    assert len(details) >= 2 and all(len(line) <= simulate_module.WARNING_WIDTH for line in details)
    assert len(seen) >= 2
    assert [round(t, 6) for t, _, _ in seen] == [round(0.025 * (k + 1), 6) for k in range(len(seen))]
    assert all(0 < m1 <= m2 and 0 < b1 <= b2 for (_, m1, b1), (_, m2, b2) in zip(seen, seen[1:]))
    assert any("simulation running" in r.getMessage() for r in caplog.records)
    caplog.clear()
    await simulate_async(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2",
                         secure_sum="masked-sparse")
    # already sparse: the advice does not suggest the engine in use
    sparse = next(r for r in caplog.records if r.levelno == logging.WARNING).getMessage()
    assert sparse.startswith("expensive configuration: the masked secure sum sends at least 72 messages, ")
    # (its lower bound already crosses the threshold: no program counted)
    assert "closed form: at least (lower bound: 24 PublicKeys, 24 KeyDirectory and 24 MaskedInput" in " ".join(
        line.strip() for line in sparse.splitlines())
    assert sparse.splitlines()[-1] == "  fewer parties or fewer cells cost less"
    caplog.clear()
    monkeypatch.undo()
    await simulate_async(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2", secure_sum="paper")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # below the threshold: silent
    with pytest.raises(ConfigurationError, match="progress_interval must be a number > 0 or math.inf, got 0"):
        await simulate_async(data, "RR-Independent", seed=5, p=0.7, progress_interval=0)
