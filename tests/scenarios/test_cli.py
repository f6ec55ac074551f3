"""The ``mprr`` command line through ``main(argv)``: run, list, show, errors as exit code 2."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import numpy as np
import pytest

from scenarios.cli import main
from scenarios.config import Field, Float, Int, ScenarioConfig, Schema
from scenarios.plots import LinePlot, Series
from scenarios.progress import Progress
from scenarios.registry import available, get, register, resolve
from scenarios.report import ScenarioResult

PROBE_SCHEMA = Schema([Field("n", Int(min=1), 50), Field("scale", Float(min=0.0), 1.0)])


@register("cli_probe", schema=PROBE_SCHEMA, description="test runner", engines=("fast", "actors"),
          default_runs=2, default_seed=5)
def run_probe(
    config: ScenarioConfig, *, out_dir: Path, runs: int, seed: int, engine: str, progress: Progress
) -> ScenarioResult:
    """A tiny seeded Monte Carlo: mean of n uniforms per run, one progress step per run."""
    rng = np.random.default_rng(seed)
    means = []
    with progress.task("runs", total=runs) as bar:
        for _ in range(runs):
            means.append(rng.random(config.parameters["n"]).mean() * config.parameters["scale"])
            bar.advance()
    return ScenarioResult(
        metrics={"mean": float(np.mean(means)), "per_run": np.array(means), "engine_seen": engine},
        figures=[LinePlot("means.png", "means", "run", "mean",
                          (Series("mean", np.arange(runs), means),))],
        notes=[f"out_dir={out_dir.name}"],
        summary=[f"mean of {runs} runs = {np.mean(means):.3f}"],
    )


def _probe_toml(tmp_path: Path, body: str = "[parameters]\nn = 20\n", name: str = "probe") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'[scenario]\nkind = "cli_probe"\ndescription = "probe"\n{body}', encoding="utf-8")
    return path


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def test_list_shows_shipped_scenarios_with_descriptions() -> None:
    code, out, err = _main("list")
    assert code == 0 and err == ""
    lines = {line.split()[0]: line for line in out.splitlines()}
    assert {"bistochastic_table", "lambda_table"} <= set(lines)
    assert "Table 1" in lines["bistochastic_table"] and "Table 1" in lines["lambda_table"]
    assert [e.name for e in available()] == sorted(e.name for e in available())


def test_run_shipped_scenario_writes_report(tmp_path: Path) -> None:
    out_dir = tmp_path / "bt"
    code, out, err = _main("run", "bistochastic_table", "--out", str(out_dir))
    assert code == 0, err
    doc = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    assert doc["scenario"] == "bistochastic_table" and doc["kind"] == "bistochastic_table"
    assert (out_dir / "report.md").read_text(encoding="utf-8").startswith("# ")
    assert (out_dir / "beta_published_vs_ours.png").read_bytes()[:4] == b"\x89PNG"
    assert "bistochastic_table: wrote" in out and "differ beyond rounding" in out


def test_run_toml_path_with_overrides_and_default_out_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    toml = _probe_toml(tmp_path)
    code, out, err = _main("run", str(toml), "--runs", "3", "--seed", "11", "--engine", "actors",
                           "--set", "scale=2")
    assert code == 0, err
    doc = json.loads((tmp_path / "out" / "probe" / "results.json").read_text(encoding="utf-8"))
    assert (doc["runs"], doc["seed"], doc["engine"]) == (3, 11, "actors")
    assert doc["parameters"] == {"n": 20, "scale": 2.0}
    assert doc["metrics"]["engine_seen"] == "actors" and len(doc["metrics"]["per_run"]) == 3
    assert doc["notes"] == ["out_dir=probe"]
    assert "mean of 3 runs" in out
    assert err == ""  # stderr is not a TTY: no progress bars


def test_runner_defaults_apply_and_same_seed_reproduces(tmp_path: Path) -> None:
    toml = _probe_toml(tmp_path)
    results = []
    for name, seed in (("a", None), ("b", None), ("c", "6")):
        argv = ["run", str(toml), "--out", str(tmp_path / name), "-q"]
        if seed:
            argv += ["--seed", seed]
        assert _main(*argv)[0] == 0
        results.append(json.loads((tmp_path / name / "results.json").read_text(encoding="utf-8")))
    assert (results[0]["runs"], results[0]["seed"]) == (2, 5)  # the runner's defaults
    assert results[0]["metrics"] == results[1]["metrics"]
    assert results[2]["metrics"]["mean"] != results[0]["metrics"]["mean"]


@pytest.mark.parametrize(
    ("argv", "pattern"),
    [
        (("run", "no_such_scenario"), "unknown scenario 'no_such_scenario'; available scenarios: "),
        (("run", "missing.toml"), "scenario file 'missing.toml' does not exist"),
        (("run", "lambda_table", "--engine", "actors"),
         "engine 'actors' is not supported by scenario 'lambda_table' (kind lambda_table); allowed: fast"),
        (("run", "lambda_table", "--runtime", "tcp"),
         "runtime 'tcp' (--runtime tcp) hosts actor parties and needs the 'actors' engine, which scenario "
         "'lambda_table' does not support (engines: fast); run it without --runtime"),
        (("run", "secure_sum_faults", "--runtime", "tcp"),
         "runtime 'tcp' (--runtime tcp) does not apply to scenario 'secure_sum_faults': it sets up the network "
         "of each of its runs itself (an in-memory or a virtual-time one); run it without --runtime"),
        (("run", "lambda_table", "--runs", "0"), "runs must be an integer >= 1, got 0"),
        (("run", "lambda_table", "--seed", "-3"), "seed must be an integer >= 0, got -3"),
        (("run", "lambda_table", "--set", "sises=[4]"), "unknown key 'parameters.sises' (did you mean 'sizes'?)"),
        (("run", "lambda_table", "--set", "sizes=[1]"), "parameters.sizes[0] must be an integer >= 2 and <= 4,096, got 1"),
        (("run", "local_anonymization", "--set", "n=1"),
         "parameters.n must be an integer >= 2 and <= 1,000,000, got 1"),  # bounds as people write them, not 1e+06
        (("run", "lambda_table", "--set", "sizes=[5, 5]"),
         "parameters.lambdas[0] has 3 values, expected one per attribute (2, from parameters.sizes = [5, 5])"),
        (("run", "bistochastic_table", "--set", "k_values=[13]"), "parameters.k_values contains 13, larger than size = 12"),
        (("run", "lambda_table", "--set", "oops"), "--set expects KEY=VALUE"),
        (("show", "nope"), "unknown scenario 'nope'"),
    ],
)
def test_errors_exit_2_with_one_line(argv: tuple[str, ...], pattern: str, tmp_path: Path) -> None:
    code, out, err = _main(*argv, *(("--out", str(tmp_path)) if argv[0] == "run" else ()))
    assert code == 2
    assert err.startswith("mprr: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert pattern in err


def test_bad_toml_files_exit_2(tmp_path: Path) -> None:
    cases = {
        "badvalue": ('[parameters]\nn = 0\n', "parameters.n must be an integer >= 1, got 0 (int)"),
        "badkey": ('[parameters]\nnn = 3\n', "unknown key 'parameters.nn' (did you mean 'n'?)"),
        "badtype": ('[parameters]\nscale = "big"\n', "parameters.scale must be a finite number >= 0, got 'big' (str)"),
        "badsyntax": ('[parameters\n', "is not valid TOML"),
    }
    for name, (body, pattern) in cases.items():
        code, _, err = _main("run", str(_probe_toml(tmp_path, body, name)), "--out", str(tmp_path / name))
        assert code == 2 and pattern in err, (name, err)
    unknown_kind = tmp_path / "kind.toml"
    unknown_kind.write_text('[scenario]\nkind = "no_such_kind"\n', encoding="utf-8")
    code, _, err = _main("run", str(unknown_kind))
    assert code == 2 and "no runner registered for scenario kind 'no_such_kind'; known kinds:" in err
    missing_module = tmp_path / "module.toml"
    missing_module.write_text('[scenario]\nkind = "other_kind"\nmodule = "scenarios.not_there"\n', encoding="utf-8")
    code, _, err = _main("run", str(missing_module))
    assert code == 2 and "needs module 'scenarios.not_there', which does not exist" in err


def test_argparse_usage_errors_exit_2() -> None:
    with pytest.raises(SystemExit) as exc:
        main(["run", "lambda_table", "--engine", "threads"], stdout=io.StringIO(), stderr=io.StringIO())
    assert exc.value.code == 2


def test_show_lists_parameters() -> None:
    code, out, _ = _main("show", "lambda_table")
    assert code == 0
    assert "lambda_table (kind lambda_table)" in out and "engines: fast" in out
    assert "sizes = [5, 5, 5]" in out and "a list of 1 to 16 items, each an integer >= 2 and <= 4,096" in out


def test_resolve_and_get(tmp_path: Path) -> None:
    assert resolve("lambda_table").name == "lambda_table.toml"
    toml = _probe_toml(tmp_path)
    assert resolve(str(toml)) == toml
    assert get("cli_probe").default_runs == 2


def test_console_entry_point_exits_2_without_traceback(tmp_path: Path) -> None:
    """What `make demo` shows until local_anonymization exists: one line, exit code 2."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-m", "scenarios.cli", "run", "no_such_scenario"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.startswith("mprr: error: unknown scenario 'no_such_scenario'; available scenarios:")
    assert proc.stderr.count("\n") == 1 and proc.stdout == ""


