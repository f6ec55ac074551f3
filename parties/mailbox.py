"""An actor's mailbox: delivered messages buffered in arrival order, and filtered receive.

A transport hands every delivered message to the receiving actor's :class:`Mailbox` as an
:class:`Envelope` (:meth:`Mailbox._put`): a waiting ``recv`` / ``recv_many`` / ``gather``
whose filters match takes it, or it is buffered.  Unmatched messages stay buffered, in arrival
order, for later receives.  Frames the transport rejected are noted here as a
:class:`Rejection` (:meth:`Mailbox.rejections`, :meth:`Mailbox.take_rejections`); they never
reach, wake or fail a receive.

Time: receives bound their wait with ``asyncio.timeout`` scopes on the running loop's clock,
so tests run them on a virtual clock (``tests/virtual_clock.py``).
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, NamedTuple, TypeVar, overload

import numpy as np

from mprr.errors import ConfigurationError, PartyDropped, RoundTimeout
from parties.wire.codec import Message, message_class, resolve_kinds
from parties.awaited import Awaited
from parties.topology import actor_name

if TYPE_CHECKING:
    from parties.columns import ReplyColumns

__all__ = ["MAX_REJECTIONS_KEPT", "Envelope", "Mailbox", "Rejection"]

MAX_REJECTIONS_KEPT = 1024
"""Rejections a mailbox keeps for :meth:`Mailbox.rejections` (older ones are only counted)."""

M = TypeVar("M", bound=Message)
M_co = TypeVar("M_co", bound=Message, covariant=True)


class Envelope(NamedTuple, Generic[M_co]):
    """A delivered message: sender, receiver, phase, the decoded message and its size in bytes.

    Generic in the message class: ``recv(kinds=KeyDirectory)`` returns an
    ``Envelope[KeyDirectory]``, so the message's fields are typed without a cast.  (A named
    tuple, as :class:`parties.transport.Frame`.)
    """

    src: int
    dst: int
    phase: str
    message: M_co
    size: int

    @property
    def kind(self) -> str:
        """Name of the message kind."""
        return self.message.NAME


@dataclass(frozen=True, slots=True)
class Rejection:
    """A frame the receiving endpoint rejected: who sent it, in which phase, and why.

    ``kind`` is the kind number the frame claimed (it may be meaningless for garbage).
    """

    src: int
    dst: int
    phase: str
    kind: int
    reason: str

    def describe(self) -> str:
        """One line naming the sender, the receiver, the phase and the reason."""
        return (f"{actor_name(self.dst)} rejected a frame from {actor_name(self.src)} "
                f"in phase {self.phase!r}: {self.reason}")


class _Waiter:
    """A pending recv (``want`` = None) or gather (``want`` = set of sources still missing;
    ``early``: its future is set at the first message, and it keeps gathering until its
    receive resumes)."""

    __slots__ = ("kinds", "sources", "phase", "future", "want", "got", "early", "blocks")

    def __init__(self, kinds: frozenset[int] | None, sources: frozenset[int] | None,
                 phase: str | None, future: asyncio.Future[Any], want: Awaited | None = None,
                 early: bool = False) -> None:
        self.kinds, self.sources, self.phase, self.future = kinds, sources, phase, future
        self.want = want
        self.got: dict[int, Envelope[Message]] = {}
        self.early = early
        self.blocks: list[ReplyColumns] | None = None  # a columnar gather's reply columns

    def matches(self, env: Envelope[Message]) -> bool:
        return (
            (self.kinds is None or env.message.KIND in self.kinds)
            and (self.phase is None or env.phase == self.phase)
            and (self.sources is None or env.src in self.sources)
            and (self.want is None or env.src in self.want)
        )


def _matches(env: Envelope[Message], kinds: frozenset[int] | None, sources: Any, phase: str | None) -> bool:
    return (
        (kinds is None or env.message.KIND in kinds)
        and (phase is None or env.phase == phase)
        and (sources is None or env.src in sources)
    )


def _check_timeout(timeout: float | None) -> None:
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0 and not math.isnan(timeout)):
        raise ConfigurationError(f"timeout must be > 0 seconds or None, got {timeout!r}")


class Mailbox:
    """The receive side of one actor's endpoint (:class:`parties.transport.Endpoint`)."""

    __slots__ = ("actor", "_buffer", "_waiters", "_rejections")

    def __init__(self, actor: int) -> None:
        self.actor = actor
        self._buffer: deque[Envelope[Message]] = deque()
        self._waiters: list[_Waiter] = []
        self._rejections: deque[Rejection] = deque(maxlen=MAX_REJECTIONS_KEPT)

    @property
    def buffered(self) -> int:
        """Number of delivered messages no recv has taken yet."""
        return len(self._buffer)

    def pending(self) -> tuple[Envelope[Message], ...]:
        """The buffered envelopes, oldest first (not removed)."""
        return tuple(self._buffer)

    # ------------------------------------------------------------------ rejected frames
    def rejections(self) -> tuple[Rejection, ...]:
        """Frames rejected at this endpoint and not yet taken, oldest first.

        At most :data:`MAX_REJECTIONS_KEPT` are kept; the traffic counters count every one.
        """
        return tuple(self._rejections)

    def take_rejections(self, sources: Iterable[int] | None = None) -> dict[int, Rejection]:
        """Remove the rejections of frames from ``sources`` (None = any sender).

        Returns ``{sender: its first rejection taken}``: the senders whose frames this endpoint
        rejected since they were last taken.
        """
        if not self._rejections:
            return {}
        wanted = None if sources is None else set(sources)
        first: dict[int, Rejection] = {}
        keep: deque[Rejection] = deque(maxlen=MAX_REJECTIONS_KEPT)
        for r in self._rejections:
            if wanted is None or r.src in wanted:
                first.setdefault(r.src, r)
            else:
                keep.append(r)
        self._rejections = keep
        return first

    # ------------------------------------------------------------------ receiving
    @property
    def crashed(self) -> bool:
        """True once this actor has crashed."""
        raise NotImplementedError

    def _check_source(self, src: int) -> None:
        """Raise unless ``src`` is an actor that may be waited for."""
        raise NotImplementedError

    def _check_sources(self, sources: set[int]) -> None:
        """:meth:`_check_source` of each of ``sources``."""
        for src in sources:
            self._check_source(src)

    def _raise_pending(self) -> None:
        if self.crashed:
            raise PartyDropped(f"{actor_name(self.actor)} has crashed", parties=(self.actor,))

    def _take(self, kinds: frozenset[int] | None, sources: Any, phase: str | None) -> Envelope[Message] | None:
        buf = self._buffer
        if not buf:
            return None
        if kinds is None and sources is None and phase is None:
            return buf.popleft()
        for i, env in enumerate(buf):
            if _matches(env, kinds, sources, phase):
                del buf[i]
                return env
        return None

    @overload
    async def recv(
        self,
        *,
        kinds: type[M],
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> Envelope[M]: ...
    @overload
    async def recv(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> Envelope[Message]: ...
    async def recv(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> Envelope[Message]:
        """Return the oldest delivered message matching every given filter.

        Parameters
        ----------
        kinds
            Message classes, names or kind numbers accepted (None = any).
        sources
            Sender id(s) accepted (None = any).
        phase
            Phase accepted (None = any).
        timeout
            Seconds to wait (wall clock; required; ``None`` = wait forever, use sparingly).

        Raises
        ------
        RoundTimeout
            Nothing matching arrived in time (names the phase and the missing sources).
        PartyDropped
            This actor has crashed.

        Frames rejected on delivery (undecodable, or of a kind this endpoint does not accept)
        never reach a ``recv``: see :meth:`rejections`.
        """
        _check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        source_set = _source_set(sources)
        self._raise_pending()
        env = self._take(kind_set, source_set, phase)
        if env is not None:
            return env
        waiter = _Waiter(kind_set, source_set, phase, asyncio.get_running_loop().create_future())
        self._waiters.append(waiter)
        returned = False
        try:
            if timeout is None:  # no deadline (e.g. a secure-sum engine's receive loop): no scope to enter
                delivered: Envelope[Message] = await waiter.future
            else:
                async with asyncio.timeout(timeout):
                    delivered = await waiter.future
            returned = True
            return delivered
        except TimeoutError:
            if _succeeded(waiter.future):  # delivered just as the deadline passed
                returned = True
                late: Envelope[Message] = waiter.future.result()
                return late
            missing = tuple(sorted(source_set)) if source_set is not None else ()
            raise RoundTimeout(
                f"phase {phase or '(any)'!r}: {actor_name(self.actor)} timed out after {timeout} s "
                f"waiting for {_describe(kind_set)}"
                + (f" from {_describe_actors(missing)}" if missing else ""),
                phase=phase or "", timeout=timeout, missing=missing,
            ) from None
        finally:
            self._forget(waiter, returned)

    @overload
    async def recv_many(
        self,
        *,
        kinds: type[M],
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> list[Envelope[M]]: ...
    @overload
    async def recv_many(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> list[Envelope[Message]]: ...
    async def recv_many(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> list[Envelope[Any]]:  # the overloads above give the precise type
        """Every buffered message matching the filters, oldest first, taken at once; when none
        is buffered, wait for the first (as :meth:`recv`, same filters, ``timeout`` and errors)
        and return it with any others buffered by then.  Never empty.

        The same messages, in the same order, as repeated :meth:`recv` calls would return.
        """
        _check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        source_set = _source_set(sources)
        self._raise_pending()
        got = self._take_all(kind_set, source_set, phase)
        if got:
            return got
        first = await self.recv(kinds=kinds, sources=sources, phase=phase, timeout=timeout)
        return [first, *self._take_all(kind_set, source_set, phase)]

    def take_all(
        self,
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        sources: Iterable[int] | int | None = None,
        phase: str | None = None,
    ) -> list[Envelope[Any]]:
        """Every buffered message matching the filters, oldest first, taken now; never waits
        (empty when none is buffered).  Raises PartyDropped if this actor has crashed."""
        self._raise_pending()
        return self._take_all(resolve_kinds(kinds), _source_set(sources), phase)

    def _take_all(self, kinds: frozenset[int] | None, sources: Any, phase: str | None) -> list[Envelope[Message]]:
        buf = self._buffer
        if not buf:
            return []
        if kinds is None and sources is None and phase is None:
            everything = list(buf)
            buf.clear()
            return everything
        out: list[Envelope[Message]] = []
        keep: deque[Envelope[Message]] = deque()
        for env in buf:
            (out if _matches(env, kinds, sources, phase) else keep).append(env)
        if keep:
            self._buffer = keep
        else:
            buf.clear()
        return out

    @overload
    async def gather(
        self,
        sources: Iterable[int],
        *,
        kinds: type[M],
        phase: str | None = None,
        timeout: float | None,
        partial: bool = False,
    ) -> dict[int, Envelope[M]]: ...
    @overload
    async def gather(
        self,
        sources: Iterable[int],
        *,
        kinds: Iterable[int | str | type[Message]] | str | None = None,
        phase: str | None = None,
        timeout: float | None,
        partial: bool = False,
    ) -> dict[int, Envelope[Message]]: ...
    async def gather(
        self,
        sources: Iterable[int],
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        phase: str | None = None,
        timeout: float | None,
        partial: bool = False,
    ) -> dict[int, Envelope[Any]]:  # the overloads above give the precise type
        """Receive one matching message from each of ``sources``; ``{src: envelope}``.

        Extra messages (duplicates, other kinds) stay buffered.  On timeout raises
        :class:`RoundTimeout` listing the sources still missing, or with ``partial=True``
        returns what arrived (the caller decides what a missing party means).
        """
        kind_set, want = self._gather_arguments(sources, kinds, timeout)
        got = self._take_each(want, kind_set, phase)
        if not want:
            return got
        waiter = _Waiter(kind_set, None, phase, asyncio.get_running_loop().create_future(), want)
        waiter.got = got
        self._waiters.append(waiter)
        returned = False
        try:
            async with asyncio.timeout(timeout):
                result: dict[int, Envelope[Any]] = await waiter.future
            returned = True
            return result
        except TimeoutError:
            if partial or _succeeded(waiter.future):
                returned = True
                return dict(waiter.got)
            missing = tuple(waiter.want.ids().tolist()) if waiter.want is not None else ()
            raise RoundTimeout(
                f"phase {phase or '(any)'!r}: {actor_name(self.actor)} timed out after {timeout} s "
                f"waiting for {_describe(kind_set)} from {_describe_actors(missing)} "
                f"({len(waiter.got)} of {len(waiter.got) + len(missing)} arrived)",
                phase=phase or "", timeout=timeout, missing=missing,
            ) from None
        finally:
            self._forget(waiter, returned)

    async def gather_columns(
        self,
        sources: Iterable[int],
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> tuple[dict[int, Envelope[Message]], list[ReplyColumns]]:
        """:meth:`gather` with ``partial=True`` that also takes reply columns
        (:class:`parties.columns.ReplyColumns`) as they are: one matching message from each of
        ``sources``, as envelopes (``{src: envelope}``) and as columns (their members are
        sources of ``sources``, each once, and none has an envelope too).
        """
        kind_set, want = self._gather_arguments(sources, kinds, timeout)
        got: dict[int, Envelope[Message]] = {}
        blocks: list[ReplyColumns] = []
        try:
            async with asyncio.timeout(timeout):
                await self._collect(want, got, blocks, kind_set, phase)
        except TimeoutError:
            pass
        return got, blocks

    async def collect(
        self,
        want: Awaited,
        got: dict[int, Envelope[Message]],
        blocks: list[ReplyColumns] | None = None,
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        phase: str | None = None,
    ) -> None:
        """Receive one matching message from each source of ``want`` into the caller's ``got``
        (``{src: envelope}``, in arrival order) — and, with ``blocks``, reply columns
        (:class:`parties.columns.ReplyColumns`) as they are — removing each source from
        ``want`` as its message arrives; returns when ``want`` is empty.

        No deadline of its own: the caller bounds the wait (one ``asyncio.timeout`` per round).
        What arrived before the wait ends, by a timeout or any cancellation, stays in ``got`` /
        ``blocks``: nothing is put back.
        """
        kind_set = resolve_kinds(kinds)
        self._check_sources(want.bounds())
        self._raise_pending()
        await self._collect(want, got, blocks, kind_set, phase)

    async def _collect(self, want: Awaited, got: dict[int, Envelope[Message]], blocks: list[ReplyColumns] | None,
                       kinds: frozenset[int] | None, phase: str | None) -> None:
        got.update(self._take_each(want, kinds, phase))
        if not want:
            return
        waiter = _Waiter(kinds, None, phase, asyncio.get_running_loop().create_future(), want)
        waiter.got, waiter.blocks = got, blocks
        self._waiters.append(waiter)
        try:
            await waiter.future
        finally:
            self._forget(waiter, True)

    async def gather_each(
        self,
        sources: Iterable[int],
        *,
        kinds: Iterable[int | str | type[Message]] | type[Message] | str | None = None,
        phase: str | None = None,
        timeout: float | None,
    ) -> AsyncIterator[dict[int, Envelope[Any]]]:
        """:meth:`gather` with ``partial=True``, in batches as they arrive: yields ``{src:
        envelope}`` for the sources that answered since the last batch (every matching message
        delivered before this receive resumed: one wake-up per batch of arrivals, not per
        message), until every source answered or ``timeout`` seconds passed (then it ends;
        the caller sees who is missing).  Messages buffered while the caller held a batch are
        taken when it resumes, even if that is after the deadline.  The same messages, in the
        same order, as one ``gather``; per batch, the work is that of its messages, whatever the number of
        sources still awaited.
        """
        kind_set, want = self._gather_arguments(sources, kinds, timeout)
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        got = self._take_each(want, kind_set, phase)
        while True:
            if got:
                yield got
            if not want:
                return
            got = self._take_each(want, kind_set, phase)  # arrived while the caller held the batch
            if got:
                continue
            remaining = None if deadline is None else deadline - loop.time()
            if remaining is not None and remaining <= 0:
                return
            waiter = _Waiter(kind_set, None, phase, loop.create_future(), want, early=True)
            self._waiters.append(waiter)
            returned = False
            try:
                async with asyncio.timeout(remaining):
                    got = await waiter.future
                returned = True
            except TimeoutError:
                returned = True
                got = waiter.got
                want = Awaited(())  # (the deadline has passed: this batch is the last)
            finally:
                self._forget(waiter, returned)

    def _gather_arguments(self, sources: Iterable[int],
                          kinds: Iterable[int | str | type[Message]] | type[Message] | str | None,
                          timeout: float | None) -> tuple[frozenset[int] | None, Awaited]:
        """Checked arguments of :meth:`gather`, :meth:`gather_columns` and :meth:`gather_each`:
        the kind set and the sources still wanted."""
        _check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        want = Awaited(sources.ids() if isinstance(sources, Awaited) else
                       (sources,) if isinstance(sources, int) else sources)
        self._check_sources(want.bounds())
        self._raise_pending()
        return kind_set, want

    def _take_each(self, want: Awaited, kinds: frozenset[int] | None,
                   phase: str | None) -> dict[int, Envelope[Message]]:
        """Take the first buffered match of each source in ``want`` (removed from ``want``)."""
        got: dict[int, Envelope[Message]] = {}
        if want and self._buffer:
            keep: deque[Envelope[Message]] = deque()
            for env in self._buffer:
                if env.src in want and _matches(env, kinds, None, phase):
                    want.discard(env.src)
                    got[env.src] = env
                else:
                    keep.append(env)
            self._buffer = keep
        return got

    def _forget(self, waiter: _Waiter, returned: bool) -> None:
        """Drop a finished waiter; unless its catch was returned, put the catch back."""
        try:
            self._waiters.remove(waiter)
        except ValueError:
            pass
        if returned:
            return
        fut = waiter.future
        failed = fut.done() and not fut.cancelled() and fut.exception() is not None  # (retrieved)
        if waiter.want is None:
            # delivered just as the recv was cancelled: nothing is lost
            if fut.done() and not fut.cancelled() and not failed:
                self._buffer.appendleft(fut.result())
        else:
            put_back = list(waiter.got.values())
            for block in waiter.blocks or ():
                put_back.extend(_envelope(block, k, self.actor) for k in range(len(block)))
            for env in reversed(put_back):
                self._buffer.appendleft(env)

    # ------------------------------------------------------------------ delivery side (called by the transport)
    def _put(self, env: Envelope[Message], position: int | None = None) -> None:
        if not self._waiters and position is None:
            self._buffer.append(env)
            return
        for w in self._waiters:
            if w.matches(env) and (w.early or not w.future.done()):
                if w.want is None:
                    self._waiters.remove(w)
                    w.future.set_result(env)
                    return
                w.want.discard(env.src)
                w.got[env.src] = env
                if not w.want:
                    self._waiters.remove(w)
                if (w.early or not w.want) and not w.future.done():
                    w.future.set_result(w.got)
                return
        if position is None or position >= len(self._buffer):
            self._buffer.append(env)
        else:
            self._buffer.insert(position, env)

    def _put_columns(self, block: ReplyColumns) -> None:
        """Deliver reply columns: a waiting columnar gather (the only waiter) takes the members it
        wants as columns; every other member is delivered as its own envelope (:meth:`_put`)."""
        waiters = self._waiters
        w = waiters[0] if len(waiters) == 1 else None
        if (w is None or w.blocks is None or w.want is None or (w.kinds is not None and block.kind not in w.kinds)
                or (w.phase is not None and block.phase != w.phase) or w.future.done()):
            for k in range(len(block)):
                self._put(_envelope(block, k, self.actor))
            return
        want = w.want
        take = want.take(block.srcs)  # (the senders are distinct)
        whole = bool(take.all())
        if whole or take.any():
            w.blocks.append(block if whole else block.subset(take))
            if not want:
                waiters.remove(w)
                w.future.set_result(w.got)
        if not whole:
            for k in np.flatnonzero(~take).tolist():
                self._put(_envelope(block, k, self.actor))

    def _crash(self) -> None:
        self._buffer.clear()
        err = PartyDropped(f"{actor_name(self.actor)} has crashed", parties=(self.actor,))
        for w in list(self._waiters):
            if not w.future.done():
                w.future.set_exception(err)
        self._waiters.clear()


def _envelope(block: ReplyColumns, k: int, dst: int) -> Envelope[Message]:
    """Member ``k`` of reply columns as its own envelope, delivered to ``dst``."""
    return Envelope(int(block.srcs[k]), dst, block.phase, block.message(k), int(block.sizes[k]))


def _succeeded(future: asyncio.Future[Any]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def _source_set(sources: Iterable[int] | int | None) -> frozenset[int] | None:
    if sources is None:
        return None
    if isinstance(sources, int):
        return frozenset((sources,))
    return frozenset(map(int, sources))


def _describe(kinds: frozenset[int] | None) -> str:
    if kinds is None:
        return "any message"
    return "/".join(sorted(message_class(k).NAME for k in kinds))


def _describe_actors(actors: tuple[int, ...], limit: int = 10) -> str:
    names = [actor_name(a) for a in actors[:limit]]
    more = f" and {len(actors) - limit} more" if len(actors) > limit else ""
    return ", ".join(names) + more
