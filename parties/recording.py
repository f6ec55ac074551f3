"""The controller's endpoint as it records: every envelope it receives lands in the view.

The controller's :class:`~parties.transport.Endpoint` is wrapped in a
:class:`RecordingEndpoint`, so every message it receives — the replies of its rounds, and the
secure-sum messages an engine consumes on its behalf (:func:`parties.secure.drive.drive`) —
is appended to its :class:`~parties.view.ViewLog` before anyone looks at it.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from parties.awaited import Awaited
from parties.columns import ReplyColumns
from parties.transport import Endpoint, Envelope
from parties.view import ViewLog
from parties.wire.codec import Message

__all__ = ["RecordingEndpoint"]


class RecordingEndpoint:
    """The controller's endpoint, appending every envelope it receives to the view.

    Forwards everything to the wrapped :class:`~parties.transport.Endpoint`; every receiving
    method (``recv``, ``recv_many``, ``take_all``, ``gather``, ``gather_columns``) logs what it
    returns, and ``collect`` what it caught, even when a deadline
    ends it, so messages consumed by a secure-sum program on the controller's behalf
    (:func:`parties.secure.drive.drive`) are in the view too.
    """

    def __init__(self, endpoint: Endpoint, view: ViewLog) -> None:
        self._endpoint = endpoint
        self._view = view

    def __getattr__(self, name: str) -> Any:
        return getattr(self._endpoint, name)

    async def recv(self, **kwargs: Any) -> Envelope[Message]:
        env: Envelope[Message] = await self._endpoint.recv(**kwargs)
        self._view.record(env)
        return env

    async def recv_many(self, **kwargs: Any) -> list[Envelope[Message]]:
        envs: list[Envelope[Message]] = await self._endpoint.recv_many(**kwargs)
        self._view.record_all(envs)
        return envs

    def take_all(self, **kwargs: Any) -> list[Envelope[Message]]:
        envs: list[Envelope[Message]] = self._endpoint.take_all(**kwargs)
        self._view.record_all(envs)
        return envs

    async def gather(self, sources: Iterable[int], **kwargs: Any) -> dict[int, Envelope[Message]]:
        got: dict[int, Envelope[Message]] = await self._endpoint.gather(sources, **kwargs)
        self._view.record_all(list(got.values()))
        return got

    async def gather_columns(self, sources: Iterable[int],
                             **kwargs: Any) -> tuple[dict[int, Envelope[Message]], list[ReplyColumns]]:
        got, blocks = await self._endpoint.gather_columns(sources, **kwargs)
        self._view.record_all(list(got.values()))
        for block in blocks:
            self._view.record_columns(block)
        return got, blocks

    async def collect(self, want: Awaited, got: dict[int, Envelope[Message]], blocks: list[ReplyColumns] | None = None,
                      **kwargs: Any) -> None:
        seen, logged = len(got), len(blocks) if blocks is not None else 0
        try:
            await self._endpoint.collect(want, got, blocks, **kwargs)
        finally:  # (what arrived before a deadline is kept, so it is logged too)
            self._view.record_all(list(got.values())[seen:])
            for block in (blocks or [])[logged:]:
                self._view.record_columns(block)
