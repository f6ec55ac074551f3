"""Tests for parties.controller: rounds, stale replies, retries, dropout policies, refusals."""

from __future__ import annotations

import asyncio
import re

import numpy as np
import pytest

from mprr.data import Attribute, Schema
from mprr.errors import ConfigurationError, MessageError, ProtocolError, RoundTimeout
from mprr.matrices import keep_or_uniform
from mprr.protocols.steps import MatrixSpec, OracleSpec, Report
from parties.controller import CONTROLLER_KINDS, Controller, ReleaseRefused
from parties.secure.messages import KeyDirectory, MaskedInput, PartialSum, SurvivorSet, UnmaskShares, id_vector
from parties.wire.messages import Abort, OracleReport, RandomizedValues, Refusal
from parties.router import Router
from parties.transport import CONTROLLER, Frame
from parties.wire.requests import ReleaseRequest, ReportRequest

SIZES = (3, 2)
SCHEMA = Schema(tuple(Attribute(f"a{j}", tuple(f"c{k}" for k in range(s)), "nominal") for j, s in enumerate(SIZES)))
UNITS = ((0,), (1,))
SPECS = (MatrixSpec.keep_or_uniform(0.5),) * 2


def controller(net: Router, **kw) -> Controller:
    return Controller(net.endpoint(CONTROLLER), SCHEMA, range(net.n), **{"timeout": 0.3, **kw})


async def scripted(net: Router, pid: int, answer, *, times: int = 1) -> None:
    """A fake party: for each of ``times`` requests, send ``answer(request)`` (None = stay silent)."""
    ep = net.endpoint(pid)
    for _ in range(times):
        env = await ep.recv(kinds=ReleaseRequest, timeout=2.0)
        for reply in answer(env.message):
            await ep.send(CONTROLLER, reply, phase=env.phase)


def codes(*values: int):
    return lambda req: [RandomizedValues(req.request_id, np.array(values))]


async def run(ctl: Controller, parties) -> object:
    """Run the fake parties and one release round; the round's error is raised as is."""
    error = None
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(p) for p in parties]
        try:
            out = await ctl.release("attributes", UNITS, SPECS)
        except Exception as exc:
            error = exc
        finally:
            for t in tasks:
                t.cancel()
    if error is not None:
        raise error
    return out


async def test_release_gathers_one_reply_per_party_in_party_order() -> None:
    net = Router(3)
    ctl = controller(net)
    out = await run(ctl, [scripted(net, 2, codes(2, 1)), scripted(net, 0, codes(0, 0)), scripted(net, 1, codes(1, 1))])
    assert out.contributors == (0, 1, 2)
    assert out.codes.tolist() == [[0, 0], [1, 1], [2, 1]]
    assert not out.codes.flags.writeable
    assert [np.array_equal(m.values, keep_or_uniform(s, 0.5).values) for m, s in zip(out.matrices, SIZES)] == [True, True]
    released = out.released_data(SCHEMA)
    assert released.counts[0].tolist() == [1.0, 1.0, 1.0] and released.counts[1].tolist() == [1.0, 2.0]
    assert len(ctl.view) == 3 and ctl.phases == [out]
    stats = net.statistics()
    assert stats.sent_by(CONTROLLER).messages == 3 and stats.rounds == 2


async def test_replies_to_other_requests_are_logged_and_ignored() -> None:
    net = Router(1)
    ctl = controller(net)
    stale = lambda req: [RandomizedValues(req.request_id + 40, np.array([2, 0])),  # noqa: E731
                         RandomizedValues(req.request_id, np.array([1, 1]))]
    out = await run(ctl, [scripted(net, 0, stale)])
    assert out.codes.tolist() == [[1, 1]]
    assert [e.message.request_id for e in ctl.view] == [41, 1]


async def test_silent_party_fails_the_round_with_a_timeout_naming_it() -> None:
    net = Router(3)
    ctl = controller(net, timeout=0.1)
    with pytest.raises(RoundTimeout, match=r"1 of 3 parties did not answer request 1 within 0.1 s: party 1") as info:
        await run(ctl, [scripted(net, 0, codes(0, 0)), scripted(net, 1, lambda r: []), scripted(net, 2, codes(1, 1))])
    assert info.value.missing == (1,) and info.value.phase == "attributes"
    aborts = [e for e in net.endpoint(0).pending() if isinstance(e.message, Abort)]
    assert aborts and aborts[0].phase == "abort"


