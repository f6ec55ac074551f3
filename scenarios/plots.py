"""Figure specifications and their PNG rendering (matplotlib, Agg canvas, no pyplot state).

Runners return *specifications* (plain data: :class:`LinePlot`, :class:`BarPlot`,
:class:`Heatmap`, or :class:`CustomPlot` with a drawing callback); :func:`render` turns one into
``out_dir/<filename>``.  Keeping runners free of drawing code makes them easy to test and lets
the report writer decide where files go.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Union

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure as MplFigure

from mprr.errors import ConfigurationError

__all__ = [
    "BarPlot",
    "CustomPlot",
    "FigureSpec",
    "Heatmap",
    "LinePlot",
    "Series",
    "render",
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
    """One line of a :class:`LinePlot`: ``y`` against ``x``, optional error bars ``yerr``."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    yerr: Sequence[float] | None = None
    style: str = "-o"

    def __post_init__(self) -> None:
        x = _as_floats(self.x, f"series {self.label!r} x")
        y = _as_floats(self.y, f"series {self.label!r} y")
        if x.shape != y.shape:
            raise ConfigurationError(
                f"series {self.label!r}: x and y must have the same length, got {x.size} and {y.size}"
            )
        if self.yerr is not None and _as_floats(self.yerr, "yerr").shape != y.shape:
            raise ConfigurationError(f"series {self.label!r}: yerr must have the length of y ({y.size})")


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

    def __post_init__(self) -> None:
        _check_filename(self.filename)
        if not self.series:
            raise ConfigurationError(f"line plot {self.filename!r} needs at least one series")


@dataclass(frozen=True)
class BarPlot:
    """Grouped bars: one group per category, one bar per entry of ``groups``."""

    filename: str
    title: str
    categories: tuple[str, ...]
    groups: Mapping[str, Sequence[float]]
    ylabel: str
    xlabel: str = ""
    caption: str = ""

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
class Heatmap:
    """A matrix as colours (dependence matrices, error tables)."""

    filename: str
    title: str
    values: np.ndarray
    row_labels: tuple[str, ...]
    col_labels: tuple[str, ...]
    colorbar_label: str = ""
    annotate: bool = True
    caption: str = ""

    def __post_init__(self) -> None:
        _check_filename(self.filename)
        shape = np.asarray(self.values).shape
        if shape != (len(self.row_labels), len(self.col_labels)):
            raise ConfigurationError(
                f"heatmap {self.filename!r}: values of shape {shape} do not match "
                f"{len(self.row_labels)} row and {len(self.col_labels)} column labels"
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


FigureSpec = Union[LinePlot, BarPlot, Heatmap, CustomPlot]


def _draw_lines(fig: MplFigure, spec: LinePlot) -> None:
    ax = fig.add_subplot()
    for s in spec.series:
        x, y = np.asarray(s.x, float), np.asarray(s.y, float)
        if s.yerr is not None:
            ax.errorbar(x, y, yerr=np.asarray(s.yerr, float), fmt=s.style, label=s.label,
                        capsize=3, markersize=4)
        else:
            ax.plot(x, y, s.style, label=s.label, markersize=4)
    if spec.logx:
        ax.set_xscale("log")
    if spec.logy:
        ax.set_yscale("log")
    ax.set_xlabel(spec.xlabel)
    ax.set_ylabel(spec.ylabel)
    ax.grid(True, which="both", alpha=0.3)
    if any(s.label for s in spec.series):
        ax.legend(fontsize="small")


def _draw_bars(fig: MplFigure, spec: BarPlot) -> None:
    ax = fig.add_subplot()
    n_groups = len(spec.groups)
    width = 0.8 / n_groups
    positions = np.arange(len(spec.categories), dtype=float)
    for i, (label, values) in enumerate(spec.groups.items()):
        offset = (i - (n_groups - 1) / 2) * width
        ax.bar(positions + offset, np.asarray(values, float), width, label=label)
    ax.set_xticks(positions)
    crowded = len(spec.categories) > 6 or max(len(c) for c in spec.categories) > 12
    ax.set_xticklabels(spec.categories, rotation=40 if crowded else 0,
                       ha="right" if crowded else "center", fontsize="small")
    ax.set_ylabel(spec.ylabel)
    if spec.xlabel:
        ax.set_xlabel(spec.xlabel)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize="small")


def _draw_heatmap(fig: MplFigure, spec: Heatmap) -> None:
    ax = fig.add_subplot()
    values = np.asarray(spec.values, dtype=float)
    image = ax.imshow(values, cmap="viridis", aspect="auto")
    cbar = fig.colorbar(image, ax=ax)
    if spec.colorbar_label:
        cbar.set_label(spec.colorbar_label)
    ax.set_xticks(np.arange(len(spec.col_labels)))
    ax.set_xticklabels(spec.col_labels, rotation=45, ha="right", fontsize="small")
    ax.set_yticks(np.arange(len(spec.row_labels)))
    ax.set_yticklabels(spec.row_labels, fontsize="small")
    if spec.annotate and values.size <= 400:
        finite = values[np.isfinite(values)]
        mid = float(finite.mean()) if finite.size else 0.0
        for (i, j), v in np.ndenumerate(values):
            ax.text(j, i, f"{v:.2g}", ha="center", va="center", fontsize="x-small",
                    color="black" if v > mid else "white")


def render(spec: FigureSpec, out_dir: Path) -> Path:
    """Draw ``spec`` into ``out_dir / spec.filename`` (PNG) and return the path."""
    if isinstance(spec, CustomPlot):
        fig = MplFigure(figsize=spec.size)
    else:
        fig = MplFigure(figsize=(6.4, 4.2))
    FigureCanvasAgg(fig)
    if isinstance(spec, LinePlot):
        _draw_lines(fig, spec)
    elif isinstance(spec, BarPlot):
        _draw_bars(fig, spec)
    elif isinstance(spec, Heatmap):
        _draw_heatmap(fig, spec)
    elif isinstance(spec, CustomPlot):
        spec.draw(fig)
    else:
        raise ConfigurationError(
            f"unknown figure specification {type(spec).__name__}; "
            "allowed: LinePlot, BarPlot, Heatmap, CustomPlot"
        )
    fig.suptitle(spec.title, fontsize="medium")
    fig.tight_layout()
    path = Path(out_dir) / spec.filename
    fig.savefig(path, format="png", dpi=_DPI, metadata={"Software": None})
    return path
