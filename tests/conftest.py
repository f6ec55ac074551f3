"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest


def _beside_checkout(*parts: str) -> Path:
    """``shared/<parts>`` in the nearest folder above this checkout that has it.

    The workplace keeps the papers and UCI Adult in a ``shared`` folder beside the checkout; a
    worktree or a CI clone may sit a level deeper, so every ancestor is tried.  When none has it,
    the path beside the checkout is returned (a skip then names where it was looked for).
    """
    tests = Path(__file__).resolve().parent
    for ancestor in tests.parents:
        if (candidate := ancestor.joinpath("shared", *parts)).exists():
            return candidate
    return tests.parents[1].joinpath("shared", *parts)


# MPRR_ADULT_DIR and MPRR_PAPERS_DIR override where UCI Adult and the papers are looked for.
ADULT_DIR = Path(os.environ.get("MPRR_ADULT_DIR") or _beside_checkout("data", "adult"))
PAPERS_DIR = Path(os.environ.get("MPRR_PAPERS_DIR") or _beside_checkout("papers"))


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded Generator so that every statistical test is reproducible."""
    return np.random.default_rng(20261121)


@pytest.fixture
def adult_path() -> Path:
    """Path of UCI Adult ``adult.data``; skips the test when the file is not available."""
    path = ADULT_DIR / "adult.data"
    if not path.exists():
        pytest.skip(f"UCI Adult not available at {path}")
    return path


@pytest.fixture
def main_paper() -> str:
    """Text of the main paper (``multi-dimensional-randomized-response.txt``); skips the test when
    it is not available."""
    path = PAPERS_DIR / "multi-dimensional-randomized-response.txt"
    if not path.exists():
        pytest.skip(f"main paper text not available at {path}")
    return path.read_text(encoding="utf-8")
