"""The controller's view: everything the (untrusted) controller received, and what it derived.

The controller appends every envelope it receives to a :class:`ViewLog` *before* looking at
it, so the log is exactly what it learned from the network; it also notes the values it
derived from them (dependences, clusters, estimates), which are functions of the log.  Tests
and reports inspect the log to check what the controller could know — e.g. that it only ever
received randomized values, refusals and secure-sum aggregates, never a raw record.

The log keeps every message, in columns rather than objects, as a sequence of segments in
arrival order.  Messages received one by one form runs of per-message columns: sender, phase,
kind, encoded size and, for :class:`~parties.wire.messages.RandomizedValues` (almost every
message of a run), the request id with the codes appended to one flat int64 array; other
messages are kept as they are (about 40 bytes plus 8 per released code per message).  Reply
columns (:mod:`parties.columns`: a shard's replies to one release request) are kept as they
came: their read-only codes matrix — the very array the controller's release holds, not a
copy — their senders (a ``range`` when consecutive) and sizes (one number when equal), so the
view of a columnar round costs a few bytes per party beyond the release itself.  An entry is
rebuilt, equal to the message received, when it is read — what lets the controller of a
1,000,000-party run keep its whole view of the releases.  A secure sum's messages
are kept as received, and they are larger: the masked sum's are about 8.5 KB per party over
Adult's 1,582 pair cells (mostly the masked vector, 4 bytes per cell), 277 MB at 32,561 parties.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Mapping

import numpy as np

from parties.wire.codec import Message, message_class
from parties.wire.messages import RandomizedValues
from parties.columns import ReplyColumns
from parties.transport import Envelope

__all__ = ["ViewEntry", "ViewLog", "ViewSummary"]


@dataclass(frozen=True, slots=True)
class ViewEntry:
    """One message the controller received: position, sender, phase, message, encoded size."""

    index: int
    src: int
    phase: str
    message: Message
    size: int

    @property
    def kind(self) -> str:
        """Name of the message kind."""
        return self.message.NAME


@dataclass(frozen=True)
class ViewSummary:
    """What the controller's view holds, in counts (JSON-friendly via :meth:`to_dict`).

    Attributes
    ----------
    messages, bytes
        Messages received and their encoded bytes.
    by_kind
        Messages per kind name.
    by_phase
        Messages per phase.
    senders
        Number of distinct senders.
    kinds
        Kind names seen, sorted.
    derived
        Names of the values the controller derived (in the order it noted them).
    """

    messages: int
    bytes: int
    by_kind: Mapping[str, int]
    by_phase: Mapping[str, int]
    senders: int
    kinds: tuple[str, ...]
    derived: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Plain dict."""
        return {
            "messages": self.messages,
            "bytes": self.bytes,
            "by_kind": dict(self.by_kind),
            "by_phase": dict(self.by_phase),
            "senders": self.senders,
            "kinds": list(self.kinds),
            "derived": list(self.derived),
        }


_CODES = RandomizedValues.KIND
"""Kind stored in columns (request id + codes); every other kind is kept as its message object."""


class _Run:
    """Entries received one by one, in per-message columns (module docstring)."""

    __slots__ = ("src", "phase", "kind", "size", "ref", "start", "codes", "objects")

    def __init__(self) -> None:
        self.src = array("i")
        self.phase = array("i")  # index into the log's phases
        self.kind = array("i")  # wire kind number
        self.size = array("q")
        self.ref = array("q")  # >= 0: request id of RandomizedValues in columns; < 0: -1 - index into objects
        self.start = array("q")  # first code of the entry in codes
        self.codes = array("q")
        self.objects: list[Message] = []

    def __len__(self) -> int:
        return len(self.src)

    def append(self, src: int, phase: int, msg: Message, size: int) -> None:
        self.src.append(src)
        self.phase.append(phase)
        self.kind.append(msg.KIND)
        self.size.append(size)
        codes = self.codes
        self.start.append(len(codes))
        if type(msg) is RandomizedValues and not msg.ids and msg.codes.dtype == np.int64 and msg.codes.ndim == 1:
            self.ref.append(msg.request_id)
            codes.frombytes(msg.codes.tobytes())
        else:
            objects = self.objects
            self.ref.append(-1 - len(objects))
            objects.append(msg)

    def extend(self, srcs: Sequence[int], phases: Sequence[int], msgs: Sequence[Message], sizes: Sequence[int]) -> None:
        """:meth:`append` of each ``(srcs[k], phases[k], msgs[k], sizes[k])``, none of them a
        :class:`~parties.wire.messages.RandomizedValues`: every message kept as it is."""
        objects, k = self.objects, len(msgs)
        self.src.extend(srcs)
        self.phase.extend(phases)
        self.kind.extend([msg.KIND for msg in msgs])
        self.size.extend(sizes)
        self.start.extend(array("q", (len(self.codes),)) * k)
        self.ref.extend(range(-1 - len(objects), -1 - len(objects) - k, -1))
        objects.extend(msgs)

    def entry(self, j: int) -> tuple[int, int, Message, int]:
        """Sender, phase index, message and size of entry ``j``."""
        ref = self.ref[j]
        if ref < 0:
            msg = self.objects[-1 - ref]
        else:
            stop = self.start[j + 1] if j + 1 < len(self.start) else len(self.codes)
            msg = RandomizedValues(ref, np.array(self.codes[self.start[j]:stop], dtype=np.int64))
        return self.src[j], self.phase[j], msg, self.size[j]

    def kinds(self) -> np.ndarray:
        return np.frombuffer(self.kind, dtype=np.int32) if len(self.kind) else np.zeros(0, dtype=np.int32)

    def mark(self, seen: np.ndarray) -> None:
        """Set ``seen[src + 1]`` for every sender."""
        if len(self.src):
            seen[np.frombuffer(self.src, dtype=np.int32).astype(np.int64) + 1] = True

    def top(self) -> int:
        return max(self.src) if len(self.src) else -1

    def phases(self) -> np.ndarray:
        return np.frombuffer(self.phase, dtype=np.int32) if len(self.phase) else np.zeros(0, dtype=np.int32)

    def nbytes(self) -> int:
        return int(np.frombuffer(self.size, dtype=np.int64).sum()) if len(self.size) else 0


