"""Enough real contributors (issue 25): ``min_roster`` counts the parties whose inputs are in a
sum, as far as each party can tell, and a sum holds one record per contributor and unit.

Every run is on the virtual clock; the parties are real actors of a memory-runtime shard.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mprr.errors import ProtocolError, SecureSumAborted
from mprr.synthetic import planted_clusters
from parties.faults import FaultPlan
from parties.transport import CONTROLLER
from parties.party import Party
from parties.secure.agreement import agreed_session, request_digest
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.messages import SurvivorSet
from parties.wire.messages import Ack
from parties.wire.requests import SecureRelease, SecureSumStart
from tests.parties.test_secure_attacks import _actors, _Malicious, _serve, simulate

RELEASE = SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), True)


async def _commit(ep, targets) -> None:  # noqa: ANN001
    for p in targets:
        await ep.send(p, RELEASE, phase="dependence")
    assert len(await ep.gather(targets, kinds=(Ack,), phase="dependence", timeout=1.0)) == len(targets)


async def test_a_roster_padded_with_a_party_never_asked_sums_nothing() -> None:
    """Before: roster (0, 1, 5), party 5 never asked to commit, gave the exact tally of 2
    parties on the masked engine.  Now 0 and 1 stop before they share anything: 5 advertised
    no key, so they know of 2 parties only."""
    engine = MaskedEngine(round_timeout=0.3)
    net, parties, ctl = _actors(6, engine)
    ep = net.endpoint(CONTROLLER)
    start = SecureSumStart(1, "s", "masked", ((0, 2), (5, 6)))
    ctx = engine.context((0, 1, 5), 4, network=net, session=agreed_session(request_digest(RELEASE), start))

    async def body():
        await _commit(ep, [0, 1])
        await ep.broadcast([0, 1, 5], start, phase="dependence")
        with pytest.raises(ProtocolError):
            await engine.controller(ep, ctx)
        await asyncio.sleep(1.0)

    await _serve(net, parties, body)
    why = "only 2 parties of its neighbourhood advertised keys, below its min_roster = 3"
    for p in parties[:2]:
        assert any(why in e for e in p.errors), p.errors
        assert p.accountant.session_state("s") == "aborted"
    assert any("no committed input" in e for e in parties[5].errors)


async def test_a_controller_ignoring_an_input_gets_no_sum_over_fewer_than_min_roster() -> None:
    """Before: the controller dropped party 2's masked input (roster 3, sum over 2)."""
    def ignore_2(dst: int, msg):  # noqa: ANN001, ANN202
        if isinstance(msg, SurvivorSet):
            return SurvivorSet(msg.session, np.array([p for p in msg.survivors.tolist() if p != 2], dtype=np.uint32))
        return msg

    engine = _Malicious(ignore_2, round_timeout=0.3)
    net, parties, ctl = _actors(3, engine)

    async def body():
        with pytest.raises(ProtocolError):
            await ctl.secure_release("dependence", [(0, 1)], engine=engine)
        await asyncio.sleep(1.0)

    await _serve(net, parties, body)
    for p in parties[:2]:
        assert any("holds 2 parties that shared with it (2 claimed), below its min_roster = 3" in e
                   for e in p.errors), p.errors


async def test_min_roster_counts_survivors_not_the_roster() -> None:
    """Before: min_roster = 5, a roster of 5, two inputs ignored by the controller: a sum over 3."""
    def ignore_3_4(dst: int, msg):  # noqa: ANN001, ANN202
        if isinstance(msg, SurvivorSet):
            return SurvivorSet(msg.session, np.array([p for p in msg.survivors.tolist() if p < 3], dtype=np.uint32))
        return msg

    engine = _Malicious(ignore_3_4, round_timeout=0.3)
    net, parties, ctl = _actors(5, engine, min_roster=5)

    async def body():
        with pytest.raises(ProtocolError):
            await ctl.secure_release("dependence", [(0, 1)], engine=engine)
        await asyncio.sleep(1.0)

    await _serve(net, parties, body)
    for p in parties[:3]:
        assert any("holds 3 parties that shared with it (3 claimed), below its min_roster = 5" in e
                   for e in p.errors), p.errors


