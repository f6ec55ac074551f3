"""An actor's mailbox: filtered receive of the messages its inbox holds.

A :class:`Mailbox` is an actor's :class:`~parties.inbox.Inbox` (delivered messages buffered in
arrival order, rejected frames noted) with its receives: ``recv`` / ``recv_many`` /
``take_all`` (the oldest matching messages), ``gather`` / ``gather_columns`` (one message from
each of a set of sources, reply columns as they are), and ``collect``, which gathers into the
caller's containers with no deadline of its own, so a caller bounds a whole round with one
``asyncio.timeout`` and keeps what arrived before it.  The sources a gather awaits are one flag each (:class:`parties.awaited.Awaited`).

Time: receives bound their wait with ``asyncio.timeout`` scopes on the running loop's clock,
so tests run them on a virtual clock (``tests/virtual_clock.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, TypeVar, overload

from mprr.errors import RoundTimeout
from parties.awaited import Awaited
from parties.envelope import Envelope, Rejection
from parties.inbox import MAX_REJECTIONS_KEPT, Inbox
from parties.topology import actor_name
from parties.waiter import Waiter, check_timeout, describe_actors, describe_kinds, sources_of, succeeded
from parties.wire.codec import Message, resolve_kinds

if TYPE_CHECKING:
    from parties.columns import ReplyColumns

__all__ = ["MAX_REJECTIONS_KEPT", "Envelope", "Mailbox", "Rejection"]

M = TypeVar("M", bound=Message)


class Mailbox(Inbox):
    """The receive side of one actor's endpoint (:class:`parties.transport.Endpoint`)."""

    __slots__ = ()

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
        check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        source_set = sources_of(sources)
        self._raise_pending()
        env = self._take(kind_set, source_set, phase)
        if env is not None:
            return env
        waiter = Waiter(kind_set, source_set, phase, asyncio.get_running_loop().create_future())
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
            if succeeded(waiter.future):  # delivered just as the deadline passed
                returned = True
                late: Envelope[Message] = waiter.future.result()
                return late
            missing = tuple(sorted(source_set)) if source_set is not None else ()
            raise RoundTimeout(
                f"phase {phase or '(any)'!r}: {actor_name(self.actor)} timed out after {timeout} s "
                f"waiting for {describe_kinds(kind_set)}"
                + (f" from {describe_actors(missing)}" if missing else ""),
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
        check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        source_set = sources_of(sources)
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
        return self._take_all(resolve_kinds(kinds), sources_of(sources), phase)

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
        waiter = Waiter(kind_set, None, phase, asyncio.get_running_loop().create_future(), want)
        waiter.got = got
        self._waiters.append(waiter)
        returned = False
        try:
            async with asyncio.timeout(timeout):
                result: dict[int, Envelope[Any]] = await waiter.future
            returned = True
            return result
        except TimeoutError:
            if partial or succeeded(waiter.future):
                returned = True
                return dict(waiter.got)
            missing = tuple(waiter.want.ids().tolist()) if waiter.want is not None else ()
            raise RoundTimeout(
                f"phase {phase or '(any)'!r}: {actor_name(self.actor)} timed out after {timeout} s "
                f"waiting for {describe_kinds(kind_set)} from {describe_actors(missing)} "
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
        waiter = Waiter(kinds, None, phase, asyncio.get_running_loop().create_future(), want)
        waiter.got, waiter.blocks = got, blocks
        self._waiters.append(waiter)
        try:
            await waiter.future
        finally:
            self._forget(waiter, True)

    def _gather_arguments(self, sources: Iterable[int],
                          kinds: Iterable[int | str | type[Message]] | type[Message] | str | None,
                          timeout: float | None) -> tuple[frozenset[int] | None, Awaited]:
        """Checked arguments of :meth:`gather` and :meth:`gather_columns`:
        the kind set and the sources still wanted."""
        check_timeout(timeout)
        kind_set = resolve_kinds(kinds)
        want = Awaited(sources.ids() if isinstance(sources, Awaited) else
                       (sources,) if isinstance(sources, int) else sources)
        self._check_sources(want.bounds())
        self._raise_pending()
        return kind_set, want
