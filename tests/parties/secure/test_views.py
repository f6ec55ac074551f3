"""The masked engine's consistency round (:mod:`parties.secure.views`): the majority rule of
:func:`check_consistency`, exactly at its threshold."""

from __future__ import annotations

import dataclasses
import itertools
import random
import re
import secrets

import pytest

from mprr.errors import SecureSumAborted
from parties.secure.context import SecureSumContext
from parties.secure.masked import MaskedEngine
from parties.secure.messages import UnmaskRequest, id_vector
from parties.secure.views import (check_consistency, check_consistency_each, combined_key, combined_keys, pack_ids,
                                  pair_keys, statement_prefix, view_tags)


@pytest.mark.parametrize(("n", "topology", "degree"), [(6, "complete", None), (7, "complete", None),
                                                       (9, "harary", 4)])
def test_exactly_a_strict_majority_of_the_holders_must_agree(n: int, topology: str, degree: int | None) -> None:
    # party 1 checks the views its co-holders of party 0's secrets stated: it unmasks only if a
    # strict majority of H(0) (itself included) agree that party 0 survived, as it was told
    ctx = MaskedEngine(topology=topology, degree=degree, round_timeout=5).context(range(n), 2)
    me, owner = 1, 0
    prefix = statement_prefix(ctx.session)
    holders = sorted((*ctx.neighbours[owner], owner))
    assert me in holders
    need = len(holders) // 2 + 1
    keys = {w: secrets.token_bytes(16) for w in holders if w != me}
    alive, dead = tuple(holders), tuple(w for w in holders if w != owner)
    signers = [w for w in holders if w != me]
    for agreeing in (need - 1, need):  # party 1 itself is one of them
        says = {w: alive if k < agreeing - 1 else dead for k, w in enumerate(signers)}
        request = UnmaskRequest(
            ctx.session, id_vector([*alive, *dead]), id_vector([len(alive), len(alive) + len(dead)]),
            id_vector(signers), id_vector([0 if says[w] == alive else 1 for w in signers]),
            b"".join(view_tags({me: keys[w]}, prefix, w, [me], pack_ids(says[w])) for w in signers))

        def check() -> None:
            check_consistency(request, keys, ctx, me, frozenset(alive), [owner], prefix)

        if agreeing < need:
            with pytest.raises(SecureSumAborted, match=rf"only {agreeing} of the {len(holders)} Shamir "
                                                       rf"holders of party {owner} stated"):
                check()
        else:
            check()


def test_the_complete_graph_counts_per_view_as_the_general_rule_counts_per_holder() -> None:
    # the complete graph's shortcut (every author checked once, counted per distinct view) must
    # decide, and word its refusal, as the holder-by-holder rule does on the same graph given as
    # a plain adjacency mapping: random views, forged tags, missing keys and statements
    rng = random.Random(7)
    decided = aborted = 0
    for _ in range(400):
        n = rng.randint(2, 10)
        ctx = MaskedEngine(round_timeout=5).context(range(n), 2)
        plain = dataclasses.replace(ctx, neighbours={p: tuple(ctx.neighbours[p]) for p in ctx.parties})
        me = rng.randrange(n)
        prefix = statement_prefix(ctx.session)
        universe = [*range(n + 3), 2**32 - 1]  # ids off the roster too
        keys = {w: secrets.token_bytes(16) for w in universe if rng.random() < 0.9}  # the party's own too
        told = sorted({me, *rng.sample(range(n), rng.randint(1, n))})
        views = list(dict.fromkeys([tuple(told), *(tuple(rng.choice(universe) for _ in range(rng.randint(1, n + 2)))
                                                   for _ in range(rng.randint(0, 3)))]))  # unsorted, repeated, off-roster ids
        signers = sorted(rng.sample(universe, rng.randint(0, len(universe))))  # the party itself and outsiders too
        says = {w: rng.randrange(len(views)) if rng.random() < 0.5 else 0 for w in signers}
        tags = b"".join(
            secrets.token_bytes(16) if rng.random() < 0.1 else  # a forged tag
            view_tags({me: keys.get(w, secrets.token_bytes(16))}, prefix, w, [me], pack_ids(views[says[w]]))
            for w in signers)
        request = UnmaskRequest(ctx.session, id_vector([c for v in views for c in v]),
                                id_vector(list(itertools.accumulate(len(v) for v in views))),
                                id_vector(signers), id_vector([says[w] for w in signers]), tags)
        owners = sorted({me, *rng.sample(range(n), rng.randint(0, n))})
        outcomes = []
        for context in (ctx, plain):
            try:
                check_consistency(request, keys, context, me, frozenset(told), owners, prefix)
                outcomes.append(None)
            except SecureSumAborted as exc:
                outcomes.append(str(exc))
        assert outcomes[0] == outcomes[1]
        decided += 1
        aborted += outcomes[0] is not None
    assert decided == 400 and 50 < aborted < 350  # both outcomes were exercised


