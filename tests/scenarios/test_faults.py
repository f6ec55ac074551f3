"""``secure_sum_faults``: every engine under dropouts — clear errors, exact recovered sums, aborts."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

import scenarios.faults
from scenarios.cost_model import pair_indicators
from scenarios.faults import OUTCOMES, SCHEMA, predicted_success, run_trial
from scenarios.runner import run
from mprr.synthetic import planted_clusters
from tests.virtual_clock import run_virtual

PNG = b"\x89PNG\r\n\x1a\n"


def _params(**extra: object) -> dict:
    # generous timeouts where a slow (loaded) machine could turn a live party into a dropout
    raw = {"n": 6, "round_timeout": 2.0, "degree": 2, **extra}
    return dict(SCHEMA.validate(raw)) | {"crash_send": {"paper": 2, "graph": 2, "masked": 3}}


def _vectors(n: int) -> np.ndarray:
    data = planted_clusters(n, rng=np.random.default_rng(4), sizes=(3, 2), clusters=()).dataset
    return pair_indicators(data.codes, data.sizes)


def _trial(engine: str, dropped: tuple[int, ...], **extra: object):
    params = _params(**extra)
    vec = _vectors(params["n"])
    # on the virtual clock: round timeouts pass in virtual time, whatever the machine's load
    return run_virtual(run_trial(engine, params, vec, dropped, rate=0.0, index=1, seed=3)), vec


@pytest.mark.parametrize("engine", ["paper", "graph", "masked", "masked-sparse"])
def test_no_dropout_is_exact(engine: str) -> None:
    trial, _ = _trial(engine, ())
    assert trial.outcome == "exact" and trial.contributors == 6 and trial.message == ""


@pytest.mark.parametrize("engine", ["paper", "graph"])
def test_paper_and_graph_fail_clearly_on_one_dropout(engine: str) -> None:
    trial, _ = _trial(engine, (2,), round_timeout=0.2)  # a late party only makes it an error too
    assert trial.outcome == "error"
    assert "no count is returned" in trial.message and "crashed or stalled" in trial.message


def test_masked_recovers_the_survivors_sum_exactly() -> None:
    """n = 6, complete graph: t = floor(6/2) + 1 = 4; two dropouts leave 4 survivors."""
    trial, vec = _trial("masked", (1, 4), round_timeout=1.0)  # the controller waits one round for them
    assert trial.threshold == 4
    assert trial.outcome == "exact" and trial.contributors == 4


def test_masked_aborts_below_the_threshold() -> None:
    trial, _ = _trial("masked", (0, 1, 2), round_timeout=0.3)
    assert trial.outcome == "aborted"
    assert "3 of 6 parties left" in trial.message and "at least 4" in trial.message


def test_predicted_success_from_the_definitions() -> None:
    assert predicted_success("paper", 10, 0.1, 10, "binomial") == pytest.approx(0.9 ** 10)
    assert predicted_success("masked", 10, 0.3, 6, "binomial") == pytest.approx(binom.cdf(4, 10, 0.3))
    assert predicted_success("masked", 10, 0.3, 6, "fixed") == 1.0  # 3 drop, 7 >= 6 survive
    assert predicted_success("masked", 10, 0.5, 6, "fixed") == 0.0  # 5 survive < 6
    assert predicted_success("graph", 10, 0.1, 10, "fixed") == 0.0
    assert predicted_success("masked-sparse", 10, 0.1, 3, "binomial") is None


def test_reduced_scenario_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the scenario's batches run on the virtual clock: its 0.5 s round timeouts pass in virtual
    # time, so a loaded machine cannot turn an honest party into a dropout
    monkeypatch.setattr(scenarios.faults.asyncio, "run", run_virtual)
    outcome = run("secure_sum_faults", out_dir=tmp_path, parameters={
        "n": 6, "rates": [0.0, 0.5], "trials": 2, "round_timeout": 0.5, "dropout_model": "fixed",
        "engines": ["paper", "masked"],
    })
    # the legend sits under the axes: inside, it covered the masked predicted curve
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from scenarios.plots import LinePlot, _draw_lines

    spec = outcome.result.figures[0]
    assert isinstance(spec, LinePlot)
    fig = Figure(figsize=(6.4, 5.0))
    FigureCanvasAgg(fig)
    _draw_lines(fig, spec)
    fig.canvas.draw()
    legend = fig.axes[0].get_legend()
    assert legend is not None and legend.get_window_extent().y1 < fig.axes[0].get_window_extent().y0
    doc = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    metrics = doc["metrics"]
    assert metrics["wrong_sums"] == 0 and metrics["every_returned_sum_exact"] is True
    assert metrics["other_errors"] == 0
    out = metrics["outcomes"]
    assert out["paper"]["0"] == {o: (2 if o == "exact" else 0) for o in OUTCOMES}
    assert out["paper"]["0.5"]["error"] == 2  # 3 of 6 crash: a clear error, never a count
    assert out["masked"]["0.5"]["aborted"] == 2  # 3 survivors < t = 4
    assert metrics["success_rate"]["masked"] == {"0": 1.0, "0.5": 0.0}
    assert doc["figures"] == ["success_vs_dropout.png"]
    assert (tmp_path / "success_vs_dropout.png").read_bytes()[:8] == PNG
    assert "## Outcome per engine and dropout rate" in (tmp_path / "report.md").read_text(encoding="utf-8")
