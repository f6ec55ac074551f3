"""The counting driver (parties.secure.counting, parties.secure.engine.counted_cost): equal to a
network's count, stopped at its limit or threshold, mirrored for role-symmetric sums."""

from __future__ import annotations

import asyncio
from typing import Any

import networkx as nx
import numpy as np
import pytest

from mprr.errors import ConfigurationError, MessageError, RoundTimeout
from parties.router import Router
from parties.secure.messages import PartialSum
from parties.secure.counting import count
from parties.secure.program import Answer, Broadcast, Expect, Mark, Send, receive
from parties.secure.sizing import SizeByShape
from parties.topology import CONTROLLER
from parties.wire.codec import encode
from tests.parties.secure.programs import (S, controller, engine_programs, partial, partials, party, run_all,
                                           sum_programs, vec)


def test_counting_driver_equals_the_network() -> None:
    xs = [vec(1, 2), vec(3, 0), vec(0, 1)]
    counted = count(sum_programs(xs))
    assert dict(counted.results) == {CONTROLLER: 7, 0: 7, 1: 7, 2: 7}
    net = Router(3)
    asyncio.run(run_all(net, sum_programs(xs)))
    measured = net.statistics()
    for field in ("messages", "bytes", "rounds", "by_sender", "by_kind", "by_phase"):
        assert getattr(counted.statistics, field) == getattr(measured, field), field
    one = len(encode(PartialSum(S, -1, vec(1, 2))))
    assert counted.statistics.bytes == 6 * one  # 3 up, 3 down, all the same size
    assert counted.sent()[CONTROLLER] == (3, 3 * one)


def test_answers_of_one_batch_are_computed_together_as_each_in_turn_would_be() -> None:
    """The parties' Answers wait until no program can run, then each batch runs once for all of
    them, in order (as a host of many parties runs them); a refusal is raised in its own program;
    the results and the traffic equal those of the same answers computed one by one."""
    xs = [vec(1, 2), vec(9, 0), vec(0, 1)]
    calls: list[list[int]] = []

    def batch(args: list[tuple[Any, ...]]) -> list[Any]:
        calls.append([int(x.sum()) for x, in args])
        return partials(args)

    def parties(with_batch: Any) -> dict[int, Any]:
        return {CONTROLLER: controller((0, 1, 2)),
                **{i: _answering(x, with_batch) for i, x in enumerate(xs)}}

    together, alone = count(parties(batch)), count(parties(None))
    assert calls == [[3, 9, 1]]  # one batch of the three, in their order; party 1's 9 refused
    assert dict(together.results) == dict(alone.results) == {CONTROLLER: 4, 0: 4, 1: 4, 2: 4}
    assert together.statistics == alone.statistics
    with pytest.raises(ConfigurationError, match="an answer batch returned 1 replies for 3 calls"):
        count(parties(lambda args: partials(args[:1])))


