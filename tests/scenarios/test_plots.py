"""Figure specifications render to real PNG files; malformed specifications are rejected."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from scenarios.plots import (
    PNG_MAGIC,
    BarPlot,
    CustomPlot,
    LinePlot,
    Series,
    log_ticks,
    overlaps,
    phase_colour,
    render,
    tick_labels,
)


def _is_png(path: Path) -> bool:
    data = path.read_bytes()
    return data[:8] == PNG_MAGIC and len(data) > 1000


def test_line_plot_log_axes_with_error_bars(tmp_path: Path) -> None:
    spec = LinePlot(
        filename="cost.png", title="messages vs n", xlabel="n", ylabel="messages",
        series=(Series("measured", [10, 100, 1000], [20, 200, 2000], yerr=[1, 5, 30]),
                Series("closed form", [10, 100, 1000], [20, 200, 2000], style="--")),
        logx=True, logy=True,
    )
    path = render(spec, tmp_path)
    assert path == tmp_path / "cost.png" and _is_png(path)


def test_bar_and_custom(tmp_path: Path) -> None:
    bars = BarPlot("bars.png", "β", ("a", "b", "c"), {"ours": [1, 2, 3], "paper": [1, np.nan, 3]}, "β %")

    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        fig.add_subplot().hist(np.arange(10))

    custom = CustomPlot("custom.png", "histogram", draw)
    for spec in (bars, custom):
        assert _is_png(render(spec, tmp_path))


def test_rendering_is_reproducible(tmp_path: Path) -> None:
    spec = BarPlot("b.png", "t", ("a", "b"), {"g": [1.0, 2.0]}, "y")
    first = render(spec, tmp_path).read_bytes()
    assert render(spec, tmp_path).read_bytes() == first


@pytest.mark.parametrize("name", ["fig.jpg", "sub/fig.png", "../fig.png", ".png", ""])
def test_filename_must_be_a_plain_png_name(name: str) -> None:
    with pytest.raises(ConfigurationError, match=r"figure filename must be a plain file name ending in \.png"):
        BarPlot(name, "t", ("a",), {"g": [1.0]}, "y")


def test_malformed_specifications() -> None:
    with pytest.raises(ConfigurationError, match=r"series 's': x and y must have the same length, got 2 and 3"):
        Series("s", [1, 2], [1, 2, 3])
    with pytest.raises(ConfigurationError, match=r"series 's': yerr must have the length of y \(2\)"):
        Series("s", [1, 2], [1, 2], yerr=[1])
    with pytest.raises(ConfigurationError, match=r"needs at least one series"):
        LinePlot("l.png", "t", "x", "y", series=())
    with pytest.raises(ConfigurationError, match=r"bar group 'g' must have one value per category \(2\), got 3"):
        BarPlot("b.png", "t", ("a", "b"), {"g": [1, 2, 3]}, "y")
    with pytest.raises(ConfigurationError, match=r"unknown figure specification str"):
        render("not a spec", Path("."))  # type: ignore[arg-type]


def test_overlaps_names_the_first_identical_series() -> None:
    points = [([1, 2], [3.0, 4.0]), ([1, 2], [3.0, 5.0]), ([1, 2], [3.0, 4.0 + 1e-12]), ([1, 2], [3.0, 5.0]),
              ([1, 3], [3.0, 4.0]), ([1, 2], [3.0, np.nan]), ([1, 2], [3.0, np.nan]), ([], []), ([], [])]
    assert overlaps(points) == {2: 0, 3: 1, 6: 5}


def test_log_axis_tick_labels_share_one_style() -> None:
    assert tick_labels([100, 1000, 10000]) == ["100", "1,000", "10,000"]
    assert tick_labels([0.005, 0.01, 0.02]) == ["0.005", "0.01", "0.02"]
    # one tick from 100,000 on: every tick a power of ten, never 10^5 beside 10000
    assert tick_labels([100, 1000, 10000, 100000]) == ["$10^{2}$", "$10^{3}$", "$10^{4}$", "$10^{5}$"]
    assert tick_labels([50000, 100000, 200000]) == ["$5\\times10^{4}$", "$10^{5}$", "$2\\times10^{5}$"]
    assert tick_labels([0.0005, 0.001]) == ["$5\\times10^{-4}$", "$10^{-3}$"]


@pytest.mark.parametrize(("low", "high", "expected"), [
    (60.0, 3e6, ["$10^{2}$", "$10^{3}$", "$10^{4}$", "$10^{5}$", "$10^{6}$"]),  # rr_cost.png's y axis
    (60.0, 2e4, ["50", "100", "200", "500", "1,000", "2,000", "5,000", "10,000", "20,000"]),  # 1-2-5 steps
])
def test_a_rendered_log_axis_labels_its_ticks_in_one_style(tmp_path: Path, low: float, high: float,
                                                            expected: list[str]) -> None:
    axes = []

    def draw(fig) -> None:  # type: ignore[no-untyped-def]
        ax = fig.add_subplot()
        ax.plot([1, 2], [low, high])
        ax.set_yscale("log")
        log_ticks(ax, "y")
        axes.append(ax)

    render(CustomPlot("log.png", "log axis", draw), tmp_path)
    lo, hi = axes[0].get_ylim()
    shown = [t.get_text() for t in axes[0].get_yticklabels() if lo <= t.get_position()[1] <= hi]
    assert shown == expected


def test_a_phase_has_the_same_colour_in_every_run_and_figure() -> None:
    """traffic_by_phase.png of a 4.1 run (dependence, clusters) and of a 4.2 run (dependence,
    graph/keys, graph/relay, graph/partial, clusters): clusters is the same colour in both."""
    assert phase_colour("clusters") == "#ff7f0e" and phase_colour("dependence") == "#1f77b4"
    assert len({phase_colour(p) for p in ("dependence", "clusters", "attributes", "graph/relay")}) == 4
    assert phase_colour("some/new-step") == phase_colour("some/new-step")  # a checksum, not a cycle

    def drawn_colours(phases: list[str]) -> dict[str, tuple[float, ...]]:
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        from scenarios.plots import _draw_bars

        spec = BarPlot("t.png", "t", ("RR-Clusters",), {ph: [1.0] for ph in phases}, "kB",
                       colours={ph: phase_colour(ph) for ph in phases})
        fig = Figure()
        FigureCanvasAgg(fig)
        _draw_bars(fig, spec)
        return {ph: bar.get_facecolor() for ph, bar in zip(phases, fig.axes[0].patches)}

    run41 = drawn_colours(["dependence", "clusters"])
    run42 = drawn_colours(["dependence", "graph/keys", "graph/relay", "graph/partial", "clusters"])
    assert run41["clusters"] == run42["clusters"] and run41["dependence"] == run42["dependence"]
