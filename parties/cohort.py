"""A cohort: the parties of a shard whose state is the same apart from their records and streams.

A shard host (:mod:`parties.shard`) holds most of its parties as **columns** rather than
:class:`~parties.party.Party` objects: parties that have received the same messages and answered
them the same way (same budget and policy, same ledger, plans and replays) are one
:class:`Cohort` — their shard rows, **one** accountant holding the state they share (its
ledger snapshot is already shared between identical histories, :class:`mprr.privacy.ledger.Ledger`),
one column of released codes per ledger entry, the uniforms each drew and their status.  Their
records and PCG64 stream rows stay in the shard's tables (``records``,
:class:`~mprr.streams.StreamTable`).

:meth:`Cohort.release` answers a :class:`~parties.wire.requests.ReleaseRequest` that every member
received, in one vectorized step, exactly as each member's :meth:`Party.receive
<parties.party.Party.receive>` would:

- the request is resolved against the public :class:`~parties.public_state.ReleaseBook` (the
  same object every party resolves) and put to the shared accountant
  (:meth:`mprr.privacy.PrivacyAccountant.answer`: plan, allowed attributes, budget, replays) —
  the decision of every member, whose accountant state it is;
- a granted unit draws one uniform from each member's own stream, in unit order
  (:meth:`StreamTable.uniforms <mprr.streams.StreamTable.uniforms>` advances every row at once)
  and releases the inverse-CDF sample of the matrix row (:meth:`ResolvedUnit.sample
  <parties.public_state.ResolvedUnit.sample>`, the fast path's sampling); a replayed unit
  resends each member's column of that ledger entry.

:meth:`Cohort.commit` answers a :class:`~parties.wire.requests.SecureRelease` the same way: each
member's input to the secure sum (0/1 indicators of its codes), computed for all at once; the
members then start, run and end the sum in their cohort, each its own side of it, with its own
input (:mod:`parties.cohort_sum`).

What the cohort cannot answer as a whole — a request the parties refuse or cannot evaluate, a
frequency-oracle report — returns ``None``: the shard then builds its
members as :class:`~parties.party.Party` objects from the cohort's state
(:meth:`Cohort.party_state`), and each answers on its own (the per-party path).  A request
that reaches only some members splits the cohort first (:meth:`Cohort.split`), since their
states are about to differ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mprr.privacy import PrivacyAccountant, Refusal
from mprr.streams import StreamTable
from parties.columns import ReplyColumns
from parties.public_state import ReleaseBook
from parties.wire.codec import encode
from parties.wire.messages import RandomizedValues, values_layout
from parties.wire.requests import ReleaseRequest, SecureRelease

__all__ = ["Cohort", "CohortTable", "PartyState", "ReplyLayout"]


def _column_dtype(cells: int) -> type[np.unsignedinteger]:
    """The smallest unsigned dtype holding codes ``0..cells-1`` (a column per ledger entry)."""
    if cells <= 1 << 8:
        return np.uint8
    if cells <= 1 << 16:
        return np.uint16
    if cells <= 1 << 32:
        return np.uint32
    return np.uint64


@dataclass(frozen=True)
class PartyState:
    """One member's state, to continue on its own as a :class:`~parties.party.Party`."""

    accountant: PrivacyAccountant
    released: tuple[int, ...]
    draws: int
    status: str


