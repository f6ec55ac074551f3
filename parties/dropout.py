"""The dropout policy: what the controller does with parties that stay silent, refuse or misbehave.

``"fail"`` (default)
    the run stops: :class:`~mprr.errors.RoundTimeout` (silent parties; ``missing`` lists them),
    :class:`ReleaseRefused` (refusals) or :class:`~mprr.errors.MessageError` (faulty parties:
    a malformed reply, or a frame the controller's endpoint rejected; ``parties`` lists them).
    Nothing partial is reported.
``"exclude"``
    documented degraded result: the silent / refusing / faulty parties are excluded from this
    phase and every later one (:func:`exclusions` says why); estimates use the parties that
    answered.

:func:`dropout_error` is the error the ``"fail"`` policy raises for one round, :func:`exclusions`
the parties the ``"exclude"`` policy leaves out; :class:`parties.controller.Controller` applies
them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mprr.errors import MessageError, ProtocolError, RoundTimeout
from parties.topology import actor_name
from parties.wire.messages import Refusal

__all__ = ["DROPOUT_POLICIES", "ReleaseRefused", "describe_actors", "dropout_error", "exclusions"]

DROPOUT_POLICIES: tuple[str, ...] = ("fail", "exclude")
"""What the controller does with parties that stay silent or refuse (module docstring)."""


class ReleaseRefused(ProtocolError):
    """Parties refused a release the protocol needs (``on_dropout="fail"``).

    Parameters
    ----------
    phase
        Phase of the refused request.
    refusals
        ``{party: Refusal message}``.
    """

    def __init__(self, message: str, *, phase: str, refusals: Mapping[int, Refusal]) -> None:
        super().__init__(message)
        self.phase = phase
        self.refusals = dict(refusals)


def dropout_error(phase: str, request_id: int, targets: Sequence[int], silent: Sequence[int],
                  refusals: Mapping[int, Refusal], malformed: Mapping[int, str], *,
                  timeout: float, retries: int) -> ProtocolError | None:
    """The error that stops the run under ``"fail"`` after a round of request ``request_id`` to
    ``targets`` (``None``: every party answered well).  Silent parties first, then refusals,
    then faulty parties (``malformed``: ``{party: why}``)."""
    if silent:
        return RoundTimeout(
            f"phase {phase!r}: {len(silent)} of {len(targets)} parties did not answer request "
            f"{request_id} within {timeout} s"
            + (f" (after {retries} retries)" if retries else "")
            + f": {describe_actors(tuple(silent))}",
            phase=phase, timeout=timeout, missing=tuple(silent),
        )
    if refusals:
        first = min(refusals)
        return ReleaseRefused(
            f"phase {phase!r}: {len(refusals)} of {len(targets)} parties refused request "
            f"{request_id}; {actor_name(first)}: {refusals[first].reason}",
            phase=phase, refusals=refusals,
        )
    if malformed:
        first = min(malformed)
        return MessageError(
            f"phase {phase!r}: {len(malformed)} of {len(targets)} parties are faulty "
            f"(malformed replies to request {request_id} or rejected frames): "
            f"{describe_actors(sorted(malformed))}; {actor_name(first)}: {malformed[first]}",
            parties=tuple(sorted(malformed)),
        )
    return None


def exclusions(phase: str, silent: Sequence[int], refusals: Mapping[int, Refusal], malformed: Mapping[int, str],
               *, timeout: float) -> dict[int, str]:
    """``{party: why}`` of the parties the ``"exclude"`` policy leaves out after a round."""
    out = {p: f"{phase}: silent (no answer within {timeout} s)" for p in silent}
    out.update((p, f"{phase}: refused ({m.reason})") for p, m in refusals.items())
    out.update((p, f"{phase}: {why}") for p, why in malformed.items())
    return out


def describe_actors(actors: Sequence[int], limit: int = 10) -> str:
    """The first ``limit`` actors' names, and how many more."""
    names = ", ".join(actor_name(a) for a in actors[:limit])
    return names + (f" and {len(actors) - limit} more" if len(actors) > limit else "")
