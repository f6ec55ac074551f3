"""Shared test fixtures."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

# UCI Adult lives beside the checkout (../shared/data/adult); MPRR_ADULT_DIR overrides it.
ADULT_DIR = Path(
    os.environ.get("MPRR_ADULT_DIR", Path(__file__).resolve().parents[2] / "shared" / "data" / "adult")
)


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