async def test_retry_resends_to_the_silent_parties_only() -> None:
    net = Router(2)
    ctl = controller(net, timeout=0.1, retries=1)
    seen = []

    def second_time(req):
        seen.append(req.request_id)
        return [] if len(seen) == 1 else [RandomizedValues(req.request_id, np.array([2, 1]))]

    out = await run(ctl, [scripted(net, 0, codes(0, 1)), scripted(net, 1, second_time, times=2)])
    assert out.codes.tolist() == [[0, 1], [2, 1]] and seen == [1, 1]
    assert net.statistics().sent_by(CONTROLLER).messages == 3  # 2 + 1 retry


async def test_exclude_policy_reports_who_was_left_out() -> None:
    net = Router(4)
    ctl = controller(net, timeout=0.1, on_dropout="exclude")
    refuse = lambda req: [Refusal(req.request_id, "budget-exceeded: no", 2.0, 0.5)]  # noqa: E731
    bad = lambda req: [RandomizedValues(req.request_id, np.array([7, 0]))]  # noqa: E731  (7 >= 3)
    out = await run(ctl, [scripted(net, 0, codes(0, 1)), scripted(net, 1, lambda r: []),
                          scripted(net, 2, refuse), scripted(net, 3, bad)])
    assert out.contributors == (0,) and out.silent == (1,) and set(out.refusals) == {2}
    assert set(ctl.excluded) == {1, 2, 3}
    assert "silent" in ctl.excluded[1] and "budget-exceeded" in ctl.excluded[2] and "malformed" in ctl.excluded[3]
    assert ctl.active == [0]


async def test_refusal_fails_the_round_under_the_fail_policy() -> None:
    net = Router(2)
    ctl = controller(net)
    refuse = lambda req: [Refusal(req.request_id, "plan-violation: not announced", 0.0, 1.0)]  # noqa: E731
    with pytest.raises(ReleaseRefused, match="1 of 2 parties refused request 1; party 1: plan-violation") as info:
        await run(ctl, [scripted(net, 0, codes(0, 0)), scripted(net, 1, refuse)])
    assert set(info.value.refusals) == {1} and info.value.phase == "attributes"


async def test_malformed_reply_fails_the_round() -> None:
    net = Router(1)
    ctl = controller(net)
    with pytest.raises(MessageError, match=r"1 of 1 parties are faulty \(malformed replies to request 1 or rejected frames\): party 0"):
        await run(ctl, [scripted(net, 0, codes(1, 1, 1))])


def garbage_beside(answer):
    """A faulty party: an undecodable frame, then its real reply (the attack of a garbage frame
    delivered beside a valid reply)."""
    async def script(net: Router, pid: int) -> None:
        ep = net.endpoint(pid)
        env = await ep.recv(kinds=ReleaseRequest, timeout=2.0)
        net._transmit(Frame(pid, CONTROLLER, env.phase, RandomizedValues.KIND, b"\x00\xff not a message"))
        for reply in answer(env.message):
            await ep.send(CONTROLLER, reply, phase=env.phase)
    return script


async def test_a_garbage_frame_names_its_sender_under_the_fail_policy() -> None:
    # Before: the undecodable frame failed the controller's gather with a raw MessageError.
    net = Router(3)
    ctl = controller(net)
    with pytest.raises(MessageError, match=r"phase 'attributes': 1 of 3 parties are faulty .*: party 1; party 1: sent a frame the controller rejected in phase 'attributes'") as info:
        await run(ctl, [scripted(net, 0, codes(0, 0)), garbage_beside(codes(1, 1))(net, 1), scripted(net, 2, codes(2, 1))])
    assert info.value.parties == (1,)
    assert net.statistics().rejected_by_sender == {1: 1}


async def test_a_garbage_frame_excludes_its_sender_and_nobody_else() -> None:
    net = Router(3)
    ctl = controller(net, on_dropout="exclude")
    out = await run(ctl, [scripted(net, 0, codes(0, 0)), garbage_beside(codes(1, 1))(net, 1), scripted(net, 2, codes(2, 1))])
    assert out.contributors == (0, 2) and out.codes.tolist() == [[0, 0], [2, 1]]
    assert list(ctl.excluded) == [1] and "rejected" in ctl.excluded[1] and ctl.active == [0, 2]


CONTROLLER_ONLY = {
    "ReleaseRequest": ReleaseRequest(9, "attributes", UNITS, UNITS, ("keep-or-uniform",) * 2, ((0.5,), (0.5,))),
    "SurvivorSet": SurvivorSet("s", id_vector((0, 1, 2))),
    "KeyDirectory": KeyDirectory("s", id_vector((0,)), bytes(32)),
}
"""Well-formed messages of kinds only the controller sends."""