def test_a_crash_leaving_two_of_three_ends_without_a_sum() -> None:
    """Before: n = 3, on_dropout="exclude", party 2 crashed during the masked sum: each of the
    other two learnt the other's exact input from the "sum".  Now they stop below min_roster = 3
    and the run ends with the sum aborted (the documented degraded result: no tally)."""
    data = planted_clusters(3, rng=np.random.default_rng(8), strength=0.8).dataset
    # party 2's sends: its phase-1 release, its Ack, its masking key, its sealed shares (4th: lost)
    with pytest.raises(SecureSumAborted, match=r"aborted at consistency check: 0 of 3 parties left, the "
                                               r"threshold needs at least 2"):  # 2 >= t: it was a sum before
        simulate(data, "RR-Clusters", seed=3, timeout=3.0, p=0.7, Tv=60, Td=0.1, dependence="4.2",
                 engine="masked", on_dropout="exclude", faults=FaultPlan(crash={2: 4}))


# ---------------------------------------------------------------------- poisoned inputs
def _poison(party: Party, vector: np.ndarray) -> None:
    """``party`` commits as asked, then swaps its input for ``vector`` (a lying party)."""
    decide = party._decide

    def lying(msg):  # noqa: ANN001, ANN202
        reply = decide(msg)
        session = getattr(msg, "session", None)
        if session in party._inputs:
            party._inputs[session] = (vector, party._inputs[session][1])
        return reply

    party._decide = lying  # type: ignore[method-assign]


@pytest.mark.parametrize("poison", ["all-ones", "2**31"])
@pytest.mark.parametrize("make", [lambda: GraphEngine(round_timeout=0.3), lambda: MaskedEngine(round_timeout=0.3)])
async def test_a_poisoned_input_is_refused_by_the_unit_total_check(make, poison: str, monkeypatch) -> None:
    """Before: an all-ones input turned each unit's total for 6 contributors into 11-14; a party
    skipping its own range check added 2^31 to a cell and the controller reported 2,147,483,650."""
    engine = make()
    net, parties, ctl = _actors(6, engine)
    if poison == "all-ones":
        _poison(parties[3], np.ones(4, dtype=np.uint8))
    else:  # the lying party's engine skips its own range check
        import parties.secure.graph as graph_module
        import parties.secure.masked as masked_module

        def unchecked(vector, ctx, ring):  # noqa: ANN001, ANN202
            return np.array(ring.reduce(np.asarray(vector, dtype=np.uint64)), dtype=ring.dtype)

        monkeypatch.setattr(graph_module, "as_ring_vector", unchecked)
        monkeypatch.setattr(masked_module, "checked_input", lambda vector, ctx: np.asarray(vector))  # noqa: ARG005
        _poison(parties[3], np.array([1, 1 << 31, 0, 0], dtype=np.uint64))

    async def body():
        with pytest.raises(ProtocolError, match=r"unit-total check failed: unit 0 of 1 totals "
                                                + ("9" if poison == "all-ones" else str((1 << 31) + 6))):
            await ctl.secure_release("dependence", [(0, 1)], engine=engine)

    await _serve(net, parties, body)
    assert ctl.tallies == []  # never reported


# ---------------------------------------------------------------------- a roster of unknown ids
async def test_a_roster_naming_unknown_ids_is_refused_by_the_party_not_its_host() -> None:
    """Issue 25, attack 4.  Before: ``roster=((0, 4), (10, 12))`` raised ConfigurationError
    ("party ids must be < network size") outside the party's ``try``: the shard's TaskGroup died
    with every party in it, no refusal was logged and the session stayed "running"."""
    engine = GraphEngine(round_timeout=0.3)
    net, parties, ctl = _actors(4, engine)
    ep = net.endpoint(CONTROLLER)

    async def body():
        await _commit(ep, range(4))
        await ep.broadcast(range(4), SecureSumStart(1, "s", "graph", ((0, 4), (10, 12))), phase="dependence")
        await asyncio.sleep(0.1)
        # the host still serves its parties: a new request is answered
        await _commit(ep, range(4))

    await _serve(net, parties, body)
    for p in parties:
        assert any("secure sum 's' refused: party ids must be < network size 4, got 11" in e for e in p.errors), p.errors
        assert p.accountant.session_state("s") == "aborted"


