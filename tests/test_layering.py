"""Imports go one way (scenarios -> parties -> mprr); mprr has no I/O, asyncio or clocks."""

from __future__ import annotations

import ast
import re
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


LAYERS = ("mprr", "parties", "scenarios")


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(root: Path = ROOT, packages: tuple[str, ...] = LAYERS) -> dict[str, set[str]]:
    """Module -> the modules of ``packages`` it imports, wherever the import stands (module
    level, inside a function, under ``TYPE_CHECKING``).  ``from p import m`` names the module
    ``p.m`` when there is one, else ``p`` itself."""
    paths = {_module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names if alias.name in paths)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
                for alias in node.names:
                    target = f"{base}.{alias.name}"
                    edges.add(target if target in paths else base)
        graph[name] = {m for m in edges if m in paths and m != name}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return sorted(found)


def test_circle_finder_finds_a_circle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a", "d"}, "d": set(), "e": {"e"}}
    assert _circles(graph) == [["a", "b", "c"]]


def test_import_graph_sees_imports_inside_functions_and_type_checking_blocks(tmp_path: Path) -> None:
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.b import B\n",
        "pkg/b.py": "def f():\n    from . import c\n    import pkg.sub.d\n",
        "pkg/c.py": "from pkg import a\nimport numpy\n",
        "pkg/sub/__init__.py": "from ..c import x\n",
        "pkg/sub/d.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    graph = _import_graph(tmp_path, ("pkg",))
    assert graph == {"pkg": set(), "pkg.a": {"pkg.b"}, "pkg.b": {"pkg.c", "pkg.sub.d"}, "pkg.c": {"pkg.a"},
                     "pkg.sub": {"pkg.c"}, "pkg.sub.d": set()}
    assert _circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]
    assert "scenarios.cli" in _import_graph()["mprr.__main__"]  # inside main()


def test_no_import_circles() -> None:
    """No module of mprr, parties or scenarios reaches itself through imports, lazy ones included:
    a shared concept lives in the module that owns it, below both users."""
    assert _circles(_import_graph()) == []


PRIVATE_ALLOWED = {("os", "_exit")}
"""``<name>._<attribute>`` pairs allowed anywhere (a stdlib function named so)."""
NAMEDTUPLE_API = {"_replace", "_asdict", "_fields", "_make"}
SAME_CLASS = {"mprr/privacy/composition.py": {"new._step", "new._last", "new._states", "new._values"}}
"""Accesses to an object of the accessing method's own class, by file: ``PolicyTotals.plus`` fills in
the ``PolicyTotals`` it builds."""


def private_accesses(source: str) -> list[tuple[int, str]]:
    """``(line, "name._attr")`` of every access to another object's private attribute: ``._attr``
    (``attr`` starting with a lowercase letter) on a name, or on an attribute, other than ``self``
    / ``cls`` or a class name; a named tuple's ``_replace`` / ``_asdict`` / ``_fields`` / ``_make``
    is its public API.  Strings and comments are not code (f-strings' expressions are)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Attribute) and re.fullmatch(r"_[a-z]\w*", node.attr)):
            continue
        value = node.value
        name = value.id if isinstance(value, ast.Name) else value.attr if isinstance(value, ast.Attribute) else None
        if (name is None or name in ("self", "cls") or name[0].isupper() or node.attr in NAMEDTUPLE_API
                or (name, node.attr) in PRIVATE_ALLOWED):
            continue
        found.append((node.lineno, f"{name}.{node.attr}"))
    return sorted(found)


def test_the_private_access_check_finds_what_it_should() -> None:
    source = ('net._traffic.x = 1  # ep._put\nself._a = "q._b"\nframe._replace(dst=1)\n'
              'super()._deliver(f)\nRouter._route(self, f)\nf"{link._push}"\nself._net._crashed\n')
    assert private_accesses(source) == [(1, "net._traffic"), (6, "link._push"), (7, "_net._crashed")]


def test_objects_talk_through_public_methods_only() -> None:
    """No module of ``mprr``, ``parties`` or ``scenarios`` reaches into another object's private
    attributes: the router, its links, the party hosts, transports and endpoints, the ledger and
    its releases talk through documented public methods (docs/architecture.md)."""
    offenders = [f"{p.relative_to(ROOT)}:{line} {what}" for package in ("mprr", "parties", "scenarios")
                 for p in sorted((ROOT / package).rglob("*.py"))
                 for line, what in private_accesses(p.read_text(encoding="utf-8"))
                 if what not in SAME_CLASS.get(str(p.relative_to(ROOT)), ())]
    assert offenders == [], f"private attributes of other objects used: {offenders}"
