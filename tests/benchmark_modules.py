"""The scripts of ``benchmarks/`` imported as modules, for their tests."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


@contextmanager
def benchmark_module(name: str) -> Iterator[ModuleType]:
    """``benchmarks/<name>.py`` imported as module ``name``, as when it runs as a script (its
    folder first on ``sys.path``, for its sibling modules; registered in ``sys.modules``, where
    its dataclasses look their module up); both undone on exit."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    before = sys.modules.get(name)
    sys.path.insert(0, str(BENCHMARKS))
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(BENCHMARKS))
        if before is None:
            sys.modules.pop(name, None)
        else:
            sys.modules[name] = before
