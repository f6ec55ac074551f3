"""A secure sum is one agreed request: the session id every participant derives, and the
check of the sum against that request.

Why: the controller is not trusted.  If the session id were only the controller's string,
it could send every party the same id but different :class:`~parties.wire.requests.SecureRelease`
messages — the victim ``exact=True``, every other party "randomize through a constant
matrix" (each input is then a known one-hot vector, ε = 0) — and the sum minus the known
inputs would be the victim's exact values.  Here no participant runs a session under the
controller's string: each derives the engine's session id from what it was asked,

    agreed session = start.session + "#" + hex(SHA-256(len ‖ encode(release) ‖ encode(start))[:16])

(:func:`agreed_session`; ``encode`` is the one codec of :mod:`parties.wire.codec`, so the
digest covers every field: request id, phase, session, plan, units, the ``exact`` flag, the
matrix families and parameters, the engine name and the roster).  Every engine message
carries the session id, the AEAD associated data and the masked engine's MAC'd statements
bind it, and a receive skips the messages of another session: parties that were asked
different things are in different sessions, none of which can complete (a party waits for
the shares of peers that are not in its session and times out, having released nothing
that can be unmasked).  The cost is the digest (two SHA-256 over a few hundred bytes per
party) and 33 more bytes per engine message; no extra round.

An agreed request asks every contributor for the same kind of input, so a contributor whose
input the controller could predict (an ε = 0 matrix) is one whose peers are all asked the
same: such a sum hides nothing, and tells nothing either.  What the agreement cannot stop is a
roster padded with parties the controller controls (Sybils); :attr:`~mprr.privacy.PrivacyAccountant.min_roster`
and the contributor checks of the engines bound what an honest party accepts
(``docs/threat_model.md``).

:func:`check_unit_totals` is the controller's check of a sum against its request: every
contributor's input is one one-hot vector per unit, so each unit's block of the total adds
up to the number of contributors.  A sum that fails it holds a phantom or missing record
(a party that committed an all-ones vector, or 2^31 in a cell) and is refused, never reported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from mprr.errors import ProtocolError
from parties.wire.codec import encode
from parties.wire.requests import SecureRelease, SecureSumStart

__all__ = ["DIGEST_BYTES", "agreed_session", "check_unit_totals", "request_digest"]

DIGEST_BYTES = 16
"""Bytes of SHA-256 kept in an agreed session id (128 bits: a controller looking for two
requests with one id faces 2^64 work)."""


def request_digest(release: SecureRelease) -> bytes:
    """SHA-256 of the encoded :class:`~parties.wire.requests.SecureRelease` a party committed to."""
    return hashlib.sha256(encode(release)).digest()


def agreed_session(digest: bytes, start: SecureSumStart) -> str:
    """The engine's session id for ``start`` over the committed request of SHA-256 ``digest``
    (:func:`request_digest`): a function of everything the party was asked (module docstring).

    Examples
    --------
    >>> from parties.wire.requests import SecureRelease, SecureSumStart
    >>> release = SecureRelease(1, "dependence", "dependence/1", ((0, 1),), ((0, 1),), True)
    >>> start = SecureSumStart(1, "dependence/1", "graph", ((0, 5),))
    >>> agreed_session(request_digest(release), start).split("#")[0]
    'dependence/1'
    >>> other = SecureRelease(1, "dependence", "dependence/1", ((0, 1),), ((0, 1),), False, ("dense",), ((0.5,),))
    >>> agreed_session(request_digest(other), start) == agreed_session(request_digest(release), start)
    False
    """
    started = encode(start)
    h = hashlib.sha256(len(digest).to_bytes(2, "big") + digest + started)
    return f"{start.session}#{h.digest()[:DIGEST_BYTES].hex()}"


def check_unit_totals(total: np.ndarray, cells: Sequence[int], contributors: int, *, session: str) -> None:
    """Refuse a sum whose unit blocks do not each total ``contributors`` (module docstring).

    Parameters
    ----------
    total
        The sum (int64), the units' blocks concatenated in request order.
    cells
        Cells of each unit (the length of its one-hot block).
    contributors
        Number of parties whose inputs are in ``total``.
    session
        The session (named in the error).

    Raises
    ------
    ProtocolError
        Naming the check, the first unit that fails it, its total and the expected one.
    """
    offsets = np.cumsum([0, *cells])
    if int(offsets[-1]) != total.shape[0]:
        raise ProtocolError(f"secure sum {session!r}: unit-total check failed: the sum has {total.shape[0]} "
                            f"cells, the request's units {int(offsets[-1])}")
    sums = np.add.reduceat(total.astype(np.int64), offsets[:-1]) if len(cells) else np.zeros(0, np.int64)
    bad = np.flatnonzero(sums != contributors)
    if bad.size:
        k = int(bad[0])
        raise ProtocolError(
            f"secure sum {session!r}: unit-total check failed: unit {k} of {len(cells)} totals "
            f"{int(sums[k])}, but every one of the {contributors} contributors adds exactly one record "
            f"to each unit ({bad.size} units fail): a contributor's input is not one-hot; the sum is refused"
        )
