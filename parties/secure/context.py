"""What every participant of one secure sum agrees on: :class:`SecureSumContext`.

Each builds it for itself (:meth:`parties.secure.engine.SecureSumEngine.context`) from the
roster, the vector length, the session id and its own engine, so all agree.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from parties.secure.crypto import ParsedKeys
from parties.secure.ring import ZMod
from parties.secure.suite import REAL, CryptoSuite
from parties.secure.topology import Neighbourhoods

__all__ = ["SecureSumContext"]


@dataclass(frozen=True)
class SecureSumContext:
    """Everything about one secure-sum session that all participants agree on (public).

    Build it with :meth:`SecureSumEngine.context`; do not construct it by hand.

    Attributes
    ----------
    session
        Unique session id (bound into every message and AEAD associated data).
    parties
        Sorted ids of the participating parties (n >= 2).
    length
        Length L of every party's vector.
    max_value
        Upper bound on every entry of a party's vector (1 for indicator vectors).
    modulus
        M of the ring Z_M the engine computes in (n * max_value < M, so sums are exact).
    neighbours
        Communication graph (party -> sorted neighbours).
    relay
        True when shares travel through the controller (no direct party-to-party links in
        the network topology), AEAD-encrypted end to end.
    threshold
        Shamir threshold t of the masked engine (0 for the other engines).
    registry
        The PKI directory of the parties' signing keys (:class:`~parties.secure.pki.KeyRegistry`),
        set up before the run; ``None`` where the engine signs nothing.
    suite
        The cryptography the programs call (:mod:`parties.secure.suite`): :data:`REAL` in every
        run; :data:`SIZING` only where :func:`counted_cost` counts the traffic.
    """

    session: str
    parties: tuple[int, ...]
    length: int
    max_value: int
    modulus: int
    neighbours: Neighbourhoods
    relay: bool = False
    threshold: int = 0
    registry: Any = field(default=None, compare=False, repr=False)
    suite: CryptoSuite = field(default=REAL, compare=False, repr=False)

    @property
    def n(self) -> int:
        """Number of parties."""
        return len(self.parties)

    @cached_property
    def ring(self) -> ZMod:
        """The ring Z_M (built once per context)."""
        return ZMod(self.modulus)

    @cached_property
    def public_keys(self) -> ParsedKeys:
        """The session's public keys parsed in this process (:class:`~parties.secure.crypto.ParsedKeys`):
        a memo that each participant builds for itself, not part of what they agree on; it lives
        as long as the context (on a party host, the run: its :class:`~parties.public_state.ReleaseBook`
        keeps its sessions' contexts), about 0.4 KB per key."""
        return ParsedKeys()
