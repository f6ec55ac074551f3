"""Round 4 of the masked engine at the controller (:class:`parties.secure.unmasking.Unmasking`)."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from mprr.errors import ConfigurationError, MessageError, SecureSumAborted
from parties.secure.context import SecureSumContext
from parties.secure.crypto import KeyPair
from parties.secure.masked import MaskedEngine
from parties.secure.messages import SECRET_MASK_KEY, SECRET_SELF_MASK, PublicKeys, UnmaskShares, id_vector
from parties.secure.shamir import PRIME, SHARE_BYTES, share_secret, share_values
from parties.secure.unmasking import Unmasking, abscissa, add_mask, add_masks, mask_vector

N, L = 8, 6


def _everyone_survives() -> tuple[Unmasking, dict[int, UnmaskShares], np.ndarray]:
    """An Unmasking with every party a survivor (pairwise masks cancel, so the total is the
    inputs plus the self masks), each holder's honest answer, and the sum of the inputs."""
    ctx, answers, total, inputs, relayed, keys = _answers("harary", N, 4)
    return Unmasking(ctx, total, set(ctx.parties), relayed, keys, set(), set(ctx.parties)), answers, inputs


def test_a_self_mask_is_removed_only_once_every_answering_holder_answered() -> None:
    unmasking, answers, expected = _everyone_survives()
    nb, t = unmasking.ctx.neighbours, unmasking.ctx.threshold
    owner = 0
    holders = sorted((*nb[owner], owner))
    for k, h in enumerate(holders):
        unmasking.take(h, answers[h])
        # t shares already reconstruct it, but the last answers would change nothing at the end
        # only if they were waited for: removal follows the last holder, not the threshold
        assert (owner in unmasking.removed) == (k == len(holders) - 1), (k, t)
    for h in sorted(set(answers) - set(holders)):
        unmasking.take(h, answers[h])
    assert unmasking.removed == set(unmasking.ctx.parties)
    assert unmasking.finish(sorted(unmasking.ctx.parties)).tolist() == expected.tolist()


def test_a_share_value_outside_the_field_is_the_holders_fault() -> None:
    unmasking, answers, _ = _everyone_survives()
    good = answers[3]
    bad = UnmaskShares(good.session, good.owners, good.which, good.abscissae,
                       PRIME.to_bytes(SHARE_BYTES, "big") + good.values[SHARE_BYTES:])
    unmasking.take(3, bad)
    for h in sorted(set(answers) - {3}):
        unmasking.take(h, answers[h])
    with pytest.raises(MessageError, match=r"party 3 returned a share value outside GF\(p\) for party \d"):
        unmasking.finish(sorted(unmasking.ctx.parties))


def test_self_masks_whose_first_t_shares_arrived_are_removed_together(monkeypatch: pytest.MonkeyPatch) -> None:
    unmasking, answers, expected = _everyone_survives()

    def one(v: int, row: int) -> None:
        raise AssertionError(f"party {v}'s self mask was removed on its own, not with the others'")

    monkeypatch.setattr(unmasking, "_remove_self_mask", one)
    for h in sorted(answers):
        unmasking.take(h, answers[h])
    assert unmasking.removed == set(unmasking.ctx.parties)
    assert unmasking.finish(sorted(unmasking.ctx.parties)).tolist() == expected.tolist()


def test_a_self_mask_without_a_share_at_an_abscissa_up_to_t_is_reconstructed_from_the_t_smallest() -> None:
    ctx, answers, total, inputs, relayed, keys = _answers("regular", 40, 4)
    silent = 11  # survives (its input is in the total), answers nothing in round 4
    del answers[silent]
    unmasking = _unmasking(ctx, answers, total, relayed, keys)
    alone: list[int] = []
    one = unmasking._remove_self_mask

    def spy(v: int, row: int) -> None:
        alone.append(v)
        one(v, row)

    unmasking._remove_self_mask = spy  # type: ignore[method-assign]
    unmasking.take_all(answers)
    nb, t = ctx.neighbours, ctx.threshold
    assert sorted(alone) == sorted(o for o in (*nb[silent], silent) if abscissa(nb, o, silent) <= t)
    assert unmasking.finish(sorted(ctx.parties)).tolist() == inputs.tolist()


