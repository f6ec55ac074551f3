"""Engine registry: names of issue 5 -> engine classes."""

from __future__ import annotations

import pytest

from mprr.errors import ConfigurationError
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine
from parties.secure.registry import ENGINES, engine_needs_mesh, make_engine, sized_engine


def test_names_and_options() -> None:
    assert list(ENGINES) == ["paper", "paper-per-combination", "graph", "graph-direct", "masked", "masked-sparse"]
    assert make_engine("paper-per-combination").batched is False
    assert isinstance(make_engine("paper", batched=False), PaperEngine)
    engine = make_engine("masked", topology="regular", degree=6, threshold=4)
    assert isinstance(engine, MaskedEngine) and engine.threshold == 4
    assert isinstance(make_engine("graph"), GraphEngine)
    assert make_engine("graph-direct").relay is False
    sparse = make_engine("masked-sparse", degree=6)
    assert isinstance(sparse, MaskedEngine) and sparse.topology == "regular" and sparse.degree == 6
    assert make_engine(sparse) is sparse


def test_errors() -> None:
    with pytest.raises(ConfigurationError, match="must be one of \\['paper', 'paper-per-combination', 'graph', 'graph-direct', 'masked', 'masked-sparse'\\] or a SecureSumEngine, got 'shamir'"):
        make_engine("shamir")
    with pytest.raises(ConfigurationError, match="bad option for secure-sum engine 'paper'"):
        make_engine("paper", degree=3)


def test_sized_engine_puts_the_sparse_engines_on_a_regular_graph() -> None:
    graph = sized_engine("graph", degree=6, round_timeout=2.0)
    assert (graph.topology, graph.degree, graph.relay, graph.round_timeout) == ("regular", 6, True, 2.0)
    masked = sized_engine("masked-sparse", degree=5, round_timeout=1.0, threshold=4)
    assert (masked.topology, masked.degree, masked.threshold) == ("regular", 5, 4)
    assert sized_engine("masked", degree=5, round_timeout=1.0).topology == "complete"
    assert [engine_needs_mesh(k) for k in ENGINES] == [True, True, False, True, False, False]
