"""Benchmark: the files a parameter's value passes through, from the command line to its use.

Issue 28 asks that following RR-Clusters' ``p`` from the CLI to its use visit at most 12 files
without a return.  This runs ``mprr run local_anonymization --set p=0.6 --engine actors`` (or the
arguments given) under ``sys.setprofile`` and reports the path of the value 0.6 until the use
(``--use FUNCTION`` or ``--use FILE:FUNCTION``; default :func:`mprr.matrices.keep_or_uniform`,
where the matrix is built from p: main paper 6.3.1) first receives it; ``--use keep_or_uniform``
(a name alone) stops at the first function of that name, ``MatrixSpec.keep_or_uniform``, the
spec's constructor, where the protocol chooses its randomization; ``--within FILE``:
the first receipt with a frame of FILE on its call stack (``parties/cohort.py``: a party's own
build, from the request it was sent):

- a frame *holds* the value when its arguments (its locals at the call) or, at its return, its
  return value (for ``__init__`` / ``__post_init__``: ``self``) contain it: as a float, as the
  command-line text ``p=0.6``, inside a mapping, a sequence, an argparse namespace or a
  dataclass's fields (5 levels deep);
- the *path* is the frames on the use's call stack that hold the value (the spine), and the
  calls a path frame made before its next spine callee whose return value holds it (they built
  or transformed it: the producers), with their own producers, in call order;
- *files* are the distinct repository files of the path (tests and the virtual environment
  excluded); a call entering a file the path visited before and left (the file is on none of the
  caller frames: unwinding to a caller, or a caller calling a helper of its own file, is neither)
  is a *return* when the path has not yet gone from its caller's file to that file, and a
  *repeat* when it has (the same step again: a loop, such as one matrix spec per attribute).

``--all`` lists every frame that holds the value instead (side checks and the plan included).

Run: ``.venv/bin/python benchmarks/param_path.py [--all] [--value 0.6] [--use [FILE:]FUNCTION]
[--within FILE] [-- mprr arguments]``
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

REPO = str(Path(__file__).resolve().parents[1])


class Node:
    """One call of a repository function: its file, name, caller, and whether it held the value
    at its call (``held``) or returned it (``produced``); ``t`` orders calls."""

    __slots__ = ("children", "file", "held", "name", "parent", "produced", "t")

    def __init__(self, file: str, name: str, parent: Node | None, held: bool, t: int) -> None:
        self.file, self.name, self.parent, self.held, self.t = file, name, parent, held, t
        self.children: list[Node] = []
        self.produced = False


class Tracer:
    """The call tree of the repository's frames, until the use receives the value."""

    def __init__(self, value: float, use: str, within: str | None = None) -> None:
        self.value, self.use, self.within = value, use, within
        self.root = Node("<root>", "<root>", None, True, 0)
        self.current = [self.root]
        self.frames: dict[int, Node] = {}
        self.clock = 0
        self.found: Node | None = None

    def holds(self, x: Any, depth: int = 0, seen: set[int] | None = None) -> bool:
        seen = set() if seen is None else seen
        if depth > 5 or id(x) in seen:
            return False
        seen.add(id(x))
        if isinstance(x, bool) or x is None or isinstance(x, (int, bytes, type)):
            return False
        if isinstance(x, float):
            return x == self.value
        if isinstance(x, str):
            return x.endswith(f"={self.value}")
        try:
            if isinstance(x, Mapping):
                return any(self.holds(v, depth + 1, seen) for v in list(x.values())[:100])
            if isinstance(x, (list, tuple)):
                return any(self.holds(v, depth + 1, seen) for v in list(x)[:100])
            if isinstance(x, argparse.Namespace):
                return self.holds(vars(x), depth + 1, seen)
            if dataclasses.is_dataclass(x):
                return any(self.holds(getattr(x, f.name, None), depth + 1, seen) for f in dataclasses.fields(x))
        except Exception:  # noqa: BLE001 - a value that cannot be inspected holds nothing
            return False
        return False

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event not in ("call", "return") or self.found is not None:
            return
        filename = frame.f_code.co_filename
        if not filename.startswith(REPO) or "/.venv/" in filename or "/tests/" in filename:
            return
        if event == "call":
            self.clock += 1
            parent = self.current[-1]
            node = Node(os.path.relpath(filename, REPO), frame.f_code.co_name, parent,
                        any(self.holds(v) for v in frame.f_locals.values()), self.clock)
            parent.children.append(node)
            self.current.append(node)
            self.frames[id(frame)] = node
            if node.held and self.use in (node.name, f"{node.file}:{node.name}") and (
                    self.within is None or any(up.file == self.within for up in ancestors(node))):
                self.found = node
                sys.setprofile(None)
            return
        done = self.frames.pop(id(frame), None)
        if done is None:
            return
        out = frame.f_locals.get("self") if frame.f_code.co_name in ("__init__", "__post_init__") else arg
        done.produced = self.holds(out)
        while self.current and self.current[-1] is not done:
            self.current.pop()
        if self.current:
            self.current.pop()