def controller_kind_beside(forged, answer):
    """A faulty party: a well-formed message of a kind only the controller sends, then its real
    reply."""
    async def script(net: Router, pid: int) -> None:
        ep = net.endpoint(pid)
        env = await ep.recv(kinds=ReleaseRequest, timeout=2.0)
        await ep.send(CONTROLLER, forged, phase=env.phase)
        for reply in answer(env.message):
            await ep.send(CONTROLLER, reply, phase=env.phase)
    return script


def test_the_controller_accepts_what_parties_send_it_and_nothing_the_controller_sends() -> None:
    names = {k.NAME for k in CONTROLLER_KINDS}
    assert {"RandomizedValues", "Refusal", "Ack", "OracleReport", "PartialSum", "PublicKeys", "SealedShares",
            "MaskedInput", "UnmaskShares", "SurvivorTags"} == names
    assert names.isdisjoint({"ReleaseRequest", "ReportRequest", "SecureRelease", "SecureSumStart", "Abort", "ShareVector",
                             "KeyDirectory", "RelayedShares", "UnmaskRequest", "SurvivorSet"})
    assert {PartialSum, MaskedInput, UnmaskShares} <= set(CONTROLLER_KINDS)


@pytest.mark.parametrize("kind", sorted(CONTROLLER_ONLY))
async def test_a_controller_only_kind_from_a_party_names_its_sender_under_the_fail_policy(kind: str) -> None:
    # Before: the controller's endpoint accepted every kind, so the forged message sat in its
    # buffer and its sender counted as honest.
    net = Router(3)
    ctl = Controller(net.endpoint(CONTROLLER, accept=CONTROLLER_KINDS), SCHEMA, range(3), timeout=0.3)
    forged = controller_kind_beside(CONTROLLER_ONLY[kind], codes(1, 1))(net, 1)
    with pytest.raises(MessageError, match=(
        r"phase 'attributes': 1 of 3 parties are faulty .*: party 1; party 1: sent a frame the controller "
        rf"rejected in phase 'attributes' \(unexpected message kind {kind} \(\d+\); expected one of ")) as info:
        await run(ctl, [scripted(net, 0, codes(0, 0)), forged, scripted(net, 2, codes(2, 1))])
    assert info.value.parties == (1,)
    assert net.statistics().rejected_by_sender == {1: 1}
    assert not net.endpoint(CONTROLLER).pending()


@pytest.mark.parametrize("kind", sorted(CONTROLLER_ONLY))
async def test_a_controller_only_kind_from_a_party_excludes_its_sender_and_nobody_else(kind: str) -> None:
    net = Router(3)
    ctl = Controller(net.endpoint(CONTROLLER, accept=CONTROLLER_KINDS), SCHEMA, range(3), timeout=0.3,
                     on_dropout="exclude")
    forged = controller_kind_beside(CONTROLLER_ONLY[kind], codes(1, 1))(net, 1)
    out = await run(ctl, [scripted(net, 0, codes(0, 0)), forged, scripted(net, 2, codes(2, 1))])
    assert out.contributors == (0, 2) and out.codes.tolist() == [[0, 0], [2, 1]]
    assert list(ctl.excluded) == [1] and ctl.active == [0, 2]
    assert re.search(rf"rejected in phase 'attributes' \(unexpected message kind {kind} ", ctl.excluded[1])
    assert net.statistics().rejected_by_sender == {1: 1}


async def test_no_contributor_is_an_error_even_when_excluding() -> None:
    net = Router(1)
    ctl = controller(net, timeout=0.05, on_dropout="exclude")
    with pytest.raises(ProtocolError, match="no party released anything"):
        await run(ctl, [scripted(net, 0, lambda r: [])])


def test_configuration_is_validated() -> None:
    net = Router(1)
    ep = net.endpoint(CONTROLLER)
    with pytest.raises(ConfigurationError, match="timeout must be a finite number > 0, got 0"):
        Controller(ep, SCHEMA, [0], timeout=0)
    with pytest.raises(ConfigurationError, match="on_dropout must be one of"):
        Controller(ep, SCHEMA, [0], timeout=1, on_dropout="skip")
    with pytest.raises(ConfigurationError, match="retries"):
        Controller(ep, SCHEMA, [0], timeout=1, retries=True)
    with pytest.raises(ConfigurationError, match="at least one party"):
        Controller(ep, SCHEMA, [], timeout=1)


