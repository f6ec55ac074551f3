"""Engine ``masked``: Bonawitz et al. 2017 pairwise masks with Shamir recovery of dropouts."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError, SecureSumAborted
from parties.network import CONTROLLER, FaultPlan
from parties.secure.masked import MaskedEngine, abscissa
from parties.secure.topology import build_neighbourhoods
from tests.parties.secure.helpers import assert_controller_saw_no_input, run

CONTROLLER_KINDS = {"PublicKeys", "SealedShares", "MaskedInput", "SurvivorSignature", "UnmaskShares"}


@pytest.mark.parametrize("n", [2, 3, 4, 8])
def test_exact_sum_complete_graph(n: int, vectors_of) -> None:  # noqa: ANN001
    x = vectors_of(n, 9)
    result, _ = run(MaskedEngine(round_timeout=5), x)
    assert result.total.tolist() == x.sum(axis=0).tolist()
    assert result.dropped == () and result.failures == {}


@pytest.mark.parametrize(("topology", "degree", "n"), [("regular", 4, 12), ("harary", 3, 11)])
def test_exact_sum_sparse_graph(topology: str, degree: int, n: int, vectors_of) -> None:  # noqa: ANN001
    x = vectors_of(n, 5)
    result, _ = run(MaskedEngine(topology=topology, degree=degree, round_timeout=5), x)
    assert result.total.tolist() == x.sum(axis=0).tolist()


def test_wide_entries_use_the_64_bit_ring(vectors_of) -> None:  # noqa: ANN001
    x = vectors_of(3, 4, max_value=2**31)
    engine = MaskedEngine(round_timeout=5, max_value=2**31)
    assert engine.context(range(3), 4).modulus == 2**64
    result, _ = run(engine, x)
    assert result.total.tolist() == x.sum(axis=0).tolist()


@pytest.mark.parametrize(("crash_at", "stage"), [
    (1, "before advertising keys"), (2, "after keys, before sharing"),
    (3, "after sharing, before the masked input"), (4, "after the masked input"),
    (5, "after signing its survivor set"),
])
def test_one_dropout_is_recovered(crash_at: int, stage: str, vectors_of) -> None:  # noqa: ANN001
    n = 6
    x = vectors_of(n, 8)
    result, _ = run(MaskedEngine(round_timeout=0.25), x, faults=FaultPlan(crash={2: crash_at}))
    if crash_at < 4:  # party 2's input is not in the sum, everybody else's is, exactly
        assert result.dropped == (2,), stage
        assert result.total.tolist() == np.delete(x, 2, axis=0).sum(axis=0).tolist()
    else:  # its masked input arrived: it counts; its shares are replaced by the others'
        assert result.dropped == ()
        assert result.total.tolist() == x.sum(axis=0).tolist()


def test_several_dropouts_after_sharing_in_a_sparse_graph(vectors_of) -> None:  # noqa: ANN001
    n = 12
    x = vectors_of(n, 6)
    engine = MaskedEngine(topology="harary", degree=4, threshold=3, round_timeout=0.25)
    result, _ = run(engine, x, faults=FaultPlan(crash={1: 3, 6: 3}))
    assert result.dropped == (1, 6)
    assert result.total.tolist() == np.delete(x, [1, 6], axis=0).sum(axis=0).tolist()


def test_fewer_survivors_than_threshold_aborts(vectors_of) -> None:  # noqa: ANN001
    n = 4  # holders 4, default t = 3
    with pytest.raises(SecureSumAborted, match="aborted at masked input collection: 2 of 4") as info:
        run(MaskedEngine(round_timeout=0.2), vectors_of(n, 3), faults=FaultPlan(crash={0: 3, 3: 3}))
    assert info.value.survivors == 2 and info.value.threshold == 3


def test_too_few_shares_to_unmask_aborts(vectors_of) -> None:  # noqa: ANN001
    # t = 4 of 5 holders: party 4 drops before its masked input, two survivors sign their
    # survivor set but never answer the unmask request -> only 2 shares of party 4's key remain
    with pytest.raises(SecureSumAborted, match="cannot reconstruct"):
        run(MaskedEngine(threshold=4, round_timeout=0.2), vectors_of(5, 3),
            faults=FaultPlan(crash={4: 3, 0: 5, 1: 5}))


def test_controller_view_holds_no_input(vectors_of) -> None:  # noqa: ANN001
    x = vectors_of(5, 16)
    _, net = run(MaskedEngine(round_timeout=5), x)
    assert_controller_saw_no_input(net, x, CONTROLLER_KINDS)


def test_controller_view_with_dropout_holds_no_input(vectors_of) -> None:  # noqa: ANN001
    x = vectors_of(5, 16)
    _, net = run(MaskedEngine(round_timeout=0.25), x, faults=FaultPlan(crash={3: 3}))
    assert_controller_saw_no_input(net, x, CONTROLLER_KINDS)


def test_traffic_matches_closed_form(vectors_of) -> None:  # noqa: ANN001
    n = 7
    result, _ = run(MaskedEngine(topology="harary", degree=4, round_timeout=5), vectors_of(n, 10))
    stats, cost = result.statistics, result.cost
    assert (stats.messages, stats.bytes, stats.rounds) == (cost.messages, cost.bytes, cost.rounds)
    for actor in (CONTROLLER, *range(n)):
        assert tuple(stats.sent_by(actor)) == tuple(cost.sent[actor])
    assert stats.sent_by(0).messages == 5 and stats.sent_by(CONTROLLER).messages == 4 * n
    assert cost.rounds == 5  # keys, shares, masked input, consistency check, unmasking


def test_abscissae_are_distinct_and_public() -> None:
    nbrs = build_neighbourhoods(range(9), "harary", 4)
    for owner in range(9):
        holders = (*nbrs[owner], owner)
        xs = sorted(abscissa(nbrs, owner, h) for h in holders)
        assert xs == list(range(1, len(holders) + 1))


def test_threshold_validation() -> None:
    assert MaskedEngine().context(range(6), 2).threshold == 4  # strict majority of 6 holders
    with pytest.raises(ConfigurationError, match="threshold must be <= the smallest"):
        MaskedEngine(threshold=7).context(range(6), 2)
    with pytest.raises(ConfigurationError, match="threshold must be an integer >= 1"):
        MaskedEngine(threshold=0)
    with pytest.raises(ConfigurationError, match=r"strict majority of the smallest Shamir holder set \(t > 6 / 2"):
        MaskedEngine(threshold=3).context(range(6), 2)  # before: any t >= 1 was accepted
    with pytest.raises(ConfigurationError, match="at least 2 parties"):
        MaskedEngine().context([3], 2)
