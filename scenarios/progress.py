"""A small, dependency-free progress reporter writing to stderr.

Usage::

    with progress.task("runs", total=runs) as bar:
        for _ in range(runs):
            ...
            bar.advance()

Nested tasks are shown on one line (``runs 3/10 | parties 812/3000 27% eta 0:04``).  The
reporter is silent when its stream is not a TTY (pipes, CI logs) or with ``--quiet``; tests
pass ``enabled=True`` and a ``StringIO`` to capture the output.  Redraws are throttled, so
calling ``advance()`` a million times costs little.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

from mprr.domain import check_int

__all__ = ["Bar", "Progress", "null_progress"]

_WIDTH = 24


def _clock_text(seconds: float) -> str:
    seconds = max(0, int(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}" if hours else f"{minutes}:{secs:02d}"


class Bar:
    """One task of a :class:`Progress` reporter; obtained from :meth:`Progress.task`."""

    def __init__(self, owner: Progress, name: str, total: int | None) -> None:
        self._owner = owner
        self.name = name
        self.total = total
        self.done = 0
        self.status = ""
        self.started = owner.clock()

    def advance(self, steps: int = 1) -> None:
        """Mark ``steps`` more units of work as done."""
        self.done += steps
        self._owner.refresh()

    def set_status(self, text: str) -> None:
        """Show a short status text (e.g. the current phase) after the counter."""
        self.status = text
        self._owner.refresh(force=True)

    def render(self, now: float, *, with_bar: bool) -> str:
        """Text of this task, e.g. ``runs [######......] 12/40 30% 0:03 eta 0:07``."""
        parts = [self.name]
        if self.total:
            frac = min(1.0, self.done / self.total)
            if with_bar:
                filled = int(round(frac * _WIDTH))
                parts.append("[" + "#" * filled + "." * (_WIDTH - filled) + "]")
            parts.append(f"{self.done}/{self.total} {frac:4.0%}")
            elapsed = now - self.started
            if with_bar:
                parts.append(_clock_text(elapsed))
                if 0 < self.done < self.total:
                    parts.append("eta " + _clock_text(elapsed * (self.total - self.done) / self.done))
        else:
            parts.append(str(self.done))
        if self.status:
            parts.append(self.status)
        return " ".join(parts)


class Progress:
    """Progress reporter.

    Parameters
    ----------
    stream
        Where to write (default ``sys.stderr``).
    enabled
        ``None`` (default): enabled only when ``stream`` is a TTY.  ``False`` (``--quiet``):
        silent.  ``True``: always write (tests).
    min_interval
        Minimum number of seconds between two redraws (the last state is always drawn when a
        task ends).
    clock
        Monotonic clock, injectable for tests.
    """

    def __init__(
        self,
        stream: TextIO | None = None,
        *,
        enabled: bool | None = None,
        min_interval: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stream = sys.stderr if stream is None else stream
        if enabled is None:
            isatty = getattr(self.stream, "isatty", None)
            enabled = bool(isatty and isatty())
        self.enabled = enabled
        self.min_interval = float(min_interval)
        self.clock = clock
        self._stack: list[Bar] = []
        self._last_draw = float("-inf")
        self._last_width = 0

    @contextmanager
    def task(self, name: str, total: int | None = None) -> Iterator[Bar]:
        """Context manager yielding a :class:`Bar` for ``total`` units of work (None: unknown)."""
        bar = Bar(self, name, None if total is None else check_int("progress total", total, 0))
        self._stack.append(bar)
        self.refresh(force=True)
        try:
            yield bar
        finally:
            self.refresh(force=True)
            self._stack.remove(bar)
            if not self._stack:
                self._finish_line()
            else:
                self.refresh(force=True)

    def refresh(self, *, force: bool = False) -> None:
        """Redraw the status line (throttled unless ``force``)."""
        if not self.enabled or not self._stack:
            return
        now = self.clock()
        if not force and now - self._last_draw < self.min_interval:
            return
        self._last_draw = now
        innermost = len(self._stack) - 1
        line = " | ".join(b.render(now, with_bar=(i == innermost)) for i, b in enumerate(self._stack))
        pad = " " * max(0, self._last_width - len(line))
        self.stream.write("\r" + line + pad)
        self.stream.flush()
        self._last_width = len(line)

    def _finish_line(self) -> None:
        if self.enabled and self._last_width:
            self.stream.write("\n")
            self.stream.flush()
        self._last_width = 0
        self._last_draw = float("-inf")

    def message(self, text: str) -> None:
        """Write one line above the status line (silent when disabled)."""
        if not self.enabled:
            return
        if self._last_width:
            self.stream.write("\r" + " " * self._last_width + "\r")
        self.stream.write(text + "\n")
        self.stream.flush()
        self._last_width = 0
        self.refresh(force=True)


def null_progress() -> Progress:
    """A reporter that never writes (for library use and quiet runs)."""
    return Progress(enabled=False)
