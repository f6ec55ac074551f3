"""Tests for parties.party: local randomization, replays, refusals, the actor loop."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from mprr.data import Attribute, Schema
from mprr.domain import encode_joint
from mprr.errors import ConfigurationError, MessageError
from mprr.matrices import keep_or_uniform
from mprr.randomize import randomize, randomize_joint
from mprr.streams import PartyStreams
from mprr.oracles import MAX_EPSILON
from mprr.protocols.oracle_reports import report_releases, report_uniforms, report_units
from mprr.protocols.steps import OracleSpec, Report
from parties.wire.messages import Abort, Ack, OracleReport, RandomizedValues, Refusal
from parties.router import Router
from parties.party import Party
from mprr.privacy import RefusalReason
from mprr.protocols.steps import MatrixSpec
from parties.public_state import ReleaseBook
from parties.secure.graph import GraphEngine
from parties.wire.requests import ReleaseRequest, ReportRequest, SecureRelease, SecureSumStart

SIZES = (3, 4, 2)
SCHEMA = Schema(tuple(Attribute(f"a{j}", tuple(f"c{k}" for k in range(s)), "nominal") for j, s in enumerate(SIZES)))
RECORD = (2, 1, 1)
SINGLES = ((0,), (1,), (2,))


def make_party(index: int = 1, *, budget: float = math.inf, seed: int = 5, n: int = 4, **kw) -> Party:
    return Party(index, RECORD, SCHEMA, seed=PartyStreams(seed, n).seed_sequence(index), budget=budget, **kw)


def stream(index: int = 1, seed: int = 5, n: int = 4) -> np.random.Generator:
    """An independent copy of party ``index``'s stream."""
    return np.random.Generator(np.random.PCG64(PartyStreams(seed, n).seed_sequence(index)))


def request(rid: int, units=SINGLES, specs=None, *, phase: str = "attributes", plan=None) -> ReleaseRequest:
    specs = specs if specs is not None else [MatrixSpec.keep_or_uniform(0.6)] * len(units)
    return ReleaseRequest.build(rid, phase, units, specs, plan=plan)


# ---------------------------------------------------------------------- local randomization
def test_release_is_the_inverse_cdf_of_the_party_stream() -> None:
    party = make_party()
    reply = party.handle(request(1))
    assert isinstance(reply, RandomizedValues) and reply.request_id == 1
    u = stream().random(3)
    expected = [int(randomize(np.array([RECORD[j]]), keep_or_uniform(SIZES[j], 0.6), uniforms=u[j : j + 1])[0])
                for j in range(3)]
    assert reply.codes.tolist() == expected
    assert party.draws == 3 and len(party.ledger) == 3


def test_cluster_unit_releases_the_joint_code_in_c_order() -> None:
    party = make_party()
    spec = MatrixSpec.cluster_optimal(2.0)
    P = spec.build((4, 2))
    reply = party.handle(request(1, [(1, 2)], [spec]))
    u = stream().random()
    x = int(encode_joint(np.array([[RECORD[1], RECORD[2]]]), (4, 2))[0])
    assert reply.codes.tolist() == [int(randomize(np.array([x]), P, uniforms=np.array([u]))[0])]


def test_kronecker_unit_matches_randomize_joint() -> None:
    # many parties, one uniform each: the pure-Python factor walk equals mprr.randomize_joint
    spec = MatrixSpec.lambda_kron([0.3, 0.6, 0.45])
    K = spec.build(SIZES)
    streams = PartyStreams(11, 200)
    book = ReleaseBook(SCHEMA)
    rng = np.random.default_rng(0)
    records = np.column_stack([rng.integers(0, s, 200) for s in SIZES])
    got = []
    for i in range(200):
        p = Party(i, records[i], SCHEMA, seed=streams.seed_sequence(i), book=book)
        got.append(p.handle(request(1, [(0, 1, 2)], [spec], phase="record")).codes[0])
    u = PartyStreams(11, 200).uniforms(1)[:, 0]
    expected = encode_joint(randomize_joint(records, K, SIZES, uniforms=u), SIZES)
    assert np.array_equal(np.array(got), expected)


def test_record_is_private() -> None:
    party = make_party()
    assert "2, 1, 1" not in repr(party)
    public = {k: v for k, v in vars(party).items() if not k.startswith("_")}
    assert all(v != RECORD for v in public.values())


