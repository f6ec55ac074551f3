"""Imports go one way (scenarios -> parties -> mprr); mprr has no I/O, asyncio or clocks."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

FORBIDDEN = {
    "mprr": {"asyncio", "parties", "scenarios", "time", "datetime", "socket", "secrets"},
    "parties": {"scenarios"},
}


ENTRY_POINT = Path("mprr/__main__.py")
"""``python -m mprr``: the only module of ``mprr`` that may import ``scenarios`` (lazily)."""


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_go_one_way(package: str) -> None:
    offenders = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        bad = _imports(path) & FORBIDDEN[package]
        if path.relative_to(ROOT) == ENTRY_POINT:
            bad -= {"scenarios"}
        if bad:
            offenders[str(path.relative_to(ROOT))] = sorted(bad)
    assert offenders == {}, f"forbidden imports in {package}: {offenders}"


def test_mprr_does_no_file_io_or_printing() -> None:
    offenders = []
    for path in sorted((ROOT / "mprr").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                if node.func.id in {"print", "open", "input"}:
                    offenders.append(f"{path.name}:{node.lineno} {node.func.id}()")
    assert offenders == []


def test_modules_stay_small() -> None:
    big = {
        str(p.relative_to(ROOT)): n
        for pkg in ("mprr", "parties", "scenarios")
        for p in (ROOT / pkg).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > 700
    }
    assert big == {}, f"modules over 700 lines, split them by concept: {big}"


def test_the_entry_point_imports_scenarios_lazily_and_nothing_imports_it() -> None:
    """``mprr/__main__.py`` imports ``scenarios.cli`` inside a function only, and no module of
    mprr, parties or scenarios imports ``mprr.__main__``."""
    tree = ast.parse((ROOT / ENTRY_POINT).read_text(encoding="utf-8"))
    top_level = {
        (node.module or "").split(".")[0] if isinstance(node, ast.ImportFrom) else alias.name.split(".")[0]
        for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
        for alias in node.names
    }
    assert "scenarios" not in top_level and _imports(ROOT / ENTRY_POINT) == {"__future__", "sys", "scenarios"}
    importers = [
        str(p.relative_to(ROOT)) for pkg in FORBIDDEN.keys() | {"scenarios"}
        for p in (ROOT / pkg).rglob("*.py") if "mprr.__main__" in p.read_text(encoding="utf-8")
    ]
    assert importers == []
