"""The masked party (:mod:`parties.secure.masked_party`): its batches, one pass per kind of work
across many parties, give every party the reply, error and state of its own round."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from mprr.errors import MessageError, SecureSumAborted
from parties.secure.masked import MaskedEngine
from parties.secure.messages import MaskedInput, SealedShares, SurvivorTags, UnmaskRequest, UnmaskShares, id_vector
from parties.wire.codec import encode


def _captured_rounds(monkeypatch: pytest.MonkeyPatch, method: str) -> tuple[Any, list[tuple[Any, Any]]]:
    """A masked sum of 12 parties run by the counting driver with real cryptography, the calls of
    round ``method``'s batch captured: the context, and (a copy of the party before the round,
    its message) per party."""
    import copy

    from parties.secure import masked
    from parties.secure.engine import counted_cost
    from parties.secure.suite import REAL

    engine = MaskedEngine(topology="regular", degree=4, threshold=3)
    ctx = engine.context(range(12), 5, session="batched")
    kept: list[tuple[Any, Any]] = []
    name = {"share_keys": "share_keys_all", "mask_input": "mask_inputs", "state_view": "state_views",
            "unmask": "unmask_all"}[method]  # (the round's batch: the counting driver runs it, as a host does)
    batch = getattr(masked, name)

    def keep(calls: list[tuple[Any, Any]]) -> Any:
        kept.extend((copy.copy(party), message) for party, message in calls)
        return batch(calls)

    monkeypatch.setattr(masked, name, keep)
    counted_cost(engine, ctx, suite=REAL, mirror=False)
    monkeypatch.undo()
    assert len(kept) == 12
    return ctx, kept


def _batched_and_alone(monkeypatch: pytest.MonkeyPatch, kept: list[tuple[Any, Any]], batch: str, method: str,
                       chunk: int = 512) -> tuple[list[tuple[Any, Any]], list[tuple[Any, Any]], list[Any], list[Any]]:
    """Two copies of each captured party: one set run by ``batch`` together (``chunk`` parties a
    pass), the other by ``method`` each on its own (its error returned); both copies and both
    sets of replies."""
    import copy

    from parties.secure import masked_party

    alone, together = ([(copy.copy(party), message) for party, message in kept] for _ in range(2))
    monkeypatch.setattr(masked_party, "BATCH_CHUNK", chunk)
    return alone, together, getattr(masked_party, batch)(together), masked_party.in_turn(method)(alone)


def _replies_match(alone: list[tuple[Any, Any]], replies: list[Any], each_alone: list[Any], victim: int, reason: str,
                   kind: type, same: Callable[[Any, Any], bool]) -> None:
    """Every reply of a batch is its party's own: the victim's error (same type and text, naming
    ``reason``), every other reply a ``kind`` equal to its own by ``same``; exactly one error."""
    from mprr.errors import ProtocolError

    for (party, _), reply, expected in zip(alone, replies, each_alone):
        if isinstance(expected, ProtocolError):
            assert type(reply) is type(expected) and str(reply) == str(expected) and party.me == victim
            assert reason in str(reply)
        else:
            assert isinstance(reply, kind) and isinstance(expected, kind)
            assert same(reply, expected)
    assert sum(isinstance(r, ProtocolError) for r in replies) == 1


def _round_2_alone_and_batched_match(monkeypatch: pytest.MonkeyPatch, kept: list[tuple[Any, Any]], victim: int,
                                     reason: str, chunk: int) -> None:
    """Round 2 of the captured parties together (``mask_inputs``) and each alone: the same replies,
    the victim's error naming ``reason``, and the same state of every party after it."""
    alone, together, replies, each_alone = _batched_and_alone(monkeypatch, kept, "mask_inputs", "mask_input", chunk)
    _replies_match(alone, replies, each_alone, victim, reason, MaskedInput,
                   lambda reply, expected: np.array_equal(reply.values, expected.values))
    for (party, _), (batched, _) in zip(alone, together):
        for name in ("held", "view_keys", "self_mask", "s_keys"):
            assert getattr(batched, name) == getattr(party, name), name


