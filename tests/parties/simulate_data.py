"""The data sets of the ``test_simulate_*`` modules: ``data`` (N = 240 parties with planted
clusters) and ``small`` (SECURE_N = 30 parties, for secure sums over a full mesh), run with SEED."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.synthetic import planted_clusters

N = 240
SEED = 3
SECURE_N = 30


@pytest.fixture(scope="module")
def data() -> Dataset:
    return planted_clusters(N, rng=np.random.default_rng(11), strength=0.8).dataset


@pytest.fixture(scope="module")
def small() -> Dataset:
    return planted_clusters(SECURE_N, rng=np.random.default_rng(8), strength=0.8).dataset
