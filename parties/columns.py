"""Reply columns: one shard's replies to one release request, carried together as columns.

A party shard (:mod:`parties.shard`) answers a broadcast
:class:`~parties.wire.requests.ReleaseRequest` for a cohort of parties at once
(:mod:`parties.cohort`).  Their replies are still one
:class:`~parties.wire.messages.RandomizedValues` message per party — each with its own encoding
by the codec, counted at its own size — but within the controller's process they travel as one
:class:`ReplyColumns`: the senders' ids, the ``(parties, units)`` codes matrix and each
message's encoded size (the codec's size of that party's own message).  The router counts the
sizes per sender, phase and kind as arrays (:meth:`parties.traffic.TrafficCounter.record_columns`),
the controller's mailbox hands the columns to a waiting gather
(:meth:`parties.mailbox.Mailbox.gather_columns`) and the view log stores them as they are
(:meth:`parties.view.ViewLog.record_columns`): no message, frame or envelope object is built per
party.  Wherever a message must exist on its own — a fault plan that acts per message, a receive
that is not a columnar gather, a reader of the view — :meth:`ReplyColumns.message` and
:meth:`ReplyColumns.payload` give it back, equal to the one the party would have sent.

Between processes (a ``tcp`` worker, a Ray shard actor) reply columns travel as one frame, the
codec's :class:`~parties.wire.messages.ReplyBlock` (:meth:`ReplyColumns.wire`,
:meth:`ReplyColumns.of_wire`; the channel's ``COLUMNS`` record, :mod:`parties.channel`): the
senders, phase, request id, codes and the members' shared layout, which decoding checks to be the
codec's own — so each member is still counted at the codec size of its own message.

A host's secure-sum programs (:mod:`parties.party_sum`) send the controller one message per
party and round; those of one turn of the host's loop leave as one :class:`MessageColumns` per
phase and kind (kept meanwhile in a :class:`MessageOutbox`) (each member its own message, counted at the codec size of its own encoding, by the
router's same :meth:`~parties.router.Router.ingress_columns`), where the host shares the
router's process; between processes each travels as its own frame.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from parties.wire.codec import Message, encode
from parties.wire.messages import RandomizedValues, ReplyBlock

__all__ = ["Columns", "MessageColumns", "MessageOutbox", "ReplyColumns"]

_KIND = RandomizedValues.KIND


class ReplyColumns:
    """Replies ``RandomizedValues(request_id, codes[k])`` of parties ``srcs[k]`` to the controller.

    Parameters
    ----------
    srcs
        The senders' party ids (int64, distinct).
    phase
        The protocol phase of the replies.
    request_id
        The request they answer.
    codes
        ``(len(srcs), units)`` int64 codes, row ``k`` the codes of ``srcs[k]``'s message.
    prefix, suffix
        The encoding of every member's message is ``prefix + codes[k].tobytes() + suffix``
        (:class:`parties.cohort.ReplyLayout`); ``prefix`` ``None``: each is encoded by the codec.
    """

    __slots__ = ("srcs", "phase", "request_id", "codes", "sizes", "_prefix", "_suffix")

    kind = _KIND
    """The wire kind of every member's message."""

    def __init__(self, srcs: np.ndarray, phase: str, request_id: int, codes: np.ndarray,
                 prefix: bytes | None, suffix: bytes, sizes: np.ndarray | None = None) -> None:
        self.srcs = np.asarray(srcs, dtype=np.int64)
        self.phase = phase
        self.request_id = request_id
        self.codes = codes
        self._prefix, self._suffix = prefix, suffix
        if sizes is not None:  # (known: a subset's)
            self.sizes = sizes
        elif prefix is not None:
            self.sizes = np.full(self.srcs.shape[0], len(prefix) + codes.shape[1] * 8 + len(suffix), dtype=np.int64)
        else:
            self.sizes = np.fromiter((len(self.payload(k)) for k in range(self.srcs.shape[0])),
                                     dtype=np.int64, count=self.srcs.shape[0])

    def __len__(self) -> int:
        return int(self.srcs.shape[0])

    def __repr__(self) -> str:
        return (f"ReplyColumns({len(self)} replies to request {self.request_id} in {self.phase!r}, "
                f"{self.codes.shape[1]} codes each)")

    def message(self, k: int) -> RandomizedValues:
        """Member ``k``'s message."""
        return RandomizedValues(self.request_id, self.codes[k])

    def payload(self, k: int) -> bytes:
        """Member ``k``'s encoded message (the codec's bytes)."""
        prefix = self._prefix
        if prefix is None:
            return encode(self.message(k))
        codes: bytes = self.codes[k].tobytes()
        return prefix + codes + self._suffix

    def wire(self) -> ReplyBlock | None:
        """The columns as one frame's message (:class:`~parties.wire.messages.ReplyBlock`);
        ``None`` when the members are encoded one by one (no shared layout)."""
        if self._prefix is None:
            return None
        srcs = self.srcs
        if srcs.flags.writeable:  # (read-only arrays are carried as they are, not copied)
            srcs = srcs.copy()
            srcs.flags.writeable = False
        return ReplyBlock(self.request_id, self.phase, srcs, self.codes, self._prefix, self._suffix)

    @classmethod
    def of_wire(cls, block: ReplyBlock) -> ReplyColumns:
        """The columns a :class:`~parties.wire.messages.ReplyBlock` carries (decoded, so
        validated: its layout is the codec's)."""
        return cls(block.srcs, block.phase, block.request_id, block.codes, block.prefix, block.suffix)

    def subset(self, keep: np.ndarray) -> ReplyColumns:
        """The members where ``keep`` (booleans or positions) selects them, in order."""
        return ReplyColumns(self.srcs[keep], self.phase, self.request_id, self.codes[keep], self._prefix,
                            self._suffix, self.sizes[keep])