@pytest.mark.parametrize("chunk", [512, 5])
def test_round_2_of_many_parties_at_once_is_each_partys_round_in_turn(monkeypatch: pytest.MonkeyPatch,
                                                                     chunk: int) -> None:
    # A host runs round 2 of the parties that reach it on one turn together (mask_inputs, one pass
    # per kind of work, BATCH_CHUNK parties at a time): every reply, error and party state is the
    # one of the party's own round.
    from parties.secure.messages import RelayedShares

    _, kept = _captured_rounds(monkeypatch, "mask_input")
    victim, forged = kept[3][0].me, kept[3][1]  # its relayed shares, one ciphertext byte flipped: its round fails
    kept[3] = (kept[3][0], RelayedShares(forged.session, forged.senders, forged.ends,
                                         bytes([forged.ciphertexts[0] ^ 1]) + forged.ciphertexts[1:]))
    _round_2_alone_and_batched_match(monkeypatch, kept, victim, "failed authentication", chunk)


@pytest.mark.parametrize("chunk", [512, 5])
def test_a_bad_masking_key_in_round_2_fails_its_partys_round_only(monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    # The masking agreements are a pass of their own (all of a batch's agreements, then their
    # HKDF): a sender's masking key that X25519 refuses (the all-zero point) is its reader's error
    # alone, every other party's reply and state as if each ran on its own.
    from parties.secure import masked_party

    _, kept = _captured_rounds(monkeypatch, "mask_input")
    victim = kept[3][0].me
    take = masked_party.MaskedParty.take_shares

    def bad_key_for_victim(party: Any, senders: list[int], opened: list[bytes]) -> Any:
        masks, handed = take(party, senders, opened)
        if party.me == victim:
            masks[senders[1]] = bytes(32)
        return masks, handed

    monkeypatch.setattr(masked_party.MaskedParty, "take_shares", bad_key_for_victim)
    _round_2_alone_and_batched_match(monkeypatch, kept, victim, "invalid X25519 public key from party", chunk)


def test_round_1_of_many_parties_at_once_is_each_partys_round_in_turn(monkeypatch: pytest.MonkeyPatch) -> None:
    # As round 2 (share_keys_all): the same replies but for their fresh randomness (seeds,
    # shares, nonces), the same errors, the same agreed keys and the same state otherwise.
    from parties.secure.messages import KeyDirectory

    ctx, kept = _captured_rounds(monkeypatch, "share_keys")
    victim, told = kept[5][0].me, kept[5][1]  # told a stranger's key: its round fails, the others' do not
    stranger = next(p for p in range(12) if p != victim and p not in ctx.neighbours[victim])
    kept[5] = (kept[5][0], KeyDirectory(told.session, id_vector(sorted([*told.parties.tolist()[1:], stranger])),
                                        told.keys))
    _round_1_alone_and_batched_match(monkeypatch, kept, victim, "key directory lists parties that are not its "
                                     "neighbours", 512)


def _round_1_alone_and_batched_match(monkeypatch: pytest.MonkeyPatch, kept: list[tuple[Any, Any]], victim: int,
                                     reason: str, chunk: int) -> None:
    """Round 1 of the captured parties together (``share_keys_all``) and each alone: the same
    recipients and ciphertext lengths (the shares, seeds and nonces are fresh), the victim's error
    naming ``reason``, and the same state of every party after it but for its fresh randomness."""
    from parties.secure import masked_party

    alone, together, replies, each_alone = _batched_and_alone(monkeypatch, kept, "share_keys_all", "share_keys",
                                                              chunk)
    _replies_match(alone, replies, each_alone, victim, reason, SealedShares, lambda reply, expected: (
        reply.recipients.tolist() == expected.recipients.tolist()
        and [len(b) for b in masked_party.blobs(reply.ends, reply.ciphertexts)]
        == [len(b) for b in masked_party.blobs(expected.ends, expected.ciphertexts)]))
    for (party, _), (batched, _) in zip(alone, together):
        for name in ("live", "relayed_keys", "channel", "view_keys", "own_x", "s_sk_raw"):
            assert getattr(batched, name) == getattr(party, name), name


@pytest.mark.parametrize("chunk", [512, 5])
def test_a_registered_static_key_that_x25519_refuses_fails_its_readers_round_1_only(
        monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    # The static agreements are a pass of their own: a neighbour's key in the PKI directory that
    # X25519 refuses (the all-zero point, a low-order one) is the error of the party that reads it,
    # not its host's: every other party's reply and state as if each ran on its own.
    from parties.secure.party_crypto import PartyCryptography
    from parties.secure.pki import KeyRegistry

    _, kept = _captured_rounds(monkeypatch, "share_keys")
    victim, directory = kept[5]
    peer = int(directory.parties[1])
    registry = victim.crypto.registry
    bad = KeyRegistry({p: registry.key(p)[:32] + (bytes(32) if p == peer else registry.key(p)[32:])
                       for p in range(12)})
    victim.crypto = PartyCryptography(victim.crypto.signer, bad)
    _round_1_alone_and_batched_match(monkeypatch, kept, victim.me,
                                     f"the X25519 static key registered for party {peer} ", chunk)


@pytest.mark.parametrize("chunk", [512, 5])
def test_round_3_of_many_parties_at_once_is_each_partys_round_in_turn(monkeypatch: pytest.MonkeyPatch,
                                                                     chunk: int) -> None:
    # As round 2 (state_views: every survivor set checked, then every party's tags, then every
    # reply): the same tags byte for byte (keyed BLAKE2b: no randomness), the same errors, and
    # the same view kept.
    from parties.secure.messages import SurvivorSet

    _, kept = _captured_rounds(monkeypatch, "state_view")
    victim, told = kept[7][0].me, kept[7][1]  # told a survivor set without itself: its round fails
    kept[7] = (kept[7][0], SurvivorSet(told.session, id_vector([p for p in told.survivors.tolist() if p != victim])))
    alone, together, replies, each_alone = _batched_and_alone(monkeypatch, kept, "state_views", "state_view", chunk)
    _replies_match(alone, replies, each_alone, victim, "survivor set must contain the party", SurvivorTags,
                   lambda reply, expected: encode(reply) == encode(expected))
    for (party, _), (batched, _) in zip(alone, together):
        assert batched.told == party.told


@pytest.mark.parametrize("chunk", [512, 5])
def test_round_4_of_many_parties_at_once_is_each_partys_round_in_turn(monkeypatch: pytest.MonkeyPatch,
                                                                     chunk: int) -> None:
    # As round 2 (unmask_all: every party's consistency check, then the replies of those that
    # passed): the same shares byte for byte, and the same abort for a forged statement.

    _, kept = _captured_rounds(monkeypatch, "unmask")
    victim, asked = kept[2][0].me, kept[2][1]  # every statement's tag flipped: its check fails
    kept[2] = (kept[2][0], UnmaskRequest(asked.session, asked.view_cells, asked.view_ends, asked.signers,
                                         asked.view_of, bytes(b ^ 1 for b in asked.tags)))
    alone, together, replies, each_alone = _batched_and_alone(monkeypatch, kept, "unmask_all", "unmask", chunk)
    _replies_match(alone, replies, each_alone, victim, "stated a survivor set that agrees", UnmaskShares,
                   lambda reply, expected: encode(reply) == encode(expected))
    assert [type(r) for r in replies if not isinstance(r, UnmaskShares)] == [SecureSumAborted]


def test_a_round_of_one_kind_of_work_runs_each_partys_round_method_in_turn_and_returns_its_error() -> None:
    from mprr.errors import ProtocolError
    from parties.secure.masked_party import in_turn

    class _Party:
        def __init__(self, me: int) -> None:
            self.me = me

        def told(self, k: int) -> Any:
            if k < 0:
                raise MessageError(f"party {self.me}: no such survivor {k}")
            return (self.me, k)

    batch = in_turn("told")
    replies = batch([(_Party(0), 1), (_Party(1), -2), (_Party(2), 3)])
    assert replies[0] == (0, 1) and replies[2] == (2, 3)
    assert isinstance(replies[1], ProtocolError) and str(replies[1]) == "party 1: no such survivor -2"


def test_shares_relayed_from_a_party_outside_the_live_neighbours_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # The controller relays a party a bundle whose first sender is a stranger (not among the live
    # neighbours it shared with): refused before anything is opened; the honest bundle is taken.
    from parties.secure.messages import RelayedShares

    ctx, kept = _captured_rounds(monkeypatch, "mask_input")
    party, relayed = kept[3]
    senders = relayed.senders.tolist()
    stranger = next(p for p in range(12) if p != party.me and p not in ctx.neighbours[party.me])
    forged = RelayedShares(relayed.session, id_vector(sorted([stranger, *senders[1:]])), relayed.ends,
                           relayed.ciphertexts)
    assert tuple(senders) == party.live
    with pytest.raises(MessageError, match=f"party {party.me}: relayed shares come from parties outside its live "
                                           "neighbours"):
        party.open_relayed(forged)
    assert party.open_relayed(relayed)[0] == senders
