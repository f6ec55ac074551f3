"""kikuchi_sweeps (RR-Ind-Joint paper): the 3.3 worked example, agreement with the protocols,
noise-free exactness, Theorem 3, Adult Table 1, and reduced runs through the CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from mprr.matrices import grr, keep_or_uniform
from mprr.metrics import mse
from mprr.protocols import rr_ind_joint, rr_independent
from mprr.dependence import cramers_v
from mprr.synthetic import zipf_pair, zipf_pair_joint
from scenarios.cli import main
from scenarios.datasets import load_adult
from scenarios.kikuchi import (
    ADULT_TABLE1_PUBLISHED,
    DECIDED,
    _claims,
    estimate_pair,
    noise_free_pair,
    worked_example,
)
from scenarios.plots import PNG_MAGIC

SMALL = ["--set", "sweep_v=[0.0, 0.5, 1.0]", "--set", "sweep_epsilon=[0.5, 1.0, 2.0]",
         "--set", "sweep_n=[100, 1000]", "--set", "sweep_d=[2, 5]", "--set", "n=300", "--set", "workers=1"]


def _run(tmp_path: Path, *extra: str, runs: int = 3, name: str = "k") -> tuple[int, dict | None, str]:
    out = tmp_path / name
    stderr = io.StringIO()
    code = main(["run", "kikuchi_sweeps", "--runs", str(runs), "--seed", "2", "--out", str(out), "--quiet",
                 *SMALL, *extra], stdout=io.StringIO(), stderr=stderr)
    doc = json.loads((out / "results.json").read_text(encoding="utf-8")) if code == 0 else None
    return code, doc, stderr.getvalue()


def test_worked_example_3_3() -> None:
    """Paper 3.3: V's and the RR-Ind MAE match; the printed joint estimate does not sum to 1."""
    rows = {q: (paper, ours) for q, paper, ours in worked_example()}
    assert rows["V_AB(X)"][1] == pytest.approx(2 / 3)
    assert rows["V_AB(Y)"][1] == pytest.approx(0.2)
    assert rows["MAE of RR-Ind (true marginals)"][1] == pytest.approx(0.16)
    assert rows["RR-Ind with the true marginals π_A, π_B"][1] == pytest.approx([0.24, 0.36, 0.16, 0.24])
    # (P⊗P)⁻¹ λ with P⁻¹ = [[1.5, -0.5], [-0.5, 1.5]]: exactly (0.45, 0.05, 0.05, 0.45)
    assert rows["RR-Ind-Joint estimate"][1] == pytest.approx([0.45, 0.05, 0.05, 0.45])
    assert rows["V of the RR-Ind-Joint estimate"][1] == pytest.approx(0.8)  # as printed
    assert rows["MAE of RR-Ind-Joint"][1] == pytest.approx(0.075)  # printed 0.05
    assert sum(rows["RR-Ind-Joint estimate"][0]) == pytest.approx(1.1)  # the printed vector


@pytest.mark.parametrize("method", ["clip-rescale", "project-simplex"])
def test_estimates_agree_with_the_protocols(method: str, rng: np.random.Generator) -> None:
    syn = zipf_pair(800, 6, 0.6, rng=rng)
    joint = rr_ind_joint(syn.dataset, epsilon_per_attribute=1.5, rng=np.random.default_rng(9), postprocess=method)
    ind = rr_independent(syn.dataset, epsilon_per_attribute=1.5, rng=np.random.default_rng(9), postprocess=method)
    rel = ind.releases[0]
    np.testing.assert_array_equal(rel.codes, joint.releases[0].codes)  # same draws, same Y
    est = estimate_pair(rel.codes, syn.dataset.sizes, rel.matrices, method)
    np.testing.assert_allclose(est["RR-Ind-Joint"], joint.estimate.marginal((0, 1)), atol=1e-12)
    np.testing.assert_allclose(est["RR-Ind"], ind.estimate.marginal((0, 1)), atol=1e-12)


