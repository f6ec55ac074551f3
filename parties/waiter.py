"""A pending receive: its filters (kinds, sources, phase), the sources it still awaits and its catch.

A :class:`Waiter` is what a receive of :mod:`parties.mailbox` leaves at its mailbox while it
waits: the delivery side (:mod:`parties.inbox`) hands it every matching envelope.  The helpers
here check a receive's arguments and name what it waited for in its errors.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from mprr.errors import ConfigurationError
from parties.awaited import Awaited
from parties.envelope import Envelope
from parties.topology import actor_name
from parties.wire.codec import Message, message_class

if TYPE_CHECKING:
    from parties.columns import ReplyColumns

__all__ = ["Waiter", "check_timeout", "describe_actors", "describe_kinds", "matches", "sources_of", "succeeded"]


class Waiter:
    """A pending recv (``want`` = None) or gather (``want`` = the sources still missing)."""

    __slots__ = ("kinds", "sources", "phase", "future", "want", "got", "blocks")

    def __init__(self, kinds: frozenset[int] | None, sources: frozenset[int] | None,
                 phase: str | None, future: asyncio.Future[Any], want: Awaited | None = None) -> None:
        self.kinds, self.sources, self.phase, self.future = kinds, sources, phase, future
        self.want = want
        self.got: dict[int, Envelope[Message]] = {}
        self.blocks: list[ReplyColumns] | None = None  # a columnar gather's reply columns

    def matches(self, env: Envelope[Message]) -> bool:
        return (
            (self.kinds is None or env.message.KIND in self.kinds)
            and (self.phase is None or env.phase == self.phase)
            and (self.sources is None or env.src in self.sources)
            and (self.want is None or env.src in self.want)
        )


def matches(env: Envelope[Message], kinds: frozenset[int] | None, sources: Any, phase: str | None) -> bool:
    return (
        (kinds is None or env.message.KIND in kinds)
        and (phase is None or env.phase == phase)
        and (sources is None or env.src in sources)
    )


def check_timeout(timeout: float | None) -> None:
    if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0 and not math.isnan(timeout)):
        raise ConfigurationError(f"timeout must be > 0 seconds or None, got {timeout!r}")


def succeeded(future: asyncio.Future[Any]) -> bool:
    return future.done() and not future.cancelled() and future.exception() is None


def sources_of(sources: Iterable[int] | int | None) -> frozenset[int] | None:
    if sources is None:
        return None
    if isinstance(sources, int):
        return frozenset((sources,))
    return frozenset(map(int, sources))


def describe_kinds(kinds: frozenset[int] | None) -> str:
    if kinds is None:
        return "any message"
    return "/".join(sorted(message_class(k).NAME for k in kinds))


def describe_actors(actors: tuple[int, ...], limit: int = 10) -> str:
    names = [actor_name(a) for a in actors[:limit]]
    more = f" and {len(actors) - limit} more" if len(actors) > limit else ""
    return ", ".join(names) + more
