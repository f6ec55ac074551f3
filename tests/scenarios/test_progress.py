"""The stderr progress reporter: silent off a TTY, captured in tests, throttled, nestable."""

from __future__ import annotations

import io

import pytest

from mprr.errors import ConfigurationError
from scenarios.progress import Progress, null_progress


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class TtyStream(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_silent_when_stream_is_not_a_tty() -> None:
    stream = io.StringIO()
    progress = Progress(stream)
    assert progress.enabled is False
    with progress.task("runs", total=5) as bar:
        for _ in range(5):
            bar.advance()
    progress.message("hello")
    assert stream.getvalue() == ""


def test_enabled_on_a_tty_and_quiet_overrides() -> None:
    assert Progress(TtyStream()).enabled is True
    stream = TtyStream()
    quiet = Progress(stream, enabled=False)
    with quiet.task("runs", total=2) as bar:
        bar.advance(2)
    assert stream.getvalue() == ""


def test_draws_counter_percentage_and_ends_the_line() -> None:
    stream, clock = io.StringIO(), FakeClock()
    progress = Progress(stream, enabled=True, clock=clock)
    with progress.task("runs", total=4) as bar:
        clock.now = 1.0
        bar.advance()
        clock.now = 2.0
        bar.advance()
        last = stream.getvalue().split("\r")[-1]
        assert "runs [" in last and "2/4" in last and "50%" in last and "eta 0:02" in last
    out = stream.getvalue()
    assert out.endswith("\n")
    assert "4/4" not in out  # two steps were never advanced: the bar says so honestly
    assert "2/4" in out.split("\r")[-1]


def test_nested_tasks_share_one_line() -> None:
    stream, clock = io.StringIO(), FakeClock()
    progress = Progress(stream, enabled=True, clock=clock)
    with progress.task("runs", total=2) as runs:
        with progress.task("parties", total=10) as parties:
            parties.advance(10)
            parties.set_status("phase release")
            line = stream.getvalue().split("\r")[-1]
            assert line.startswith("runs 0/2")
            assert " | parties [" in line and "10/10" in line and "phase release" in line
        runs.advance()
    assert stream.getvalue().count("\n") == 1


def test_redraws_are_throttled() -> None:
    stream, clock = io.StringIO(), FakeClock()
    progress = Progress(stream, enabled=True, clock=clock, min_interval=0.1)
    with progress.task("parties", total=100_000) as bar:
        for _ in range(100_000):
            bar.advance()  # clock does not move: no redraw after the first
    draws = stream.getvalue().count("\r")
    assert draws <= 3, draws
    assert "100000/100000" in stream.getvalue()  # the final state is always drawn


def test_unknown_total_and_message() -> None:
    stream = io.StringIO()
    progress = Progress(stream, enabled=True, clock=FakeClock())
    with progress.task("rounds") as bar:
        bar.advance(3)
        progress.message("round 3 done")
    out = stream.getvalue()
    assert "round 3 done\n" in out
    assert "rounds 3" in out


def test_bad_total_is_rejected() -> None:
    with pytest.raises(ConfigurationError, match=r"progress total must be an integer >= 0, got -1"):
        with null_progress().task("x", total=-1):
            pass
