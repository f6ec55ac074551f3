"""The figures of ``communication_cost`` (:mod:`scenarios.communication`): measured costs as markers
beside their closed forms as dashed lines, on log-log axes (:func:`loglog`).

Every series (a secure-sum engine, or an actor of an RR phase) keeps its colour (its engine's,
:attr:`parties.secure.registry.EngineEntry.colour`) and its own hollow marker, set a little to the
side of its true x so that equal values stay visible side by side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from matplotlib.figure import Figure as MplFigure
from matplotlib.lines import Line2D
from matplotlib.ticker import NullFormatter, NullLocator

from parties.secure.registry import ENGINES
from scenarios.plots import CustomPlot, FigureSpec, log_ticks, overlaps, tick_labels

__all__ = ["loglog"]

_MARKERS = ("o", "s", "^", "D", "v", "h", "<", ">", "p")
_DODGE = 0.022
"""Distance between the measured markers of neighbouring series in :func:`loglog`, as a fraction
of the panel's x span in decades (about one marker width)."""


def _colour(series: str, index: int) -> str:
    """A series' colour: its engine's (:attr:`~parties.secure.registry.EngineEntry.colour`), else
    the ``index``-th of the colour cycle."""
    entry = ENGINES.lookup(series) if ENGINES.accepts(series) else None
    return entry.colour if entry is not None and entry.colour is not None else f"C{index}"


def _closed_form_legend(ax: Any, **kwargs: Any) -> None:
    """Legend with one entry per series plus the key "dashed = closed form"."""
    handles, labels = ax.get_legend_handles_labels()
    handles.append(Line2D([], [], linestyle="--", color="0.3", linewidth=1))
    labels.append("dashed = closed form")
    ax.legend(handles, labels, **kwargs)


def _log_axes(ax: Any, xs: Sequence[float]) -> None:
    """Log-log axes: the measured x values as labelled ticks, 1-2-5 (or decade) ticks on y."""
    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = sorted(set(xs))
    if ticks:
        ax.set_xticks(ticks, labels=tick_labels(ticks))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.xaxis.set_minor_locator(NullLocator())
    log_ticks(ax, "y")


def loglog(filename: str, title: str, panels: Sequence[tuple[str, str, str]],
            series: Mapping[str, Mapping[str, tuple[Sequence[float], Sequence[float], Sequence[float], Sequence[float]]]], caption: str) -> FigureSpec:
    """Panels of measured markers and closed-form dashed lines on log-log axes.

    ``series[panel_key][engine] = (x_closed, y_closed, x_measured, y_measured)``.  Every engine
    has its own hollow marker, all of one size, each engine's set a little to the side of the
    true x (:data:`_DODGE` of the x span per engine; the dashed lines at the true x), so that series
    with equal or close values stay visible beside each other; every panel has its legend below
    the axes (inside, it covered lines: the paper-per-combination line of the domain sweep).
    """
    def draw(fig: MplFigure) -> None:
        for k, (key, xlabel, ylabel) in enumerate(panels):
            ax = fig.add_subplot(1, len(panels), k + 1)
            count = len(series[key])
            xs_pos = [x for xc, _, xm, _ in series[key].values() for x in (*xc, *xm) if x > 0]
            # about one marker width per series: a fraction of the panel's span in decades
            step = _DODGE * max(math.log10(max(xs_pos) / min(xs_pos)) if xs_pos else 1.0, 0.3)
            xs_all: list[float] = []
            measured = {e: ([x for x, y in zip(xm, ym) if y > 0], [y for y in ym if y > 0])
                        for e, (_, _, xm, ym) in series[key].items()}
            names = list(measured)
            same = {names[i]: names[j] for i, j in overlaps(list(measured.values())).items()}
            for i, (engine, (xc, yc, xm, ym)) in enumerate(series[key].items()):
                colour = _colour(engine, i)
                xc, yc = [x for x, y in zip(xc, yc) if y > 0], [y for y in yc if y > 0]
                xm, ym = measured[engine]
                xs_all += xc + xm
                label = engine + (f" (= {same[engine]})" if engine in same else "")
                if xc:
                    ax.plot(xc, yc, "--", color=colour, linewidth=1)
                if xm:
                    shift = 10 ** (step * (i - (count - 1) / 2))  # side by side, not on top of each other
                    ax.plot([x * shift for x in xm], ym, _MARKERS[i % len(_MARKERS)], color=colour,
                            markerfacecolor="none", markersize=7, markeredgewidth=1.4, linestyle="none",
                            label=label)
                elif xc:
                    ax.plot([], [], "--", color=colour, label=f"{engine} (closed form only)")
            _log_axes(ax, xs_all)
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            ax.grid(True, which="major", alpha=0.3)
            # below the axes, where it covers no point or line whatever the data
            _closed_form_legend(ax, fontsize="x-small", loc="upper center", bbox_to_anchor=(0.5, -0.17),
                                ncol=2)

    rows = max(-(-(len(series[key]) + 1) // 2) for key, _, _ in panels)
    return CustomPlot(filename=filename, title=title, draw=draw, size=(4.4 * len(panels), 4.2 + 0.18 * rows),
                      caption=caption + " The series' markers sit slightly apart sideways around their x (the dashed "
                      "lines at the true x), so that equal values stay visible side by side.")
