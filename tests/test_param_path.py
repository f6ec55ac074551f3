"""benchmarks/param_path.py: a value's path counted in files, returns and repeats; a use found by file and by the
call stack it needs."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest

from tests.benchmark_modules import benchmark_module


@pytest.fixture()
def param_path() -> Iterator[ModuleType]:
    with benchmark_module("param_path") as module:
        yield module


def _call(module: ModuleType, parent: object, file: str, name: str, t: int) -> object:
    node = module.Node(file, name, parent, True, t)
    parent.children.append(node)  # type: ignore[attr-defined]
    return node


def test_a_loop_into_a_file_is_a_repeat_and_a_new_way_back_a_return(param_path: ModuleType,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    root = param_path.Node("<root>", "<root>", None, True, 0)
    cli = _call(param_path, root, "cli.py", "main", 1)
    state = _call(param_path, cli, "state.py", "resolve", 2)
    wire = _call(param_path, state, "wire.py", "specs", 3)
    loop = []
    for k in range(3):  # one spec per attribute, each made by the wire module's generator
        step = _call(param_path, wire, "wire.py", "<genexpr>", 4 + 2 * k)
        loop += [step, _call(param_path, step, "families.py", "spec", 5 + 2 * k)]
    matrix = _call(param_path, state, "state.py", "matrix", 10)
    build = _call(param_path, matrix, "families.py", "build", 11)  # back into families.py, from state.py
    use = _call(param_path, build, "matrices.py", "keep_or_uniform", 12)
    path = [cli, state, wire, *loop, matrix, build, use]
    assert param_path.report(path, False) == (5, 1, 2)
    out = capsys.readouterr().out
    assert out.count("<- REPEAT") == 2 and out.count("<- RETURN") == 1
    assert "path: 5 files, 1 returns (2 repeats of a step already taken)" in out
    # a caller calling a helper of its own file, or unwinding to a caller's file, is neither
    again = _call(param_path, use, "state.py", "check", 13)
    assert param_path.report([cli, state, wire, use, again], False) == (4, 0, 0)
    # a file entered again straight after its own last node, from a file off the path, is a return, then repeats
    capsys.readouterr()
    make = _call(param_path, cli, "x.py", "make", 14)
    other = _call(param_path, cli, "z.py", "other", 15)  # (off the path)
    uses = [_call(param_path, other, "x.py", "use", 16 + k) for k in range(2)]
    assert param_path.report([cli, make, *uses], False) == (2, 1, 1)
    assert capsys.readouterr().out.count("x.py") == 3  # (each entry its own line)


class _Code:
    def __init__(self, filename: str, name: str) -> None:
        self.co_filename, self.co_name = filename, name


class _Frame:
    def __init__(self, filename: str, name: str, **f_locals: object) -> None:
        self.f_code, self.f_locals = _Code(filename, name), f_locals


def test_the_use_is_found_by_file_and_function_and_by_a_file_on_its_stack(param_path: ModuleType) -> None:
    repo = param_path.REPO

    def calls(tracer: object) -> object:
        """The controller's spec, its build, then a party's build (each frame called, never returned)."""
        for file, name in (("mprr/protocols/budget.py", "chosen_specs"), ("mprr/matrix_families.py", "keep_or_uniform"),
                           ("mprr/matrices.py", "keep_or_uniform"), ("parties/cohort.py", "release"),
                           ("mprr/matrices.py", "keep_or_uniform")):
            tracer.profile(_Frame(f"{repo}/{file}", name, p=0.6), "call", None)  # type: ignore[attr-defined]
        return tracer.found  # type: ignore[attr-defined]

    spec = calls(param_path.Tracer(0.6, "keep_or_uniform"))  # the name alone: the first of that name
    assert (spec.file, spec.t) == ("mprr/matrix_families.py", 2)
    built = calls(param_path.Tracer(0.6, "mprr/matrices.py:keep_or_uniform"))
    assert (built.file, built.t) == ("mprr/matrices.py", 3)
    party = calls(param_path.Tracer(0.6, "mprr/matrices.py:keep_or_uniform", "parties/cohort.py"))
    assert (party.file, party.t) == ("mprr/matrices.py", 5)
    assert calls(param_path.Tracer(0.6, "mprr/matrices.py:keep_or_uniform", "parties/shard.py")) is None
    assert calls(param_path.Tracer(0.5, "keep_or_uniform")) is None  # (a value the frames do not hold)