def test_invalid_records_and_seeds_are_rejected() -> None:
    seed = PartyStreams(1, 1).seed_sequence(0)
    with pytest.raises(ConfigurationError, match="one code per attribute"):
        Party(0, (1, 2), SCHEMA, seed=seed)
    with pytest.raises(ConfigurationError, match=r"in \[0, 4\)"):
        Party(0, (1, 4, 0), SCHEMA, seed=seed)
    with pytest.raises(ConfigurationError, match="SeedSequence"):
        Party(0, RECORD, SCHEMA, seed=3)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="index"):
        Party(-1, RECORD, SCHEMA, seed=seed)
    for bad, message in (((2, -1, 0), "'a1' code must be an integer in [0, 4), got -1"),
                         ((2, 1.0, 0), "'a1' code must be an integer in [0, 4), got 1.0"),
                         ((2, "1", 0), "'a1' code must be an integer in [0, 4), got '1'"),
                         ((2, 1, 2), "'a2' code must be an integer in [0, 2), got 2")):
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            Party(0, bad, SCHEMA, seed=seed)
    with pytest.raises(ConfigurationError, match="draws must be an integer >= 0, got -1"):
        Party(0, RECORD, SCHEMA, seed=seed, draws=-1)


def test_a_record_of_numpy_integers_or_booleans_is_the_same_record_in_plain_integers() -> None:
    plain = make_party().handle(request(1))
    for record in (np.array(RECORD, dtype=np.int16), (np.int64(2), True, 1)):
        party = Party(np.int64(1), record, SCHEMA, seed=PartyStreams(5, 4).seed_sequence(1))
        assert party.index == 1 and type(party.index) is int
        assert party.handle(request(1)).codes.tolist() == plain.codes.tolist()


# ---------------------------------------------------------------------- replays and spending
def test_repeated_request_is_replayed_without_randomness_or_spending() -> None:
    party = make_party()
    first = party.handle(request(1))
    spent = party.accountant.spent()
    again = party.handle(request(2))
    assert isinstance(again, RandomizedValues) and again.request_id == 2
    assert again.codes.tolist() == first.codes.tolist()
    assert party.draws == 3 and len(party.ledger) == 3
    assert party.accountant.spent() == spent
    assert len(party.accountant.replays) == 3


def test_replay_holds_across_phases_for_the_same_matrix() -> None:
    # RR-Clusters with 4.1 requests singleton clusters with their phase-1 matrix.
    party = make_party()
    first = party.handle(request(1))
    again = party.handle(request(2, [(1,)], [MatrixSpec.keep_or_uniform(0.6)], phase="clusters"))
    assert again.codes.tolist() == [first.codes[1]]
    assert party.draws == 3


def test_finer_matrix_is_new_spending() -> None:
    party = make_party()
    party.handle(request(1))
    spent = party.accountant.spent()
    finer = party.handle(request(2, [(0,)], [MatrixSpec.keep_or_uniform(0.9)], plan=SINGLES))
    assert isinstance(finer, RandomizedValues)
    assert party.draws == 4 and len(party.ledger) == 4
    assert party.accountant.spent() == pytest.approx(spent + keep_or_uniform(3, 0.9).epsilon)


def test_over_budget_request_is_refused_atomically() -> None:
    eps = [keep_or_uniform(s, 0.6).epsilon for s in SIZES]
    party = make_party(budget=eps[0] + eps[1] + 0.5 * eps[2])
    reply = party.handle(request(7))
    assert isinstance(reply, Refusal) and reply.request_id == 7
    assert reply.reason.startswith("budget-exceeded:")
    assert reply.requested == pytest.approx(sum(eps))
    assert reply.remaining == pytest.approx(party.accountant.budget)
    assert party.draws == 0 and len(party.ledger) == 0  # nothing spent, nothing drawn
    (logged,) = party.refusals
    assert logged.reason == "budget-exceeded" and logged.request_id == 7 and logged.units == SINGLES


def test_budget_met_exactly_is_granted() -> None:
    eps = sum(keep_or_uniform(s, 0.6).epsilon for s in SIZES)
    party = make_party(budget=eps)
    assert isinstance(party.handle(request(1)), RandomizedValues)
    assert party.accountant.remaining() == pytest.approx(0.0, abs=1e-12)
    refused = party.handle(request(2, [(0,)], [MatrixSpec.keep_or_uniform(0.9)], plan=SINGLES))
    assert isinstance(refused, Refusal)


