"""The secure-sum engine interface: :class:`SecureSumEngine`, and what its controller returns.

An engine is a *choreography*: one sans-I/O program per party and one for the controller
(:meth:`SecureSumEngine.party_program`, :meth:`SecureSumEngine.controller_program`;
:mod:`parties.secure.program`), talking only through the operations they yield.  The actor
runtime runs them from its own actors over their :class:`~parties.transport.Endpoint`
(:meth:`SecureSumEngine.party` / :meth:`SecureSumEngine.controller`, which drive the programs,
:func:`parties.secure.drive.drive`); :func:`parties.secure.run.run_secure_sum` is the
stand-alone driver; :meth:`SecureSumEngine.cost` runs them all through the counting driver
(:func:`counted_cost`).

Every engine returns the exact sum or raises a :class:`mprr.errors.ProtocolError` subclass
(``PartyDropped``, ``RoundTimeout``, ``SecureSumAborted``, ``MessageError``) — never a wrong
count.
"""

from __future__ import annotations

import secrets
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np

from mprr.domain import check_int, check_real
from mprr.errors import ConfigurationError
from parties.topology import CONTROLLER
from parties.traffic import Counts
from parties.transport import Endpoint, Transport
from parties.wire.codec import Message
from parties.secure.context import SecureSumContext
from parties.secure.cost import COUNT_LIMIT, TrafficCost
from parties.secure.counting import count
from parties.secure.drive import drive
from parties.secure.pki import Signer, setup_pki
from parties.secure.program import Program
from parties.secure.sizing import SizeByShape
from parties.secure.suite import SIZING, CryptoSuite

__all__ = ["SecureSumEngine", "SumOutcome", "counted_cost"]


class SumOutcome(NamedTuple):
    """What :meth:`SecureSumEngine.controller` returns: the exact int64 ``total`` of the
    ``contributors``' vectors (every party, except masked-engine dropouts)."""

    total: np.ndarray
    contributors: tuple[int, ...]