def test_combined_keys_hash_each_peers_keys_of_all_its_common_owners() -> None:
    # owner 4 handed keys for peers 7 and 9, owner 2 for 9 and 11: peer 9 has two common owners
    a, b, c, d = (bytes([k]) * 16 for k in (1, 2, 3, 4))
    handed = [(4, (7, 9), (a, b)), (2, (9, 11), (c, d))]
    out = combined_keys(handed, {5: bytes(16)})
    assert out == {5: bytes(16), 7: combined_key([(4, a)]), 9: combined_key([(2, c), (4, b)]),
                   11: combined_key([(2, d)])}
    assert combined_key([(4, b), (2, c)]) == out[9] != combined_key([(4, b)])  # (in owner order, all owners)


def _majority_rule(request: UnmaskRequest, keys: dict[int, bytes], ctx: SecureSumContext, me: int,
                   view: frozenset[int], owners: list[int], prefix: bytes) -> str | None:
    """The rule check_consistency implements, written out holder by holder (every MAC checked):
    the refusal of the first owner o short of a strict majority of H(o) = o + its neighbours, this
    party included, stating views that agree with ``view`` on o; None when every owner has one."""
    signers, ends, cells = request.signers.tolist(), request.view_ends.tolist(), request.view_cells.tolist()
    authentic: dict[int, tuple[int, ...]] = {}
    for k, w in enumerate(signers):
        v = int(request.view_of[k])
        stated = tuple(cells[([0, *ends])[v]:ends[v]])
        if w in keys and view_tags({me: keys[w]}, prefix, w, [me], pack_ids(stated)) == request.tags[16 * k:16 * k + 16]:
            authentic[w] = stated
    for o in owners:
        holders = ctx.neighbours[o]
        need = (len(holders) + 1) // 2 + 1
        agree = 1 + sum(1 for w in {o, *holders} - {me} if w in authentic and (o in authentic[w]) == (o in view))
        if agree < need:
            return (f"party {me}: only {agree} of the {len(holders) + 1} Shamir holders of party {o} stated a "
                    f"survivor set that agrees with the party's on party {o} ({need} needed)")
    return None


@pytest.mark.parametrize(("topology", "degree"), [("regular", 4), ("harary", 3), ("harary", 6)])
def test_the_lazy_checks_of_a_sparse_graph_decide_as_the_rule_written_out(topology: str, degree: int) -> None:
    # check_consistency authenticates statements lazily, in its own order: it must accept and
    # refuse (same owner, same count) exactly where the rule over every statement does, with
    # forged tags, missing keys and statements, and views that disagree on some owners
    rng = random.Random(11)
    decided = aborted = 0
    for _ in range(300):
        n = rng.randint(degree + 2, 16) // 2 * 2  # (even: a random regular graph needs n * degree even)
        ctx = MaskedEngine(topology=topology, degree=degree, round_timeout=5).context(range(n), 2)
        me = rng.randrange(n)
        prefix = statement_prefix(ctx.session)
        near = [me, *ctx.neighbours[me]]
        two_hop = sorted({h for o in near for h in (o, *ctx.neighbours[o])} - {me})
        keys = {w: secrets.token_bytes(16) for w in two_hop if rng.random() < 0.95}
        told = sorted(w for w in near if w == me or rng.random() < 0.8)
        views = list(dict.fromkeys([tuple(told), *(tuple(sorted(rng.sample(range(n + 2), rng.randint(1, n))))
                                                   for _ in range(rng.randint(0, 3)))]))
        signers = sorted(w for w in two_hop if rng.random() < 0.9)
        says = {w: rng.randrange(len(views)) if rng.random() < 0.3 else 0 for w in signers}
        tags = b"".join(
            secrets.token_bytes(16) if rng.random() < 0.05 else
            view_tags({me: keys.get(w, secrets.token_bytes(16))}, prefix, w, [me], pack_ids(views[says[w]]))
            for w in signers)
        request = UnmaskRequest(ctx.session, id_vector([c for v in views for c in v]),
                                id_vector(list(itertools.accumulate(len(v) for v in views))),
                                id_vector(signers), id_vector([says[w] for w in signers]), tags)
        owners = sorted({me, *(o for o in ctx.neighbours[me] if rng.random() < 0.9)})
        expected = _majority_rule(request, keys, ctx, me, frozenset(told), owners, prefix)
        if expected is None:
            check_consistency(request, keys, ctx, me, frozenset(told), owners, prefix)
        else:
            with pytest.raises(SecureSumAborted, match=re.escape(expected) + ": the controller told"):
                check_consistency(request, keys, ctx, me, frozenset(told), owners, prefix)
            aborted += 1
        decided += 1
    assert decided == 300 and 30 < aborted < 270  # both outcomes were exercised


