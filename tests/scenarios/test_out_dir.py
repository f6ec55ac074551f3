"""scenarios.out_dir and ``--out``: a folder holding files mprr did not write is refused unless
``--force``; a rejected, failed or interrupted run leaves no output folder it created behind."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from mprr.errors import ConfigurationError
from scenarios import cli, runner
from scenarios.cli import main
from scenarios.out_dir import foreign_files, prepare_out_dir, removed_on_failure


def _main(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    return main(list(argv), stdout=out, stderr=err), out.getvalue(), err.getvalue()


def test_a_folder_with_files_mprr_did_not_write_is_refused_unless_forced(tmp_path: Path) -> None:
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "report.md").write_text("my own notes\n", encoding="utf-8")
    (mine / "results.json").write_text('{"mine": 1}', encoding="utf-8")  # not an mprr results.json
    code, _, err = _main("run", "lambda_table", "--out", str(mine), "--quiet")
    assert code == 2 and f"--out {str(mine)!r} holds files mprr did not write (report.md, results.json); a run " \
                         "would write its results.json, report.md and figures among them: choose an empty or new " \
                         "folder, or pass --force to write there anyway" in err, err
    assert (mine / "report.md").read_text(encoding="utf-8") == "my own notes\n"  # untouched
    code, _, err = _main("run", "lambda_table", "--out", str(mine), "--quiet", "--force")
    assert code == 0, err
    assert foreign_files(mine) == []  # now mprr's own: a second run needs no --force
    code, _, err = _main("run", "lambda_table", "--out", str(mine), "--quiet")
    assert code == 0, err
    (mine / ".DS_Store").write_bytes(b"")  # hidden entries do not count
    (mine / "notes.txt").write_text("x", encoding="utf-8")
    assert foreign_files(mine) == ["notes.txt"]


def test_a_rejected_run_leaves_no_out_folder_behind(tmp_path: Path) -> None:
    out = tmp_path / "a" / "b"
    code, _, err = _main("run", "local_anonymization", "--set", "n=1", "--out", str(out), "--quiet")
    assert code == 2 and "parameters.n" in err
    assert not (tmp_path / "a").exists()
    existing = tmp_path / "kept"
    existing.mkdir()
    code, _, _ = _main("run", "local_anonymization", "--set", "n=1", "--out", str(existing), "--quiet")
    assert code == 2 and existing.is_dir()  # a folder that was there stays


def test_an_interrupted_run_leaves_no_out_folder_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: Any, out_dir: Path, **kwargs: Any) -> None:
        (out_dir / "half.png").write_bytes(b"...")
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "run", interrupted)
    code, _, err = _main("run", "lambda_table", "--out", str(tmp_path / "o"), "--quiet")
    assert code == 130 and "interrupted" in err and not (tmp_path / "o").exists()


def test_the_library_run_removes_the_folder_it_created_when_the_run_fails(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    def failing(*args: Any) -> None:
        raise ConfigurationError("parameters.x must be y, got z")

    monkeypatch.setattr(runner, "_run_into", failing)
    with pytest.raises(ConfigurationError, match="parameters.x"):
        runner.run("lambda_table", out_dir=tmp_path / "new" / "out")
    assert list(tmp_path.iterdir()) == []


def test_prepare_out_dir_returns_the_folders_it_created(tmp_path: Path) -> None:
    assert prepare_out_dir(tmp_path / "x" / "y") == [tmp_path / "x", tmp_path / "x" / "y"]
    assert prepare_out_dir(tmp_path / "x" / "y") == []
    with pytest.raises(RuntimeError), removed_on_failure([tmp_path / "x", tmp_path / "x" / "y"]):
        raise RuntimeError("boom")
    assert not (tmp_path / "x").exists()