def ancestors(node: Node) -> list[Node]:
    """``node`` and its callers, innermost first."""
    out: list[Node] = []
    up: Node | None = node
    while up is not None:
        out.append(up)
        up = up.parent
    return out


def producers(node: Node, before: float) -> list[Node]:
    """The calls of ``node`` made before ``before`` that returned the value, with their own."""
    out: list[Node] = []
    for child in node.children:
        if child.t >= before:
            break
        if child.produced:
            out.append(child)
            out.extend(producers(child, float("inf")))
    return out


def every_holder(node: Node) -> list[Node]:
    out: list[Node] = []
    for child in node.children:
        if child.held:
            out.append(child)
        out.extend(every_holder(child))
    return out


def path_of(tracer: Tracer, use: Node, everything: bool) -> list[Node]:
    if everything:
        return sorted(every_holder(tracer.root), key=lambda n: n.t) + [use]
    spine: list[Node] = []
    node: Node | None = use
    while node is not None and node is not tracer.root:
        if node.held:
            spine.append(node)
        node = node.parent
    spine.reverse()
    path: list[Node] = []
    for i, step in enumerate(spine):
        following = spine[i + 1].t if i + 1 < len(spine) else float("inf")
        path.append(step)
        path.extend(producers(step, following))
    return sorted(path, key=lambda n: n.t)


def report(path: list[Node], everything: bool) -> tuple[int, int, int]:
    """Print the path file by file; return (files, returns, repeats) (module docstring)."""
    seen: list[str] = []
    steps: set[tuple[str, str]] = set()  # (caller's file, file) the path entered a file by
    returns = repeats = 0
    previous: str | None = None
    lines: list[tuple[str, str, list[str]]] = []
    for node in path:
        callers = {up.file for up in ancestors(node.parent)} if node.parent is not None else set()
        step = (node.parent.file if node.parent is not None else "", node.file)
        mark = ""
        if node.file in seen and node.file not in callers:
            mark = "<- REPEAT " if step in steps else "<- RETURN "
            repeats += step in steps
            returns += step not in steps
        if node.file != step[0]:
            steps.add(step)
        if node.file not in seen:
            seen.append(node.file)
        if node.file == previous and not mark:  # (the same file again, by a helper of its own: one line)
            lines[-1][2].append(node.name)
            continue
        lines.append((mark, node.file, [node.name]))
        previous = node.file
    for i, (mark, file, names) in enumerate(lines):
        print(f"{i + 1:3d} {mark or ' ' * 10}{file}: {', '.join(dict.fromkeys(names))}")
    print(f"{'every frame holding the value' if everything else 'path'}: {len(seen)} files, {returns} returns "
          f"({repeats} repeats of a step already taken)")
    return len(seen), returns, repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all", action="store_true", help="every frame holding the value, not the path")
    parser.add_argument("--value", type=float, default=0.6, help="the value followed (default 0.6)")
    parser.add_argument("--use", default="mprr/matrices.py:keep_or_uniform",
                        help="the function where the path ends: FUNCTION or FILE:FUNCTION")
    parser.add_argument("--within", default=None, metavar="FILE",
                        help="the first use with a frame of FILE (repository path) on its call stack")
    parser.add_argument("mprr", nargs="*", help="mprr's arguments (after --)")
    args = parser.parse_args()
    sys.path.insert(0, REPO)
    from scenarios.cli import main as mprr_main

    with tempfile.TemporaryDirectory(prefix="mprr-param-path-") as out:
        argv = args.mprr or ["run", "local_anonymization", "--set", f"p={args.value}", "--quiet",
                             "--engine", "actors", "--out", out, "--force"]
        print(f"mprr {' '.join(argv)}: the path of {args.value} to {args.use}")
        tracer = Tracer(args.value, args.use, args.within)
        sys.setprofile(tracer.profile)
        try:
            mprr_main(argv)
        except SystemExit:
            pass
        finally:
            sys.setprofile(None)
    if tracer.found is None:
        raise SystemExit(f"{args.use} never received {args.value}"
                         + (f" with {args.within} on its call stack" if args.within else ""))
    report(path_of(tracer, tracer.found, args.all), args.all)


if __name__ == "__main__":
    main()