# --------------------------------------------------------------------------- conventions


def test_version_through_the_console_script_and_python_m_mprr(tmp_path: Path) -> None:
    import subprocess
    import sys

    import mprr

    proc = subprocess.run([sys.executable, "-m", "mprr", "--version"], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60)
    assert proc.returncode == 0 and proc.stdout == f"mprr {mprr.__version__}\n"
    proc = subprocess.run([sys.executable, "-m", "mprr", "run", "no_such_scenario"], capture_output=True,
                          text=True, cwd=tmp_path, timeout=60)
    assert proc.returncode == 2 and proc.stderr.startswith("mprr: error: unknown scenario")


def test_list_and_show_json() -> None:
    code, out, _ = _main("list", "--json")
    assert code == 0
    listed = {e["name"]: e for e in json.loads(out)}
    assert listed["lambda_table"]["kind"] == "lambda_table" and "Table 1" in listed["lambda_table"]["description"]
    code, out, _ = _main("show", "lambda_table", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["engines"] == ["fast"] and doc["runs"] == 1
    sizes = next(p for p in doc["parameters"] if p["key"] == "sizes")
    assert sizes["value"] == [5, 5, 5] and sizes["type"].startswith("a list of 1 to 16 items")


def test_verbose_logs_through_logging(tmp_path: Path) -> None:
    toml = _probe_toml(tmp_path)
    code, _, err = _main("-v", "run", str(toml), "--out", str(tmp_path / "v"))
    assert code == 0 and "mprr: INFO: scenarios.runner: scenario probe (kind cli_probe)" in err
    code, _, err = _main("run", str(toml), "--out", str(tmp_path / "d"), "--log-level", "debug")
    assert code == 0 and "mprr: DEBUG: scenarios.runner: parameters used: {'n': 20" in err
    code, _, err = _main("run", str(toml), "--out", str(tmp_path / "q"))
    assert code == 0 and err == ""


def test_list_into_a_closed_pipe_is_quiet(tmp_path: Path) -> None:
    import subprocess
    import sys

    script = ("import subprocess, sys\n"
              f"p = subprocess.Popen([{sys.executable!r}, '-m', 'mprr', 'list'], stdout=subprocess.PIPE, "
              "stderr=subprocess.PIPE)\n"
              "p.stdout.close()\n"
              "err = p.stderr.read().decode()\n"
              "sys.exit(0 if p.wait() == 0 and 'BrokenPipe' not in err and 'Traceback' not in err else 1)\n")
    assert subprocess.run([sys.executable, "-c", script], cwd=tmp_path, timeout=60).returncode == 0


@pytest.mark.parametrize(
    ("override", "pattern"),
    [
        ("secure_sum=[paper,graph]", "strings inside a list must be quoted, and the whole argument single-quoted "
                                     "for the shell: --set 'secure_sum=[\"paper\", \"graph\"]'"),
        ("secure_sum=a=b", "otherwise write it quoted: --set 'secure_sum=\"...\"'"),
        ("sizes=[4,3", "value '[4,3' is not a valid TOML list; a list ends with ']', and the whole argument "
                       "single-quoted for the shell: --set 'sizes=[4,3]'"),
    ],
)
def test_set_errors_suggest_the_quoting_that_works(override: str, pattern: str, tmp_path: Path) -> None:
    code, _, err = _main("run", "local_anonymization", "--set", override, "--out", str(tmp_path))
    assert code == 2 and pattern in err


def test_quoted_choice_is_accepted(tmp_path: Path) -> None:
    from scenarios.overrides import parse_override

    assert parse_override('dependence="4.2"') == {"dependence": "4.2"}
    assert parse_override('engines=["paper", "graph"]') == {"engines": ["paper", "graph"]}


def test_out_must_be_a_writable_directory(tmp_path: Path) -> None:
    toml = _probe_toml(tmp_path)
    a_file = tmp_path / "file.txt"
    a_file.write_text("x", encoding="utf-8")
    code, _, err = _main("run", str(toml), "--out", str(a_file))
    assert code == 2 and f"--out must be a directory, got {str(a_file)!r}, which is a file" in err
    code, _, err = _main("run", str(toml), "--out", str(a_file / "sub"))
    assert code == 2 and f"--out {str(a_file / 'sub')!r}: cannot create the directory" in err


def test_toml_module_is_restricted_to_the_scenarios_package(tmp_path: Path) -> None:
    for module in ("this", "os.path", "scenarios", "scenarios..x", "scenarios.1x"):
        path = tmp_path / "m.toml"
        path.write_text(f'[scenario]\nkind = "whatever"\nmodule = "{module}"\n', encoding="utf-8")
        code, out, err = _main("run", str(path), "--out", str(tmp_path / "o"))
        assert code == 2 and "scenario.module must be a module of the scenarios package, scenarios.<name>, " \
                             f"got {module!r} (str)" in err
        assert "Beautiful is better" not in out + err


def test_data_option_needs_a_scenario_that_takes_data(tmp_path: Path) -> None:
    csv = tmp_path / "d.csv"
    csv.write_text("a,b\nx,y\n", encoding="utf-8")
    code, _, err = _main("run", "lambda_table", "--data", str(csv), "--out", str(tmp_path / "o"))
    assert code == 2 and "--data: scenario 'lambda_table' takes no 'data' parameter; scenarios that do: " \
                         "local_anonymization" in err


def test_run_parser_takes_new_option_groups() -> None:
    from scenarios.cli import RUN_OPTION_GROUPS, build_parser

    def extra(parser: argparse.ArgumentParser) -> None:
        parser.add_argument_group("extra").add_argument("--widgets", type=int, default=1)

    RUN_OPTION_GROUPS.append(extra)
    try:
        args = build_parser().parse_args(["run", "lambda_table", "--widgets", "3"])
    finally:
        RUN_OPTION_GROUPS.remove(extra)
    assert args.widgets == 3


def test_a_reused_out_dir_loses_the_figures_only_the_previous_run_drew(tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    out_dir.mkdir()
    previous = {"scenario": "probe", "kind": "probe", "engine": "actors", "provenance": {},
                "figures": ["means.png", "old.png"]}  # what an earlier mprr run writes (its keys)
    (out_dir / "results.json").write_text(json.dumps(previous), encoding="utf-8")
    (out_dir / "old.png").write_bytes(b"\x89PNG")
    (out_dir / "mine.png").write_bytes(b"\x89PNG")  # not listed: never a run's (refused without --force)
    code, out, err = _main("run", str(_probe_toml(tmp_path)), "--out", str(out_dir), "--engine", "actors", "--force")
    assert code == 0, err
    assert f"  removed old.png: written by the previous run into {out_dir}, not by this one\n" in out
    assert not (out_dir / "old.png").exists() and (out_dir / "mine.png").exists() and (out_dir / "means.png").exists()
    assert "engine actors, runtime memory (one process))" in out.splitlines()[0]


def test_a_controller_waiting_for_hand_started_workers_says_where_it_listens(tmp_path: Path) -> None:
    # no worker comes: the wait ends naming the parties nobody hosts; the address was said first,
    # without -v (the one thing the person starting the workers needs)
    code, out, err = _main("run", "local_anonymization", "--runtime", "tcp", "--workers", "2", "--external-workers",
                           "--no-tls", "--connect-timeout", "0.5", "--set", "n=40", "--out", str(tmp_path), "-q")
    assert code == 2 and out == ""
    listening, error = err.splitlines()
    assert listening.startswith("mprr: INFO: parties.tcp: tcp runtime: listening on 127.0.0.1:")
    assert listening.endswith("for workers of parties 0-39; waiting up to 0.5 s for workers started with `mprr party "
                              "--connect HOST:" + listening.split("127.0.0.1:")[1].split()[0] + " --parties FIRST-LAST "
                              "--worker K --no-tls` covering every party, e.g. --worker 0 --parties 0-19, "
                              "--worker 1 --parties 20-39")
    assert error == ("mprr: error: tcp runtime: workers host 0 of 40 parties after 0.5 s (0 connected); "
                     "no worker hosts parties 0-39")
    code, _, err = _main("run", "local_anonymization", "--runtime", "tcp", "--external-workers", "--no-tls",
                         "--connect-timeout", "0.5", "--set", "n=40", "--out", str(tmp_path), "--log-level", "ERROR")
    assert code == 2 and "listening" not in err  # an explicit level is respected


def test_the_summary_names_every_file_the_run_wrote_and_a_later_run_removes_them(tmp_path: Path) -> None:
    out_dir = tmp_path / "o"
    code, out, err = _main("run", "local_anonymization", "--set", "n=60", "--set", "queries=10", "--runs", "1",
                           "--out", str(out_dir), "-q")
    assert code == 0, err
    first = out.splitlines()[0]
    assert first.startswith(f"local_anonymization: wrote {out_dir / 'report.md'}, results.json, "
                            "synthetic_records.csv and 4 figures (")
    assert ", seed 1, 1 run, engine actors" in first
    assert "run(s)" not in out and "1 runs" not in out and "x 1 run (σ" in out
    # the controller's view, per protocol (RR-Clusters: two messages per party, RR-Independent: one)
    assert ("  controller's view (untrusted, run 1): RR-Clusters 120 messages received, kinds RandomizedValues; "
            "RR-Independent 60 messages received, kinds RandomizedValues (what each reveals") in out
    doc = json.loads((out_dir / "results.json").read_text(encoding="utf-8"))
    assert doc["files"] == ["synthetic_records.csv"] and (out_dir / "synthetic_records.csv").is_file()
    # the next run into the directory writes no CSV: the previous run's is removed, and said so
    code, out, err = _main("run", str(_probe_toml(tmp_path)), "--out", str(out_dir), "-q")
    assert code == 0, err
    assert out.splitlines()[0].startswith(f"probe: wrote {out_dir / 'report.md'}, results.json and 1 figure (")
    assert ", seed 5, 2 runs, engine fast)" in out.splitlines()[0]
    removed = out.splitlines()[-1]
    assert removed.startswith("  removed ") and "synthetic_records.csv" in removed and "query_errors.png" in removed
    assert sorted(p.name for p in out_dir.iterdir()) == ["means.png", "report.md", "results.json"]


def test_simulate_runs_a_users_protocol_by_name_from_a_plugin(own_plugin, tmp_path: Path) -> None:  # noqa: ANN001
    code, out, err = _main("simulate", "pairs", "--plugin", "tests.own_plugin", "--set", "pairs=[[0, 1], [3, 4]]",
                           "--set", "epsilon=2", "--n", "150", "--seed", "3", "--json", "--out", str(tmp_path / "p.json"))
    assert (code, err) == (0, ""), err
    doc = json.loads(out)
    assert doc == json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
    assert (doc["protocol"], doc["n"], doc["seed"], doc["engine"], doc["epsilon"]) == ("pairs", 150, 3, "actors", 2.0)
    assert doc["parameters"] == {"pairs": [[0, 1], [3, 4]], "epsilon": 2}
    assert doc["traffic"]["messages"] == 2 * 150 and doc["traffic"]["rounds"] == 2  # one request and reply each
    # the same run on the fast path releases the same values (same seed, same per-party streams)
    code, out, err = _main("simulate", "pairs", "--set", "pairs=[[0, 1], [3, 4]]", "--set", "epsilon=2",
                           "--n", "150", "--seed", "3", "--engine", "fast", "--json")
    assert code == 0 and json.loads(out)["result"] == doc["result"] and json.loads(out)["traffic"] is None
    code, out, err = _main("simulate", "pair-sums", "--set", "pairs=[[0, 1]]", "--set", "epsilon=1",
                           "--n", "40", "--secure-sum", "ring")
    assert code == 0, err
    assert out.startswith("pair-sums: 40 parties, engine actors, seed 1; ε per respondent (sequential) 1\n")
    assert "engine = ring" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("simulate", "pairs", "--plugin", "no_such_plugin"),
         "mprr: error: --plugin no_such_plugin: no module named 'no_such_plugin' (is it on PYTHONPATH, or installed?)\n"),
        (("simulate", "pairs", "--plugin", "tests/own_plugin.py"),
         "mprr: error: --plugin must be a dotted module name (e.g. my_package.protocols), got 'tests/own_plugin.py'\n"),
        (("simulate", "carrier-pigeon"), "mprr: error: protocol must be one of ['RR-Independent', "),
        (("simulate", "clusters", "--set", "p=1.5", "--set", "Tv=10", "--set", "Td=0.1"),
         "mprr: error: p must be a finite number > 0 and < 1, got 1.5 (float)\n"),
        (("simulate", "independent", "--set", "p=0.5", "--n", "1"), "mprr: error: --n must be an integer >= 2, got 1\n"),
        (("simulate", "independent", "--set", "p=0.5", "--columns", "a,b"),
         "mprr: error: --columns applies to --data FILE only\n"),
    ],
)
def test_simulate_errors_name_what_is_wrong(argv: tuple[str, ...], message: str) -> None:
    code, out, err = _main(*argv)
    assert code == 2 and out == "" and err.startswith(message)