class _Columns:
    """Reply columns as they came (module docstring): senders, sizes, the shared codes matrix."""

    __slots__ = ("src", "phase", "kind", "request_id", "size", "codes")

    def __init__(self, block: ReplyColumns, phase: int) -> None:
        srcs = block.srcs
        count = int(srcs.shape[0])
        first = int(srcs[0])
        consecutive = int(srcs[-1]) - first == count - 1 and bool(np.all(np.diff(srcs) == 1))
        self.src: range | np.ndarray = range(first, first + count) if consecutive else srcs.astype(np.int32)
        self.phase = phase
        self.kind = block.kind
        self.request_id = block.request_id
        sizes = block.sizes
        self.size: int | np.ndarray = int(sizes[0]) if bool(np.all(sizes == sizes[0])) else sizes.astype(np.int64)
        codes = block.codes
        shared = codes.dtype == np.int64 and not codes.flags.writeable and codes.flags.c_contiguous
        self.codes = codes if shared else np.array(codes, dtype=np.int64)  # (never written again)

    def __len__(self) -> int:
        return int(self.codes.shape[0])

    def entry(self, j: int) -> tuple[int, int, Message, int]:
        size = self.size if isinstance(self.size, int) else int(self.size[j])
        return int(self.src[j]), self.phase, RandomizedValues(self.request_id, np.array(self.codes[j])), size

    def kinds(self) -> np.ndarray:
        return np.full(len(self), self.kind, dtype=np.int32)

    def mark(self, seen: np.ndarray) -> None:
        """Set ``seen[src + 1]`` for every sender."""
        src = self.src
        if isinstance(src, range):
            seen[src.start + 1:src.stop + 1] = True
        else:
            seen[src.astype(np.int64) + 1] = True

    def top(self) -> int:
        src = self.src
        return src[-1] if isinstance(src, range) else int(src.max())

    def phases(self) -> np.ndarray:
        return np.full(len(self), self.phase, dtype=np.int32)

    def nbytes(self) -> int:
        return self.size * len(self) if isinstance(self.size, int) else int(self.size.sum())