def test_repeated_request_is_replayed_even_with_an_exhausted_budget() -> None:
    eps = sum(keep_or_uniform(s, 0.6).epsilon for s in SIZES)
    party = make_party(budget=eps)
    first = party.handle(request(1))
    again = party.handle(request(2))
    assert isinstance(again, RandomizedValues) and again.codes.tolist() == first.codes.tolist()


# ---------------------------------------------------------------------- plans
def test_unit_outside_the_announced_plan_is_refused() -> None:
    party = make_party()
    party.handle(request(1, [(0,), (1, 2)], [MatrixSpec.cluster_optimal(2.0)] * 2, phase="clusters"))
    reply = party.handle(request(2, [(0, 1)], [MatrixSpec.cluster_optimal(2.0)], phase="clusters",
                                 plan=[(0,), (1, 2)]))
    assert isinstance(reply, Refusal) and reply.reason.startswith("plan-violation:")
    assert "not groups of the plan" in reply.reason


def test_a_phase_plan_cannot_change() -> None:
    party = make_party()
    party.handle(request(1, [(0,), (1, 2)], [MatrixSpec.cluster_optimal(2.0)] * 2, phase="clusters"))
    reply = party.handle(request(2, [(0, 1)], [MatrixSpec.cluster_optimal(2.0)], phase="clusters"))
    assert isinstance(reply, Refusal) and "another plan" in reply.reason
    assert party.accountant.plans["clusters"] == frozenset({frozenset({"a0"}), frozenset({"a1", "a2"})})


def test_unknown_attribute_and_withheld_attribute_are_refused() -> None:
    party = make_party()
    reply = party.handle(request(1, [(5,)], [MatrixSpec.grr(1.0)]))
    assert isinstance(reply, Refusal) and "holds attributes 0..2 only" in reply.reason
    shy = make_party(allowed=("a0", "a1"))
    reply = shy.handle(request(1))
    assert isinstance(reply, Refusal) and "does not release" in reply.reason
    assert shy.draws == 0


def test_invalid_matrix_parameters_are_refused() -> None:
    party = make_party()
    reply = party.handle(request(1, [(0,)], [MatrixSpec("keep-or-uniform", (1.5,))]))
    assert isinstance(reply, Refusal) and reply.reason.startswith(f"{RefusalReason.INVALID_REQUEST}:")
    assert party.refusals[0].reason is RefusalReason.INVALID_REQUEST


def test_other_message_kinds_are_not_accepted() -> None:
    with pytest.raises(MessageError, match="does not accept Ack"):
        make_party().handle(Ack(1))


# ---------------------------------------------------------------------- secure-sum commitments
def test_exact_pair_release_is_refused_under_a_finite_budget() -> None:
    party = make_party(budget=50.0, engine=GraphEngine())
    reply = party.handle(SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), True))
    assert isinstance(reply, Refusal) and reply.requested == math.inf
    assert "exact release: no DP guarantee" in reply.reason and len(party.ledger) == 0


def test_randomized_pair_commitment_records_an_unlinkable_release_at_the_matrix_epsilon() -> None:
    party = make_party(engine=GraphEngine())
    spec = MatrixSpec.cluster_optimal(3.0)
    msg = SecureRelease(4, "dependence", "s", ((0, 1), (1, 2)), ((0, 1), (1, 2)), False,
                        (spec.family,) * 2, (spec.params,) * 2)
    assert isinstance(party.handle(msg), Ack)
    first, second = party.ledger
    # ε is the party's own eq. (4) of the matrix; a joint (non-Kronecker) matrix splits it equally
    assert not first.linkable and first.epsilon == pytest.approx(spec.build((3, 4)).epsilon)
    assert first.shares == pytest.approx((first.epsilon / 2,) * 2) and first.attribute_epsilons is None
    assert party.draws == 2
    u = stream().random(2)
    P = spec.build((3, 4))
    x = int(encode_joint(np.array([[RECORD[0], RECORD[1]]]), (3, 4))[0])
    assert party.released_values[0] == int(randomize(np.array([x]), P, uniforms=u[:1])[0])


def test_secure_release_without_an_engine_is_refused() -> None:
    reply = make_party().handle(SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), True))
    assert isinstance(reply, Refusal) and reply.reason.startswith("invalid-request")


async def test_start_of_an_unknown_session_is_logged() -> None:
    net = Router(2)
    party = make_party(index=0, n=2, engine=GraphEngine(relay=False))
    start = SecureSumStart(1, "nope", "graph", ((0, 2),))
    assert party.receive(start) is start  # returned for the host to run
    assert party.secure_program(start, net.endpoint(0).network) is None  # refused: nothing to drive
    assert any("unknown session" in e for e in party.errors)


