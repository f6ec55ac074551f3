"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from scenarios.datasets import bundled_adult


# MPRR_ADULT_DIR names another copy of UCI Adult (a folder holding adult.data or adult.data.gz);
# without it the tests read the copy shipped in scenarios/data/adult.
ADULT_DIR = os.environ.get("MPRR_ADULT_DIR")


@pytest.fixture
def rng() -> np.random.Generator:
    """A seeded Generator so that every statistical test is reproducible."""
    return np.random.default_rng(20261121)


@pytest.fixture
def adult_path() -> Path:
    """Path of UCI Adult ``adult.data``: the shipped copy (``adult.data.gz``), or the one in
    ``$MPRR_ADULT_DIR``."""
    if not ADULT_DIR:
        return bundled_adult("adult.data")
    folder = Path(ADULT_DIR)
    path = next((p for p in (folder / "adult.data", folder / "adult.data.gz") if p.is_file()), None)
    assert path is not None, f"MPRR_ADULT_DIR={ADULT_DIR!r} holds neither adult.data nor adult.data.gz"
    return path