class Cohort:
    """Parties of a shard in identical state, stepped at once (module docstring).

    Parameters
    ----------
    rows
        The members' rows in the shard (ascending, distinct).
    accountant
        The accountant state they share; its ``party`` is the first member's id (a
        representative: only refusals, which a cohort never makes, name it).
    values
        One column of released codes per ledger entry, aligned with ``rows``.
    draws
        Uniforms each member drew so far.
    status
        The members' status (``"idle"``, ``"running"``, ``"aborted"``).
    """

    __slots__ = ("rows", "accountant", "values", "draws", "status")

    def __init__(self, rows: np.ndarray, accountant: PrivacyAccountant, values: list[np.ndarray] | None = None,
                 draws: int = 0, status: str = "idle") -> None:
        self.rows = np.asarray(rows, dtype=np.int64)
        self.accountant = accountant
        self.values: list[np.ndarray] = [] if values is None else values
        self.draws = draws
        self.status = status

    def __len__(self) -> int:
        return int(self.rows.shape[0])

    def split(self, leave: np.ndarray, first_party: int) -> Cohort:
        """Move the members where ``leave`` (booleans aligned with :attr:`rows`) is true into a
        new cohort (a copy of the shared state, its representative ``first_party``); this one
        keeps the others."""
        stay = ~leave
        other = Cohort(self.rows[leave], self.accountant.copies([first_party])[0],
                       [col[leave] for col in self.values], self.draws, self.status)
        self.rows = self.rows[stay]
        self.values = [col[stay] for col in self.values]
        return other

    def party_state(self, position: int, party: int) -> PartyState:
        """The state of the member at ``position`` of :attr:`rows`, as party ``party``'s own."""
        return PartyState(self.accountant.copies([party])[0],
                          tuple(int(col[position]) for col in self.values), self.draws, self.status)

    def party_states(self, first_party: int) -> list[PartyState]:
        """:meth:`party_state` of every member, in order (member ``k`` is party
        ``first_party + rows[k]``): the released columns read once, as rows."""
        acc, draws, status = self.accountant, self.draws, self.status
        released: list[tuple[int, ...]]
        if self.values:
            released = list(map(tuple, np.stack(self.values, axis=1).tolist()))
        else:
            released = [()] * len(self)
        rows = self.rows.tolist()
        return [PartyState(accountant, values, draws, status) for accountant, values
                in zip(acc.copies([first_party + row for row in rows]), released)]

    def release(self, request: ReleaseRequest, book: ReleaseBook, records: np.ndarray,
                streams: StreamTable) -> np.ndarray | None:
        """Every member's answer to ``request`` (each received it once): the ``(members, units)``
        int64 codes of their :class:`~parties.wire.messages.RandomizedValues`, or ``None`` when
        the members do not all release (module docstring) — then nothing has changed.

        ``records`` are the shard's ``(rows, m)`` true codes, ``streams`` its stream table.
        """
        return self._answer(request, book, records, streams, session=False)

    def commit(self, request: SecureRelease, book: ReleaseBook, records: np.ndarray,
               streams: StreamTable) -> np.ndarray | None:
        """Every member's input to the secure sum ``request`` commits it to (each received it
        once), as :meth:`Party.receive <parties.party.Party.receive>` computes it: the
        ``(members, cells)`` uint8 matrix of 0/1 indicators, one block of cells per unit with a 1
        at the member's code (read-only; row k is member k's input), or ``None`` when the
        members do not all commit fresh values (a refusal, a re-sent commitment, a replay) —
        then nothing has changed.  The members' accountant state books the commitment (the
        session stays open until each member's sum ends)."""
        resolution = book.resolve(request)
        units = resolution.units
        codes = self._answer(request, book, records, streams, session=True, fresh=True)
        if codes is None or units is None:
            return None
        cells = np.array([unit.cells for unit in units], dtype=np.int64)
        offsets = np.concatenate(([0], np.cumsum(cells)[:-1]))
        inputs = np.zeros((codes.shape[0], int(cells.sum())), dtype=np.uint8)
        inputs[np.arange(codes.shape[0])[:, None], offsets[None, :] + codes] = 1
        inputs.flags.writeable = False
        return inputs

    def _answer(self, request: ReleaseRequest | SecureRelease, book: ReleaseBook, records: np.ndarray,
                streams: StreamTable, *, session: bool, fresh: bool = False) -> np.ndarray | None:
        """The members' codes for ``request`` (:meth:`release`; ``session``: a commitment to a
        secure sum, :meth:`commit`; ``fresh``: ``None`` unless every unit is granted anew)."""
        resolution = book.resolve(request)
        units = resolution.units
        if units is None or resolution.reason is not None or (resolution.ask.session is not None) != session:
            return None
        trial = self.accountant.copies([self.accountant.party])[0]
        decisions = trial.answer(resolution.ask)
        if isinstance(decisions, Refusal) or not decisions or (fresh and not all(d.granted for d in decisions)):
            return None
        rows = self.rows
        table = records if rows.shape[0] == records.shape[0] else records[rows]
        codes = np.empty((rows.shape[0], len(units)), dtype=np.int64)
        drawn = 0
        for j, (unit, decision) in enumerate(zip(units, decisions)):
            if decision.granted:
                if unit.exact:
                    column = unit.values(table)
                else:
                    column = unit.sample(table, streams.uniforms(rows))
                    drawn += 1
                codes[:, j] = column
                self.values.append(column.astype(_column_dtype(unit.cells)))
            else:  # replayed: each member resends the code it released for that entry
                codes[:, j] = self.values[decision.entry_index]
        self.accountant = trial
        self.draws += drawn
        codes.flags.writeable = False  # the replies hold rows of it: no second copy
        return codes