def test_repeated_isolated_draws_cost_new_spending_under_unlinkable_pairs() -> None:
    """Issue 25, attack 2.  Before: 41 sessions of the same pair at ε = 2 (41 linked draws, a
    majority vote recovers the pair) left a party's ledger at 2 under ``unlinkable-pairs``."""
    from mprr.data import Attribute, Schema
    from mprr.protocols.steps import MatrixSpec
    from mprr.streams import PartyStreams
    from parties.wire.messages import Refusal

    schema = Schema(tuple(Attribute(f"a{j}", ("x", "y"), "nominal") for j in range(2)))
    spec = MatrixSpec.grr(2.0)
    party = Party(0, (0, 1), schema, seed=PartyStreams(1, 1).seed_sequence(0), policy="unlinkable-pairs",
                  engine=GraphEngine())
    for k in range(41):
        reply = party.handle(SecureRelease(k, "dependence", f"s{k}", ((0, 1),), ((0, 1),), False,
                                           (spec.family,), (spec.params,)))
        assert isinstance(reply, Ack)
    assert party.accountant.spent() == pytest.approx(41 * 2.0)
    capped = Party(0, (0, 1), schema, seed=PartyStreams(1, 1).seed_sequence(0), policy="unlinkable-pairs",
                   engine=GraphEngine(), budget=5.0)
    replies = [capped.handle(SecureRelease(k, "dependence", f"s{k}", ((0, 1),), ((0, 1),), False,
                                           (spec.family,), (spec.params,))) for k in range(4)]
    assert [type(r) for r in replies] == [Ack, Ack, Refusal, Refusal]  # 2 + 2 <= 5 < 2 + 2 + 2


async def test_a_survivor_the_controller_invents_is_not_counted() -> None:
    """The controller tells 0 and 1 that party 2 survived, but 2 crashed after advertising its
    key and sealed them nothing: they vouch for 2 contributors only (< min_roster = 3)."""
    import math

    from mprr.data import Attribute, Schema
    from parties.controller import Controller
    from parties.runtime import HostingPlan, MemoryHosting
    from parties.simulate import PARTY_KINDS

    def claim_2(dst: int, msg):  # noqa: ANN001, ANN202
        if isinstance(msg, SurvivorSet) and 2 not in msg.survivors.tolist():
            return SurvivorSet(msg.session, np.array(sorted([*msg.survivors.tolist(), 2]), dtype=np.uint32))
        return msg

    engine = _Malicious(claim_2, round_timeout=0.3)
    schema = Schema(tuple(Attribute(f"a{j}", ("x", "y"), "nominal") for j in range(2)))
    # party 2's sends: its Ack, its masking key, then its sealed shares (lost: it crashes)
    plan = HostingPlan(n=3, schema=schema, records=np.array([(0, 1), (1, 0), (1, 1)]), seed=7,
                       budgets=(math.inf,) * 3, policy="sequential",
                       accept=tuple(k.KIND for k in PARTY_KINDS), engine=engine, min_roster=3,
                       faults=FaultPlan(crash={2: 3}), timeout=0.5)
    hosting = MemoryHosting(plan)
    net, parties = hosting.router, hosting.links[0].shard.parties
    ctl = Controller(net.endpoint(CONTROLLER), schema, range(3), timeout=0.5, on_dropout="exclude")

    async def body():
        with pytest.raises(ProtocolError):
            await ctl.secure_release("dependence", [(0, 1)], engine=engine)
        await asyncio.sleep(1.0)

    await _serve(net, parties, body)
    for p in parties[:2]:
        assert any("holds 2 parties that shared with it (3 claimed), below its min_roster = 3" in e
                   for e in p.errors), p.errors
