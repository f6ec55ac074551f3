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
    v_rows = doc["tables"]["sweep_v"]["rows"]
    assert v_rows[0]["MAE RR-Ind noise-free"] == pytest.approx(0.0, abs=1e-15)  # V = 0: independent
    assert any("skipped" in note for note in doc["notes"])
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
