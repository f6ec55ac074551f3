"""One request and its replies: the controller's round, with retries, one deadline per round.

:func:`exchange` broadcasts a request to the parties it targets (one communication round) and
collects one reply from each under one ``asyncio.timeout`` per round
(:meth:`parties.mailbox.Mailbox.collect`: what arrived before the deadline is kept).  A reply
to another request (a late or duplicated message) is logged by the recording endpoint and
ignored: its sender is still awaited.  With ``retries > 0`` the request is re-sent, with the
same request id, to the parties still silent after a round; a party that had already answered
replays the same values (no new randomness, no new spending), so a retry never changes the
release.  The parties awaited are one flag each (:class:`parties.awaited.Awaited`), however
many there are.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from parties.awaited import Awaited
from parties.columns import ReplyColumns
from parties.recording import RecordingEndpoint
from parties.transport import Envelope
from parties.wire.codec import Message
from parties.wire.requests import ReleaseRequest, ReportRequest, SecureRelease

__all__ = ["exchange"]


async def exchange(
    endpoint: RecordingEndpoint,
    request: ReleaseRequest | SecureRelease | ReportRequest,
    targets: Sequence[int],
    *,
    timeout: float,
    retries: int,
    kinds: tuple[type[Message], ...],
    columns: list[ReplyColumns] | None = None,
) -> tuple[dict[int, Message], tuple[int, ...]]:
    """Broadcast ``request`` to ``targets`` and collect one reply each, in at most
    ``retries + 1`` rounds of ``timeout`` seconds (module docstring).

    Returns ``({party: reply message}, silent parties)``.  With ``columns``, replies that
    arrive as reply columns (:mod:`parties.columns`) are appended to it instead of becoming
    messages (each party once, in either place).
    """
    net = endpoint.network
    phase = request.phase
    rid = request.request_id
    pending = Awaited(targets)
    got: dict[int, Message] = {}
    for attempt in range(retries + 1):
        if not pending:
            break
        with net.round(phase):
            await endpoint.broadcast(pending.ids().tolist() if attempt else targets, request, phase=phase)
        envelopes: dict[int, Envelope[Message]] = {}
        try:
            async with asyncio.timeout(timeout):  # one deadline per round
                while pending:
                    await endpoint.collect(pending, envelopes, columns, kinds=kinds, phase=phase)
                    _answers(envelopes, columns, rid, got, pending)
        except TimeoutError:
            _answers(envelopes, columns, rid, got, pending)
    return got, tuple(pending.ids().tolist())


def _answers(envelopes: dict[int, Envelope[Message]], columns: list[ReplyColumns] | None, request_id: int,
             got: dict[int, Message], pending: Awaited) -> None:
    """Move the collected ``envelopes`` into ``got`` (``{party: message}``) and keep the
    ``columns`` that answer ``request_id``; a reply to another request (late or duplicated)
    leaves its sender awaited."""
    for src, env in envelopes.items():
        msg = env.message
        if msg.request_id == request_id:  # type: ignore[attr-defined]
            got[src] = msg
        else:
            pending.add(src)
    envelopes.clear()
    if columns and any(block.request_id != request_id for block in columns):
        for block in columns:
            if block.request_id != request_id:
                for src in block.srcs.tolist():
                    pending.add(src)
        columns[:] = [block for block in columns if block.request_id == request_id]