class SecureSumEngine(ABC):
    """Interface of a secure-sum engine (``paper``, ``graph``, ``masked``).

    Parameters
    ----------
    round_timeout
        Seconds each participant waits for one round's messages (wall clock) before it
        declares the missing actors dropped.
    max_value
        Bound on the entries of every input vector (1 for 0/1 indicator vectors); fixes the
        modulus so that the exact sum is recovered.
    """

    name: str = ""
    topology: str = "complete"
    """The graph its parties exchange over (:mod:`parties.secure.topology`): ``"complete"``, every
    party with every other, or a sparse graph's (the graph and masked engines' ``topology``)."""
    signs: bool = False
    """True when the engine's parties sign with PKI keys (:mod:`parties.secure.pki`) and so take
    ``signer=`` in :meth:`party`."""
    pki_signing: bool = True
    """With :attr:`signs`: whether the parties' PKI keys include an Ed25519 signing key (False:
    the X25519 static keys only, for an engine whose parties sign nothing: ``masked``)."""

    def __init__(self, *, round_timeout: float = 30.0, max_value: int = 1) -> None:
        self.round_timeout = check_real("round_timeout", round_timeout, strict=True, allow_inf=True)  # seconds
        check_int("max_value", max_value, 1)
        self.max_value = max_value

    def __repr__(self) -> str:
        return f"{type(self).__name__}(round_timeout={self.round_timeout}, max_value={self.max_value})"

    # ---------------------------------------------------------------- session setup
    def context(
        self,
        parties: Sequence[int],
        length: int,
        *,
        network: Transport | None = None,
        session: str | None = None,
        registry: Any = None,
    ) -> SecureSumContext:
        """Validate the session parameters and build the shared :class:`SecureSumContext`.

        Every participant builds it for itself from the roster, the vector length, the
        session id and its own engine (a party: from the
        :class:`~parties.wire.requests.SecureSumStart` it received), so all agree.

        Raises
        ------
        ConfigurationError
            Fewer than 2 parties, duplicate ids, bad length, or a network topology the
            engine cannot run on.
        """
        ids = tuple(sorted(int(p) for p in parties))
        if len(ids) < 2:
            raise ConfigurationError(
                f"a secure sum needs at least 2 parties (n >= 2), got n = {len(ids)}: with one "
                "party the sum is its own input"
            )
        if len(set(ids)) != len(ids) or ids[0] < 0:
            raise ConfigurationError(f"party ids must be distinct integers >= 0, got {ids[:10]}")
        check_int("length", length, 1)
        if session is None:
            session = secrets.token_hex(8)
        if not isinstance(session, str) or not session:
            raise ConfigurationError(f"session must be a non-empty string, got {session!r}")
        if network is not None and ids[-1] >= network.n:
            raise ConfigurationError(
                f"party ids must be < network size {network.n}, got {ids[-1]}"
            )
        ctx = self._context(ids, int(length), session, network)
        return ctx if registry is None else replace(ctx, registry=registry)

    @abstractmethod
    def _context(
        self, parties: tuple[int, ...], length: int, session: str, network: Transport | None
    ) -> SecureSumContext:
        """Engine-specific part of :meth:`context` (modulus, topology, threshold)."""

    # ---------------------------------------------------------------- programs
    def party_program(self, me: int, vector: np.ndarray, ctx: SecureSumContext, *,
                      signer: Signer | None = None, min_contributors: int = 2) -> Program[np.ndarray | None]:
        """Party ``me``'s sans-I/O program (:mod:`parties.secure.program`) with its private
        ``vector``; returns the total when the engine lets parties learn it (paper), else None.

        ``signer`` is the party's PKI key, used by the engines that sign (:attr:`signs`).
        ``min_contributors`` is the party's policy (its ``min_roster``): it releases nothing
        that can enter a sum over fewer contributors, as far as it can tell.  On the paper and
        graph engines every roster member's input is needed for the sum (a missing one stops
        it), so the roster check of the party's accountant is that check; the masked engine,
        which sums over the survivors, checks the survivors the party knows of.

        Raises
        ------
        ConfigurationError
            The engine has no program (it overrides :meth:`party` instead).
        """
        raise ConfigurationError(f"the {self.name!r} engine runs as coroutines, not as a program")

    def controller_program(self, ctx: SecureSumContext) -> Program[SumOutcome]:
        """The controller's sans-I/O program; returns the exact int64 total and who contributed.

        Raises
        ------
        ConfigurationError
            The engine has no program (it overrides :meth:`controller` instead).
        """
        raise ConfigurationError(f"the {self.name!r} engine runs as coroutines, not as a program")

    # ---------------------------------------------------------------- choreography
    async def party(self, ep: Endpoint, vector: np.ndarray, ctx: SecureSumContext, *,
                    signer: Signer | None = None, min_contributors: int = 2) -> np.ndarray | None:
        """Run party ``ep.actor``'s side with its private ``vector``: its
        :meth:`party_program` over its endpoint (:func:`~parties.secure.drive.drive`).

        Returns the total when the engine lets parties learn it (paper), else None.
        """
        return await drive(ep, self.party_program(ep.actor, vector, ctx, signer=signer,
                                                  min_contributors=min_contributors))

    async def controller(self, ep: Endpoint, ctx: SecureSumContext) -> SumOutcome:
        """Run the controller's side (:meth:`controller_program` over its endpoint); returns
        the exact int64 total and who contributed."""
        return await drive(ep, self.controller_program(ctx))

    # ---------------------------------------------------------------- cost model
    def symmetric(self, ctx: SecureSumContext) -> bool:
        """Whether every party's program (all-zero inputs) has any other's traffic relabelled,
        a party sending to a peer exactly when the peer sends to it: then one party counts for
        all (:func:`~parties.secure.counting.count`'s ``mirror``).  Default: False."""
        return False

    def counterpart(self, message: Message, party: int, ctx: SecureSumContext) -> Message:
        """Party ``party``'s message to the controller for the representative's ``message`` in a
        mirrored count (same kind and size; default: the message itself, naming no party)."""
        return message

    def least_cost(self, ctx: SecureSumContext) -> TrafficCost | None:
        """A lower bound of :meth:`cost` that runs no program (a few messages sized by the
        codec), or None where the engine states none (default).  A caller that only asks whether
        the cost crosses a threshold (:func:`parties.simulate.simulate_async`'s warning) reads
        it first and counts only when it does not cross; ``exact`` is False unless the bound
        is the cost (each engine's tests check it against the count)."""
        return None

    def most_cost(self, ctx: SecureSumContext) -> TrafficCost | None:
        """An upper bound of :meth:`cost` that runs no program, or None where the engine states
        none (default).  :func:`parties.simulate.simulate_async`'s warning reads it first too:
        a plan whose bounds stay below its threshold is not counted."""
        return None

    def cost(self, ctx: SecureSumContext) -> TrafficCost:
        """Messages / bytes / rounds of a fault-free run: every role's program run by the
        counting driver (:func:`counted_cost`, up to :data:`COUNT_LIMIT` messages)."""
        return counted_cost(self, ctx, limit=COUNT_LIMIT)


