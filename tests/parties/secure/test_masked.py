"""Engine ``masked``: Bonawitz et al. 2017 pairwise masks with Shamir recovery of dropouts."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from mprr.errors import ConfigurationError, MessageError, SecureSumAborted
from parties.faults import FaultPlan
from parties.transport import CONTROLLER, Frame
from parties.secure.run import run_secure_sum
from parties.secure import views as views_module
from parties.secure.messages import (
    MaskedInput, PublicKeys, RelayedShares, SealedShares, SurvivorTags, UnmaskRequest, UnmaskShares, bundle, id_vector,
)
from parties.wire.codec import decode, encode
from parties.secure.masked import MaskedEngine, spread
from parties.secure.masked_server import SPREAD_BLOCK, SPREAD_BLOCKS, _Blobs
from parties.secure.unmasking import abscissa
from parties.secure.topology import build_neighbourhoods
from parties.secure.views import unmask_requests
from tests.parties.secure.helpers import RecordingNetwork, assert_controller_saw_no_input, run
from tests.virtual_clock import run_virtual

CONTROLLER_KINDS = {"PublicKeys", "SealedShares", "MaskedInput", "SurvivorTags", "UnmaskShares"}


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
    assert "round timeout" not in str(info.value)  # crashed parties: genuine dropouts, nothing to tune


def test_an_abort_over_late_parties_names_the_round_timeout_and_what_helps(vectors_of) -> None:  # noqa: ANN001
    # parties 0-2 never get their sealed shares through (lost or late): not crashed, only silent
    late = FaultPlan(drop=1.0, phases=frozenset({"masked/share-keys"}), senders=frozenset({0, 1, 2}))
    with pytest.raises(SecureSumAborted, match=re.escape(
            "aborted at key sharing: 1 of 4 parties left, the threshold needs at least 3 (t = 3, and never a "
            "sum of one party); 3 of the 3 missing parties did not answer within the round timeout "
            "(round_timeout = 0.2 s per round: they dropped or were late); if they were late, a larger "
            "round_timeout, the sparse engine (masked-sparse) or fewer parties help")):
        run(MaskedEngine(round_timeout=0.2), vectors_of(4, 3), faults=late)
    # a crash and a silent party: only the silent one is counted as late
    mixed = FaultPlan(crash={0: 3}, drop=1.0, phases=frozenset({"masked/input"}), senders=frozenset({1}))
    with pytest.raises(SecureSumAborted, match="2 of 4 parties left.*; 1 of the 2 missing parties did not answer"):
        run(MaskedEngine(round_timeout=0.2), vectors_of(4, 3), faults=mixed)


class _Garbling(RecordingNetwork):
    """Replaces one party's sealed shares by bytes that do not decode (rejected at delivery)."""

    def __init__(self, *args: Any, victim: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.victim = victim

    def _deliver(self, frame: Frame, position: int | None = None) -> None:
        if frame.src == self.victim and frame.dst == CONTROLLER and frame.kind == SealedShares.KIND:
            frame = Frame(frame.src, frame.dst, frame.phase, frame.kind, b"\x00not a message")
        super()._deliver(frame, position)


def test_an_abort_counts_parties_rejected_at_delivery_as_dropouts_not_late(vectors_of) -> None:  # noqa: ANN001
    # party 0's sealed shares do not decode (rejected at delivery, against it); party 1's are lost
    lost = FaultPlan(drop=1.0, phases=frozenset({"masked/share-keys"}), senders=frozenset({1}))
    net = _Garbling(4, victim=0, faults=lost)
    with pytest.raises(SecureSumAborted, match=re.escape(
            "2 of 4 parties left, the threshold needs at least 3 (t = 3, and never a sum of one party); "
            "1 of the 2 missing parties did not answer")):
        run_virtual(run_secure_sum(MaskedEngine(round_timeout=0.2), net, vectors_of(4, 3), timeout=20.0))
    # on a sparse engine the advice does not suggest the engine in use
    sparse = MaskedEngine(topology="harary", degree=2, threshold=2, round_timeout=0.2)
    late = FaultPlan(drop=1.0, phases=frozenset({"masked/share-keys"}), senders=frozenset({0, 1, 2, 3}))
    with pytest.raises(SecureSumAborted, match=re.escape(
            "(round_timeout = 0.2 s per round: they dropped or were late); if they were late, a larger "
            "round_timeout or fewer parties help")):
        run(sparse, vectors_of(5, 3), faults=late)


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


def test_the_counted_cost_is_the_measured_traffic_of_a_sparse_sum_with_handed_view_keys(vectors_of) -> None:  # noqa: ANN001
    # a random 6-regular graph on 30 parties: most holder pairs of an owner are no neighbours, so
    # the sealed shares carry handed view keys and the views' tags reach 2-hop parties
    from parties.secure.engine import counted_cost
    from parties.secure.suite import REAL

    n = 30
    engine = MaskedEngine(topology="regular", degree=6, round_timeout=5)
    result, _ = run(engine, vectors_of(n, 12))
    stats, cost = result.statistics, result.cost  # (counted with the sizing suite: no cryptography)
    assert cost.exact and cost.rounds == stats.rounds == 5
    for actor in (CONTROLLER, *range(n)):
        assert tuple(stats.sent_by(actor)) == tuple(cost.sent[actor]), actor
    assert len({cost.sent[p].bytes for p in range(n)}) > 1  # the 2-hop neighbourhoods differ in size
    assert dict(counted_cost(engine, result.context, suite=REAL).sent) == dict(cost.sent)


def test_a_sessions_masking_keys_are_parsed_once_into_its_own_context_and_go_with_it(vectors_of) -> None:  # noqa: ANN001
    n = 30
    engine = MaskedEngine(topology="regular", degree=6, round_timeout=5)
    result, _ = run(engine, vectors_of(n, 12))
    assert len(result.context.public_keys) == n  # each party's masking key, parsed once for its 6 neighbours
    again, _ = run(engine, vectors_of(n, 12))
    assert len(again.context.public_keys) == n and again.context.public_keys is not result.context.public_keys


@pytest.mark.parametrize(("topology", "degree", "n", "length"),
                         [("complete", None, 9, 5), ("regular", 6, 30, 12), ("harary", 3, 11, 1582),
                          ("regular", 4, 9, 3), ("harary", 5, 40, 7), ("regular", 3, 8, 2), ("harary", 4, 5, 4)])
def test_the_least_and_most_cost_bound_the_count_of_every_actor(
        topology: str, degree: int | None, n: int, length: int) -> None:
    # what simulate's warning reads before it counts: every actor's messages exactly (5 per
    # party, 4 per party from the controller), its bytes between the two bounds
    from parties.secure.engine import counted_cost

    engine = MaskedEngine(topology=topology, degree=degree)
    ctx = engine.context(range(n), length, session="s")
    least, most, counted = engine.least_cost(ctx), engine.most_cost(ctx), counted_cost(engine, ctx)
    assert counted.exact and not least.exact and not most.exact
    assert least.rounds == most.rounds == counted.rounds == 5
    degrees = sorted({len(ctx.neighbours[p]) for p in range(n)})
    # T_p: the parties sharing an owner with p, i.e. p's 2-hop neighbourhood (p excluded)
    two_hop = sorted({len({*ctx.neighbours[p], *(h for j in ctx.neighbours[p] for h in ctx.neighbours[j])} - {p})
                      for p in range(n)})
    assert least.formula.startswith(f"at least (lower bound: {5 * n:,} party and {4 * n:,} controller messages, "
                                    f"every party at the smallest degree {degrees[0]}, 2-hop neighbourhood "
                                    f"{two_hop[0]}; ")
    assert most.formula.startswith(f"at most (upper bound: {5 * n:,} party and {4 * n:,} controller messages, "
                                   f"every party at the largest degree {degrees[-1]}, 2-hop neighbourhood "
                                   f"{two_hop[-1]}; ")
    assert set(least.sent) == set(most.sent) == set(counted.sent) == {CONTROLLER, *range(n)}
    for actor, count in counted.sent.items():
        assert least.sent[actor].messages == count.messages == most.sent[actor].messages, actor
        assert least.sent[actor].bytes <= count.bytes <= most.sent[actor].bytes, actor
    if topology == "complete":  # (every party alike: the bounds are the count)
        assert dict(least.sent) == dict(counted.sent) == dict(most.sent)
    y = len(encode(MaskedInput("s", np.zeros(length, dtype=ctx.ring.dtype))))
    assert least.bytes > n * y


def test_abscissae_are_distinct_and_public() -> None:
    nbrs = build_neighbourhoods(range(9), "harary", 4)
    for owner in range(9):
        holders = (*nbrs[owner], owner)
        xs = sorted(abscissa(nbrs, owner, h) for h in holders)
        assert xs == list(range(1, len(holders) + 1))


def test_the_controller_sends_each_round_to_every_party_once_in_blocks_spread_over_the_roster() -> None:
    """spread is a permutation: a party left out would be a dropout the controller made, one
    sent twice a duplicate; it keeps blocks of consecutive ids together and reaches each half
    of the roster (one worker's parties) within the first two blocks; with a power of two
    blocks, each quarter within the first four and each eighth within the first eight."""
    for block in (1, 2, 3, 7, SPREAD_BLOCK):
        for n in [*range(0, 40), 99, 100, 101, 1000, 2 * SPREAD_BLOCK + 5]:
            ids = list(range(3, 3 + n))
            order = spread(ids, block=block)
            assert sorted(order) == ids, (n, block)
            at = {i: k for k, i in enumerate(order)}
            for first in range(0, n, block):  # each block of the roster sent as it is, in one run
                run = [at[i] for i in ids[first:first + block]]
                assert run == list(range(run[0], run[0] + len(run))), (n, block, first)
            blocks = -(-n // block)
            for parts in (2, 4, 8):  # each half within the first two blocks; on 2^j blocks, each quarter ...
                if blocks >= parts and (parts == 2 or blocks & (blocks - 1) == 0):
                    head = order[: parts * block]
                    for q in range(parts):
                        lo, hi = 3 + q * n // parts, 3 + (q + 1) * n // parts
                        assert any(lo <= i < hi for i in head), (n, block, parts, q)
    assert spread(list(range(9)), block=2) == [0, 1, 8, 4, 5, 2, 3, 6, 7]  # blocks 0, 4, 2, 1, 3 (0b000, 0b100, ...)
    assert spread(list(range(9)), block=1) == [0, 8, 4, 2, 6, 1, 5, 3, 7]
    with pytest.raises(ConfigurationError, match="block must be >= 1 or None, got 0"):
        spread([1, 2], block=0)


def test_the_default_blocks_are_at_most_spread_block_ids_and_at_least_spread_blocks_of_them() -> None:
    """A worker's half of the roster waits at most a sixteenth of the round for its first message."""
    for n, size in ((0, 1), (9, 1), (40, 2), (4_000, 250), (16_384, SPREAD_BLOCK), (32_561, SPREAD_BLOCK)):
        ids = list(range(n))
        assert spread(ids) == spread(ids, block=size), n
        assert n < 2 * SPREAD_BLOCKS or -(-n // size) >= SPREAD_BLOCKS, n
        assert n < 2 or any(i >= n // 2 for i in spread(ids)[: size + 1]), n  # after at most one block


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


class _Tampering(RecordingNetwork):
    """Replaces one party's message of one kind by a well-formed but unusable one."""

    def __init__(self, *args: Any, victim: int, kind: int, tamper: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.victim, self.kind, self.tamper = victim, kind, tamper

    def _deliver(self, frame: Frame, position: int | None = None) -> None:
        if frame.src == self.victim and frame.dst == CONTROLLER and frame.kind == self.kind:
            frame = Frame(frame.src, frame.dst, frame.phase, frame.kind, encode(self.tamper(decode(frame.payload))))
        super()._deliver(frame, position)


@pytest.mark.parametrize(("kind", "tamper", "reason"), [
    (MaskedInput.KIND, lambda m: MaskedInput(m.session, m.values[:-1]), r"sent \(4,\) cells, expected \(5,\)"),
    (PublicKeys.KIND, lambda m: PublicKeys(m.session, m.keys * 2, m.signature), "must advertise"),
    (SealedShares.KIND, lambda m: SealedShares(m.session, m.recipients[:-1], m.ends[:-1],
                                                            m.ciphertexts[:int(m.ends[-2])]),
     "other parties than its live neighbours"),
])
def test_an_unusable_message_makes_its_sender_a_dropout_not_the_end_of_the_sum(
        kind: int, tamper: Any, reason: str) -> None:
    # Before: one party's malformed keys, shares or masked vector raised MessageError at the
    # controller and ended the sum for every honest party.
    n, victim = 8, 3
    vectors = np.random.default_rng(7).integers(0, 2, size=(n, 5))
    net = _Tampering(n, victim=victim, kind=kind, tamper=tamper)
    result = run_virtual(run_secure_sum(MaskedEngine(round_timeout=5), net, vectors, timeout=20.0))
    others = [i for i in range(n) if i != victim]
    assert victim not in result.contributors and set(result.contributors) == set(others)
    assert result.total.tolist() == vectors[others].sum(axis=0).tolist()
    rejected = net.endpoint(CONTROLLER).take_rejections()
    assert set(rejected) == {victim} and re.search(reason, rejected[victim].reason)
    assert net.statistics().rejected_by_sender == {victim: 1}


@pytest.mark.parametrize("victim", [0, 5])
def test_a_share_that_was_not_requested_ends_the_sum_even_after_other_masks_were_removed(victim: int) -> None:
    # The controller removes a survivor's self mask as soon as all its holders answered; a bad
    # answer is still the error of the round, as when every answer was checked at its end.
    def tamper(m: UnmaskShares) -> UnmaskShares:  # a mask key asked of a survivor's holder
        return UnmaskShares(m.session, m.owners, bytes([1]) + m.which[1:], m.abscissae, m.values)

    n = 6
    vectors = np.random.default_rng(3).integers(0, 2, size=(n, 4))
    net = _Tampering(n, victim=victim, kind=UnmaskShares.KIND, tamper=tamper)
    with pytest.raises(MessageError, match=f"party {victim} returned a share that was not requested"):
        run_virtual(run_secure_sum(MaskedEngine(round_timeout=5), net, vectors, timeout=20.0))


def _requests_one_by_one(session: str, views: dict[int, tuple[int, ...]], tagged: dict) -> dict[int, bytes]:
    """Round 4 as the protocol states it, reader by reader: the authors that MAC'd their view
    for v, in order, their views sent once each (numbered by first signer), their tags for v."""
    out = {}
    for v in sorted(tagged):
        signers = [w for w in sorted(tagged) if v in tagged[w].targets.tolist()]
        numbers: dict[tuple[int, ...], int] = {}
        for w in signers:
            numbers.setdefault(views[w], len(numbers))
        tags = b"".join(tagged[w].tags[16 * k:16 * k + 16] for w in signers
                        for k in [tagged[w].targets.tolist().index(v)])
        out[v] = encode(UnmaskRequest(session, id_vector(c for view in numbers for c in view),
                                      id_vector(np.cumsum([len(view) for view in numbers])), id_vector(signers),
                                      id_vector(numbers[views[w]] for w in signers), tags))
    return out


@pytest.mark.parametrize(("n", "degree"), [(9, 8), (40, 4), (200, 8)])
def test_the_relayed_bundles_built_as_columns_are_those_built_one_by_one(n: int, degree: int) -> None:
    # every sender's blobs (of random lengths) for its neighbours, some senders silent: each
    # recipient's bundle holds the blobs sealed for it, by sender, as bundle() of them sorted
    rng = np.random.default_rng(n)
    neighbours = build_neighbourhoods(range(n), "regular" if degree < n - 1 else "complete", degree, seed=n)
    received, inbox = [], {p: [] for p in range(n)}  # type: ignore[var-annotated]
    for src in rng.permutation(n).tolist():  # (in order of arrival)
        if rng.random() < 0.1:
            continue
        recipients = list(neighbours[src])
        blobs = [rng.bytes(int(rng.integers(0, 40))) for _ in recipients]
        received.append((src, SealedShares("s", *bundle(zip(recipients, blobs)))))
        for dst, blob in zip(recipients, blobs):
            inbox[dst].append((src, blob))
    order = spread(list(range(n)))
    columns = _Blobs(received).bundles(order)
    assert len(columns) == n
    for p, (senders, ends, data) in zip(order, columns):
        ids, stops, joined = bundle(sorted(inbox[p]))
        assert senders.tolist() == ids.tolist() and ends.tolist() == stops.tolist() and data == joined
        assert senders.dtype == ends.dtype == np.uint32 and not senders.flags.writeable and not ends.flags.writeable
        assert RelayedShares("s", senders, ends, data) == RelayedShares("s", ids, stops, joined)


@pytest.mark.parametrize(("n", "degree", "block", "drop"),
                         [(9, 8, 1024, 0.15), (40, 4, 7, 0.15), (200, 8, 64, 0.15), (200, 8, 1, 0.15), (200, 8, 64, 0.0)])
def test_the_unmask_requests_built_in_blocks_are_those_built_one_by_one(
        n: int, degree: int, block: int, drop: float, monkeypatch: pytest.MonkeyPatch) -> None:
    # (drop 0: every view holds its party's k + 1 holders, all of one size)
    monkeypatch.setattr(views_module, "_BLOCK", block)
    rng = np.random.default_rng(n + block)
    neighbours = build_neighbourhoods(range(n), "regular" if degree < n - 1 else "complete", degree, seed=n)
    survivors = {p for p in range(n) if rng.random() >= drop}
    views = {v: tuple(sorted(w for w in (*neighbours[v], v) if w in survivors)) for v in survivors}
    tagged = {}
    for w in sorted(survivors):
        if rng.random() < drop * 2 / 3:
            continue  # dropped before its tags: no request, and in no other party's request
        targets = sorted({*neighbours[w], *(h for o in neighbours[w] for h in neighbours[o] if h != w)})
        tagged[w] = SurvivorTags("s", id_vector(targets), rng.bytes(16 * len(targets)))
    blocks = list(unmask_requests("s", views, tagged, order=spread))
    assert [len(b) for b in blocks[:-1]] == [block] * (len(blocks) - 1) and 0 < len(blocks[-1]) <= block
    built = {v: encode(request) for b in blocks for v, request in b}
    assert list(built) == spread(sorted(tagged))
    assert built == _requests_one_by_one("s", views, tagged)


@pytest.mark.parametrize(("other", "case"), [
    (1, "for the holder itself"),
    (2, "for a neighbour of the holder, who shares a key with it already"),
    (6, "for a party that holds nothing of the owner"),
])
def test_view_keys_an_owner_seals_for_the_wrong_parties_are_rejected(
        monkeypatch: pytest.MonkeyPatch, other: int, case: str, vectors_of) -> None:  # noqa: ANN001
    # Owner 0 of a harary(4) graph on 12 parties (neighbours 1, 2, 10, 11) seals its holder 1 a
    # view key "for" another party: 1 (itself), 2 (its neighbour) or 6 (not a holder of 0).
    # Holder 1 refuses the share before masking: it drops out, the others sum exactly.
    import parties.secure.party_crypto as masked

    n = 12
    nbrs = build_neighbourhoods(range(n), "harary", 4)
    assert set(nbrs[0]) == {1, 2, 10, 11} and set(nbrs[1]) == {0, 2, 3, 11}
    honest = masked.pair_keys

    def lying(live, neighbours, **kw):  # noqa: ANN001, ANN003, ANN202
        entries = honest(live, neighbours, **kw)
        if set(live) == set(nbrs[0]):  # only owner 0 lies, only to holder 1
            at = live.index(1)
            entries[at] = (*entries[at], other, bytes(16))
        return entries

    monkeypatch.setattr(masked, "pair_keys", lying)
    x = vectors_of(n, 6)
    result, _ = run(MaskedEngine(topology="harary", degree=4, threshold=3, round_timeout=0.25), x)
    assert set(result.failures) == {1}, case
    assert re.search("view keys sealed by party 0 are not for its other holders", str(result.failures[1]))
    assert result.dropped == (1,)
    assert result.total.tolist() == np.delete(x, 1, axis=0).sum(axis=0).tolist()


def test_a_view_key_an_owner_seals_on_the_complete_graph_is_rejected(monkeypatch: pytest.MonkeyPatch,
                                                                    vectors_of) -> None:  # noqa: ANN001
    # On the complete graph every two holders are neighbours: an owner hands no view key, and one
    # that does (owner 0, to holder 1, "for" party 2) has its share refused; the others sum exactly.
    import parties.secure.party_crypto as masked

    honest = masked.pair_keys

    def lying(live, neighbours, **kw):  # noqa: ANN001, ANN003, ANN202
        entries = honest(live, neighbours, **kw)
        if 0 not in live:  # (owner 0: the only one whose live neighbours are all the others)
            entries[live.index(1)] = (2, bytes(16))
        return entries

    monkeypatch.setattr(masked, "pair_keys", lying)
    x = vectors_of(6, 4)
    result, _ = run(MaskedEngine(round_timeout=0.25), x)
    assert set(result.failures) == {1}
    assert re.search("view keys sealed by party 0 are not for its other holders", str(result.failures[1]))
    assert result.total.tolist() == np.delete(x, 1, axis=0).sum(axis=0).tolist()


def test_view_keys_for_all_the_owners_other_holders_in_order_are_rejected_where_some_are_the_holders_neighbours(
        monkeypatch: pytest.MonkeyPatch, vectors_of) -> None:  # noqa: ANN001
    # Owner 0 of a harary(4) graph on 12 parties (neighbours 1, 2, 10, 11) seals its holder 1
    # (neighbours 0, 2, 3, 11) view keys for all its other holders in order, 2, 10 and 11, which is
    # what it hands a holder adjacent to none of them; 2 and 11 are neighbours of 1 (honest: 10 alone).
    import parties.secure.party_crypto as masked

    n = 12
    nbrs = build_neighbourhoods(range(n), "harary", 4)
    honest = masked.pair_keys

    def lying(live, neighbours, **kw):  # noqa: ANN001, ANN003, ANN202
        entries = honest(live, neighbours, **kw)
        if set(live) == set(nbrs[0]):
            at = live.index(1)
            assert entries[at][0::2] == (10,)
            entries[at] = (2, bytes(16), 10, entries[at][1], 11, bytes(16))
        return entries

    monkeypatch.setattr(masked, "pair_keys", lying)
    x = vectors_of(n, 6)
    result, _ = run(MaskedEngine(topology="harary", degree=4, threshold=3, round_timeout=0.25), x)
    assert set(result.failures) == {1}
    assert re.search("view keys sealed by party 0 are not for its other holders", str(result.failures[1]))
    assert result.total.tolist() == np.delete(x, 1, axis=0).sum(axis=0).tolist()


def _one_target_fewer(m: SurvivorTags) -> SurvivorTags:
    return SurvivorTags(m.session, m.targets[:-1], m.tags[:-16])


def _last_target_another(m: SurvivorTags) -> SurvivorTags:  # (as many targets as asked: one of them a stranger)
    return SurvivorTags(m.session, np.append(m.targets[:-1], m.targets[-1] + 1).astype(np.uint32), m.tags)


@pytest.mark.parametrize("tamper", [_one_target_fewer, _last_target_another])
@pytest.mark.parametrize(("topology", "degree"), [("complete", None), ("regular", 4)])
def test_view_tags_for_other_parties_are_rejected_and_the_sum_still_counts_their_author(
        topology: str, degree: int | None, tamper: Any) -> None:
    # The author's masked input is in the sum; it just takes no part in the consistency check,
    # and its self mask is rebuilt from the other holders' shares.
    n, victim = 12, 5
    vectors = np.random.default_rng(11).integers(0, 2, size=(n, 5))
    net = _Tampering(n, victim=victim, kind=SurvivorTags.KIND, tamper=tamper)
    engine = MaskedEngine(topology=topology, degree=degree, round_timeout=5)
    result = run_virtual(run_secure_sum(engine, net, vectors, timeout=20.0))
    assert result.total.tolist() == vectors.sum(axis=0).tolist() and victim in result.contributors
    rejected = net.endpoint(CONTROLLER).take_rejections()
    assert set(rejected) == {victim}
    assert "sent view tags for other parties than those it shares keys with" in rejected[victim].reason


@pytest.mark.parametrize(("vector", "message"), [
    (np.array([0, 2, 0, 1], dtype=np.uint8), r"vector entries must be integers in \[0, 1\] \(max_value\), got range \[0, 2\]"),
    (np.zeros(3, dtype=np.uint8), r"vector must be 1-D of length 4, got shape \(3,\)"),
])
def test_a_party_checks_its_input_before_it_sends_anything(vector: np.ndarray, message: str) -> None:
    # an invalid input is refused before the party advertises a key: nothing reaches the network
    from parties.router import Router
    from parties.secure.pki import setup_pki

    engine = MaskedEngine(topology="regular", degree=2)
    signers, registry = setup_pki(range(4))
    net = Router(4)
    ctx = engine.context(range(4), 4, network=net, session="s", registry=registry)
    with pytest.raises(ConfigurationError, match=message):
        run_virtual(engine.party(net.endpoint(1), vector, ctx, signer=signers[1]))
    assert net.totals() == (0, 0)


@pytest.mark.parametrize(("topology", "degree", "parties"),
                         [("regular", 4, tuple(range(100, 130))), ("harary", 5, tuple(range(7, 52, 2))),
                          ("harary", 3, tuple(range(11))), ("regular", 8, tuple(range(300)))])
def test_the_extent_of_a_graph_is_what_each_party_sees(topology: str, degree: int,
                                                       parties: tuple[int, ...]) -> None:
    # the array computation against the definitions, party by party (ids need not start at 0)
    from parties.secure.masked import _extent

    nbrs = build_neighbourhoods(parties, topology, degree, seed=3)
    two_hop, sealed = [], []
    for p in parties:
        two_hop.append(len({*nbrs[p], *(h for j in nbrs[p] for h in nbrs[j])} - {p}))
        sealed += [sum(1 for x in nbrs[p] if x != j and x not in nbrs[j]) for j in nbrs[p]]
    distinct = len({frozenset((*nbrs[w], w)) for w in parties}) == len(parties)
    degrees = [len(nbrs[p]) for p in parties]
    extent = _extent(parties, nbrs)
    assert extent == ((min(degrees), max(degrees)), (min(two_hop), max(two_hop)), (min(sealed), max(sealed)),
                      distinct)
    assert _extent(parties, nbrs) is extent  # (memoized per graph)