def test_inconsistent_shares_of_a_self_mask_abort_the_sum_at_its_end() -> None:
    ctx, answers, total, _, relayed, keys = _answers("regular", 40, 4)
    owner, nb, t = 7, ctx.neighbours, ctx.threshold
    holders = sorted((*nb[owner], owner))
    # shares of a value in GF(p) above 2^256: no 32-byte seed (a holder or the owner lied)
    forged = {s.x: s.value_bytes() for s in share_secret(2**256 + 5, [abscissa(nb, owner, h) for h in holders], t)}
    for h in holders:
        msg = answers[h]
        k = msg.owners.tolist().index(owner)
        x = msg.abscissae.tolist()[k]
        values = msg.values[:SHARE_BYTES * k] + forged[x] + msg.values[SHARE_BYTES * (k + 1):]
        answers[h] = UnmaskShares(msg.session, msg.owners, msg.which, msg.abscissae, values)
    for deliver in ("take", "take_all"):
        unmasking = _unmasking(ctx, answers, total, relayed, keys)
        if deliver == "take":
            for h, msg in answers.items():
                unmasking.take(h, msg)
        else:
            unmasking.take_all(answers)
        assert unmasking.removed == set(ctx.parties) - {owner}
        with pytest.raises(ConfigurationError, match="reconstructed secret does not fit in 32 bytes"):
            unmasking.finish(sorted(ctx.parties))


def _answers(topology: str, n: int, degree: int | None, drop: tuple[int, ...] = ()
             ) -> tuple[SecureSumContext, dict[int, UnmaskShares], np.ndarray, np.ndarray, dict[int, tuple[int, ...]],
                        dict[int, PublicKeys]]:
    """Every holder's honest round-4 answer of a sum over ``n`` parties (``drop``: parties that
    dropped after sharing: their holders reveal their mask keys), the masked total, the sum of
    the inputs in it, who relayed to whom and the advertised masking keys."""
    ctx = MaskedEngine(topology=topology, degree=degree, round_timeout=5).context(range(n), L)
    ring, nb = ctx.ring, ctx.neighbours
    inputs = np.random.default_rng(n).integers(0, 5 * n, size=L)
    total = inputs.astype(ring.dtype)
    keys, rows = {}, {h: [] for h in ctx.parties}  # type: ignore[var-annotated]
    for o in ctx.parties:
        pair = KeyPair.generate()
        keys[o] = PublicKeys(ctx.session, (pair.public,))
        secret = pair.private_bytes() if o in drop else secrets.token_bytes(32)
        if o not in drop:
            np.add(total, mask_vector(ring, secret, L), out=total)
        holders = sorted((*nb[o], o))
        xs = [abscissa(nb, o, h) for h in holders]
        for h, xh, y in zip(holders, xs, share_values([secret], xs, ctx.threshold)[0], strict=True):
            rows[h].append((o, xh, y))
    answers = {}
    for h in ctx.parties:
        if h in drop:
            continue
        mine = sorted(rows[h])
        answers[h] = UnmaskShares(ctx.session, id_vector([o for o, _, _ in mine]),
                                  bytes([SECRET_MASK_KEY if o in drop else SECRET_SELF_MASK for o, _, _ in mine]),
                                  id_vector([xh for _, xh, _ in mine]), b"".join(y for _, _, y in mine))
    return ctx, answers, total, inputs, {h: tuple(nb[h]) for h in ctx.parties}, keys


def _unmasking(ctx: SecureSumContext, answers: dict[int, UnmaskShares], total: np.ndarray,
               relayed: dict[int, tuple[int, ...]], keys: dict[int, PublicKeys], drop: tuple[int, ...] = ()
               ) -> Unmasking:
    survivors = set(ctx.parties) - set(drop)
    return Unmasking(ctx, total.copy(), survivors, relayed, keys, set(drop), set(answers))


def _outcome(unmasking: Unmasking, ctx: SecureSumContext) -> tuple[str, list[int] | str]:
    try:
        return "sum", unmasking.finish(sorted(set(ctx.parties) - unmasking.dropped)).tolist()
    except (MessageError, SecureSumAborted) as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize(("topology", "n", "degree", "drop"),
                         [("regular", 40, 4, ()), ("regular", 40, 4, (3, 17)), ("harary", 36, 6, (0,)),
                          ("complete", 34, None, (5,))])
def test_a_delivery_of_answers_is_filed_at_once_as_each_answer_in_turn(
        topology: str, n: int, degree: int | None, drop: tuple[int, ...], monkeypatch: pytest.MonkeyPatch) -> None:
    ctx, answers, total, inputs, relayed, keys = _answers(topology, n, degree, drop)
    one_by_one = _unmasking(ctx, answers, total, relayed, keys, drop)
    for h, msg in answers.items():
        one_by_one.take(h, msg)
    at_once = _unmasking(ctx, answers, total, relayed, keys, drop)

    def refuse(holder: int, msg: UnmaskShares) -> None:
        raise AssertionError("an honest delivery is filed by array operations, not answer by answer")

    monkeypatch.setattr(at_once, "take", refuse)
    holders = list(answers)
    at_once.take_all({h: answers[h] for h in holders[:16]})  # (two deliveries of at least 16 answers)
    at_once.take_all({h: answers[h] for h in holders[16:]})
    assert at_once.removed == one_by_one.removed and len(at_once.removed) > 0
    kind, value = _outcome(at_once, ctx)
    assert (kind, value) == _outcome(one_by_one, ctx)
    assert kind == "sum" and len(value) == L
    if not drop:  # (no pairwise masks in this total: a dropped party's are taken out of one that has none)
        assert value == inputs.tolist()


