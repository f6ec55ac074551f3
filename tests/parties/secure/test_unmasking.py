"""Round 4 of the masked engine at the controller (:class:`parties.secure.unmasking.Unmasking`)."""

from __future__ import annotations

import secrets

import numpy as np
import pytest

from mprr.errors import ConfigurationError, MessageError
from parties.secure.masked import MaskedEngine
from parties.secure.messages import SECRET_SELF_MASK, UnmaskShares, id_vector
from parties.secure.shamir import PRIME, SHARE_BYTES, share_values
from parties.secure.unmasking import Unmasking, abscissa, add_mask, add_masks, mask_vector

N, L = 8, 6


def _everyone_survives() -> tuple[Unmasking, dict[int, UnmaskShares], np.ndarray]:
    """An Unmasking with every party a survivor (pairwise masks cancel, so the total is the
    inputs plus the self masks), and each holder's honest answer."""
    ctx = MaskedEngine(topology="harary", degree=4, round_timeout=5).context(range(N), L)
    ring, nb = ctx.ring, ctx.neighbours
    x = np.arange(N * L, dtype=ring.dtype).reshape(N, L) % 5
    total = x.sum(axis=0, dtype=ring.dtype)
    per_holder: dict[int, list[tuple[int, int, bytes]]] = {h: [] for h in ctx.parties}
    for o in ctx.parties:
        b = secrets.token_bytes(32)
        np.add(total, mask_vector(ring, b, L), out=total)
        holders = sorted((*nb[o], o))
        xs = [abscissa(nb, o, h) for h in holders]
        for h, xh, y in zip(holders, xs, share_values([b], xs, ctx.threshold)[0], strict=True):
            per_holder[h].append((o, xh, y))
    answers = {}
    for h, rows in per_holder.items():
        rows.sort()
        answers[h] = UnmaskShares(ctx.session, id_vector([o for o, _, _ in rows]),
                                  bytes([SECRET_SELF_MASK] * len(rows)),
                                  id_vector([xh for _, xh, _ in rows]), b"".join(y for _, _, y in rows))
    relayed = {h: tuple(nb[h]) for h in ctx.parties}
    unmasking = Unmasking(ctx, total, set(ctx.parties), relayed, {}, set(), set(ctx.parties))
    return unmasking, answers, x.sum(axis=0)


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
