"""What a party shard host hands back at the end of a run: its parties' summaries, in columns.

:class:`ShardReport` (:meth:`ShardReport.of` a :class:`~parties.shard.PartyShard`) is what
crosses a runtime's channel once, after the protocol: the harness data of the hosted parties
(accountants, refusals, released values — never seen by the controller actor), in columns.
The parties of a run mostly share one history, so they share one accountant in the report,
which grows by a few integers per party; and the shard's delivery counters (deliveries,
rejected frames, losses to crashes), which the router adds to its own.  :class:`PartySummaries`
rebuilds a :class:`PartySummary` per party on demand.
"""

from __future__ import annotations

import operator
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from mprr.errors import ConfigurationError, MessageError
from mprr.privacy import PrivacyAccountant
from parties.party import Accounted, AccountedParties

if TYPE_CHECKING:  # annotations only: the report is built from a shard, never imports it at run time
    from parties.shard import PartyShard

__all__ = ["AccountedParties", "PartySummaries", "PartySummary", "ShardReport", "accountants_of"]


@dataclass(frozen=True)
class PartySummary(Accounted):
    """What the harness keeps of a remote party after the run (no record, no stream)."""

    index: int
    accountant: PrivacyAccountant
    released_values: tuple[int, ...] = ()
    draws: int = 0
    status: str = "idle"
    errors: tuple[str, ...] = ()


def _int_array(values: Any, length: int, what: str) -> np.ndarray:
    array = np.asarray(values)
    if array.shape != (length,) or array.dtype.kind not in "iu":
        raise MessageError(f"shard report: {what} must be {length} integers, got shape {array.shape} "
                           f"of {array.dtype}")
    return array


@dataclass(frozen=True, eq=False)
class ShardReport:
    """A shard's answer at the end of the run: what the harness keeps of its parties, in columns.

    Parties with the same history (the same ledger, plans, replays; no refusal of their own)
    share one accountant in :attr:`accountants`; :attr:`accountant_of` gives each party's.  A
    report therefore grows by a few integers per party (released values, draws, status,
    counters) however many releases the parties made, and so does the harness that keeps it.
    :class:`PartySummaries` rebuilds each party's :class:`PartySummary` on demand.

    Attributes
    ----------
    parties
        The hosted party ids.
    accountants, accountant_of
        Distinct accountant states (a representative each) and, per party, the index of its own.
    values, values_end
        Every party's released values, concatenated in party order; party ``k``'s end at
        ``values_end[k]`` (and start at ``values_end[k - 1]``, 0 for the first).
    draws
        Uniforms each party drew.
    statuses, status_of
        Distinct statuses and, per party, the index of its own.
    errors
        Party -> the errors it logged (parties without errors omitted).
    received_messages, received_bytes
        Deliveries to each party (counted by the shard).
    delivered, faults
        Deliveries and fault counters of the shard.
    """

    parties: range
    accountants: tuple[PrivacyAccountant, ...]
    accountant_of: np.ndarray
    values: np.ndarray
    values_end: np.ndarray
    draws: np.ndarray
    statuses: tuple[str, ...]
    status_of: np.ndarray
    errors: dict[int, tuple[str, ...]]
    received_messages: np.ndarray
    received_bytes: np.ndarray
    delivered: int
    faults: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        n = len(self.parties)
        of = _int_array(self.accountant_of, n, "accountant_of")
        status = _int_array(self.status_of, n, "status_of")
        end = _int_array(self.values_end, n, "values_end")
        for what in ("draws", "received_messages", "received_bytes"):
            _int_array(getattr(self, what), n, what)
        if n and (of.min() < 0 or of.max() >= len(self.accountants) or status.min() < 0
                  or status.max() >= len(self.statuses) or np.any(np.diff(end) < 0) or end[0] < 0
                  or end[-1] != len(self.values)):
            raise MessageError(f"shard report of parties {self.parties.start}-{self.parties.stop - 1}: "
                               "indices out of range")

    @classmethod
    def of(cls, shard: PartyShard) -> ShardReport:
        """The report of ``shard`` (after its parties have stopped): its cohorts' columns
        (:mod:`parties.cohort`, one accountant each) and the parties built on their own."""
        hosted = shard.setup.parties
        n = len(hosted)
        cohorts = shard.cohorts()
        built = shard.built()
        groups: dict[tuple[Any, ...], int] = {}
        accountants: list[PrivacyAccountant] = []
        accountant_of = np.empty(n, dtype=np.int64)
        statuses: dict[str, int] = {}
        status_of = np.empty(n, dtype=np.int64)
        draws = np.empty(n, dtype=np.int64)
        lengths = np.empty(n, dtype=np.int64)
        errors: dict[int, tuple[str, ...]] = {}
        for cohort in cohorts:
            accountant_of[cohort.rows] = len(accountants)
            accountants.append(cohort.accountant)
            status_of[cohort.rows] = statuses.setdefault(cohort.status, len(statuses))
            draws[cohort.rows] = cohort.draws
            lengths[cohort.rows] = len(cohort.values)
        for row, p in built.items():
            acc = p.accountant
            key = acc.state_key()
            g = groups.get(key)
            if g is None:
                g = groups[key] = len(accountants)
                accountants.append(acc)
            accountant_of[row] = g
            status_of[row] = statuses.setdefault(p.status, len(statuses))
            draws[row] = p.draws
            lengths[row] = len(p.released_values)
            if p.errors:
                errors[p.index] = tuple(p.errors)
        values_end = np.cumsum(lengths)
        values = np.empty(int(values_end[-1]) if n else 0, dtype=np.int64)
        for cohort in cohorts:  # member k's codes at values_end[k] - len(values) ..
            if cohort.values:
                first = values_end[cohort.rows] - len(cohort.values)
                values[first[:, None] + np.arange(len(cohort.values))] = np.stack(cohort.values, axis=1)
        for row, p in built.items():
            values[int(values_end[row]) - int(lengths[row]):int(values_end[row])] = p.released_values
        t = shard.network.counter
        lo, hi = hosted.start + 1, hosted.stop + 1
        return cls(
            parties=hosted,
            accountants=tuple(accountants),
            accountant_of=accountant_of,
            values=values,
            values_end=values_end,
            draws=draws,
            statuses=tuple(statuses),
            status_of=status_of,
            errors=errors,
            received_messages=np.array(t.recv_messages[lo:hi], dtype=np.int64),  # (a copy: the counters go on)
            received_bytes=np.array(t.recv_bytes[lo:hi], dtype=np.int64),
            delivered=t.delivered,
            faults={"rejected": t.faults["rejected"], "lost_to_crash": t.faults["lost_to_crash"]},
        )

    @classmethod
    def lost(cls, parties: range, budgets: Sequence[float], policy: str) -> ShardReport:
        """The report standing in for a shard that was lost: its parties have empty ledgers and
        status ``"lost"``."""
        n = len(parties)
        distinct = tuple(dict.fromkeys(float(b) for b in budgets))
        where = {b: k for k, b in enumerate(distinct)}
        zeros = np.zeros(n, dtype=np.int64)
        return cls(parties, tuple(PrivacyAccountant(b, policy) for b in distinct),
                   np.array([where[float(b)] for b in budgets], dtype=np.int64), np.zeros(0, dtype=np.int64),
                   zeros, zeros, ("lost",), zeros, {}, zeros, zeros, 0, {})

    def summary(self, party: int) -> PartySummary:
        """The :class:`PartySummary` of hosted party ``party``."""
        k = party - self.parties.start
        start = int(self.values_end[k - 1]) if k else 0
        return PartySummary(
            party,
            self.accountants[int(self.accountant_of[k])].copies([party])[0],
            tuple(int(v) for v in self.values[start:int(self.values_end[k])]),
            int(self.draws[k]),
            self.statuses[int(self.status_of[k])],
            self.errors.get(party, ()),
        )