def test_run_takes_a_plugins_secure_sum_engine(own_plugin, tmp_path: Path) -> None:  # noqa: ANN001
    code, out, err = _main("run", "local_anonymization", "--plugin", "tests.own_plugin", "--engine", "actors",
                           "--runs", "1", "--set", 'secure_sum="ring"', "--set", 'dependence="4.3"', "--set", "n=60",
                           "--set", "queries=10", "--out", str(tmp_path / "out"), "-q")
    assert code == 0, err
    doc = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert doc["parameters"]["secure_sum"] == "ring"
    traffic = doc["traffic"]["RR-Clusters"]
    assert traffic["equals_closed_form"] and "ring secure sum of L = 461 cells (counted (ring, n = 60" in traffic["closed_form"]["formula"]
    assert traffic["by_kind"]["SealedShares"]["messages"] == 60  # one bundle of ring shares per party


def test_parameter_overrides_parse_one_table_per_option() -> None:
    """``mprr run`` only parses: one table per --set, in order, then the shortcuts; the runner
    merges them (ScenarioConfig.with_overrides)."""
    from scenarios.cli import build_parser, parameter_overrides

    args = build_parser().parse_args(["run", "local_anonymization", "--set", "n=50", "--set", "sweep.a=1",
                                      "--set", "n=60", "--columns", "x, y"])
    assert parameter_overrides(args) == [{"n": 50}, {"sweep": {"a": 1}}, {"n": 60}, {"columns": ["x", "y"]}]
    assert parameter_overrides(build_parser().parse_args(["run", "local_anonymization"])) == []
