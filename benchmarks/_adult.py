"""Where the benchmarks look for UCI Adult when no path is given.

``MPRR_ADULT_DIR`` if set, else ``shared/data/adult/adult.data`` in the nearest folder above
this checkout that has it (the workplace keeps the data beside the checkout; a worktree may sit
a level deeper), else the path beside the checkout, which the scripts name when it is missing.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_ADULT"]


def _default_adult() -> Path:
    env = os.environ.get("MPRR_ADULT_DIR")
    if env:
        return Path(env) / "adult.data"
    checkout = Path(__file__).resolve().parents[1]
    for ancestor in checkout.parents:
        if (candidate := ancestor / "shared" / "data" / "adult" / "adult.data").exists():
            return candidate
    return checkout.parent / "shared" / "data" / "adult" / "adult.data"


DEFAULT_ADULT = _default_adult()