class ViewLog:
    """Append-only log of the controller's view (see the module docstring)."""

    def __init__(self) -> None:
        self._segments: list[_Run | _Columns] = []
        self._firsts: list[int] = []  # index of each segment's first entry
        self._count = 0
        self._phases: list[str] = []
        self._phase_index: dict[str, int] = {}
        self._derived: dict[str, Any] = {}
        self._run: _Run | None = None  # the last segment, while it is a run

    def _phase(self, phase: str) -> int:
        index = self._phase_index.get(phase)
        if index is None:
            index = self._phase_index[phase] = len(self._phases)
            self._phases.append(phase)
        return index

    def record(self, env: Envelope[Message]) -> None:
        """Append a received envelope (its message is stored in columns or kept as is)."""
        src, _, phase, msg, size = env
        run = self._run
        if run is None:
            run = self._run = _Run()
            self._segments.append(run)
            self._firsts.append(self._count)
        index = self._phase_index.get(phase)
        run.append(src, self._phase(phase) if index is None else index, msg, size)
        self._count += 1

    def record_all(self, envs: Sequence[Envelope[Message]]) -> None:
        """:meth:`record` of each of ``envs``, in order (at once, unless one of them is a
        :class:`~parties.wire.messages.RandomizedValues`, whose codes go to the columns)."""
        if not envs:
            return
        if len(envs) < 4 or any(type(env.message) is RandomizedValues for env in envs):
            for env in envs:
                self.record(env)
            return
        run = self._run
        if run is None:
            run = self._run = _Run()
            self._segments.append(run)
            self._firsts.append(self._count)
        srcs, _, phases, msgs, sizes = zip(*envs)
        distinct = dict.fromkeys(phases)  # (numbered in the order first seen, as record does)
        index = self._phase_index
        for phase in distinct:
            self._phase(phase)
        numbers = (array("i", (index[phases[0]],)) * len(envs) if len(distinct) == 1
                   else [index[phase] for phase in phases])
        run.extend(srcs, numbers, msgs, sizes)
        self._count += len(envs)

    def record_columns(self, block: ReplyColumns) -> None:
        """Append reply columns (:mod:`parties.columns`): one entry per member, each read back as
        its :class:`~parties.wire.messages.RandomizedValues`; the codes matrix is kept, not copied,
        when it is read-only int64 (module docstring)."""
        if not len(block):
            return
        self._segments.append(_Columns(block, self._phase(block.phase)))
        self._run = None
        self._firsts.append(self._count)
        self._count += len(block)

    def note(self, name: str, value: Any) -> None:
        """Record a value the controller derived from what it received (e.g. ``"clusters"``)."""
        self._derived[name] = value

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return self._count

    def entry(self, i: int) -> ViewEntry:
        """Entry ``i`` (arrival order)."""
        if not 0 <= i < self._count:
            raise IndexError(f"view entry {i} out of range (the view has {self._count})")
        k = bisect_right(self._firsts, i) - 1
        src, phase, msg, size = self._segments[k].entry(i - self._firsts[k])
        return ViewEntry(i, src, self._phases[phase], msg, size)

    def __iter__(self) -> Iterator[ViewEntry]:
        for first, segment in zip(self._firsts, self._segments):
            for j in range(len(segment)):
                src, phase, msg, size = segment.entry(j)
                yield ViewEntry(first + j, src, self._phases[phase], msg, size)

    @property
    def derived(self) -> Mapping[str, Any]:
        """Values the controller derived, by name."""
        return MappingProxyType(self._derived)

    def _kind_counts(self) -> dict[int, int]:
        """Messages per kind number, kinds in order of first arrival."""
        counts: dict[int, int] = {}
        for segment in self._segments:
            values, first, number = np.unique(segment.kinds(), return_index=True, return_counts=True)
            for k in np.argsort(first, kind="stable"):
                counts[int(values[k])] = counts.get(int(values[k]), 0) + int(number[k])
        return counts

    def kinds(self) -> frozenset[str]:
        """Names of the message kinds the controller received."""
        return frozenset(message_class(k).NAME for k in self._kind_counts())

    def of_kind(self, *kinds: type[Message] | str) -> list[ViewEntry]:
        """Entries whose message is one of ``kinds`` (classes or names)."""
        numbers = np.array(sorted({message_class(k).KIND if isinstance(k, str) else k.KIND for k in kinds}),
                           dtype=np.int32)
        out: list[ViewEntry] = []
        for first, segment in zip(self._firsts, self._segments):
            for j in np.flatnonzero(np.isin(segment.kinds(), numbers)).tolist():
                src, phase, msg, size = segment.entry(j)
                out.append(ViewEntry(first + j, src, self._phases[phase], msg, size))
        return out

    def summary(self) -> ViewSummary:
        """Counts of the view (see :class:`ViewSummary`)."""
        by_kind = {message_class(k).NAME: c for k, c in self._kind_counts().items()}
        phases = np.zeros(len(self._phases), dtype=np.int64)
        seen = np.zeros(max((segment.top() for segment in self._segments), default=-1) + 2, dtype=bool)
        for segment in self._segments:
            phases += np.bincount(segment.phases(), minlength=len(self._phases))
            segment.mark(seen)
        return ViewSummary(
            messages=self._count,
            bytes=sum(segment.nbytes() for segment in self._segments),
            by_kind=MappingProxyType(by_kind),
            by_phase=MappingProxyType({name: int(phases[k]) for k, name in enumerate(self._phases) if phases[k]}),
            senders=int(np.count_nonzero(seen)),
            kinds=tuple(sorted(by_kind)),
            derived=tuple(self._derived),
        )
