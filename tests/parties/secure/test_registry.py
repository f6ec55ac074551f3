"""Engine registry: names of issue 5 -> engine classes."""

from __future__ import annotations

import pytest

from mprr.errors import ConfigurationError
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine
from parties.secure.registry import ENGINES, make_engine


def test_names_and_options() -> None:
    assert list(ENGINES) == ["paper", "graph", "graph-direct", "masked", "masked-sparse"]
    assert isinstance(make_engine("paper", batched=False), PaperEngine)
    engine = make_engine("masked", topology="regular", degree=6, threshold=4)
    assert isinstance(engine, MaskedEngine) and engine.threshold == 4
    assert isinstance(make_engine("graph"), GraphEngine)
    assert make_engine("graph-direct").relay is False
    sparse = make_engine("masked-sparse", degree=6)
    assert isinstance(sparse, MaskedEngine) and sparse.topology == "regular" and sparse.degree == 6
    assert make_engine(sparse) is sparse


def test_errors() -> None:
    with pytest.raises(ConfigurationError, match="must be one of \\['paper', 'graph', 'graph-direct', 'masked', 'masked-sparse'\\] or a SecureSumEngine, got 'shamir'"):
        make_engine("shamir")
    with pytest.raises(ConfigurationError, match="bad option for secure-sum engine 'paper'"):
        make_engine("paper", degree=3)
