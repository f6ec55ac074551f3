"""Engine registry: names of issue 5 -> engine classes."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine
from parties.secure.registry import ENGINES, EngineEntry, engine_needs_mesh, make_engine, register_engine, sized_engine


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


def test_a_users_engine_registered_by_name_runs_in_a_sum(vectors_of, own_plugin) -> None:  # noqa: ANN001
    from tests.parties.secure.helpers import run

    RingEngine = own_plugin.RingEngine

    entry = ENGINES.lookup("ring")  # registered by the plugin through register_engine
    assert entry.factory is RingEngine and not engine_needs_mesh("ring")
    engine = sized_engine("ring", degree=6, round_timeout=5.0, seed=3)  # the degree is the ring's own
    assert isinstance(engine, RingEngine) and (engine.degree, engine.seed, engine.relay) == (2, 3, True)
    vectors = vectors_of(9, 5, max_value=3)
    result, net = run(make_engine("ring", max_value=3), vectors)
    np.testing.assert_array_equal(result.total, vectors.sum(axis=0))  # the exact sum
    # every party shares with its two ring neighbours: the engine's own closed form holds
    cost = result.cost
    assert (result.statistics.messages, result.statistics.bytes) == (cost.messages, cost.bytes)


def test_engine_registration_refuses_what_it_cannot_build(own_plugin) -> None:  # noqa: ANN001
    RingEngine = own_plugin.RingEngine

    with pytest.raises(ConfigurationError, match=r"secure-sum engine name 'ring' is already registered \(by 'ring'\)"):
        register_engine(EngineEntry("circle", RingEngine, aliases=("Ring",)))
    with pytest.raises(ConfigurationError, match=r"entry must be an EngineEntry, got <class 'tests.own_plugin.RingEngine'>"):
        register_engine(RingEngine)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"factory of engine 'broken' must be callable, got 3"):
        EngineEntry("broken", 3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"bad option for secure-sum engine 'ring': it takes no \['degree'\]; "
                                                 r"configurable: \['seed', 'round_timeout', 'max_value'\]"):
        make_engine("ring", degree=4)


def test_a_run_accepts_the_kinds_of_its_own_engine_only() -> None:
    from parties.secure import messages as secure
    from parties.secure.registry import engine_kinds, party_kinds

    assert engine_kinds("graph") == ENGINES.lookup("graph").messages
    assert engine_kinds(make_engine("masked-sparse")) == ENGINES.lookup("masked-sparse").messages
    assert secure.MaskedInput not in engine_kinds("paper") and secure.MaskedInput in engine_kinds("masked")
    assert set(engine_kinds("paper")) < set(party_kinds())

    class Unregistered(PaperEngine):
        name = "not-registered"

    assert engine_kinds(Unregistered()) == party_kinds()  # its kinds cannot be known: every registered engine's


def test_an_entry_that_declares_no_messages_speaks_every_registered_kind() -> None:
    from parties.secure.registry import engine_kinds, party_kinds

    class Quiet(PaperEngine):
        name = "quiet-paper"

    register_engine(EngineEntry("quiet-paper", Quiet))
    try:
        assert engine_kinds("quiet-paper") == party_kinds()
    finally:
        ENGINES.unregister("quiet-paper")
