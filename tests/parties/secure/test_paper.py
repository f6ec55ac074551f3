"""Engine ``paper``: main paper 4.2 modular secure sum (modulus n + 1, full mesh, broadcast)."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.errors import ConfigurationError, PartyDropped
from parties.faults import FaultPlan
from parties.router import Router
from parties.transport import CONTROLLER
from parties.secure.cost import encoded_size
from parties.secure.run import run_secure_sum
from parties.secure.messages import ShareVector
from parties.secure.paper import PaperEngine
from tests.parties.secure.helpers import assert_controller_saw_no_input, complete, run
from tests.virtual_clock import run_virtual


@pytest.mark.parametrize("n", [2, 3, 5, 9])
@pytest.mark.parametrize("batched", [True, False])
def test_exact_sum_on_random_indicators(n: int, batched: bool, vectors_of) -> None:  # noqa: ANN001
    x = vectors_of(n, 6)
    result, _ = run(PaperEngine(batched=batched, round_timeout=5), x, topology=complete(n))
    assert result.total.tolist() == x.sum(axis=0).tolist()
    assert result.total.dtype == np.int64 and result.dropped == ()
    assert result.contributors == tuple(range(n))


@settings(max_examples=25, deadline=None)
@given(st.integers(2, 6).flatmap(lambda n: st.lists(
    st.lists(st.integers(0, 1), min_size=4, max_size=4), min_size=n, max_size=n)))
def test_property_equals_plaintext_sum(rows: list[list[int]]) -> None:
    x = np.array(rows)
    result, _ = run(PaperEngine(round_timeout=5), x, topology=complete(len(rows)))
    assert result.total.tolist() == x.sum(axis=0).tolist()


def test_all_ones_hits_the_top_of_the_modulus() -> None:
    # every party holds every combination: count n = modulus - 1, the largest exact value
    n = 4
    x = np.ones((n, 3), dtype=np.int64)
    result, _ = run(PaperEngine(round_timeout=5), x, topology=complete(n))
    assert result.total.tolist() == [n] * 3


def test_max_value_widens_the_modulus(vectors_of) -> None:  # noqa: ANN001
    x = vectors_of(3, 5, max_value=7)
    engine = PaperEngine(round_timeout=5, max_value=7)
    assert engine.context(range(3), 5).modulus == 3 * 7 + 1
    result, _ = run(engine, x, topology=complete(3))
    assert result.total.tolist() == x.sum(axis=0).tolist()


@pytest.mark.parametrize("batched", [True, False])
@pytest.mark.parametrize(("n", "L"), [(2, 1), (5, 4), (9, 3), (130, 1)])
def test_traffic_matches_closed_form(batched: bool, n: int, L: int, vectors_of) -> None:  # noqa: ANN001
    """The counting driver's count (cost) is the traffic the memory network measured, per actor
    (n = 130 > 2 yield_every: the parties poll their shares while they send, and a party
    has every share before it is done sending, and stops polling)."""
    result, _ = run(PaperEngine(batched=batched, round_timeout=5), vectors_of(n, L), topology=complete(n))
    stats, cost = result.statistics, result.cost
    assert stats.messages == cost.messages and stats.bytes == cost.bytes
    assert stats.rounds == cost.rounds == (2 if batched else 2 * L)
    for actor in (CONTROLLER, *range(n)):
        assert tuple(stats.sent_by(actor)) == tuple(cost.sent[actor])


@pytest.mark.parametrize(("n", "L"), [(3, 4), (6, 4), (3, 16), (6, 16)])
def test_per_party_cost_is_order_L_times_n(n: int, L: int) -> None:
    """Main paper 4.2: each party sends (n - 1) shares and n broadcasts of L cells (batched),
    i.e. O(sum_{i<j}|A_i||A_j| * n); per combination the same cells in L separate runs."""
    engine = PaperEngine()
    ctx = engine.context(range(n), L)
    cell = ctx.ring.element_bytes
    overhead = encoded_size(ShareVector(ctx.session, -1, np.zeros(0, dtype=ctx.ring.dtype)))
    per_party = engine.cost(ctx).sent[0]
    assert per_party.messages == 2 * n - 1
    assert per_party.bytes == (2 * n - 1) * (overhead + L * cell)
    per_combination = PaperEngine(batched=False).cost(PaperEngine(batched=False).context(range(n), L)).sent[0]
    assert per_combination.messages == L * (2 * n - 1)
    assert per_combination.bytes == L * (2 * n - 1) * (overhead + cell)


def test_parties_learn_the_same_total_and_controller_sees_only_partials(vectors_of) -> None:  # noqa: ANN001
    n = 4
    x = vectors_of(n, 12)
    result, net = run(PaperEngine(round_timeout=5), x, topology=complete(n))
    assert result.total.tolist() == x.sum(axis=0).tolist()
    assert_controller_saw_no_input(net, x, {"PartialSum"})


@pytest.mark.parametrize("crash_at", [1, 2, 4])
def test_crash_mid_protocol_is_a_clear_error(crash_at: int, vectors_of) -> None:  # noqa: ANN001
    # party 2 crashes at its crash_at-th send: 1 = before any share, 2 = after one share,
    # 4 = after its n - 1 = 3 shares, at its first broadcast
    n = 4
    with pytest.raises(PartyDropped, match="no count is returned") as info:
        run(PaperEngine(round_timeout=0.2), vectors_of(n, 3), topology=complete(n),
            faults=FaultPlan(crash={2: crash_at}))
    assert 2 in info.value.parties


def test_needs_full_mesh_and_two_parties(vectors_of) -> None:  # noqa: ANN001
    star = Router(3)
    with pytest.raises(ConfigurationError, match="needs a full mesh"):
        run_virtual(run_secure_sum(PaperEngine(), star, vectors_of(3, 2)))
    with pytest.raises(ConfigurationError, match="at least 2 parties"):
        run_virtual(run_secure_sum(PaperEngine(), Router(1), vectors_of(1, 2)))


def test_bad_inputs_are_configuration_errors() -> None:
    net = Router(2, topology=nx.complete_graph(2))
    with pytest.raises(ConfigurationError, match=r"party 1: vector entries must be integers in \[0, 1\]"):
        run_virtual(run_secure_sum(PaperEngine(), net, np.array([[0, 1], [2, 0]])))
    with pytest.raises(ConfigurationError, match="must hold integers"):
        run_virtual(run_secure_sum(PaperEngine(), net, np.array([[0.5, 1], [0, 0]])))
    with pytest.raises(ConfigurationError, match="same length"):
        run_virtual(run_secure_sum(PaperEngine(), net, {0: np.zeros(2, int), 1: np.zeros(3, int)}))
    with pytest.raises(ConfigurationError, match="yield_every"):
        PaperEngine(yield_every=0)


async def test_each_round_ends_at_its_own_timeout_on_the_virtual_clock() -> None:
    """The asyncio driver gives each round one deadline: party 0's peers never send, its shares
    round ends round_timeout after it began (virtual time), naming the missing peers; the
    controller's broadcast round waits 2 * round_timeout from its own start."""
    import asyncio

    from mprr.errors import RoundTimeout

    net = Router(3, topology=complete(3))
    engine = PaperEngine(round_timeout=0.7)
    ctx = engine.context(range(3), 2, network=net, session="s")
    loop = asyncio.get_running_loop()
    start = loop.time()
    with pytest.raises(RoundTimeout, match=r"party 0 got no ShareVector from 2 parties \[1, 2\] within 0.7 s"):
        await engine.party(net.endpoint(0), np.zeros(2, dtype=np.int64), ctx)
    assert loop.time() - start == pytest.approx(0.7)
    start = loop.time()
    with pytest.raises(PartyDropped, match=r"no broadcast r_j from 3 parties \[0, 1, 2\] within 1.4 s"):
        await engine.controller(net.endpoint(CONTROLLER), ctx)
    assert loop.time() - start == pytest.approx(1.4)