@pytest.mark.parametrize(("topology", "degree", "most"), [("regular", 8, 32), ("harary", 8, 12)])
def test_an_honest_run_authenticates_each_author_once_and_at_most_k_times_m_minus_1(
        monkeypatch: pytest.MonkeyPatch, topology: str, degree: int, most: int) -> None:
    # every party alive and honest: each owner's first m - 1 other holders agree, so the party
    # checks k (m - 1) = 8 * 4 = 32 statements at most (each once), fewer where holder sets
    # overlap: on the Harary graph (holders me-8 .. me+8) the 8 owners' and 4 more, 12
    import hashlib

    import parties.secure.views as views

    n, me = 60, 30
    ctx = MaskedEngine(topology=topology, degree=degree, round_timeout=5).context(range(n), 2)
    nbrs = ctx.neighbours
    prefix = statement_prefix(ctx.session)
    owners = sorted((me, *nbrs[me]))
    two_hop = sorted({h for o in owners for h in (o, *nbrs[o])} - {me})
    keys = {w: secrets.token_bytes(16) for w in two_hop}
    views_of = {w: tuple(sorted((w, *nbrs[w]))) for w in two_hop}  # what each author was told: all alive
    request = UnmaskRequest(ctx.session, id_vector([c for w in two_hop for c in views_of[w]]),
                            id_vector(list(itertools.accumulate(len(views_of[w]) for w in two_hop))),
                            id_vector(two_hop), id_vector(list(range(len(two_hop)))),
                            b"".join(view_tags({me: keys[w]}, prefix, w, [me], pack_ids(views_of[w]))
                                     for w in two_hop))
    authenticated: list[bytes] = []

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        authenticated.append(kwargs["key"])
        return hashlib.blake2b(*args, **kwargs)

    monkeypatch.setattr(views, "_blake2b", counted)
    check_consistency(request, keys, ctx, me, frozenset(owners), owners, prefix)
    assert len(authenticated) == len(set(authenticated)) <= most  # (n = 60: a random graph has triangles)
    assert set(authenticated) >= {keys[o] for o in owners if o != me}  # every owner's own statement


