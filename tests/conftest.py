"""Shared test fixtures."""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

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


@pytest.fixture
def own_plugin() -> Iterator[ModuleType]:
    """``tests/own_plugin.py`` imported (as ``--plugin tests.own_plugin`` would): its protocols
    ``pairs`` and ``pair-sums`` and its engine ``ring`` are registered for the test, and removed
    after it, so that the registries of every other test hold the shipped objects only."""
    from mprr.protocols.registry import PROTOCOLS
    from parties.secure.registry import ENGINES

    name = "tests.own_plugin"
    module = importlib.reload(sys.modules[name]) if name in sys.modules else importlib.import_module(name)
    yield module
    for protocol in ("pairs", "pair-sums"):
        PROTOCOLS.unregister(protocol)
    ENGINES.unregister("ring")