# ---------------------------------------------------------------------- what a controller message asks
def test_receive_answers_requests_and_stops_on_abort() -> None:
    party = make_party(index=0, n=2)
    reply = party.receive(request(3))
    assert isinstance(reply, RandomizedValues) and reply.request_id == 3
    assert party.receive(Abort("done", "end")) is None and party.status == "aborted"


def test_receive_logs_what_a_party_does_not_take_from_the_controller() -> None:
    party = make_party(index=0, n=2)
    assert party.receive(Ack(1)) is None
    assert any("does not accept Ack" in e for e in party.errors)


# ---------------------------------------------------------------------- frequency-oracle reports
def report_step(assign: str = "every", oracles=(("oue", 1.0), ("grr", 2.0), ("olh", 1.5)), *, phase: str = "attributes",
                units=SINGLES, **kw) -> Report:
    return Report(phase, units, tuple(OracleSpec(f, e) for f, e in oracles), assign, **kw)


def fast_row(step: Report, index: int = 1, seed: int = 5, n: int = 4, *, excluded: bool = False):
    """The fast path's answer for the party's record, from an independent copy of its stream."""
    u = stream(index, seed, n).random((1, report_uniforms(step, SIZES)))
    return report_units(step, np.array([RECORD]), SIZES, u, np.array([excluded]) if excluded else None)


def test_every_unit_is_reported_as_the_fast_path_reports_it() -> None:
    step = report_step()
    party = make_party()
    reply = party.handle(ReportRequest.build(4, step))
    fast = fast_row(step)
    assert isinstance(reply, OracleReport) and (reply.request_id, reply.unit) == (4, -1)
    assert reply.reports.tolist() == fast.codes[0].tolist()
    assert party.draws == 3 + 1 + 2  # OUE: one uniform per cell of a0; GRR one; OLH two
    assert party.ledger.releases == report_releases("attributes", "every", SINGLES, fast.oracles, SCHEMA.names)
    assert party.accountant.spent() == pytest.approx(1.0 + 2.0 + 1.5)
    assert party.released_values == tuple(reply.reports.tolist())


def test_a_sampled_report_sends_the_drawn_unit_and_books_one_release_at_the_largest_epsilon() -> None:
    step = report_step("sampled", weights=(1.0, 2.0, 3.0))
    party = make_party()
    reply = party.handle(ReportRequest.build(1, step))
    fast = fast_row(step)
    (unit,) = fast.assigned.tolist()
    assert isinstance(reply, OracleReport) and reply.unit == unit >= 0
    assert reply.reports.tolist() == [fast.codes[0, unit]]
    assert party.draws == 1 + 3  # the draw of the unit, then the most any oracle needs (OUE over 3 cells)
    (entry,) = party.ledger.releases
    assert entry.attributes == ("a0", "a1", "a2") and entry.epsilon == pytest.approx(2.0)
    assert party.ledger.releases == fast.ledger_entries(SCHEMA.names)


def test_fake_values_hide_the_drawn_unit() -> None:
    step = report_step("sampled-fake", (("grr", 1.0),) * 3)
    party = make_party()
    reply = party.handle(ReportRequest.build(1, step))
    fast = fast_row(step)
    assert isinstance(reply, OracleReport) and reply.unit == -1
    assert reply.reports.tolist() == fast.codes[0].tolist() and party.draws == 1 + 3
    assert party.ledger.releases == fast.ledger_entries(SCHEMA.names)


def test_an_abstaining_party_draws_its_block_and_books_nothing() -> None:
    step = report_step("sampled", abstain=1.0 - 1e-12)
    party = make_party()
    reply = party.handle(ReportRequest.build(1, step))
    assert isinstance(reply, OracleReport) and reply.unit == -1 and reply.reports.size == 0
    assert fast_row(step).assigned.tolist() == [-1]
    assert party.draws == 1 + 3 and len(party.ledger) == 0


def test_a_party_that_reported_in_an_excluded_phase_reports_nothing_here() -> None:
    party = make_party()
    first = party.handle(ReportRequest.build(1, report_step("sampled", phase="discovery")))
    assert isinstance(first, OracleReport) and first.unit >= 0
    later = report_step("sampled", (("grr", 1.0),) * 3, phase="clusters", exclude=("discovery",))
    reply = party.handle(ReportRequest.build(2, later))
    assert isinstance(reply, OracleReport) and reply.unit == -1 and reply.reports.size == 0
    assert party.draws == 4 + 2 and len(party.ledger) == 1  # the block is drawn, as on the fast path


