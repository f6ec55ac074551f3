"""Cohorts (parties.cohort): a shard steps its parties in identical state at once, and each
party's answer, its bytes, its ledger and its draws are what its own per-party path gives."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from mprr.domain import encode_joint
from mprr.privacy import PrivacyAccountant
from mprr.protocols.release import release_units
from mprr.protocols.steps import MatrixSpec
from mprr.streams import PartyStreams, StreamTable
from mprr.synthetic import planted_clusters
from parties.columns import ReplyColumns
from parties.party import LOOP_KINDS
from parties.public_state import ReleaseBook
from parties.runtime import HostingPlan
from parties.shard import PartyShard
from parties.shard_report import ShardReport
from parties.transport import CONTROLLER, Frame
from parties.wire.codec import Message, decode, encode
from parties.wire.messages import Abort
from parties.wire.requests import ReleaseRequest

N = 12
INF = math.inf
KEEP = MatrixSpec.keep_or_uniform(0.7)


def _data() -> tuple[np.ndarray, object]:
    data = planted_clusters(N, rng=np.random.default_rng(5), sizes=(3, 4, 2, 5), clusters=((0, 1),))
    return np.asarray(data.dataset.codes), data.dataset.schema


def _requests() -> list[Message]:
    """Phase 1 (one attribute each), its retry (a replay), phase 2 (a pair through a dense
    cluster matrix, a pair through a Kronecker matrix, a singleton replayed from phase 1)."""
    one = ReleaseRequest.build(1, "one", [(0,), (1,), (2,), (3,)], [KEEP] * 4)
    two = ReleaseRequest.build(2, "two", [(0, 1), (2, 3), (3,)],
                               [MatrixSpec.cluster_optimal(2.0), MatrixSpec.lambda_kron((0.6, 0.8)), KEEP])
    return [one, one, two]


def _shard(budgets: tuple[float, ...], sent: list[Frame]) -> PartyShard:
    codes, schema = _data()
    plan = HostingPlan(n=N, schema=schema, records=codes, seed=9, budgets=budgets, policy="sequential",
                       accept=tuple(k.KIND for k in LOOP_KINDS), fault_seed=9, timeout=5.0)
    return PartyShard(plan.setup(range(N)), sent.append)


async def _run(shard: PartyShard, requests: list[Message], targets: list[int] | None = None,
               crash: tuple[int, ...] = ()) -> None:
    for k, request in enumerate(requests):
        payload = encode(request)
        for i in targets if targets is not None else range(N):
            shard.deliver(Frame(CONTROLLER, i, "phase", request.KIND, payload))
        if k == 0 and crash:
            shard.crash(crash)
        await asyncio.sleep(0)  # the replies leave on the loop's next turn


def _same_reports(a: ShardReport, b: ShardReport) -> None:
    assert np.array_equal(a.values, b.values) and np.array_equal(a.values_end, b.values_end)
    assert np.array_equal(a.draws, b.draws)
    assert [a.statuses[k] for k in a.status_of] == [b.statuses[k] for k in b.status_of]
    for k in range(N):
        x, y = a.accountants[a.accountant_of[k]], b.accountants[b.accountant_of[k]]
        assert x.ledger.releases == y.ledger.releases and x.budget == y.budget
        assert [(r.reason, r.request_id) for r in x.refusals] == [(r.reason, r.request_id) for r in y.refusals]
    assert np.array_equal(a.received_messages, b.received_messages)
    assert np.array_equal(a.received_bytes, b.received_bytes)


async def _both(budgets: tuple[float, ...], *, apart: tuple[int, ...] = (), targets: list[int] | None = None,
                crash: tuple[int, ...] = ()) -> tuple[list[Frame], list[Frame], PartyShard, PartyShard]:
    """The same frames to a shard of cohorts (``apart`` built as parties first) and to a shard
    whose every party answers on its own (today's per-party path)."""
    fast, slow = [], []  # type: ignore[var-annotated]
    columns, each = _shard(budgets, fast), _shard(budgets, slow)
    columns.materialize(np.array(apart, dtype=np.int64))
    each.materialize(np.arange(N))
    await _run(columns, _requests(), targets, crash)
    await _run(each, _requests(), targets, crash)
    return fast, slow, columns, each


def _frames(frames: list[Frame]) -> list[tuple[int, int, str, int, bytes]]:
    return [(f.src, f.dst, f.phase, f.kind, f.payload) for f in frames]


async def test_a_cohort_answers_bit_identically_to_each_party_on_its_own() -> None:
    fast, slow, columns, each = await _both((INF,) * N)
    assert len(columns.cohorts()) == 1 and not columns.built()  # every party stepped at once
    assert _frames(fast) == _frames(slow) and len(fast) == 3 * N
    for frame in fast:  # each reply is its own message, its bytes the codec's
        assert frame.message is not None and encode(frame.message) == frame.payload
        assert decode(frame.payload) == frame.message
    _same_reports(ShardReport.of(columns), ShardReport.of(each))
    assert ShardReport.of(columns).draws.tolist() == [6] * N  # 4 + 2 uniforms; retry and singleton replayed


async def test_a_party_built_on_its_own_releases_what_it_would_have_released_in_its_cohort() -> None:
    fast, slow, columns, _ = await _both((INF,) * N, apart=(3, 7))
    assert sorted(columns.built()) == [3, 7] and len(columns.cohorts()) == 1
    assert _frames(fast) == _frames(slow)


async def test_mixed_shards_refusals_other_budgets_crashes_and_partial_broadcasts() -> None:
    budgets = (INF,) * 4 + (0.5,) + (INF,) * 3 + (40.0,) * 4  # party 4 refuses; 8-11 another cohort
    fast, slow, columns, each = await _both(budgets, apart=(6,), crash=(2,), targets=[k for k in range(N) if k != 9])
    assert _frames(fast) == _frames(slow)
    report = ShardReport.of(columns)
    _same_reports(report, ShardReport.of(each))
    assert sorted(columns.built()) == [2, 4, 6]  # crashed, refused, handed out
    assert columns.built()[4].refusals and report.statuses[report.status_of[2]] == "crashed"
    assert report.draws[9] == 0 and report.values_end[9] == report.values_end[8]  # never asked
    assert sum(len(c) for c in columns.cohorts()) == N - 3


async def test_an_abort_reaches_cohort_members_and_built_parties() -> None:
    sent: list[Frame] = []
    shard = _shard((INF,) * N, sent)
    shard.materialize(np.array([1]))
    await _run(shard, [_requests()[0], Abort("controller gave up")], targets=[0, 1, 2])
    statuses = [p.status for p in shard.parties]
    assert statuses[:3] == ["aborted"] * 3 and statuses[3:] == ["idle"] * (N - 3)


def test_stream_table_uniforms_advance_each_row_as_its_own_stream() -> None:
    table, reference = StreamTable(4, range(5, 25)), PartyStreams(4, 30)
    rows = np.array([0, 3, 19])
    first, second = table.uniforms(rows), table.uniforms(rows[1:])
    want = [reference.generator(5 + r).random(2) for r in rows.tolist()]
    assert first.tolist() == [w[0] for w in want] and second.tolist() == [w[1] for w in want[1:]]
    assert table.stream(5).random() == want[0][1]  # row 0 drew once: its next is the second
    with pytest.raises(Exception, match=r"rows must be in \[0, 20\), got 20"):
        table.uniforms(np.array([20]))


def test_resolved_unit_sample_is_the_fast_path_sampling() -> None:
    codes, schema = _data()
    book = ReleaseBook(schema)  # type: ignore[arg-type]
    units, specs = _requests()[2].units, _requests()[2].specs  # type: ignore[attr-defined]
    resolved = book.resolve(_requests()[2]).units  # type: ignore[arg-type]
    assert resolved is not None
    u = np.random.default_rng(0).random((N, len(units)))
    fast = release_units("two", codes, schema.sizes, units, [r.matrix for r in resolved], u)  # type: ignore[attr-defined]
    for j, unit in enumerate(resolved):
        assert np.array_equal(unit.sample(codes, u[:, j]), fast.codes[:, j])
        one = [int(unit.sample(codes[k:k + 1], u[k:k + 1, j])[0]) for k in range(N)]
        assert one == fast.codes[:, j].tolist()  # one row at a time: the same codes
    assert np.array_equal(resolved[0].values(codes), encode_joint(codes[:, [0, 1]], (3, 4)))
    assert specs[1].family == "lambda-kron"


async def test_a_request_parties_answer_on_their_own_builds_its_receivers_at_once() -> None:
    from mprr.protocols.steps import OracleSpec, Report
    from parties.wire.requests import ReportRequest

    step = Report("oracle", ((0,), (1,)), (OracleSpec("grr", 1.0), OracleSpec("oue", 1.0)), "every")
    requests: list[Message] = [_requests()[0], ReportRequest.build(5, step), _requests()[2]]
    fast, slow = [], []  # type: ignore[var-annotated]
    columns, each = _shard((INF,) * N, fast), _shard((INF,) * N, slow)
    each.materialize(np.arange(N))
    await _run(columns, requests, targets=list(range(N - 1)))
    await _run(each, requests, targets=list(range(N - 1)))
    assert _frames(fast) == _frames(slow) and len(fast) == 3 * (N - 1)
    assert sorted(columns.built()) == list(range(N - 1))  # built by the report, then each answers
    assert [len(c) for c in columns.cohorts()] == [1]  # party N-1, never asked, still in its cohort
    _same_reports(ShardReport.of(columns), ShardReport.of(each))


def _engine_shard(budgets: tuple[float, ...], sent: list[Frame]) -> PartyShard:
    from parties.secure.graph import GraphEngine

    codes, schema = _data()
    plan = HostingPlan(n=N, schema=schema, records=codes, seed=9, budgets=budgets, policy="sequential",
                       accept=tuple(k.KIND for k in LOOP_KINDS), engine=GraphEngine(), fault_seed=9, timeout=5.0)
    return PartyShard(plan.setup(range(N)), sent.append)


@pytest.mark.parametrize("exact", [True, False], ids=["4.2-exact", "4.3-randomized"])
async def test_a_cohort_commits_each_members_own_input_as_each_party_on_its_own_would(exact: bool) -> None:
    from parties.wire.requests import SecureRelease

    specs = () if exact else ("keep-or-uniform", "keep-or-uniform")
    params = () if exact else ((0.7,), (0.7,))
    commit = SecureRelease(4, "dependence", "s", ((0, 1), (2, 3)), ((0, 1), (2, 3)), exact, specs, params)
    requests: list[Message] = [_requests()[0], commit, commit]  # (a re-sent commitment: acknowledged, booked once)
    budgets = (INF,) * 4 + (0.5,) + (INF,) * 7  # party 4 refuses
    fast, slow = [], []  # type: ignore[var-annotated]
    columns, each = _engine_shard(budgets, fast), _engine_shard(budgets, slow)
    each.materialize(np.arange(N))
    await _run(columns, requests, targets=list(range(N - 1)))
    await _run(each, requests, targets=list(range(N - 1)))
    assert _frames(fast) == _frames(slow) and len(fast) == 3 * (N - 1)
    _same_reports(ShardReport.of(columns), ShardReport.of(each))
    built, alone = columns.built(), each.built()
    assert sorted(built) == list(range(N - 1))  # each runs its own side of the sum
    for k in range(N - 1):
        mine, theirs = built[k]._inputs, alone[k]._inputs
        assert mine.keys() == theirs.keys() == (set() if k == 4 else {"s"})
        for session in mine:
            assert np.array_equal(mine[session][0], theirs[session][0]) and mine[session][1] == theirs[session][1]
    # each member's session is its own: one starting it leaves the others' committed
    assert built[0].accountant.start_session("s", tuple(range(N - 1)), 0) is None
    assert built[0].accountant.session_state("s") == "running"
    assert built[1].accountant.session_state("s") == "committed"


def test_a_party_holds_only_an_input_its_accountant_booked() -> None:
    sent: list[Frame] = []
    party = _engine_shard((INF,) * N, sent).parties[0]
    with pytest.raises(Exception, match="party 0: no commitment to secure sum 's' is booked"):
        party.hold_input("s", np.zeros(3, dtype=np.uint8), b"digest")


def _commit(rid: int, session: str, exact: bool, units: tuple[tuple[int, ...], ...] = ((0, 1), (2, 3))) -> Message:
    from parties.wire.requests import SecureRelease

    specs = () if exact else ("keep-or-uniform",) * len(units)
    params = () if exact else ((0.7,),) * len(units)
    return SecureRelease(rid, "dependence", session, units, units, exact, specs, params)


async def test_commitments_mixed_with_partial_broadcasts_refusals_and_replays_match_the_per_party_path(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from parties.cohort import Cohort

    answered: list[bool] = []  # per cohort asked to commit: whether it committed as a whole
    commit = Cohort.commit

    def counted(self: Cohort, *args: object) -> np.ndarray | None:
        out = commit(self, *args)  # type: ignore[arg-type]
        answered.append(out is not None)
        return out

    monkeypatch.setattr(Cohort, "commit", counted)
    budgets = (INF,) * 3 + (1.5,) * 5 + (3.0,) * 4
    fast, slow = [], []  # type: ignore[var-annotated]
    columns, each = _engine_shard(budgets, fast), _engine_shard(budgets, slow)
    each.materialize(np.arange(N))
    steps = [
        ([_requests()[0]], list(range(0, N, 2))),  # partial: splits cohorts
        ([_commit(5, "s1", False)], [1, 2, 3, 5, 6, 9, 10]),  # randomized (4.3), partial
        ([_commit(5, "s1", False)], [1, 2, 3]),  # re-sent to some: acknowledged, booked once
        ([_commit(6, "s2", False, ((0,), (1, 2)))], list(range(N))),
        ([_commit(7, "s3", True)], list(range(N - 2))),  # exact (4.2): refused where the budget ends
        ([_commit(8, "s4", True)], list(range(N))),  # exact values again: refused by those of s3
        (_requests()[1:], list(range(N))),
    ]
    for requests, targets in steps:
        await _run(columns, requests, targets=targets)
        await _run(each, requests, targets=targets)
    assert _frames(fast) == _frames(slow)
    _same_reports(ShardReport.of(columns), ShardReport.of(each))
    built, alone = columns.built(), each.built()
    for k in range(N):
        mine, theirs = built.get(k), alone[k]
        if mine is None:
            assert not theirs._inputs
            continue
        assert mine._inputs.keys() == theirs._inputs.keys()
        for s in mine._inputs:
            assert np.array_equal(mine._inputs[s][0], theirs._inputs[s][0]) and mine._inputs[s][1] == theirs._inputs[s][1]
        assert mine.draws == theirs.draws and mine.released_values == theirs.released_values
        for s in ("s1", "s2", "s3", "s4"):
            assert mine.accountant.session_state(s) == theirs.accountant.session_state(s)
    assert True in answered and False in answered  # both the cohorts' path and the parties' own were taken


async def test_parties_built_on_their_own_answer_at_once_as_each_would_alone() -> None:
    """Parties built as Party objects (e.g. after a secure sum) whose every unit is granted
    answer a request together (Party.decide, then their codes at once, sent as reply
    columns); the refused, the replaying and the crashed answer on their own: the same
    bytes, values, draws and ledgers as when each answers alone."""
    budgets = (INF,) * 4 + (0.5,) + (INF,) * 3 + (40.0,) * 4  # party 4 refuses; 8-11 another budget
    codes, schema = _data()
    plan = HostingPlan(n=N, schema=schema, records=codes, seed=9, budgets=budgets, policy="sequential",
                       accept=tuple(k.KIND for k in LOOP_KINDS), fault_seed=9, timeout=5.0)
    sent: list[Frame | ReplyColumns] = []
    together = PartyShard(plan.setup(range(N)), sent.append, columns=sent.append)
    alone: list[Frame] = []
    each = _shard(budgets, alone)
    targets = [k for k in range(N) if k != 9]
    for shard in (together, each):
        shard.materialize(np.arange(N))
        await _run(shard, _requests(), targets, crash=(2,))
    flat = []
    for item in sent:
        if isinstance(item, ReplyColumns):
            flat += [Frame(int(item.srcs[k]), CONTROLLER, item.phase, item.kind, item.payload(k), item.message(k))
                     for k in range(len(item))]
        else:
            flat.append(item)
    assert any(isinstance(item, ReplyColumns) for item in sent) and not together.cohorts()
    assert _frames(flat) == _frames(alone) and len(flat) == 3 * (N - 2) + 1  # (2 crashed after the first)
    assert [f.message for f in flat] == [f.message for f in alone]
    _same_reports(ShardReport.of(together), ShardReport.of(each))
    assert together.built()[4].refusals and ShardReport.of(together).draws.tolist()[:2] == [6, 6]


def test_a_cohort_table_splits_a_cohort_reached_in_part_and_lets_members_leave() -> None:
    """CohortTable: a broadcast that reaches some members of a cohort splits them off (their new
    cohort's accountant belongs to its first member); members built on their own leave, and a
    cohort every member left is no longer live (indices stay)."""
    from parties.cohort import Cohort, CohortTable

    table = CohortTable(6, first_party=10)
    acc = PrivacyAccountant(1.0, "sequential", party=10)
    assert table.add(Cohort(np.array([0, 1, 2, 3]), acc)) == 0
    assert table.add(Cohort(np.array([4, 5]), acc.copies([14])[0])) == 1
    reached = table.reached(np.array([3, 1, 5, 4]))
    assert [(index, c.rows.tolist(), c.accountant.party) for index, c in reached] == [
        (2, [1, 3], 11), (1, [4, 5], 14)]  # (in the order of the cohorts reached)
    assert table.of.tolist() == [0, 2, 0, 2, 1, 1]
    moved = table.leave(np.array([0, 4, 5, 4]))
    assert [(c.rows.tolist(), c.accountant.party) for c in moved] == [([0], 10), ([4, 5], 14)]
    assert table.of.tolist() == [-1, 2, 0, 2, -1, -1]
    assert [c.rows.tolist() for c in table.live()] == [[2], [1, 3]]
    assert table.leave(np.array([0, 4])) == []
