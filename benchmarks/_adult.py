"""Where the benchmarks look for UCI Adult when no path is given.

``$MPRR_ADULT_DIR/adult.data`` (or ``adult.data.gz``) if the variable is set, else the copy
shipped with the package (``scenarios/data/adult/adult.data.gz``).
"""

from __future__ import annotations

import os
from pathlib import Path

from scenarios.datasets import bundled_adult

__all__ = ["DEFAULT_ADULT"]


def _default_adult() -> Path:
    env = os.environ.get("MPRR_ADULT_DIR")
    if env:
        plain = Path(env) / "adult.data"
        return plain if plain.is_file() or not (Path(env) / "adult.data.gz").is_file() else Path(env) / "adult.data.gz"
    return bundled_adult("adult.data")


DEFAULT_ADULT = _default_adult()