def test_noise_free_release_is_inverted_exactly() -> None:
    truth = zipf_pair_joint(7, 0.4)
    assert cramers_v(truth) == pytest.approx(0.4)
    free = noise_free_pair(truth, (grr(7, 0.8), grr(7, 0.8)))
    np.testing.assert_allclose(free["RR-Ind-Joint"], truth, atol=1e-12)
    np.testing.assert_allclose(free["RR-Ind"], np.outer(truth.sum(1), truth.sum(0)), atol=1e-12)


@pytest.mark.parametrize("d", [2, 3, 10, 20])
@pytest.mark.parametrize("v", [0.1, 0.5, 1.0])
def test_theorem_3_bound(d: int, v: float) -> None:
    """MSE of RR-Ind (noise-free) ≤ V²(d−1)/d² < V²/d."""
    truth = zipf_pair_joint(d, v)
    ind = np.outer(truth.sum(1), truth.sum(0))
    assert mse(ind, truth) <= v * v * (d - 1) / d ** 2 + 1e-15


def test_adult_table1_values(adult_path: Path) -> None:
    """Published V to 7 digits; RR-Ind MSE to the printed (truncated) digits; RR-Ind-Joint at
    machine precision (the paper's ~1e-33 are rounding noise too)."""
    data = load_adult(adult_path)
    for (a, b), (v, mse_ind, _) in ADULT_TABLE1_PUBLISHED.items():
        pair = data.select([a, b])
        truth = pair.joint_counts((0, 1)) / pair.n
        assert cramers_v(truth) == pytest.approx(v, abs=5e-8)
        free = noise_free_pair(truth, tuple(keep_or_uniform(s, 0.5) for s in pair.sizes))
        assert mse(free["RR-Ind"], truth) == pytest.approx(mse_ind, rel=0.01)
        assert mse(free["RR-Ind-Joint"], truth) < 1e-30


def test_reduced_run_writes_every_output(tmp_path: Path) -> None:
    code, doc, err = _run(tmp_path, "--set", "adult=\"no\"")
    assert code == 0, err
    assert set(doc["tables"]) == {"sweep_v", "sweep_epsilon", "sweep_n", "sweep_d", "example_3_3", "claims"}
    assert [r["x"] for r in doc["tables"]["sweep_n"]["rows"]] == [100, 1000]
    assert doc["metrics"]["claims_checked"] == len(doc["tables"]["claims"]["rows"])
    claims = doc["tables"]["claims"]
    assert claims["columns"] == ["figure", "statement", "ours", "95% interval", "criterion", "share holding", "verdict"]
    first = claims["rows"][0]
    assert first["criterion"] == "> 0.95" and first["95% interval"].startswith("[")
    assert {r["verdict"] for r in claims["rows"]} <= {"holds", "does not hold", "undecided: more runs needed"}
    v_rows = doc["tables"]["sweep_v"]["rows"]
    assert v_rows[0]["MAE RR-Ind noise-free"] == pytest.approx(0.0, abs=1e-15)  # V = 0: independent
    assert any("skipped" in note for note in doc["notes"])
    assert any(note.startswith("RR-Ind's joint estimate is the product of its two eq. (2) marginal estimates")
               for note in doc["notes"])
    for name in ("v", "epsilon", "n", "d"):
        assert (tmp_path / "k" / f"mae_vs_{name}.png").read_bytes()[:8] == PNG_MAGIC
    assert (tmp_path / "k" / "report.md").is_file()
    code, again, _ = _run(tmp_path, "--set", "adult=\"no\"", name="k2")
    assert again["metrics"] == doc["metrics"]


def test_reduced_run_with_adult(tmp_path: Path, adult_path: Path) -> None:
    code, doc, err = _run(tmp_path, "--set", "adult=\"yes\"", "--set", f"adult_path={json.dumps(str(adult_path))}",
                          "--set", "sweep_v=[]", "--set", "sweep_epsilon=[]", "--set", "sweep_d=[]", runs=2)
    assert code == 0, err
    rows = doc["tables"]["adult_table1"]["rows"]
    assert [r["pair"] for r in rows] == ["sex × income", "sex × race", "education × occupation"]
    for r in rows:
        assert r["V ours"] == pytest.approx(r["V paper"], abs=5e-8)
        assert r["MSE RR-Ind noise-free"] == pytest.approx(r["paper"], rel=0.01)
        assert 0 < r["MSE RR-Ind-Joint MC"] < r["MSE RR-Ind MC"]


