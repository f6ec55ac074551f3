"""The controller's view: everything the (untrusted) controller received, and what it derived.

The controller appends every envelope it receives to a :class:`ViewLog` *before* looking at
it, so the log is exactly what it learned from the network; it also notes the values it
derived from them (dependences, clusters, estimates), which are functions of the log.  Tests
and reports inspect the log to check what the controller could know — e.g. that it only ever
received randomized values, refusals and secure-sum aggregates, never a raw record.

The log keeps every message, in columns rather than objects: per message its sender, phase,
kind, encoded size and, for :class:`~parties.wire.messages.RandomizedValues` (almost every
message of a run), the request id with the codes appended to one flat int64 array; other
messages are kept as they are.  An entry is rebuilt, equal to the message received, when it
is read.  A run's view of randomized values then costs about 40 bytes plus 8 per released code
per message, instead of about 600 bytes of envelope, message and array objects — what lets the
controller of a 1,000,000-party run keep its whole view of the releases.  A secure sum's messages
are kept as received, and they are larger: the masked sum's are about 8.5 KB per party over
Adult's 1,582 pair cells (mostly the masked vector, 4 bytes per cell), 277 MB at 32,561 parties.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
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


class ViewLog:
    """Append-only log of the controller's view (see the module docstring)."""

    def __init__(self) -> None:
        self._src = array("i")
        self._phase = array("i")  # index into _phases
        self._kind = array("i")  # wire kind number
        self._size = array("q")
        self._ref = array("q")  # >= 0: request id of RandomizedValues in columns; < 0: -1 - index into _objects
        self._start = array("q")  # first code of the entry in _codes
        self._codes = array("q")
        self._objects: list[Message] = []
        self._phases: list[str] = []
        self._phase_index: dict[str, int] = {}
        self._derived: dict[str, Any] = {}

    def record(self, env: Envelope[Message]) -> None:
        """Append a received envelope (its message is stored in columns or kept as is)."""
        msg = env.message
        phase = self._phase_index.get(env.phase)
        if phase is None:
            phase = self._phase_index[env.phase] = len(self._phases)
            self._phases.append(env.phase)
        self._src.append(env.src)
        self._phase.append(phase)
        self._kind.append(msg.KIND)
        self._size.append(env.size)
        self._start.append(len(self._codes))
        if type(msg) is RandomizedValues and not msg.ids and msg.codes.dtype == np.int64 and msg.codes.ndim == 1:
            self._ref.append(msg.request_id)
            self._codes.frombytes(msg.codes.tobytes())
        else:
            self._ref.append(-1 - len(self._objects))
            self._objects.append(msg)

    def record_columns(self, block: ReplyColumns) -> None:
        """Append reply columns (:mod:`parties.columns`): one entry per member, stored in the
        columns as its :class:`~parties.wire.messages.RandomizedValues` would be."""
        count = len(block)
        if not count:
            return
        phase = self._phase_index.get(block.phase)
        if phase is None:
            phase = self._phase_index[block.phase] = len(self._phases)
            self._phases.append(block.phase)
        width = block.codes.shape[1]
        self._src.frombytes(block.srcs.astype(np.int32).tobytes())
        self._phase.frombytes(np.full(count, phase, dtype=np.int32).tobytes())
        self._kind.frombytes(np.full(count, block.kind, dtype=np.int32).tobytes())
        self._size.frombytes(block.sizes.astype(np.int64).tobytes())
        self._ref.frombytes(np.full(count, block.request_id, dtype=np.int64).tobytes())
        self._start.frombytes((len(self._codes) + width * np.arange(count, dtype=np.int64)).tobytes())
        self._codes.frombytes(np.ascontiguousarray(block.codes, dtype=np.int64).tobytes())

    def note(self, name: str, value: Any) -> None:
        """Record a value the controller derived from what it received (e.g. ``"clusters"``)."""
        self._derived[name] = value

    # ------------------------------------------------------------------ queries
    def __len__(self) -> int:
        return len(self._src)

    def _message(self, i: int) -> Message:
        """The message of entry ``i`` (rebuilt from the columns for RandomizedValues)."""
        ref = self._ref[i]
        if ref < 0:
            return self._objects[-1 - ref]
        stop = self._start[i + 1] if i + 1 < len(self._start) else len(self._codes)
        return RandomizedValues(ref, np.array(self._codes[self._start[i]:stop], dtype=np.int64))

    def entry(self, i: int) -> ViewEntry:
        """Entry ``i`` (arrival order)."""
        return ViewEntry(i, self._src[i], self._phases[self._phase[i]], self._message(i), self._size[i])

    def __iter__(self) -> Iterator[ViewEntry]:
        for i in range(len(self._src)):
            yield self.entry(i)

    @property
    def derived(self) -> Mapping[str, Any]:
        """Values the controller derived, by name."""
        return MappingProxyType(self._derived)

    def _kind_counts(self) -> dict[int, int]:
        """Messages per kind number, kinds in order of first arrival."""
        kinds = np.frombuffer(self._kind, dtype=np.int32) if len(self._kind) else np.zeros(0, dtype=np.int32)
        values, first, counts = np.unique(kinds, return_index=True, return_counts=True)
        return {int(values[k]): int(counts[k]) for k in np.argsort(first, kind="stable")}

    def kinds(self) -> frozenset[str]:
        """Names of the message kinds the controller received."""
        return frozenset(message_class(k).NAME for k in self._kind_counts())

    def of_kind(self, *kinds: type[Message] | str) -> list[ViewEntry]:
        """Entries whose message is one of ``kinds`` (classes or names)."""
        numbers = {message_class(k).KIND if isinstance(k, str) else k.KIND for k in kinds}
        return [self.entry(i) for i, k in enumerate(self._kind) if k in numbers]

    def summary(self) -> ViewSummary:
        """Counts of the view (see :class:`ViewSummary`)."""
        by_kind = {message_class(k).NAME: c for k, c in self._kind_counts().items()}
        n = len(self._src)
        phases = np.bincount(np.frombuffer(self._phase, dtype=np.int32), minlength=len(self._phases)) if n \
            else np.zeros(len(self._phases), dtype=np.int64)
        return ViewSummary(
            messages=n,
            bytes=int(np.frombuffer(self._size, dtype=np.int64).sum()) if n else 0,
            by_kind=MappingProxyType(by_kind),
            by_phase=MappingProxyType({name: int(phases[k]) for k, name in enumerate(self._phases) if phases[k]}),
            senders=int(np.count_nonzero(np.bincount(np.frombuffer(self._src, dtype=np.int32) + 1))) if n else 0,
            kinds=tuple(sorted(by_kind)),
            derived=tuple(self._derived),
        )
