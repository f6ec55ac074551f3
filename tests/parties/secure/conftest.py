"""Fixtures of the secure-sum tests."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def vectors_of(rng: np.random.Generator):  # noqa: ANN201
    def make(n: int, length: int, max_value: int = 1) -> np.ndarray:
        return rng.integers(0, max_value + 1, size=(n, length))
    return make
