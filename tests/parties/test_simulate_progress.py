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
    assert sparse.startswith("expensive configuration: the masked secure sum sends at least 216 messages, ")
    # (its lower bound already crosses the threshold: no program counted)
    assert "closed form: at least (lower bound: 120 party and 96 controller messages, every party at the smallest" in (
        " ".join(line.strip() for line in sparse.splitlines()))
    assert sparse.splitlines()[-1] == "  fewer parties or fewer cells cost less"
    caplog.clear()
    monkeypatch.undo()
    await simulate_async(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2", secure_sum="paper")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]  # below the threshold: silent
    with pytest.raises(ConfigurationError, match="progress_interval must be a number > 0 or math.inf, got 0"):
        await simulate_async(data, "RR-Independent", seed=5, p=0.7, progress_interval=0)


@pytest.mark.parametrize(("bytes_threshold", "counts", "warns"),  # (bounds 144,096 and 184,512 B; count 168,984 B)
                         [(184_512, 0, False), (175_000, 1, False), (150_000, 1, True), (144_000, 0, True)])
async def test_a_masked_sum_below_its_upper_bound_is_not_counted(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch, bytes_threshold: int, counts: int,
    warns: bool,
) -> None:
    """The warning counts a masked sum only where its bounds straddle the threshold: below the
    upper bound nothing runs (the count cost a sixth of a 1,000-party run); between the bounds
    the counting driver decides."""
    import logging

    import numpy as np

    import parties.simulate as simulate_module
    from mprr.synthetic import planted_clusters

    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    calls: list[int] = []
    counted_cost = simulate_module.counted_cost

    def counting(*args: object, **kwargs: object) -> object:
        calls.append(1)
        return counted_cost(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(simulate_module, "counted_cost", counting)
    monkeypatch.setattr(simulate_module, "EXPENSIVE_BYTES", bytes_threshold)
    with caplog.at_level(logging.WARNING, logger="parties.simulate"):
        await simulate_async(data, "RR-Clusters", seed=5, p=0.7, Tv=6, Td=0.1, dependence="4.2",
                             secure_sum="masked-sparse")
    assert len(calls) == counts
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert bool(warned) is warns
    if warns:  # (the count stopped at the threshold, or the lower bound crossed it: "at least")
        assert warned[0].startswith("expensive configuration: the masked secure sum sends at least ")
        assert ("counted (masked, n = 24" if counts else "(lower bound: 120 party") in " ".join(
            line.strip() for line in warned[0].splitlines())