class PartySummaries(AccountedParties[PartySummary]):
    """The :class:`PartySummary` of every party of a run, rebuilt on demand from the shard reports.

    ``summaries[i]`` is party ``i``'s (a new object at each access).  The whole-run view is read
    straight from the reports, without a summary per party: :meth:`accountants` (the shared
    representatives).

    Raises
    ------
    ConfigurationError
        If the reports do not cover parties ``0..n-1`` exactly once.
    """

    def __init__(self, reports: Sequence[ShardReport], n: int) -> None:
        ordered = sorted(reports, key=lambda r: r.parties.start)
        covered = 0
        for r in ordered:
            if r.parties.start != covered or r.parties.step != 1:
                missing = range(covered, r.parties.start) if r.parties.start > covered else r.parties
                raise ConfigurationError(f"no shard reported parties {list(missing)[:10]} (or two reported them)")
            covered = r.parties.stop
        if covered != n:
            raise ConfigurationError(f"no shard reported parties {list(range(covered, n))[:10]}")
        self._reports = tuple(ordered)
        self._starts = [r.parties.start for r in ordered]
        self._n = n

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> PartySummary: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[PartySummary, ...]: ...

    def __getitem__(self, index: int | slice) -> PartySummary | tuple[PartySummary, ...]:
        if isinstance(index, slice):
            return tuple(self[i] for i in range(*index.indices(self._n)))
        i = operator.index(index)
        if i < 0:
            i += self._n
        if not 0 <= i < self._n:
            raise IndexError(f"party index {index} out of range for {self._n} parties")
        return self._reports[bisect_right(self._starts, i) - 1].summary(i)

    def __iter__(self) -> Iterator[PartySummary]:
        for r in self._reports:
            for i in r.parties:
                yield r.summary(i)

    def accountants(self) -> list[PrivacyAccountant]:
        """Per party, the accountant whose state it shares (its ``party`` attribute is the
        representative's; a party that refused has its own): its ledger, refusals and what
        :func:`mprr.privacy.summarize` needs, without a copy per party."""
        return [r.accountants[k] for r in self._reports for k in r.accountant_of.tolist()]


def accountants_of(parties: Sequence[Accounted]) -> list[PrivacyAccountant]:
    """Every party's accountant, in party order (of :class:`AccountedParties`, the shared
    representatives: :meth:`AccountedParties.accountants`)."""
    return parties.accountants() if isinstance(parties, AccountedParties) else [p.accountant for p in parties]
