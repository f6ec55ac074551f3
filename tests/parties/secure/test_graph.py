"""Engine ``graph``: additive shares to the neighbours of a sparse graph, partials to the controller."""

from __future__ import annotations

import networkx as nx
import pytest

from mprr.errors import ConfigurationError, PartyDropped
from parties.faults import FaultPlan
from parties.router import Router
from parties.transport import CONTROLLER
from parties.secure.run import run_secure_sum
from parties.secure.graph import GraphEngine, ring_modulus
from tests.parties.secure.helpers import assert_controller_saw_no_input, run
from tests.virtual_clock import run_virtual


def graph_of(engine: GraphEngine, n: int) -> nx.Graph:
    ctx = engine.context(range(n), 1)
    return nx.Graph((i, j) for i in ctx.neighbours for j in ctx.neighbours[i])


@pytest.mark.parametrize(("n", "topology", "degree"), [
    (2, "regular", 4), (3, "regular", 2), (8, "regular", 3), (9, "harary", 3),
    (12, "regular", 4), (7, "complete", 1),
])
@pytest.mark.parametrize("relay", [False, True])
def test_exact_sum(n: int, topology: str, degree: int, relay: bool, vectors_of) -> None:  # noqa: ANN001
    engine = GraphEngine(topology=topology, degree=degree, round_timeout=5)
    x = vectors_of(n, 7)
    result, _ = run(engine, x, topology=None if relay else graph_of(engine, n))
    assert result.total.tolist() == x.sum(axis=0).tolist()
    assert result.dropped == ()
    # relayed shares: each party's channel key parsed once, by its neighbours, into the session's memo
    assert len(result.context.public_keys) == (n if relay else 0)


@pytest.mark.parametrize("relay", [False, True])
@pytest.mark.parametrize(("n", "L"), [(3, 1), (10, 6), (25, 40)])
def test_traffic_matches_closed_form_and_relay_counts_the_extra_hop(relay: bool, n: int, L: int,
                                                                    vectors_of) -> None:  # noqa: ANN001
    """The counting driver's count (cost) is the traffic the memory network measured, per actor."""
    engine = GraphEngine(degree=4, round_timeout=5)
    result, _ = run(engine, vectors_of(n, L), topology=None if relay else graph_of(engine, n))
    stats, cost = result.statistics, result.cost
    assert (stats.messages, stats.bytes, stats.rounds) == (cost.messages, cost.bytes, cost.rounds)
    for actor in (CONTROLLER, *range(n)):
        assert tuple(stats.sent_by(actor)) == tuple(cost.sent[actor])
    if relay:  # each share crosses two links (party -> controller -> party)
        assert stats.sent_by(CONTROLLER).messages == 2 * n and stats.rounds == 3
    else:
        assert stats.sent_by(CONTROLLER).messages == 0
        k = min(4, n - 1)
        assert all(stats.sent_by(p).messages == k + 1 for p in range(n))  # k shares + 1 partial


@pytest.mark.parametrize("relay", [False, True])
def test_controller_view_holds_no_input(relay: bool, vectors_of) -> None:  # noqa: ANN001
    n = 6
    engine = GraphEngine(degree=3, topology="harary", round_timeout=5)
    x = vectors_of(n, 16)
    _, net = run(engine, x, topology=None if relay else graph_of(engine, n))
    allowed = {"PartialSum", "PublicKeys", "SealedShares"} if relay else {"PartialSum"}
    assert_controller_saw_no_input(net, x, allowed)


@pytest.mark.parametrize("relay", [False, True])
@pytest.mark.parametrize("crash_at", [1, 2, 3])
def test_crash_is_a_clear_error_never_a_wrong_count(relay: bool, crash_at: int, vectors_of) -> None:  # noqa: ANN001
    n = 6
    engine = GraphEngine(degree=2, topology="harary", round_timeout=0.2)
    with pytest.raises(PartyDropped, match="no count is returned") as info:
        run(engine, vectors_of(n, 3), topology=None if relay else graph_of(engine, n),
            faults=FaultPlan(crash={4: crash_at}))
    assert 4 in info.value.parties


def test_disconnected_graph_and_bad_configuration_rejected(vectors_of) -> None:  # noqa: ANN001
    with pytest.raises(ConfigurationError, match="not connected|no connected"):
        GraphEngine(degree=1).context(range(6), 3)  # a perfect matching
    with pytest.raises(ConfigurationError, match="n \\* degree even"):
        GraphEngine(degree=3).context(range(7), 3)
    with pytest.raises(ConfigurationError, match="topology must be one of"):
        GraphEngine(topology="ring")
    with pytest.raises(ConfigurationError, match="at least 2 parties"):
        GraphEngine().context([0], 3)
    with pytest.raises(ConfigurationError, match="relay=False"):
        run_virtual(run_secure_sum(GraphEngine(degree=2, relay=False), Router(4), vectors_of(4, 2)))


def test_modulus_choice() -> None:
    assert ring_modulus(10, 1) == 2**32
    assert ring_modulus(2**20, 2**12 - 1) == 2**32
    assert ring_modulus(2**20, 2**12) == 2**64
    assert ring_modulus(2, 2**62 - 1) == 2**64
    with pytest.raises(ConfigurationError, match=r"max_value=16777216 with n=1099511627776 parties .* max_value must be <= 8388607 for n=1099511627776"):
        ring_modulus(2**40, 2**24)


def test_large_entries_exact(vectors_of) -> None:  # noqa: ANN001
    x = vectors_of(5, 4, max_value=10**9)
    result, _ = run(GraphEngine(degree=2, topology="harary", max_value=10**9, round_timeout=5), x)
    assert result.total.tolist() == x.sum(axis=0).tolist()