def test_pair_keys_cut_one_draw_into_a_key_per_non_adjacent_pair_in_holder_order() -> None:
    # the ring 0-1-...-7 (harary, k = 2): among the holders 1, 2, 4, 5 only 1-2 and 4-5 are
    # adjacent, so the pairs 1-4, 1-5, 2-4, 2-5 get the draw's keys 0, 1, 2, 3 in that order
    neighbours = MaskedEngine(topology="harary", degree=2).context(range(8), 2).neighbours
    drawn: list[int] = []

    def draw(size: int) -> bytes:
        drawn.append(size)
        return bytes(k // 16 for k in range(size))

    entries = pair_keys((1, 2, 4, 5), neighbours, draw=draw)
    key = [bytes([k]) * 16 for k in range(4)]
    assert drawn == [64]
    assert entries == [(4, key[0], 5, key[1]), (4, key[2], 5, key[3]), (1, key[0], 2, key[2]), (1, key[1], 2, key[3])]
    complete = MaskedEngine().context(range(4), 2).neighbours
    assert pair_keys((0, 1, 2), complete, draw=draw) == [(), (), ()] and drawn == [64]


def test_pair_keys_of_holders_none_adjacent_give_every_pair_a_key_as_the_written_out_rule() -> None:
    # the holders 0, 3, 6 of the ring 0-1-...-8 are pairwise non-adjacent: the one call per
    # holder picks the same entries as the rule written out (pairs in holder order, one draw)
    neighbours = MaskedEngine(topology="harary", degree=2).context(range(9), 2).neighbours
    key = [bytes([k]) * 16 for k in range(3)]
    entries = pair_keys((0, 3, 6), neighbours, draw=lambda size: b"".join(key[: size // 16]))
    assert entries == [(3, key[0], 6, key[1]), (0, key[0], 6, key[2]), (0, key[1], 3, key[2])]
    assert pair_keys((3,), neighbours) == [()]
    for d in range(2, 9):  # every degree's getters against the pairs in order
        live = tuple(range(0, 3 * d, 3))
        ring = MaskedEngine(topology="harary", degree=2).context(range(3 * d + 1), 2).neighbours
        drawn = [bytes([k]) * 16 for k in range(d * (d - 1) // 2)]
        pairs = [(w, h) for i, w in enumerate(live) for h in live[i + 1:]]
        expected = [tuple(x for h in live if h != w for x in (h, drawn[pairs.index((min(w, h), max(w, h)))]))
                    for w in live]
        assert pair_keys(live, ring, draw=lambda size: b"".join(drawn)[:size]) == expected


def _random_check(rng: random.Random, ctx: SecureSumContext, n: int, honest: bool
                  ) -> tuple[UnmaskRequest, dict[int, bytes], int, frozenset[int], list[int]]:
    """A party's round-4 check on ``ctx``'s graph: every statement present, keyed and agreeing
    (``honest``), or some missing, forged or disagreeing."""
    nbrs = ctx.neighbours
    me = rng.randrange(n)
    prefix = statement_prefix(ctx.session)
    near = [me, *nbrs[me]]
    two_hop = sorted({h for o in near for h in (o, *nbrs[o])} - {me})
    keys = {w: secrets.token_bytes(16) for w in two_hop if honest or rng.random() < 0.9}
    told = sorted(w for w in near if w == me or honest or rng.random() < 0.8)
    views = list(dict.fromkeys([tuple(told), *(tuple(sorted(rng.sample(range(n + 2), rng.randint(1, n))))
                                               for _ in range(rng.randint(0, 2)))]))
    signers = sorted(w for w in two_hop if honest or rng.random() < 0.9)
    says = {w: 0 if honest or rng.random() < 0.7 else rng.randrange(len(views)) for w in signers}
    tags = b"".join(
        secrets.token_bytes(16) if not honest and rng.random() < 0.08 else
        view_tags({me: keys.get(w, secrets.token_bytes(16))}, prefix, w, [me], pack_ids(views[says[w]]))
        for w in signers)
    request = UnmaskRequest(ctx.session, id_vector([c for v in views for c in v]),
                            id_vector(list(itertools.accumulate(len(v) for v in views))),
                            id_vector(signers), id_vector([says[w] for w in signers]), tags)
    owners = sorted({me, *(o for o in nbrs[me] if honest or rng.random() < 0.9)})
    return request, keys, me, frozenset(told), owners


@pytest.mark.parametrize(("topology", "degree"), [("regular", 4), ("harary", 3), ("harary", 6), ("complete", None),
                                                  ("ragged", 4)])
def test_the_checks_of_many_parties_at_once_decide_as_each_party_alone(
        monkeypatch: pytest.MonkeyPatch, topology: str, degree: int | None) -> None:
    # check_consistency_each runs an honest run's rule for a batch as columns and leaves the rest
    # to check_consistency: each party's outcome (accepted, or the same refusal) must be the
    # party's alone, in batches mixing honest and tampered requests; the column rule must accept
    # the honest ones on a graph of one degree (and leave every one to the party alone on the complete graph)
    import parties.secure.views as views

    rng = random.Random(5)
    engine = MaskedEngine(topology="harary" if topology == "ragged" else topology, degree=degree, round_timeout=5)
    at_once: list[bool] = []
    honest_run = views._honest_runs

    def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        accepted = honest_run(*args, **kwargs)
        at_once.extend(accepted)
        return accepted

    monkeypatch.setattr(views, "_honest_runs", counted)
    outcomes = {"accepted": 0, "refused": 0}
    honest_cases = 0
    for _ in range(60):
        n = rng.randint((degree or 2) + 3, 18) // 2 * 2
        ctx = engine.context(range(n), 2)
        if topology == "ragged":  # one edge removed: degrees 3 and 4
            nbrs = {p: tuple(ctx.neighbours[p]) for p in ctx.parties}
            a = 0
            b = nbrs[a][0]
            nbrs[a], nbrs[b] = tuple(x for x in nbrs[a] if x != b), tuple(x for x in nbrs[b] if x != a)
            ctx = dataclasses.replace(ctx, neighbours=nbrs)
        honest = [rng.random() < 0.5 for _ in range(rng.randint(1, 6))]
        honest_cases += sum(honest)
        calls = [_random_check(rng, ctx, n, h) for h in honest]
        if rng.random() < 0.2:  # a request with no statement at all (as after heavy dropout), anywhere, last too
            request, keys, me, told, owners = _random_check(rng, ctx, n, False)
            empty = UnmaskRequest(ctx.session, id_vector([]), id_vector([]), id_vector([]), id_vector([]), b"")
            calls.insert(rng.randint(0, len(calls)), (empty, keys, me, told, owners))
        if rng.random() < 0.1:  # a view longer than any honest one (the batch leaves it to the party alone)
            request, keys, me, told, owners = calls[0]
            long_view = tuple(range(n + 2)) * 3
            signers = request.signers.tolist()
            prefix = statement_prefix(ctx.session)
            calls[0] = (UnmaskRequest(ctx.session, id_vector(long_view), id_vector([len(long_view)]),
                                      request.signers, id_vector([0] * len(signers)),
                                      b"".join(view_tags({me: keys.get(w, bytes(16))}, prefix, w, [me],
                                                         pack_ids(long_view)) for w in signers)),
                        keys, me, told, owners)
        prefix = statement_prefix(ctx.session)
        together = views.check_consistency_each(calls, ctx, prefix)
        for call, error in zip(calls, together):
            try:
                check_consistency(*call[:2], ctx, *call[2:], prefix)
                alone = None
            except SecureSumAborted as exc:
                alone = str(exc)
            assert (None if error is None else str(error)) == alone
            outcomes["accepted" if alone is None else "refused"] += 1
    assert outcomes["accepted"] > 20 and outcomes["refused"] > 10
    if topology == "complete":
        assert not any(at_once)
    elif topology == "ragged":  # (a batch whose owners all have one degree runs the column rule)
        assert sum(at_once) < outcomes["accepted"]
    else:  # every honest request, and no more than the requests accepted, passed the column rule; some
        # tampered ones that a majority still carries were accepted by the party alone
        assert honest_cases <= sum(at_once) < outcomes["accepted"]


def test_a_request_without_statements_after_the_others_is_refused_as_the_party_alone_refuses_it() -> None:
    # a controller (or heavy dropout) leaves a party with no statement at all: after a party
    # whose request is complete, the batch refuses it exactly as the party alone does
    ctx = MaskedEngine(topology="harary", degree=4, round_timeout=5).context(range(10), 2)
    prefix, nbrs, told = statement_prefix(ctx.session), ctx.neighbours, tuple(range(10))
    near = sorted([0, *nbrs[0]])
    two_hop = sorted({h for o in near for h in (o, *nbrs[o])} - {0})
    keys = {w: secrets.token_bytes(16) for w in two_hop}
    complete = UnmaskRequest(ctx.session, id_vector(told), id_vector([10]), id_vector(two_hop),
                             id_vector([0] * len(two_hop)),
                             b"".join(view_tags({0: keys[w]}, prefix, w, [0], pack_ids(told)) for w in two_hop))
    empty = UnmaskRequest(ctx.session, id_vector([]), id_vector([]), id_vector([]), id_vector([]), b"")
    calls = [(complete, keys, 0, frozenset(told), near), (empty, keys, 1, frozenset(told), sorted([1, *nbrs[1]]))]
    first, second = check_consistency_each(calls, ctx, prefix)
    assert first is None
    with pytest.raises(SecureSumAborted) as alone:
        check_consistency(empty, keys, ctx, 1, frozenset(told), sorted([1, *nbrs[1]]), prefix)
    assert isinstance(second, SecureSumAborted) and str(second) == str(alone.value)
    assert str(second).startswith("party 1: only 1 of the 5 Shamir holders")