class MessageColumns:
    """Messages ``messages[k]`` of one wire ``kind`` and ``phase``, sent to the controller by
    distinct parties ``srcs[k]``, ``sizes[k]`` bytes each (the codec's size of that message).

    The interface of :class:`ReplyColumns` that the router uses (senders, phase, kind, sizes,
    a member's message and payload, a subset).  The encodings are not kept (a round's masked
    inputs would be held twice): :meth:`payload` encodes a member again where a single frame
    needs it (a fault plan, a rejection); the codec is deterministic, so the bytes are the ones
    counted.  They share no layout, so no one frame carries them between processes.

    Raises
    ------
    ValueError
        If the columns differ in length, the senders are not distinct, or a message is not of
        ``kind``.
    """

    __slots__ = ("srcs", "phase", "kind", "sizes", "_messages")

    def __init__(self, srcs: Sequence[int] | np.ndarray, phase: str, kind: int, messages: Sequence[Message],
                 sizes: Sequence[int] | np.ndarray) -> None:
        if not len(srcs) == len(messages) == len(sizes):
            raise ValueError(f"message columns need one message and one size per sender, got "
                             f"{len(srcs)} senders, {len(messages)} messages, {len(sizes)} sizes")
        self.srcs = np.asarray(srcs, dtype=np.int64)
        if np.unique(self.srcs).shape[0] != self.srcs.shape[0]:
            raise ValueError(f"message columns need distinct senders, got {self.srcs.tolist()}")
        if any(m.KIND != kind for m in messages):
            raise ValueError(f"message columns carry messages of kind {kind} only, got kinds "
                             f"{sorted({m.KIND for m in messages})}")
        self.phase, self.kind = phase, kind
        self._messages = list(messages)
        self.sizes = np.asarray(sizes, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.srcs.shape[0])

    def __repr__(self) -> str:
        return f"MessageColumns({len(self)} messages of kind {self.kind} in {self.phase!r})"

    def message(self, k: int) -> Message:
        """Member ``k``'s message."""
        return self._messages[k]

    def payload(self, k: int) -> bytes:
        """Member ``k``'s encoded message (the codec's bytes, encoded again)."""
        return encode(self._messages[k])

    def subset(self, keep: np.ndarray) -> MessageColumns:
        """The members where ``keep`` (booleans or positions) selects them, in order."""
        at: list[int] = np.arange(len(self))[keep].tolist()
        return MessageColumns(self.srcs[at], self.phase, self.kind, [self._messages[k] for k in at], self.sizes[at])


Columns = ReplyColumns | MessageColumns
"""Either form of columns a host sends up (:meth:`parties.router.Router.ingress_columns`)."""


class MessageOutbox:
    """A host's messages to the controller of one turn of its loop, kept as the
    :class:`MessageColumns` they leave in (:mod:`parties.party_sum`): one block per phase and
    kind, in the order each was first sent (a sender's second message of one starts another)."""

    __slots__ = ("_open", "_blocks")

    def __init__(self) -> None:
        self._open: dict[tuple[str, int], _OutboxBlock] = {}
        self._blocks: list[_OutboxBlock] = []

    def add(self, src: int, phase: str, message: Message, size: int) -> bool:
        """Keep ``src``'s ``message`` (``size`` bytes encoded); True if the outbox was empty."""
        key = (phase, message.KIND)
        block = self._open.get(key)
        if block is None or src in block.seen:
            block = self._open[key] = _OutboxBlock(phase, message.KIND)
            self._blocks.append(block)
        block.seen.add(src)
        block.srcs.append(src)
        block.messages.append(message)
        block.sizes.append(size)
        return len(self._blocks) == 1 and len(block.srcs) == 1

    def take(self) -> list[MessageColumns]:
        """The columns kept, in order; the outbox is empty after."""
        blocks, self._blocks, self._open = self._blocks, [], {}
        return [MessageColumns(b.srcs, b.phase, b.kind, b.messages, b.sizes) for b in blocks]


class _OutboxBlock:
    """One block of a :class:`MessageOutbox`: its senders (also as a set), messages and their sizes."""

    __slots__ = ("phase", "kind", "srcs", "seen", "messages", "sizes")

    def __init__(self, phase: str, kind: int) -> None:
        self.phase, self.kind = phase, kind
        self.srcs: list[int] = []
        self.seen: set[int] = set()
        self.messages: list[Message] = []
        self.sizes: list[int] = []
