"""benchmarks/masked_scale.py: the masked sum's ratio to its floor, size by size."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

from mprr.synthetic import planted_clusters
from tests.benchmark_modules import benchmark_module


@pytest.fixture()
def masked_scale() -> Iterator[ModuleType]:
    with benchmark_module("masked_scale") as module:
        yield module


def test_each_size_runs_the_real_sum_and_reads_it_against_the_floor(
        masked_scale: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        tmp_path: Path) -> None:
    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    monkeypatch.setattr("scenarios.datasets.load_adult", lambda path: data)
    # a floor of 2 items, 3 and 1 a party: 3 * 2 µs + 1 * 4 µs = 10 µs (means 3 and 5 µs: 14 µs)
    monkeypatch.setattr(masked_scale, "items", lambda repeat: [("a", 3, 2e-6, None, 3e-6), ("b", 1, 4e-6, None, 5e-6)])
    floor, mean = masked_scale.floor_per_party(1)
    assert (floor, mean) == pytest.approx((10e-6, 14e-6))
    sizes = masked_scale.measure(Path("adult.data"), (24, 16), 2, 1)
    assert [size.n for size in sizes] == [16, 24]  # (in increasing order)
    assert [size.floor for size in sizes] == pytest.approx([10e-6, 10e-6])  # (measured before each size)
    for size in sizes:
        assert len(size.runs) == 2
        assert all(run.runtime == "memory" and run.as_is and run.n == size.n for run in size.runs)
        assert size.per_party() == pytest.approx([run.sum_cpu / size.n for run in size.runs])
        assert size.ratios() == pytest.approx([run.sum_cpu / size.n / 10e-6 for run in size.runs])
        assert all(run.sum_cpu > 0 and run.sum_faults is not None for run in size.runs)
    capsys.readouterr()
    masked_scale.report(sizes)
    out = capsys.readouterr().out
    assert "against the floor measured before each size's runs; goal <= 1.5 x" in out
    row = next(line for line in out.splitlines() if line.startswith("      16 "))
    assert row.startswith("      16     0.010 ") and " / ".join(f"{r:.2f}" for r in sizes[0].ratios()) in row
    assert "goal met (mean of the runs) at: no size" in out  # (a real sum is far above a floor of 10 µs)
    png = masked_scale.draw(sizes, tmp_path / "scale.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_groups_say_where_each_sizes_cpu_goes_and_how_each_part_grows(
        masked_scale: ModuleType, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    monkeypatch.setattr("scenarios.datasets.load_adult", lambda path: data)
    monkeypatch.setattr(masked_scale, "items", lambda repeat: [("a", 1, 1e-5, None, 1e-5)])
    sizes = masked_scale.measure(Path("adult.data"), (16, 24), 1, 1, groups=True)
    for size in sizes:
        timed = size.timed
        assert timed is not None and not timed.as_is and timed.n == size.n and timed not in size.runs
        assert all(run.as_is for run in size.runs)  # (the ratio reads the runs as they are only)
        parts = masked_scale.breakdown(timed)
        total = parts.pop(masked_scale.TOTAL)
        assert total == pytest.approx(timed.sum_cpu / size.n)
        assert sum(parts.values()) == pytest.approx(total)  # (every part of the sum once, the rest its remainder)
        assert parts["X25519 static agreements"] > 0 and parts[masked_scale.STEPS] > 0
        assert not any(name.startswith("PKI") for name in parts)  # (set-up, before the sum)
    capsys.readouterr()
    masked_scale.report(sizes)
    out = capsys.readouterr().out
    assert "its growth from 16 to 24 parties:" in out
    row = next(line for line in out.splitlines() if line.lstrip().startswith("X25519 static agreements"))
    first, last = (masked_scale.breakdown(size.timed)["X25519 static agreements"] * 1e6 for size in sizes
                   if size.timed is not None)
    assert row.split()[-3:] == [f"{first:.1f}", f"{last:.1f}", f"{last - first:+.1f}"]
    untimed = sizes[0].runs[0]
    with pytest.raises(ValueError, match="a run of 16 parties without the timers of _in_run: --groups runs measure"):
        masked_scale.breakdown(untimed)


def test_a_size_below_the_ratio_counts_as_met(masked_scale: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    Run = masked_scale.Run
    below = masked_scale.Size(100, (Run("memory", 100, 1.0, 1.0, 1.0, 0.0, 1.0, None, 1.49e-3),), 1e-5)  # 1.49 x
    above = masked_scale.Size(200, (Run("memory", 200, 1.0, 1.0, 1.0, 0.0, 1.0, None, 3.2e-3),), 1e-5)  # 1.60 x
    masked_scale.report([below, above])
    assert "goal met (mean of the runs) at: 100\n" in capsys.readouterr().out
    unmeasured = masked_scale.Size(100, (Run("tcp", 100, 1.0, 1.0, 1.0, 0.0, 1.0),), 1e-5)
    with pytest.raises(ValueError, match="a run of 100 parties has no secure-sum CPU: runs on memory measure it"):
        unmeasured.ratios()


def test_a_size_beyond_the_data_is_refused(masked_scale: ModuleType, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = planted_clusters(24, rng=np.random.default_rng(2), sizes=(2, 3, 2), clusters=((0, 1),)).dataset
    monkeypatch.setattr("scenarios.datasets.load_adult", lambda path: data)
    monkeypatch.setattr(masked_scale, "items", lambda repeat: [("a", 1, 1e-5, None, 1e-5)])
    adult = tmp_path / "adult.data"
    adult.write_text("")
    with pytest.raises(SystemExit):
        masked_scale.main([str(adult), "--sizes", "16,40"])
    assert f"--sizes asks for 40 parties; {adult} holds 24" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "message"), [
    (["--sizes", "2000,x"], r"--sizes must be comma-separated integers, got '2000,x'"),
    (["--sizes", "9,2000"], r"--sizes must be distinct numbers of parties above 9"),
    (["--sizes", "2000,2000"], r"--sizes must be distinct numbers of parties above 9"),
    (["--runs", "0"], r"--runs and --repeat must be at least 1, got 0 and 15"),
    (["--figure", "out.svg"], r"--figure needs a path ending in \.png, got out\.svg"),
    (["/nowhere/adult.data"], r"UCI Adult not found at /nowhere/adult\.data"),
])
def test_bad_arguments_are_refused_naming_them(masked_scale: ModuleType, capsys: pytest.CaptureFixture[str],
                                               argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit):
        masked_scale.main(argv)
    assert re.search(message, capsys.readouterr().err)
