"""The sources a receive still awaits, as one flag per actor of their span.

A gather (:meth:`parties.mailbox.Mailbox.gather`, :meth:`~parties.mailbox.Mailbox.collect`)
waits for one message from each of its sources, and the controller waits for the answer of
every active party to each request.  With a million parties a ``set`` of their ids costs about
40 bytes per party, once per waiting receive; an :class:`Awaited` costs one byte per actor of
the span ``[lo, hi)`` the sources cover (a shard's or a run's parties: a contiguous range), and
takes the members of a block of reply columns (:mod:`parties.columns`) in one vectorized step.
Sources spread thinly over a wide span (fewer than a quarter of it) are kept in a ``set``.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import numpy as np

__all__ = ["Awaited"]


class Awaited:
    """A set of actor ids still awaited: membership, removal one by one or in blocks.

    Parameters
    ----------
    sources
        The actors awaited (ints; a ``range`` or an int array is taken without a copy per id).
    """

    __slots__ = ("_lo", "_flags", "_set", "_count")

    def __init__(self, sources: Iterable[int]) -> None:
        self._lo = 0
        self._flags: bytearray | None = None
        self._set: set[int] | None = None
        if isinstance(sources, range) and sources.step == 1:
            self._lo, self._flags, self._count = sources.start, bytearray(b"\x01") * len(sources), len(sources)
            return
        ids = np.asarray(sources if isinstance(sources, np.ndarray)
                         else np.fromiter(map(int, sources), dtype=np.int64), dtype=np.int64)
        if not ids.shape[0]:
            self._flags, self._count = bytearray(), 0
            return
        lo, hi = int(ids.min()), int(ids.max()) + 1
        if hi - lo > 4 * ids.shape[0] + 64:  # thinly spread: a set is smaller
            self._set = set(ids.tolist())
            self._count = len(self._set)
            return
        self._lo, self._flags = lo, bytearray(hi - lo)
        flags = np.frombuffer(self._flags, dtype=np.uint8)
        flags[ids - lo] = 1
        self._count = int(np.count_nonzero(flags))

    def __len__(self) -> int:
        return self._count

    def __bool__(self) -> bool:
        return self._count > 0

    def __contains__(self, src: object) -> bool:
        flags = self._flags
        if flags is None:
            assert self._set is not None
            return src in self._set
        if type(src) is not int:
            if not isinstance(src, np.integer):
                return False
            src = int(src)
        at = src - self._lo
        return 0 <= at < len(flags) and flags[at] == 1

    def __iter__(self) -> Iterator[int]:
        return iter(self.ids().tolist())

    def __repr__(self) -> str:
        return f"Awaited({self._count} actors)"

    def ids(self) -> np.ndarray:
        """The actors still awaited, ascending (int64)."""
        if self._flags is None:
            assert self._set is not None
            return np.array(sorted(self._set), dtype=np.int64)
        return np.flatnonzero(np.frombuffer(self._flags, dtype=np.uint8)) + self._lo

    def bounds(self) -> set[int]:
        """The smallest and the largest actor awaited (empty when none is): every id lies
        between them, so checking both checks them all against a range of valid ids."""
        if not self._count:
            return set()
        if self._set is not None:
            return {min(self._set), max(self._set)}
        ids = self.ids()
        return {int(ids[0]), int(ids[-1])}

    def discard(self, src: int) -> bool:
        """Stop awaiting ``src``; whether it was awaited."""
        flags = self._flags
        if flags is None:
            assert self._set is not None
            if src in self._set:
                self._set.discard(src)
                self._count -= 1
                return True
            return False
        at = src - self._lo
        if 0 <= at < len(flags) and flags[at] == 1:
            flags[at] = 0
            self._count -= 1
            return True
        return False

    def add(self, src: int) -> None:
        """Await ``src`` (again): it must lie in the span of the sources first given."""
        flags = self._flags
        if flags is None:
            assert self._set is not None
            if src not in self._set:
                self._set.add(src)
                self._count += 1
            return
        at = src - self._lo
        if not 0 <= at < len(flags):
            raise ValueError(f"src must lie in {self._lo}..{self._lo + len(flags) - 1} to be awaited again, got {src}")
        if flags[at] == 0:
            flags[at] = 1
            self._count += 1

    def take(self, srcs: np.ndarray) -> np.ndarray:
        """Stop awaiting the awaited ones of ``srcs`` (distinct int64 ids); a boolean mask of
        those that were awaited."""
        flags = self._flags
        if flags is None:
            assert self._set is not None
            mine = self._set
            hit = np.fromiter((s in mine for s in srcs.tolist()), dtype=bool, count=srcs.shape[0])
            mine.difference_update(srcs[hit].tolist())
        else:
            view = np.frombuffer(flags, dtype=np.uint8)
            at = srcs - self._lo
            hit = (at >= 0) & (at < view.shape[0])
            hit[hit] = view[at[hit]] == 1
            view[at[hit]] = 0
        self._count -= int(np.count_nonzero(hit))
        return hit
