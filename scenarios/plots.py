"""Figure specifications and their PNG rendering (matplotlib, Agg canvas, no pyplot state).

Runners return *specifications* (plain data: :class:`LinePlot`, :class:`BarPlot`, or
:class:`CustomPlot` with a drawing callback); :func:`render` turns one into
``out_dir/<filename>``.  Keeping runners free of drawing code makes them easy to test and lets
the report writer decide where files go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
import textwrap
import zlib
from typing import Any, Union

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure
from matplotlib.ticker import Formatter, MaxNLocator

from mprr.errors import ConfigurationError

__all__ = [
    "BarPlot",
    "CustomPlot",
    "FigureSpec",
    "LEGEND_PLACES",
    "LinePlot",
    "PHASE_COLOURS",
    "Series",
    "log_ticks",
    "tick_labels",
    "tick_text",
    "overlaps",
    "phase_colour",
    "render",
    "whiskers",
]

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_DPI = 110


def _check_filename(filename: str) -> None:
    if (
        not isinstance(filename, str)
        or not filename.endswith(".png")
        or "/" in filename
        or "\\" in filename
        or filename.startswith(".")
    ):
        raise ConfigurationError(
            f"figure filename must be a plain file name ending in .png, got {filename!r}"
        )


def _as_floats(values: Sequence[float] | np.ndarray, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1:
        raise ConfigurationError(f"{what} must be one-dimensional, got shape {arr.shape}")
    return arr


@dataclass(frozen=True)
class Series:
    """One line of a :class:`LinePlot`: ``y`` against ``x``, optional error bars ``yerr``.

    ``yerr`` is one distance per point (symmetric bars) or two rows (distances below and
    above each point: quantile whiskers, which never cross 0 for a non-negative quantity).
    """

    label: str
    x: Sequence[float]
    y: Sequence[float]
    yerr: Sequence[float] | np.ndarray | None = None
    style: str = "-o"

    def __post_init__(self) -> None:
        x = _as_floats(self.x, f"series {self.label!r} x")
        y = _as_floats(self.y, f"series {self.label!r} y")
        if x.shape != y.shape:
            raise ConfigurationError(
                f"series {self.label!r}: x and y must have the same length, got {x.size} and {y.size}"
            )
        if self.yerr is not None:
            err = np.asarray(self.yerr, dtype=float)
            if err.shape not in (y.shape, (2, y.size)):
                raise ConfigurationError(
                    f"series {self.label!r}: yerr must have the length of y ({y.size}) or shape "
                    f"(2, {y.size}) (below, above), got shape {err.shape}"
                )


LEGEND_PLACES = ("best", "below")
"""Where a :class:`LinePlot` puts its legend: ``"best"`` (inside the axes, where matplotlib finds
the fewest points) or ``"below"`` (under the axes, two columns: it covers no line whatever the
data)."""


@dataclass(frozen=True)
class LinePlot:
    """Lines (optionally on log axes): errors vs a parameter, costs vs n, ..."""

    filename: str
    title: str
    xlabel: str
    ylabel: str
    series: tuple[Series, ...]
    logx: bool = False
    logy: bool = False
    caption: str = ""
    legend: str = "best"
    integer_x: bool = False  # x ticks at integers only (a count: categories, attributes)

    def __post_init__(self) -> None:
        _check_filename(self.filename)
        if not self.series:
            raise ConfigurationError(f"line plot {self.filename!r} needs at least one series")
        if self.legend not in LEGEND_PLACES:
            raise ConfigurationError(f"line plot legend must be one of {', '.join(LEGEND_PLACES)}, "
                                     f"got {self.legend!r}")


@dataclass(frozen=True)
class BarPlot:
    """Grouped bars: one group per category, one bar per entry of ``groups`` (coloured by
    ``colours[group]`` when given, else in matplotlib's cycle)."""

    filename: str
    title: str
    categories: tuple[str, ...]
    groups: Mapping[str, Sequence[float]]
    ylabel: str
    xlabel: str = ""
    caption: str = ""
    colours: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        _check_filename(self.filename)
        if not self.groups:
            raise ConfigurationError(f"bar plot {self.filename!r} needs at least one group")
        for label, values in self.groups.items():
            if _as_floats(values, f"bar group {label!r}").size != len(self.categories):
                raise ConfigurationError(
                    f"bar group {label!r} must have one value per category "
                    f"({len(self.categories)}), got {len(values)}"
                )


@dataclass(frozen=True)
class CustomPlot:
    """Anything else: ``draw(figure)`` receives an empty matplotlib Figure and fills it."""

    filename: str
    title: str
    draw: Callable[[MplFigure], None] = field(repr=False)
    size: tuple[float, float] = (6.4, 4.2)
    caption: str = ""

    def __post_init__(self) -> None:
        _check_filename(self.filename)


FigureSpec = Union[LinePlot, BarPlot, CustomPlot]


PHASE_COLOURS: Mapping[str, str] = {
    # the protocols' phases
    "dependence": "#1f77b4", "clusters": "#ff7f0e", "attributes": "#2ca02c", "joint": "#d62728",
    "lambda": "#9467bd", "collection": "#8c564b",
    # the secure-sum engines' steps (dependence 4.2 / 4.3)
    "paper/shares": "#17becf", "paper/broadcast": "#bcbd22",
    "graph/keys": "#e377c2", "graph/shares": "#7f7f7f", "graph/relay": "#bcbd22", "graph/partial": "#17becf",
    "masked/advertise": "#e377c2", "masked/share-keys": "#7f7f7f", "masked/input": "#bcbd22",
    "masked/consistency": "#aec7e8", "masked/survivors": "#ffbb78", "masked/unmask": "#17becf",
}
"""The colour of each phase name in every figure that shows phases, so that the same phase has
the same colour in every run and every figure (:func:`phase_colour`)."""

_SPARE_COLOURS = ("#98df8a", "#ff9896", "#c5b0d5", "#c49c94", "#f7b6d2", "#dbdb8d", "#9edae5", "#c7c7c7")


def phase_colour(phase: str) -> str:
    """:data:`PHASE_COLOURS` of ``phase``; a phase not listed there gets a spare colour chosen
    by a checksum of its name (the same in every run)."""
    return PHASE_COLOURS.get(phase) or _SPARE_COLOURS[zlib.crc32(phase.encode()) % len(_SPARE_COLOURS)]


def log_ticks(ax: Any, axis: str) -> None:
    """Readable ticks on a log axis: 1-2-5 steps when the axis spans less than about three
    decades, powers of ten otherwise (never a single labelled tick), every label in one style
    (:func:`tick_labels`)."""
    from matplotlib.ticker import LogLocator, NullFormatter

    target = ax.xaxis if axis == "x" else ax.yaxis
    lo, hi = ax.get_xlim() if axis == "x" else ax.get_ylim()
    decades = np.log10(max(hi, 1e-300) / max(lo, 1e-300)) if lo > 0 and hi > 0 else 10.0
    subs = (1.0, 2.0, 5.0) if decades < 3.5 else (1.0,)
    target.set_major_locator(LogLocator(base=10, subs=subs))
    target.set_major_formatter(_OneStyleFormatter())
    target.set_minor_locator(LogLocator(base=10, subs=tuple(range(2, 10))))
    target.set_minor_formatter(NullFormatter())


PLAIN_TICKS = (1e-3, 1e5)
"""Log-axis ticks are plain numbers when every labelled tick lies in ``[1e-3, 1e5)``."""


def _plain_style(values: Sequence[float]) -> bool:
    return all(PLAIN_TICKS[0] <= v < PLAIN_TICKS[1] for v in values if v > 0)


def tick_labels(values: Sequence[float]) -> list[str]:
    """Labels of the ticks ``values`` of one log axis, all in one style: plain numbers (integers
    with grouped thousands: ``100``, ``2,000``, ``50,000``; ``0.005``) when every positive tick
    lies in ``[0.001, 100,000)``, else powers of ten for every tick (``10^5``, ``2×10^4``,
    ``10^2``): never ``10^5`` beside ``10000``."""
    plain = _plain_style(values)
    return [tick_text(v, plain=plain) for v in values]


def tick_text(value: float, *, plain: bool | None = None) -> str:
    """One log-axis tick label: a plain number (``plain=True``), ``m×10^e`` (``plain=False``),
    or, when ``None``, plain from 0.001 to 99,999 only (:func:`tick_labels` picks one style for
    a whole axis)."""
    if value <= 0:
        return f"{value:g}"
    if plain is None:
        plain = _plain_style([value])
    if plain:
        return f"{value:,.0f}" if float(value).is_integer() else f"{value:,g}"
    mantissa, exponent = f"{value:.0e}".split("e")
    if mantissa == "1":
        return f"$10^{{{int(exponent)}}}$"
    return f"${mantissa}\\times10^{{{int(exponent)}}}$"


class _OneStyleFormatter(Formatter):
    """Matplotlib formatter of a log axis: the labels of the ticks in view share one style
    (:func:`tick_labels`; the locator also places ticks beyond the view, which do not count)."""

    def _in_view(self, values: Sequence[float]) -> list[float]:
        if self.axis is None:
            return [float(v) for v in values]
        lo, hi = sorted(float(v) for v in self.axis.get_view_interval())
        return [float(v) for v in values if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]

    def __call__(self, x: float, pos: int | None = None) -> str:
        return tick_text(x, plain=_plain_style([*self._in_view(self.locs), x]))

    def format_ticks(self, values: Sequence[float]) -> list[str]:
        self.set_locs(list(values))
        plain = _plain_style(self._in_view(values))
        return [tick_text(float(v), plain=plain) for v in values]


def whiskers(y: Sequence[float] | np.ndarray, low: Sequence[float] | np.ndarray,
             high: Sequence[float] | np.ndarray) -> np.ndarray:
    """Error-bar lengths ``(below, above)``, shape ``(2, len(y))``, of points ``y`` whose interval
    is ``[low, high]`` (quantiles or a bootstrap interval: bars never cross the interval's ends)."""
    y = np.asarray(y, dtype=float)
    out: np.ndarray = np.clip(np.stack([y - np.asarray(low, float), np.asarray(high, float) - y]), 0, None)
    return out


def log_log_slope(xs: Sequence[float] | np.ndarray, ys: Sequence[float] | np.ndarray) -> float | None:
    """Least-squares slope of ``log y`` against ``log x`` (the exponent of a power law ``y ∝ x^k``);
    ``None`` with fewer than two distinct ``x``."""
    x, y = np.log(np.asarray(xs, float)), np.log(np.asarray(ys, float))
    return float(np.polyfit(x, y, 1)[0]) if len(set(x.tolist())) >= 2 else None


def overlaps(points: Sequence[tuple[Sequence[float], Sequence[float]]]) -> dict[int, int]:
    """Series (index) whose ``(x, y)`` points equal an earlier series' (index of the first such
    series), so that a figure can draw them visibly and say so in its legend.  A series without
    points equals none."""
    out: dict[int, int] = {}
    for i, (x, y) in enumerate(points):
        for j, (x0, y0) in enumerate(points[:i]):
            if len(x) and np.array_equal(np.asarray(x0, float), np.asarray(x, float)) and np.allclose(
                    np.asarray(y0, float), np.asarray(y, float), rtol=1e-9, atol=0, equal_nan=True):
                out[i] = out.get(j, j)
                break
    return out


def _draw_lines(fig: MplFigure, spec: LinePlot) -> None:
    ax = fig.add_subplot()
    same = overlaps([(s.x, s.y) for s in spec.series])
    for i, s in enumerate(spec.series):
        x, y = np.asarray(s.x, float), np.asarray(s.y, float)
        label, fmt = s.label, s.style
        style: dict[str, Any] = {"markersize": 4}
        if i in same:  # drawn over an identical series: hollow, larger, dotted, and said so
            label = f"{s.label} (= {spec.series[same[i]].label})"
            fmt = ":" + next((c for c in s.style if c in "ov^<>sxX+*dDph"), "o")
            style = {"markersize": 9, "markerfacecolor": "none", "linewidth": 2.0}
        if s.yerr is not None:
            ax.errorbar(x, y, yerr=np.asarray(s.yerr, float), fmt=fmt, label=label, capsize=3, **style)
        else:
            ax.plot(x, y, fmt, label=label, **style)
    if spec.logx:
        ax.set_xscale("log")
        log_ticks(ax, "x")
    if spec.logy:
        ax.set_yscale("log")
        log_ticks(ax, "y")
    if spec.integer_x:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    ax.grid(True, which="major", alpha=0.3)
    if any(s.label for s in spec.series):
        if spec.legend == "below":
            ax.legend(fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
        else:
            ax.legend(fontsize="small")


def _draw_bars(fig: MplFigure, spec: BarPlot) -> None:
    ax = fig.add_subplot()
    n_groups = len(spec.groups)
    width = 0.8 / n_groups
    positions = np.arange(len(spec.categories), dtype=float)
    for i, (label, values) in enumerate(spec.groups.items()):
        offset = (i - (n_groups - 1) / 2) * width
        colour = None if spec.colours is None else spec.colours.get(label)
        ax.bar(positions + offset, np.asarray(values, float), width, label=label, color=colour)
    ax.set_xticks(positions)
    crowded = len(spec.categories) > 6 or sum(len(c) for c in spec.categories) > 60
    ax.set_xticklabels(spec.categories, rotation=40 if crowded else 0,
                       ha="right" if crowded else "center", fontsize="small")
    ax.set_ylabel(spec.ylabel)
    if spec.xlabel:
        ax.set_xlabel(spec.xlabel)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")


def _caption(fig: MplFigure, caption: str) -> float:
    """Write ``caption`` under the axes (so the PNG explains itself); grow the figure to make
    room and return the fraction of its height the caption takes."""
    if not caption:
        return 0.0
    width_in, height_in = (float(v) for v in fig.get_size_inches())
    lines = textwrap.wrap(caption, width=max(40, int(width_in * 15)))
    extra = 0.17 * len(lines) + 0.1
    fig.set_size_inches(width_in, height_in + extra)
    fig.text(0.01, 0.01, "\n".join(lines), ha="left", va="bottom", fontsize="x-small", color="0.25")
    return extra / (height_in + extra)


def render(spec: FigureSpec, out_dir: Path) -> Path:
    """Draw ``spec`` into ``out_dir / spec.filename`` (PNG) and return the path."""
    if isinstance(spec, CustomPlot):
        fig = MplFigure(figsize=spec.size)
    elif isinstance(spec, LinePlot) and spec.legend == "below":  # room for the legend's rows
        fig = MplFigure(figsize=(6.4, 4.2 + 0.2 * -(-len(spec.series) // 2) + 0.3))
    else:
        fig = MplFigure(figsize=(6.4, 4.2))
    FigureCanvasAgg(fig)
    if isinstance(spec, LinePlot):
        _draw_lines(fig, spec)
    elif isinstance(spec, BarPlot):
        _draw_bars(fig, spec)
    elif isinstance(spec, CustomPlot):
        spec.draw(fig)
    else:
        raise ConfigurationError(
            f"unknown figure specification {type(spec).__name__}; "
            "allowed: LinePlot, BarPlot, CustomPlot"
        )
    fig.suptitle(spec.title, fontsize="medium")
    bottom = _caption(fig, spec.caption)
    fig.tight_layout(rect=(0.0, bottom, 1.0, 1.0))
    path = Path(out_dir) / spec.filename
    fig.savefig(path, format="png", dpi=_DPI, metadata={"Software": None})
    return path