def test_request_ids_are_fresh_and_matrices_cached() -> None:
    ctl = controller(Router(1))
    assert [ctl.new_request_id() for _ in range(3)] == [1, 2, 3]
    assert ctl.matrix(SPECS[0], (0,)) is ctl.matrix(SPECS[0], (0,))


# ---------------------------------------------------------------------- oracle reports
def report_step(assign: str = "sampled", **kw) -> Report:
    return Report("attributes", UNITS, (OracleSpec("grr", 1.0), OracleSpec("oue", 1.0)), assign, **kw)


async def run_report(ctl: Controller, net: Router, answers, step: Report) -> object:
    """Fake parties answering one report round with ``answers[pid] = (unit, reports)``."""
    async def party(pid: int) -> None:
        ep = net.endpoint(pid)
        env = await ep.recv(kinds=ReportRequest, timeout=2.0)
        unit, values = answers[pid]
        await ep.send(CONTROLLER, OracleReport(env.message.request_id, unit, np.array(values, dtype=np.int64)),
                      phase=env.phase)

    error = None
    async with asyncio.TaskGroup() as tg:
        tasks = [tg.create_task(party(p)) for p in answers]
        try:
            out = await ctl.report(step)
        except Exception as exc:
            error = exc
        finally:
            for t in tasks:
                t.cancel()
    if error is not None:
        raise error
    return out


async def test_report_gathers_the_drawn_units_and_builds_the_phase_data() -> None:
    net = Router(3)
    ctl = controller(net)
    out = await run_report(ctl, net, {0: (1, [0b01]), 1: (-1, []), 2: (0, [2])}, report_step(abstain=0.5))
    assert out.contributors == (0, 1, 2) and out.reporters() == (0, 2)
    assert out.assigned.tolist() == [1, -1, 0] and out.reports.tolist() == [[-1, 1], [-1, -1], [2, -1]]
    data = out.reported_data(SCHEMA)
    assert data.reports == (1, 1) and data.counts[0].tolist() == [0.0, 0.0, 1.0] and data.counts[1].tolist() == [1.0, 0.0]
    assert ctl.reported_in(("attributes",)) == {0, 2}


async def test_a_report_that_does_not_fit_the_step_fails_the_round_naming_its_sender() -> None:
    net = Router(2)
    ctl = controller(net)
    with pytest.raises(MessageError, match=r"1 of 2 parties are faulty .*: party 1; party 1: malformed reply \[3\]: "
                                           r"unit 0 / report 3 outside"):
        await run_report(ctl, net, {0: (0, [1]), 1: (0, [3])}, report_step())


async def test_a_report_from_a_party_that_reported_in_an_excluded_phase_is_malformed() -> None:
    net = Router(2)
    ctl = controller(net, on_dropout="exclude")
    await run_report(ctl, net, {0: (0, [1]), 1: (-1, [])}, report_step(abstain=0.5))
    later = Report("later", UNITS, (OracleSpec("grr", 1.0),) * 2, "sampled", exclude=("attributes",))
    out = await run_report(ctl, net, {0: (1, [1]), 1: (0, [2])}, later)
    assert out.contributors == (1,) and "reported in an excluded phase" in ctl.excluded[0]


async def test_an_oracle_that_cannot_be_built_is_refused_before_anything_is_sent() -> None:
    net = Router(2)
    ctl = controller(net)
    with pytest.raises(ConfigurationError, match=r"GRR: epsilon must be finite and in \(0, 700\]"):
        await ctl.report(Report("attributes", UNITS, (OracleSpec("grr", 1000.0),) * 2))
    assert net.statistics().messages == 0 and ctl.requests == []


@pytest.mark.parametrize("engine", ["paper", "graph", "masked-sparse"])
def test_the_view_holds_every_message_the_controller_received_in_a_secure_sum(engine: str) -> None:
    """The secure-sum programs take their rounds with ``recv_many`` / ``take_all``: those
    receives are logged too, so the view is everything the controller received (the traffic
    counters' count of messages delivered to it)."""
    from mprr.synthetic import planted_clusters
    from parties.simulate import simulate

    data = planted_clusters(12, rng=np.random.default_rng(3)).dataset
    sim = simulate(data, "RR-Clusters", seed=2, epsilon=4.0, Tv=50, Td=0.2, dependence="4.3", secure_sum=engine)
    view = sim.view.to_dict()
    assert view["messages"] == sim.traffic.received_by(CONTROLLER).messages
    assert view["bytes"] == sim.traffic.received_by(CONTROLLER).bytes
    assert any(phase.startswith(("paper/", "graph/", "masked/")) for phase in view["by_phase"])