class ReplyLayout:
    """The :class:`~parties.wire.messages.RandomizedValues` replies of a cohort to one request
    and their encodings: every member's reply is its own message, and its bytes are the codec's
    encoding of it (:func:`~parties.wire.codec.encode`), made as the codec lays out replies that
    differ only in the codes: the bytes before and after the codes around each member's codes
    (where the codec writes them: :meth:`of`; otherwise each reply is encoded)."""

    __slots__ = ("_rid", "_codes", "_prefix", "_suffix")

    def __init__(self, rid: int, codes: np.ndarray, prefix: bytes | None, suffix: bytes) -> None:
        self._rid, self._codes, self._prefix, self._suffix = rid, codes, prefix, suffix

    @classmethod
    def of(cls, rid: int, codes: np.ndarray) -> ReplyLayout:
        """The layout of the replies ``RandomizedValues(rid, codes[k])``: where the codec writes
        the codes (:func:`~parties.wire.messages.values_layout`)."""
        layout = values_layout(rid, codes.shape[1]) if codes.shape[0] else None
        if layout is None:
            return cls(rid, codes, None, b"")
        return cls(rid, codes, *layout)

    def columns(self, srcs: np.ndarray, phase: str, members: slice) -> ReplyColumns:
        """The replies of ``members`` (a slice of the codes' rows), sent by ``srcs``, as columns."""
        return ReplyColumns(srcs, phase, self._rid, self._codes[members], self._prefix, self._suffix)

    def reply(self, k: int) -> tuple[RandomizedValues, bytes]:
        """Member ``k``'s reply and its encoding."""
        codes = self._codes[k]
        reply = RandomizedValues(self._rid, codes)
        prefix = self._prefix
        return reply, (encode(reply) if prefix is None else prefix + codes.tobytes() + self._suffix)


class CohortTable:
    """A shard's cohorts, and which one each of its rows is in (:attr:`of`, ``-1``: built as a
    :class:`~parties.party.Party`, answering on its own); ``first_party`` is the party at row 0.
    A cohort every member left stays as ``None`` in its place, so indices never move."""

    __slots__ = ("of", "_cohorts", "_first")

    def __init__(self, rows: int, first_party: int) -> None:
        self.of = np.full(rows, -1, dtype=np.int32)
        self._cohorts: list[Cohort | None] = []
        self._first = first_party

    def add(self, cohort: Cohort) -> int:
        """Hold ``cohort`` (its members in no cohort yet); its index."""
        self.of[cohort.rows] = len(self._cohorts)
        self._cohorts.append(cohort)
        return len(self._cohorts) - 1

    def live(self) -> tuple[Cohort, ...]:
        """The cohorts that still have members, in the order they were added."""
        return tuple(c for c in self._cohorts if c is not None)

    def reached(self, rows: np.ndarray) -> list[tuple[int, Cohort]]:
        """The cohorts a broadcast reached at ``rows``, in the order of the cohorts they belong to,
        with their indices; a cohort reached at only some members is split first, the receivers
        forming the cohort returned (at a new index)."""
        of = self.of[rows]
        reached = []
        for index in np.flatnonzero(np.bincount(of[of >= 0])).tolist():
            cohort = self._cohorts[index]
            assert cohort is not None
            members = rows[of == index]
            if members.shape[0] < len(cohort):
                leave = np.isin(cohort.rows, members)
                cohort = cohort.split(leave, self._first + int(cohort.rows[leave][0]))
                index = self.add(cohort)
            reached.append((index, cohort))
        return reached

    def leave(self, rows: np.ndarray) -> list[Cohort]:
        """The members at ``rows`` that are in a cohort leave it (their rows then in none): the
        cohorts they took with them, one per cohort left, each with its state."""
        rows = rows[self.of[rows] >= 0]
        out = []
        for index in np.unique(self.of[rows]).tolist():
            cohort = self._cohorts[index]
            assert cohort is not None  # (a row's cohort exists)
            leave = np.isin(cohort.rows, rows)
            if leave.all():
                self._cohorts[index] = None
                moved = cohort
            else:
                moved = cohort.split(leave, self._first + int(cohort.rows[leave][0]))
            self.of[moved.rows] = -1
            out.append(moved)
        return out