def test_bad_adult_settings_exit_2(tmp_path: Path) -> None:
    code, _, err = _run(tmp_path, "--set", "adult=\"yes\"", "--set", "adult_path=\"/nonexistent/adult.data\"")
    assert code == 2 and "adult_path" in err
    code, _, err = _run(tmp_path, "--set", "adult=\"no\"", "--set", "sweep_v=[]", "--set", "sweep_epsilon=[]",
                        "--set", "sweep_n=[]", "--set", "sweep_d=[]")
    assert code == 2 and "nothing to run" in err


def _claim_rows(noise: float, means: list[float], runs: int = 6) -> dict[str, tuple]:
    """Claims on a V sweep (0, 0.5, 1) whose RR-Ind MAE has the given means plus Gaussian noise
    per run (RR-Ind-Joint constant)."""
    gen = np.random.default_rng(11)
    sweeps = np.ones((runs, 3, 2, 2))
    sweeps[:, :, 0, 0] = np.asarray(means) + noise * gen.standard_normal((runs, 3))
    index = {"v": [0, 1, 2], "epsilon": [], "n": [], "d": []}
    xs = {"v": [0.0, 0.5, 1.0], "epsilon": [], "n": [], "d": []}
    rows = _claims(sweeps, index, xs, True, rng=np.random.default_rng(5))
    return {r[1]: r for r in rows}


def test_claim_verdicts_show_the_criterion_the_interval_and_say_when_the_runs_cannot_decide() -> None:
    linear = "MAE of RR-Ind grows ~linearly with V"
    figure, _, ours, interval, criterion, share, verdict = _claim_rows(0.001, [1.0, 1.5, 2.0])[linear]
    assert (figure, criterion, verdict, share) == ("Fig. 5", "> 0.95", "holds", 1.0) and ours.startswith("corr(V, MAE) = 1.0")
    low, high = (float(v) for v in interval.strip("[]").split(","))
    assert 0.95 < low <= high <= 1.0
    assert _claim_rows(0.001, [1.0, 1.0, 2.0])[linear][-1] == "does not hold"  # corr 0.866, tightly
    noisy = _claim_rows(0.4, [1.0, 1.5, 2.0])[linear]  # the noise of the runs spans the criterion
    assert noisy[-1] == "undecided: more runs needed" and 1 - DECIDED < noisy[5] < DECIDED
    assert _claim_rows(0.001, [1.0, 1.5, 2.0], runs=1)[linear][3:] == ("— (1 run)", "> 0.95", 1.0, "holds")
    theorem = _claim_rows(0.001, [1.0, 1.5, 2.0])["MSE of RR-Ind ≤ V²/d (noise-free, every V and d swept)"]
    assert theorem[3:] == ("exact (noise-free)", "MSE ≤ V²/d at every point", 1.0, "holds")


def test_the_epsilon_axis_is_per_attribute_and_d_has_integer_ticks(tmp_path: Path) -> None:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from scenarios.plots import LinePlot, _draw_lines
    from scenarios.runner import run

    outcome = run("kikuchi_sweeps", out_dir=tmp_path / "k", runs=2, parameters={
        "sweep_v": [], "sweep_n": [], "sweep_epsilon": [0.5, 1.0], "sweep_d": [2, 3, 5], "n": 200, "workers": 1,
        "adult": "no"})
    figures = {f.filename: f for f in outcome.result.figures}
    eps, d = figures["mae_vs_epsilon.png"], figures["mae_vs_d.png"]
    assert isinstance(eps, LinePlot) and isinstance(d, LinePlot)
    assert eps.xlabel == "ε per attribute (each respondent spends 2ε)"
    fig = Figure()
    FigureCanvasAgg(fig)
    _draw_lines(fig, d)
    ticks = [t for t in fig.axes[0].get_xticks() if 2 <= t <= 5]
    assert ticks and all(float(t).is_integer() for t in ticks)
