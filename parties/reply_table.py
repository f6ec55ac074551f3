"""The replies to one release request as one ``(parties, units)`` table, checked at once.

A release round brings back one :class:`~parties.wire.messages.RandomizedValues` per party —
as its own message, or as a row of reply columns (:mod:`parties.columns`).  :func:`reply_table`
puts every well-shaped reply at its party's row, in target order, and checks every code against
its unit's domain in one vectorized step; a reply with the wrong number of codes or a code
outside its unit's domain is malformed (its sender is faulty: :mod:`parties.dropout`).  When
every party answered in one block of columns, in target order, that block's read-only codes
are the table itself: no copy is made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np

from parties.columns import ReplyColumns
from parties.wire.messages import RandomizedValues

__all__ = ["ReplyTable", "reply_table"]


class ReplyTable(NamedTuple):
    """The well-shaped replies: ``parties`` (the targets' own ints, in target order), their
    ``codes`` (row ``k`` = ``parties[k]``) and the malformed replies ``{party: why}``."""

    parties: Sequence[int]
    codes: np.ndarray
    malformed: dict[int, str]


def reply_table(targets: Sequence[int], cells: Sequence[int], values: Mapping[int, RandomizedValues],
                columns: Sequence[ReplyColumns]) -> ReplyTable:
    """The replies of ``targets`` to a release of units of ``cells[j]`` cells each: ``values``
    (``{party: message}``) and ``columns``, each party in one place at most.

    Examples
    --------
    >>> t = reply_table([3, 5], [2, 3], {3: RandomizedValues(1, np.array([1, 2])),
    ...                                  5: RandomizedValues(1, np.array([2, 0]))}, [])
    >>> t.parties, t.codes.tolist(), t.malformed
    ([3], [[1, 2]], {5: 'malformed reply [2, 0] (2 codes within the unit domains expected)'})
    """
    width = len(cells)
    shape = (width,)
    order = np.asarray(targets, dtype=np.int64)
    sort = None if order.shape[0] < 2 or np.all(order[1:] > order[:-1]) else np.argsort(order, kind="stable")
    wrong: dict[int, np.ndarray] = {p: m.codes for p, m in values.items() if m.codes.shape != shape}
    if (not values and len(columns) == 1 and columns[0].codes.shape[1:] == shape
            and columns[0].codes.dtype == np.int64 and np.array_equal(columns[0].srcs, order)):
        # every party answered in one block of columns, in target order: its codes are the table
        table, present = columns[0].codes, np.ones(len(targets), dtype=bool)
        columns = ()
    else:
        table = np.zeros((len(targets), width), dtype=np.int64)
        present = np.zeros(len(targets), dtype=bool)
    for p, m in values.items():
        if m.codes.shape == shape:
            at = int(np.searchsorted(order, p, sorter=sort))
            at = at if sort is None else int(sort[at])
            table[at], present[at] = m.codes, True
    for block in columns:
        if block.codes.shape[1:] != shape:
            wrong.update((int(p), block.codes[k]) for k, p in enumerate(block.srcs.tolist()))
            continue
        rows = np.searchsorted(order, block.srcs, sorter=sort)
        rows = rows if sort is None else sort[rows]
        table[rows], present[rows] = block.codes, True
    everyone = bool(present.all())
    shaped = targets if everyone else [targets[k] for k in np.flatnonzero(present).tolist()]
    stacked = table if everyone else table[present]
    out_of_domain = (stacked >= np.asarray(cells, dtype=np.int64)).any(axis=1)
    bad_codes = dict(wrong)
    bad_codes.update((shaped[k], stacked[k]) for k in np.flatnonzero(out_of_domain).tolist())
    malformed = {
        p: f"malformed reply {c.tolist()[:10]} ({width} codes within the unit domains expected)"
        for p, c in bad_codes.items()
    }
    if not malformed:
        return ReplyTable(shaped, stacked, malformed)
    keep = np.fromiter((p not in malformed for p in shaped), dtype=bool, count=len(shaped))
    return ReplyTable([p for p, k in zip(shaped, keep.tolist()) if k], stacked[keep], malformed)