@pytest.mark.parametrize("fault", ["owner", "owner outside the roster", "kind", "abscissa", "value",
                                   "value above 2^256"])
def test_a_delivery_with_an_answer_not_asked_for_is_decided_as_each_answer_in_turn(fault: str) -> None:
    ctx, answers, total, _, relayed, keys = _answers("regular", 40, 4)
    bad_holder = list(answers)[25]
    good = answers[bad_holder]
    owners, which, xs, values = good.owners.tolist(), good.which, good.abscissae.tolist(), good.values
    if fault == "owner":  # a share of a party that relayed it nothing
        asked = {*relayed[bad_holder], bad_holder}
        k, stranger = next((k, p) for k in range(len(owners)) for p in ctx.parties if p not in asked
                           and (k == 0 or p > owners[k - 1]) and (k == len(owners) - 1 or p < owners[k + 1]))
        owners[k] = stranger  # (still increasing)
    elif fault == "owner outside the roster":
        owners[-1] = 10**6
    elif fault == "kind":
        which = bytes([SECRET_MASK_KEY]) + which[1:]
    elif fault == "abscissa":
        xs[0] += 1
    elif fault == "value":
        values = PRIME.to_bytes(SHARE_BYTES, "big") + values[SHARE_BYTES:]
    else:  # in GF(p), but no first byte 0: the exact check decides
        values = ((1 << 256) + 5).to_bytes(SHARE_BYTES, "big") + values[SHARE_BYTES:]
    answers[bad_holder] = UnmaskShares(good.session, id_vector(owners), which, id_vector(xs), values)
    one_by_one = _unmasking(ctx, answers, total, relayed, keys)
    for h, msg in answers.items():
        one_by_one.take(h, msg)
    at_once = _unmasking(ctx, answers, total, relayed, keys)
    at_once.take_all(answers)
    outcome = _outcome(at_once, ctx)
    assert outcome == _outcome(one_by_one, ctx)
    if fault == "value above 2^256":  # accepted (a share of the wrong secret: the sum is wrong, not refused)
        assert outcome[0] == "sum"
    else:
        assert outcome[0] == "MessageError" and f"party {bad_holder} returned a share" in str(outcome[1])


@pytest.mark.parametrize("dtype", [np.uint32, np.uint64])
def test_add_mask_adds_or_subtracts_the_mask_vector_in_place(dtype: type) -> None:
    ring = MaskedEngine(topology="harary", degree=4, round_timeout=5).context(range(N), L).ring
    seed, other = bytes(range(32)), bytes(32)
    start = np.arange(L, dtype=dtype)
    acc = start.copy()
    add_mask(acc, seed)
    words = np.frombuffer(bytes(mask_vector(ring, seed, 2 * L)), dtype=f"<u{np.dtype(dtype).itemsize}")[:L]
    if np.dtype(dtype).itemsize == ring.element_bytes:
        assert np.array_equal(words, mask_vector(ring, seed, L))
    expected = start.copy()
    np.add(expected, words, out=expected)  # (wraps modulo 2^bits)
    assert np.array_equal(acc, expected)
    add_mask(acc, other)  # (the thread's buffer is reused: the first mask is not kept)
    add_mask(acc, other, subtract=True)
    add_mask(acc, seed, subtract=True)
    assert np.array_equal(acc, start)


def test_add_masks_is_add_mask_of_each_seed_in_turn() -> None:
    seeds, subtract = [bytes(range(32)), bytes(32), b"\x07" * 32], [False, True, False]
    acc, expected = np.arange(L, dtype=np.uint32), np.arange(L, dtype=np.uint32)
    add_masks(acc, seeds, subtract)
    for seed, minus in zip(seeds, subtract):
        add_mask(expected, seed, subtract=minus)
    assert np.array_equal(acc, expected) and not np.array_equal(acc, np.arange(L, dtype=np.uint32))
    with pytest.raises(ConfigurationError, match="add_masks needs one subtract flag per seed, got 3 seeds and 2 flags"):
        add_masks(acc, seeds, subtract[:2])


def test_add_mask_refuses_signed_vectors() -> None:
    with pytest.raises(ConfigurationError, match="add_mask needs a 1-D unsigned vector, got int32"):
        add_mask(np.zeros(3, dtype=np.int32), bytes(32))
