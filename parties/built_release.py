"""Parties built on their own answering one release request together.

A shard host (:mod:`parties.shard`) builds a party as a :class:`~parties.party.Party` once its
state may differ from its cohort's (a refusal, a crash, a frequency-oracle report, its side of a
secure sum that failed). When a broadcast
:class:`~parties.wire.requests.ReleaseRequest` reaches many such parties,
:func:`release_together` has each decide on its own and computes the codes of those granted
every unit at once, as a :class:`~parties.cohort.Cohort` computes its members'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from mprr.errors import MessageError
from mprr.streams import StreamTable
from parties.party import Party
from parties.wire.codec import Message
from parties.wire.requests import ReleaseRequest

__all__ = ["release_together"]


def release_together(parties: Mapping[int, Party], crashed: Callable[[int], bool], records: np.ndarray,
                     streams: StreamTable, rows: np.ndarray, alone: np.ndarray, msg: ReleaseRequest,
                     table: np.ndarray) -> dict[int, Message | None]:
    """The parties built on their own (``parties``, by shard row) at positions ``alone`` of
    ``rows`` answer ``msg``: each decides (:meth:`Party.decide <parties.party.Party.decide>`);
    the codes of those whose every unit is granted are computed at once, as a cohort's are (the
    true codes of an exact unit from ``records``, one uniform of each one's row of ``streams``
    per other unit, in unit order) and written into their rows of ``table``; every other
    party's reply (``None``: none) is returned by position.  Each party gets exactly what
    :meth:`Party.receive <parties.party.Party.receive>` would give it; a ``crashed`` party
    answers on its own (its reply is lost)."""
    replies: dict[int, Message | None] = {}
    together: list[int] = []  # positions whose codes are computed at once
    units = None
    for k in alone.tolist():
        party = parties[int(rows[k])]
        if crashed(party.index):  # (its reply is lost on its own)
            replies[k] = party.receive(msg)
            continue
        try:
            decided = party.decide(msg)
        except MessageError as exc:  # (as Party.receive logs it)
            party.errors.append(str(exc))
            replies[k] = None
            continue
        if not isinstance(decided, tuple):
            replies[k] = decided
        elif (units is None or decided[0] is units) and all([d.granted for d in decided[1]]):
            units = decided[0]
            together.append(k)
        else:
            replies[k] = party.reply_to(msg, *decided)
    if together and units is not None:
        at = np.array(together, dtype=np.int64)
        members = rows[at]
        member_records = records[members]
        drawn = 0
        for j, unit in enumerate(units):
            if unit.exact:
                table[at, j] = unit.values(member_records)
            else:
                table[at, j] = unit.sample(member_records, streams.uniforms(members))
                drawn += 1
        for row, codes in zip(members.tolist(), table[at].tolist()):
            parties[row].released(codes, drawn)
    return replies