@pytest.mark.parametrize("mirror", [False, True])
def test_a_count_stopped_among_batched_answers_stops_where_answers_on_their_own_stop(
        monkeypatch: pytest.MonkeyPatch, mirror: bool) -> None:
    """A limit or a threshold crossed by one reply of a batch stops the count at that reply, with
    the lower bound (and the work) of the same count whose answers are computed one by one."""
    from parties.secure import masked
    from parties.secure.engine import counted_cost
    from parties.secure.registry import make_engine
    from parties.traffic import Counts

    engine = make_engine("masked-sparse")
    ctx = engine.context(range(60), 7, session="stopped")
    full = counted_cost(engine, ctx, mirror=mirror)
    stops = [dict(limit=limit) for limit in (70, 130, 200)] + [
        dict(threshold=Counts(messages, full.bytes)) for messages in (65, 150)] + [
        dict(threshold=Counts(full.messages, full.bytes // share)) for share in (5, 2)]
    together = [counted_cost(engine, ctx, mirror=mirror, **stop) for stop in stops]
    for name in ("advertise_all", "share_keys_all", "mask_inputs", "state_views", "unmask_all"):
        monkeypatch.setattr(masked, name, None)  # (each answer computed on its own)
    alone = [counted_cost(engine, ctx, mirror=mirror, **stop) for stop in stops]
    assert [(c.messages, c.bytes, c.exact) for c in together] == [(c.messages, c.bytes, c.exact) for c in alone]
    assert not any(c.exact for c in together[:-1]) and len({c.messages for c in together}) > 3


def test_a_program_goes_on_from_its_batched_answer_before_the_actors_its_reply_woke() -> None:
    """What a program sends after its batched answer, without waiting, is counted in the round of
    the answer, as when each answer is computed on its own (and as a host steps it on)."""
    def note_after(x: np.ndarray, batch: Any) -> Any:
        yield Answer(CONTROLLER, "up", partial, (x,), batch)
        yield Send(CONTROLLER, PartialSum(S, -1, x), phase="note")  # (not waited for, never read)
        got = yield from receive(Expect(PartialSum, S, (CONTROLLER,), "down", 1.0))
        return int(got.messages[CONTROLLER].values.sum())

    def marking(parties: tuple[int, ...]) -> Any:
        yield Mark("up")
        got = yield from receive(Expect(PartialSum, S, parties, "up", 1.0))
        total = sum(msg.values for msg in got.messages.values())
        yield Mark("down")
        yield Broadcast(parties, PartialSum(S, -1, total), phase="down")
        return int(total.sum())

    xs = [vec(1, 2), vec(3, 0)]
    counts = [count({CONTROLLER: marking((0, 1)), **{i: note_after(x, batch) for i, x in enumerate(xs)}})
              for batch in (partials, None)]
    assert counts[0].statistics == counts[1].statistics
    assert [(r.phase, r.messages) for r in counts[0].statistics.round_log] == [("up", 4), ("down", 2)]


def _answering(x: np.ndarray, batch: Any) -> Any:
    """:func:`~tests.parties.secure.programs.answering_party` with the Answer's ``batch``."""
    try:
        yield Answer(CONTROLLER, "up", partial, (x,), batch)
    except MessageError:
        yield Send(CONTROLLER, PartialSum(S, -1, np.zeros_like(x)), phase="up")
    got = yield from receive(Expect(PartialSum, S, (CONTROLLER,), "down", 1.0))
    return int(got.messages[CONTROLLER].values.sum())


def test_counting_driver_times_out_a_missing_party() -> None:
    programs = {CONTROLLER: controller((0, 1)), 0: party(0, vec(1, 1))}
    with pytest.raises(RoundTimeout, match="missing") as err:
        count(programs)
    assert err.value.missing == (1,)


def test_counting_stops_at_its_limit_with_a_lower_bound() -> None:
    from parties.secure.engine import counted_cost
    from parties.secure.paper import PaperEngine

    eng = PaperEngine()
    ctx = eng.context(range(12), 3, session="s")
    full = counted_cost(eng, ctx)
    assert full.exact and full.messages == 12 * 23
    bounded = counted_cost(eng, ctx, limit=50, mirror=False)
    assert not bounded.exact and 50 < bounded.messages < full.messages
    assert bounded.formula.startswith("at least (stopped after 50 messages routed) counted (paper, n = 12, L = 3)")
    assert counted_cost(eng, ctx, limit=50).exact  # (mirrored: 11 shares and 12 + 12 partials routed)


def test_counting_stops_as_soon_as_the_traffic_crosses_a_threshold() -> None:
    """A warning's threshold: the count stops at the first send that crosses it, with a lower
    bound above the threshold (mirrored or not)."""
    from parties.secure.engine import counted_cost
    from parties.secure.paper import PaperEngine
    from parties.traffic import Counts

    eng = PaperEngine(yield_every=1)
    ctx = eng.context(range(40), 3, session="s")
    full = counted_cost(eng, ctx)
    for mirror in (True, False):
        by_messages = counted_cost(eng, ctx, threshold=Counts(100, full.bytes), mirror=mirror)
        assert not by_messages.exact and 100 < by_messages.messages < full.messages
        assert by_messages.formula.startswith("at least (stopped after 100 messages or")
        by_bytes = counted_cost(eng, ctx, threshold=Counts(full.messages, full.bytes // 3), mirror=mirror)
        assert not by_bytes.exact and full.bytes // 3 < by_bytes.bytes < full.bytes
    assert counted_cost(eng, ctx, threshold=Counts(full.messages, full.bytes)).exact


@pytest.mark.parametrize(("engine", "n", "L"), [("paper", 6, 5), ("paper-per-combination", 3, 2),
                                                ("graph", 9, 5), ("graph-direct", 9, 5)])
def test_counting_with_the_sizing_suite_equals_counting_with_the_real_cryptography(engine: str, n: int,
                                                                                   L: int) -> None:
    """parties.secure.suite.SIZING: right-sized stand-ins give every actor's traffic exactly."""
    from parties.secure.engine import counted_cost
    from parties.secure.registry import sized_engine
    from parties.secure.suite import REAL, SIZING

    eng = sized_engine(engine, degree=4, round_timeout=5.0)
    ctx = eng.context(range(n), L, session="s" * 45)
    sized, real = counted_cost(eng, ctx, suite=SIZING), counted_cost(eng, ctx, suite=REAL)
    assert dict(sized.sent) == dict(real.sent) and sized.rounds == real.rounds and sized.exact


@pytest.mark.parametrize(("engine", "n", "L", "degree"), [
    ("paper", 2, 3, 4), ("paper", 7, 5, 4), ("paper", 300, 4, 4), ("paper-per-combination", 5, 3, 4),
    ("graph-direct", 10, 5, 4), ("graph-direct", 31, 3, 6), ("graph-direct", 5, 2, 8),
    ("graph-relay", 10, 5, 4), ("graph-relay", 31, 3, 6), ("graph-relay", 5, 2, 8)])
def test_a_mirrored_count_equals_the_full_count(engine: str, n: int, L: int, degree: int) -> None:
    """Role-symmetric sums (SecureSumEngine.symmetric): one party's program run against mirrored
    peers gives every actor's traffic, every kind, phase and round of the full count (n = 300:
    the paper ring's cells take 2 bytes; relayed graph shares: the controller gets each party's
    counterpart of the representative's sealed shares, SecureSumEngine.counterpart)."""
    from parties.secure.graph import GraphEngine
    from parties.secure.registry import sized_engine

    eng = (GraphEngine(degree=degree, relay=True, round_timeout=5.0) if engine == "graph-relay"
           else sized_engine(engine, degree=degree, round_timeout=5.0))
    network = None if engine == "graph-relay" else Router(n, topology=nx.complete_graph(n))
    ctx = eng.context(range(n), L, session="s" * 16, network=network)
    assert eng.symmetric(ctx) and ctx.relay == (engine == "graph-relay")
    full = count(engine_programs(eng, ctx, ctx.parties), size=SizeByShape())
    mirrored = count(engine_programs(eng, ctx, ctx.parties[:1]), size=SizeByShape(), mirror=ctx.parties,
                     counterpart=lambda m, p: eng.counterpart(m, p, ctx))
    assert full.complete and mirrored.complete
    for name in ("messages", "bytes", "delivered", "rounds", "simulated_time", "by_sender", "by_receiver",
                 "by_kind", "by_phase", "round_log"):
        assert getattr(mirrored.statistics, name) == getattr(full.statistics, name), name
    assert dict(mirrored.sent()) == dict(full.sent())
    assert np.array_equal(mirrored.results[CONTROLLER].total, full.results[CONTROLLER].total)


def test_sums_that_are_not_role_symmetric_are_counted_in_full() -> None:
    """A Harary graph with one vertex of higher degree (odd n and k) is not symmetric:
    counted_cost runs every party's program, the mirrored count would differ."""
    from parties.secure.engine import counted_cost
    from parties.secure.graph import GraphEngine

    harary = GraphEngine(topology="harary", degree=3, relay=False)
    ctx = harary.context(range(9), 3, session="s")
    assert not harary.symmetric(ctx)
    loads = {c for a, c in counted_cost(harary, ctx).sent.items() if a != CONTROLLER}
    assert len(loads) == 2  # (the one vertex of degree 4 sends one share more)
    mirrored = count(engine_programs(harary, ctx, ctx.parties[:1]), size=SizeByShape(), mirror=ctx.parties)
    assert mirrored.statistics.messages != counted_cost(harary, ctx).messages


def test_a_mirrored_count_needs_the_controller_and_one_party() -> None:
    with pytest.raises(ConfigurationError, match=r"one party of the roster, got programs for actors \[-1, 0, 1\]"):
        count(sum_programs([vec(1), vec(2)]), mirror=(0, 1))