def counted_cost(engine: SecureSumEngine, ctx: SecureSumContext, *, limit: int | None = None,
                 threshold: Counts | None = None, suite: CryptoSuite = SIZING, mirror: bool = True) -> TrafficCost:
    """Traffic of a fault-free run of ``engine`` on ``ctx``: the controller's and every party's
    program (:meth:`SecureSumEngine.party_program`, inputs all zero) run by the counting driver
    :func:`~parties.secure.counting.count`, every message sized by the codec (one encoding per
    message shape, :class:`~parties.secure.sizing.SizeByShape`).  No message's size depends on
    the inputs or on the cryptography's outputs, only on their lengths: the programs run with
    the right-sized stand-ins of :data:`~parties.secure.suite.SIZING` (``suite=REAL``: the real
    cryptography, with a fresh PKI where the engine signs).  ``mirror`` (default), where the
    parties are role-symmetric (:meth:`SecureSumEngine.symmetric`) and the suite :data:`SIZING`:
    the controller's and the first party's programs run, the first party's traffic counts for
    all (equal to the full count, ``mirror=False``).  ``limit``: stop after that many messages
    routed (the work); ``threshold``: once the traffic exceeds its messages or bytes.  Then the
    cost is a lower bound (``exact`` False, its formula says "at least")."""
    ctx = replace(ctx, suite=suite)
    signers: dict[int, Signer] = {}
    if engine.signs and not suite.sizing:
        signers, registry = setup_pki(ctx.parties, signing=engine.pki_signing)
        ctx = replace(ctx, registry=registry)
    zero = np.zeros(ctx.length, dtype=np.uint8)
    mirrored = mirror and suite.sizing and engine.symmetric(ctx)  # (real keys: signed by their own party)
    programs: dict[int, Program[Any]] = {CONTROLLER: engine.controller_program(ctx)}
    for p in ctx.parties[:1] if mirrored else ctx.parties:
        programs[p] = engine.party_program(p, zero, ctx, signer=signers.get(p))
    counted = count(programs, size=SizeByShape(), limit=limit, threshold=threshold,
                    mirror=ctx.parties if mirrored else None,
                    counterpart=lambda message, party: engine.counterpart(message, party, ctx))
    stats = counted.statistics
    kinds = ", ".join(f"{c.messages:,} {k} ({c.bytes:,} B)" for k, c in stats.by_kind.items())
    limits = [f"{limit:,} messages routed"] if limit is not None else []
    if threshold is not None:
        limits.append(f"{threshold.messages:,} messages or {threshold.bytes:,} bytes counted")
    bound = "" if counted.complete else f"at least (stopped after {' or '.join(limits)}) "
    return TrafficCost(sent=counted.sent(), rounds=stats.rounds, exact=counted.complete,
                       formula=f"{bound}counted ({engine.name}, n = {ctx.n}, L = {ctx.length}): {kinds}")
