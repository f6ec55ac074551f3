"""A cohort's secure sums: its members commit, start and end a session as one, each running its own side.

A shard host (:mod:`parties.shard`) keeps the parties of a :class:`~parties.cohort.Cohort` as
columns while their state is the same.  A secure sum does not make it differ unless a member's
side of it does: every member commits its input to the same request (:meth:`Cohort.commit
<parties.cohort.Cohort.commit>`, vectorized), is told the same
:class:`~parties.wire.requests.SecureSumStart`, and, when its program ends as every other's, closes
the session in the same way.  :class:`CohortSums` keeps them in their cohort through it:

- :meth:`CohortSums.hold` keeps the inputs a cohort committed (one row of 0/1 indicators per member,
  with the digest of the request), as each :class:`~parties.party.Party` would hold its own;
- :meth:`CohortSums.start` decides a start for a cohort reached as a whole, as each member's
  :meth:`Party.secure_program <parties.party.Party.secure_program>` decides it from the same state
  (its engine, the roster holding it, the session's context, the accountant binding the session
  to the roster: once, on the state they share), then makes each member's program from its own
  input, its own PKI key and its own id (``None``, e.g. a roster without some member: nothing has
  changed, and each member decides on its own, the per-party path);
- :meth:`CohortSums.ended`: a member's program ended; the members whose program raised or crashed
  are built as :class:`~parties.party.Party` objects from their cohort's state, in which the
  session still runs (together, on the loop's next turn, or at once where the cohort must act or
  be read), and told as each party itself is; one that returned is done, and the cohort's
  accountant closes the session once every member that started it is done; one stopped with its
  host keeps the session as it stands, running (:meth:`CohortSums.close`, when the cohort must
  act or be read, or a member be built: the members whose program has not returned leave a
  cohort some of whose members are done, each with the session running);
- :meth:`CohortSums.hand_over`: a member built as a :class:`~parties.party.Party` takes its held
  inputs, and closes in its own state the sessions it is done with while others still run them.

Everything a member decides is decided on its own state, shared with the members whose state is
the same; a member whose state diverges answers on its own from then on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from mprr.errors import ConfigurationError, ProtocolError
from parties.cohort import Cohort, CohortTable
from parties.party_sum import PartySums
from parties.public_state import ReleaseBook
from parties.secure.pki import KeyRegistry, Signer
from parties.secure.program import Program
from parties.wire.requests import SecureSumStart

__all__ = ["CohortSums"]


class _Member:
    """A cohort member's side of a running session, as :class:`~parties.party_sum.PartySums` sees
    it (:class:`~parties.party_sum.SumMember`): its id, and the host to tell how it ended."""

    __slots__ = ("_sums", "_row", "index")

    def __init__(self, sums: CohortSums, row: int, index: int) -> None:
        self._sums, self._row, self.index = sums, row, index

    def end_secure_sum(self, session: str, error: ProtocolError | None, *, ran: bool = True) -> None:
        self._sums.ended(self._row, session, error, ran=ran)


_Held = dict[int, tuple[np.ndarray, int, bytes]]
"""The inputs cohort members committed to one session, by shard row: (the cohort's read-only
``(members, cells)`` matrix, the member's row in it, the digest of the request committed to)."""


class CohortSums:
    """The secure sums of a shard's cohort members (module docstring).

    Parameters
    ----------
    table
        The shard's cohorts.
    first_party
        The party at the shard's row 0.
    parties
        The shard's parties built on their own, by row (read: a member built since holds its state).
    build
        Builds the members at the given rows as :class:`~parties.party.Party` objects from their
        cohorts' state (they leave their cohorts), without answering anything first.
    sums
        The shard's secure-sum programs.
    """

    def __init__(self, table: CohortTable, first_party: int, parties: Mapping[int, Any],
                 build: Callable[[np.ndarray], None], sums: PartySums) -> None:
        self._table, self._first, self._parties, self._build, self._sums = table, first_party, parties, build, sums
        self._held: dict[str, _Held] = {}  # session -> the inputs committed to it by cohort members
        self._started: dict[str, set[int]] = {}  # session -> the rows that started it in a cohort
        self._running: dict[str, set[int]] = {}  # session -> those whose program has not returned
        self._failed: list[tuple[int, str, ProtocolError]] = []  # members whose side failed, to build at once
        self._dirty: set[str] = set()  # sessions some members are done with while others still run them

    # ------------------------------------------------------------------ commitments
    def hold(self, session: str, rows: np.ndarray, inputs: np.ndarray, digest: bytes) -> None:
        """Keep the inputs ``inputs[k]`` that the members at ``rows[k]`` committed to ``session`` by
        the request of ``digest`` (:meth:`Cohort.commit <parties.cohort.Cohort.commit>`)."""
        self._held.setdefault(session, {}).update(zip(rows.tolist(), ((inputs, k, digest)
                                                                       for k in range(rows.shape[0]))))

    def hand_over(self, row: int, party: Any) -> None:
        """``party``, just built from the cohort of ``row``: it holds the inputs it committed there,
        and closes the sessions it is done with that its cohort still runs (others run them)."""
        for session in [session for session, held in self._held.items() if row in held]:
            held = self._held[session]
            inputs, k, digest = held.pop(row)
            party.hold_input(session, inputs[k], digest)
            if not held:
                del self._held[session]
        for session, started in self._started.items():
            if row in started and row not in self._running[session] \
                    and party.accountant.session_state(session) == "running":
                party.accountant.end_session(session, aborted=False)

    # ------------------------------------------------------------------ sessions
    def start(self, cohort: Cohort, start: SecureSumStart, engine: Any, signers: Mapping[int, Signer],
              registry: KeyRegistry | None, book: ReleaseBook, network: Any) -> dict[int, Program[Any]] | None:
        """The programs of ``cohort``'s members for ``start``, by row, every member having received
        it (module docstring); ``None`` when they do not all start it from the state they share,
        and nothing has changed."""
        session, rows, first = start.session, cohort.rows.tolist(), self._first
        held = self._held.get(session, {})
        mine = [held.get(row) for row in rows]
        if (not self._sums.serving or engine is None or start.engine != engine.name
                or (engine.signs and (registry is None or any(first + row not in signers for row in rows)))
                or any(m is None for m in mine) or len({m[2] for m in mine if m is not None}) != 1):
            return None
        if not np.isin(cohort.rows + first, np.asarray(start.parties, dtype=np.int64)).all():
            return None  # (a member outside the roster refuses it: each decides on its own)
        inputs, _, digest = mine[0]  # type: ignore[misc]  # (every member holds one, checked above)
        try:
            context = book.secure_context(engine, start, int(inputs.shape[1]), registry, network, digest=digest)
        except ConfigurationError:  # (refused by each: the per-party path logs it and aborts the session)
            return None
        accountant = cohort.accountant
        if accountant.start_session(session, start.parties, first + rows[0]) is not None:
            return None  # (nothing was bound: each refuses it on its own)
        programs: dict[int, Program[Any]] = {}
        for row, (matrix, k, _) in zip(rows, mine):  # type: ignore[misc]
            del held[row]
            programs[row] = engine.party_program(first + row, matrix[k], context, signer=signers.get(first + row),
                                                 min_contributors=accountant.min_roster)
        self._started.setdefault(session, set()).update(rows)
        self._running.setdefault(session, set()).update(rows)
        if not held:
            del self._held[session]
        return programs

    def member(self, row: int) -> _Member:
        """Row ``row``'s side of a session as its programs' host sees it."""
        return _Member(self, row, self._first + row)

    def ended(self, row: int, session: str, error: ProtocolError | None, *, ran: bool = True) -> None:
        """The program of ``row``'s side of ``session`` ended (module docstring)."""
        running = self._running[session]
        party = self._parties.get(row)
        if party is None:
            if not ran:  # (stopped: the session stays as it stands, running, as the state it shares)
                return
            if error is not None:  # its state diverges: it leaves its cohort (with the others failing now)
                self._failed.append((row, session, error))
                if len(self._failed) == 1:
                    try:
                        asyncio.get_running_loop().call_soon(self._leave)
                    except RuntimeError:  # (no loop runs: at once)
                        self._leave()
                return
        running.discard(row)
        if party is not None:
            party.end_secure_sum(session, error, ran=ran)
        if not running:
            self.close()
        elif party is None:  # (done in its cohort while others of it may still run the session)
            self._dirty.add(session)

    def _leave(self) -> None:
        """The members whose side failed leave their cohorts, built at once, each with the session
        running, and are told how it ended."""
        failed, self._failed = self._failed, []
        if not failed:
            return
        rows = np.unique(np.array([row for row, _, _ in failed], dtype=np.int64))
        self._build(rows[self._table.of[rows] >= 0])
        for row, session, error in failed:
            self._running[session].discard(row)
            self._parties[row].end_secure_sum(session, error)
        if any(not self._running[session] for _, session, _ in failed):
            self.close()  # (every side of one of those sessions has ended: close it in the cohorts)

    def close(self) -> None:
        """Close, in every cohort, the sessions its members are done with: members whose program has
        not returned leave their cohort first, with the session running (module docstring)."""
        self._leave()
        for session in list(self._started):
            running = self._running[session]
            if running and session not in self._dirty:
                continue  # (every member that started it still runs it: nothing to close)
            self._dirty.discard(session)
            still = np.zeros(self._table.of.shape[0], dtype=bool)  # (rows whose program has not returned)
            still[np.fromiter(running, dtype=np.int64, count=len(running))] = True
            for cohort in self._table.live():
                if cohort.accountant.session_state(session) != "running":
                    continue
                inside = cohort.rows[still[cohort.rows]]
                if inside.shape[0] == len(cohort):
                    continue  # (every member still runs it: the state they share is theirs)
                if inside.shape[0]:
                    self._build(inside)
                cohort.accountant.end_session(session, aborted=False)
            if not running:
                del self._started[session], self._running[session]