def test_a_report_over_budget_is_refused_before_any_draw() -> None:
    party = make_party(budget=4.0)
    reply = party.handle(ReportRequest.build(7, report_step()))  # 1 + 2 + 1.5 = 4.5 > 4
    assert isinstance(reply, Refusal) and reply.reason.startswith("budget-exceeded:")
    assert reply.requested == pytest.approx(4.5)
    assert party.draws == 0 and len(party.ledger) == 0
    sampled = party.handle(ReportRequest.build(8, report_step("sampled", (("grr", 5.0),) * 3)))
    assert isinstance(sampled, Refusal) and sampled.requested == pytest.approx(5.0)
    assert len(party.ledger) == 0


def test_the_party_books_the_epsilon_its_own_oracle_computes() -> None:
    party = make_party()
    party.handle(ReportRequest.build(1, report_step(oracles=(("grr", 0.5),) * 3)))
    assert [r.epsilon for r in party.ledger] == pytest.approx([0.5] * 3)
    assert all(r.phase == "attributes" and r.linkable for r in party.ledger)


@pytest.mark.parametrize(
    ("request_", "reason", "match"),
    [
        (ReportRequest(1, "p", ((0,),), ("grr",), (MAX_EPSILON * 2,), "every"), "invalid-request", "epsilon"),
        (ReportRequest(1, "p", ((0,),), ("grr",), (0.0,), "every"), "invalid-request", "epsilon"),
        (ReportRequest(1, "p", ((0,), (1,)), ("oue", "grr"), (1.0, 1.0), "sampled-fake"), "invalid-request",
         "GRR oracles only"),
        (ReportRequest(1, "p", ((0,), (1,)), ("grr", "grr"), (1.0, 1.0), "sampled", (0.0, 0.0)), "invalid-request",
         "positive sum"),
        (ReportRequest(1, "p", ((0,), (5,)), ("grr", "grr"), (1.0, 1.0), "every"), "plan-violation",
         r"attributes \[5\]"),
    ],
)
def test_a_report_the_party_cannot_evaluate_is_refused(request_, reason, match) -> None:
    party = make_party()
    reply = party.handle(request_)
    assert isinstance(reply, Refusal) and reply.reason.startswith(f"{reason}:")
    assert re.search(match, reply.reason)
    assert party.draws == 0 and len(party.ledger) == 0


def test_a_withheld_attribute_is_not_reported() -> None:
    party = make_party(allowed=("a0", "a1"))
    reply = party.handle(ReportRequest.build(1, report_step()))
    assert isinstance(reply, Refusal) and reply.reason.startswith("plan-violation:") and "a2" in reply.reason
    assert party.draws == 0


@pytest.mark.parametrize("assign", ["every", "sampled", "sampled-fake"])
def test_a_re_sent_report_request_gets_the_same_reply_without_draws(assign) -> None:
    oracles = (("grr", 1.0),) * 3 if assign == "sampled-fake" else (("oue", 1.0), ("grr", 2.0), ("olh", 1.5))
    request_ = ReportRequest.build(3, report_step(assign, oracles))
    party = make_party()
    first = party.handle(request_)
    draws, ledger = party.draws, party.ledger
    assert party.handle(ReportRequest.build(3, report_step(assign, oracles))) is first
    assert party.draws == draws and party.ledger is ledger


@pytest.mark.parametrize("assign", ["every", "sampled", "sampled-fake"])
def test_the_same_report_asked_again_is_resent_without_new_spending(assign) -> None:
    oracles = (("grr", 1.0),) * 3 if assign == "sampled-fake" else (("oue", 1.0), ("grr", 2.0), ("olh", 1.5))
    party = make_party(budget=6.0)
    first = party.handle(ReportRequest.build(1, report_step(assign, oracles)))
    draws, spent = party.draws, party.accountant.spent()
    again = party.handle(ReportRequest.build(2, report_step(assign, oracles, phase="again")))
    assert isinstance(again, OracleReport) and again.request_id == 2
    assert (again.unit, again.reports.tolist()) == (first.unit, first.reports.tolist())
    assert party.draws == draws and party.accountant.spent() == spent and party.accountant.replays
