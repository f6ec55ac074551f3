"""benchmarks/vector_state.py: every operation timed in the three states, settled states through the engine's own call."""

from __future__ import annotations

import sys

import pytest

from tests.benchmark_modules import benchmark_module


def test_the_benchmark_times_each_operation_clean_after_an_aead_call_and_settled(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    with benchmark_module("vector_state") as module:
        from parties.secure import crypto

        assert module.settle_vector_state is crypto.settle_vector_state  # (the engine's own, not a copy)
        monkeypatch.setattr(sys, "argv", ["vector_state.py", "--repeat", "1"])
        module.main()
    out = capsys.readouterr().out
    for name in module.OPERATIONS:
        row = next(line for line in out.splitlines() if line.strip().startswith(name))
        values = [float(v) for v in row[len("  ") + 32:].split()[:3]]
        assert len(values) == 3 and all(v > 0 for v in values)
        assert row.rstrip().endswith(("met", "NOT met"))
    assert "settle_vector_state:" in out and "ns per call" in out
