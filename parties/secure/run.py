"""The stand-alone driver of a secure sum: :func:`run_secure_sum` runs an engine's controller and
every party as tasks of one TaskGroup over one network (e.g. an
:class:`~parties.router.Router`) and returns a :class:`SecureSumResult`.

Usage::

    net = Router(n, topology=nx.complete_graph(n))       # paper needs a full mesh
    result = asyncio.run(run_secure_sum(PaperEngine(), net, vectors, timeout=60))
    result.total          # exact column sums of ``vectors`` (int64)
    result.statistics     # measured messages / bytes / rounds
    result.cost           # the counted traffic of a fault-free run (the closed form)
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TYPE_CHECKING

import numpy as np

from mprr.errors import ConfigurationError, ProtocolError, RoundTimeout
from parties.collector import rare_full_collections
from parties.topology import CONTROLLER
from parties.traffic import TrafficStatistics
from parties.transport import Transport
from parties.secure.context import SecureSumContext
from parties.secure.cost import TrafficCost
from parties.secure.messages import TO_CONTROLLER
from parties.secure.pki import setup_pki
from parties.secure.values import as_ring_vector

if TYPE_CHECKING:
    from parties.secure.engine import SecureSumEngine, SumOutcome

__all__ = ["SecureSumResult", "run_secure_sum"]


@dataclass(frozen=True)
class SecureSumResult:
    """Outcome of :func:`run_secure_sum`.

    Attributes
    ----------
    total
        Exact sum (int64) of the vectors of the ``contributors``.
    contributors
        Parties whose vector is in ``total`` (all of them, except masked-engine dropouts).
    dropped
        Parties whose vector is not in ``total``.
    statistics
        Snapshot of the network's measured traffic after the run (cumulative per network).
    engine, context
        The engine and the session's context; :attr:`cost` is the traffic of a fault-free run
        of this engine on this context.
    failures
        Errors raised inside party coroutines (e.g. a crashed party's PartyDropped).
    elapsed
        Wall-clock seconds.
    """

    total: np.ndarray
    contributors: tuple[int, ...]
    dropped: tuple[int, ...]
    statistics: TrafficStatistics
    engine: SecureSumEngine = field(repr=False)
    context: SecureSumContext = field(repr=False)
    failures: Mapping[int, ProtocolError] = field(default_factory=dict)
    elapsed: float = 0.0

    @cached_property
    def cost(self) -> TrafficCost:
        """Traffic of a fault-free run of this engine on this context (``engine.cost``,
        counted when first asked for)."""
        return self.engine.cost(self.context)


async def run_secure_sum(
    engine: SecureSumEngine,
    network: Transport,
    vectors: np.ndarray | Mapping[int, np.ndarray],
    *,
    timeout: float | None = None,
    session: str | None = None,
) -> SecureSumResult:
    """Run ``engine`` with one task per party plus the controller, in one TaskGroup.

    Parameters
    ----------
    engine
        A configured engine.
    network
        The transport (e.g. :class:`~parties.router.Router`); its topology must
        suit the engine.  Party ``i`` uses ``network.endpoint(i)``.
    vectors
        (n, L) integer array (row i = party i) or ``{party_id: vector}``.
    timeout
        Overall wall-clock limit in seconds (None: only the engine's round timeouts).
    session
        Session id (default: random).

    Raises
    ------
    ConfigurationError
        Bad inputs (n < 2, ragged vectors, entries outside [0, max_value], topology).
    ProtocolError
        The controller could not obtain the exact sum (PartyDropped, RoundTimeout,
        SecureSumAborted, MessageError) — raised as is, not wrapped in an ExceptionGroup.
    """
    if isinstance(vectors, Mapping):
        inputs = {int(k): np.asarray(v) for k, v in vectors.items()}
    else:
        arr = np.asarray(vectors)
        if arr.ndim != 2:
            raise ConfigurationError(f"vectors must be a 2-D (n, L) array, got shape {arr.shape}")
        inputs = {i: arr[i] for i in range(arr.shape[0])}
    if not inputs:
        raise ConfigurationError("a secure sum needs at least 2 parties (n >= 2), got n = 0")
    lengths = {np.asarray(v).shape for v in inputs.values()}
    if len(lengths) != 1 or len(next(iter(lengths))) != 1:
        raise ConfigurationError(f"every vector must be 1-D with the same length, got shapes {sorted(lengths)}")
    (length,) = next(iter(lengths))
    # set-up: engines that sign get a fresh PKI for the roster (parties.secure.pki)
    signers, registry = setup_pki(inputs, signing=engine.pki_signing) if engine.signs else ({}, None)
    ctx = engine.context(tuple(inputs), length, network=network, session=session, registry=registry)
    ring = ctx.ring
    for pid, vec in inputs.items():
        try:
            as_ring_vector(vec, ctx, ring)
        except ConfigurationError as exc:
            raise ConfigurationError(f"party {pid}: {exc}") from None

    failures: dict[int, ProtocolError] = {}
    tasks: dict[int, asyncio.Task[np.ndarray | None]] = {}
    controller_error: list[ProtocolError] = []

    async def guarded_party(pid: int) -> np.ndarray | None:
        try:
            return await engine.party(network.endpoint(pid), inputs[pid], ctx, signer=signers.get(pid))
        except ProtocolError as exc:  # e.g. the party crashed, or a peer did and it timed out
            failures[pid] = exc
            return None

    async def guarded_controller() -> SumOutcome | None:
        try:
            accept = TO_CONTROLLER + getattr(engine, "controller_kinds", ())  # a user engine's own kinds
            return await engine.controller(network.endpoint(CONTROLLER, accept=accept), ctx)
        except ProtocolError as exc:  # the run is over: stop the parties still waiting
            controller_error.append(exc)
            for task in tasks.values():
                task.cancel()
            return None

    start = time.perf_counter()
    ctrl: asyncio.Task[SumOutcome | None] | None = None
    try:
        with rare_full_collections():  # the shares in flight stay buffered: don't walk them again and again
            async with asyncio.timeout(timeout), asyncio.TaskGroup() as tg:
                ctrl = tg.create_task(guarded_controller())  # first: it marks the rounds
                for pid in ctx.parties:
                    tasks[pid] = tg.create_task(guarded_party(pid))
    except TimeoutError:
        raise RoundTimeout(
            f"secure sum ({engine.name}) did not finish within timeout={timeout} s",
            phase=engine.name, timeout=timeout,
        ) from None
    except BaseExceptionGroup as group:
        if len(group.exceptions) == 1:
            raise group.exceptions[0]
        raise
    finally:
        close = getattr(network, "close", None)
        if close is not None and (controller_error or ctrl is None or not ctrl.done()):
            close()
    if controller_error:
        raise controller_error[0]
    outcome = ctrl.result() if ctrl is not None else None
    if outcome is None:  # pragma: no cover - guarded_controller returns None only on error
        raise ProtocolError(f"secure sum ({engine.name}): the controller returned no result")
    total, contributors = outcome
    party_totals = {pid: value for pid, t in tasks.items() if (value := t.result()) is not None}
    for pid, value in party_totals.items():
        if not np.array_equal(value, total):
            raise ProtocolError(
                f"party {pid} computed a total different from the controller's: inconsistent run"
            )
    contributing = set(contributors)
    dropped = tuple(p for p in ctx.parties if p not in contributing)
    return SecureSumResult(
        total=total,
        contributors=tuple(contributors),
        dropped=dropped,
        statistics=network.statistics(),
        engine=engine,
        context=ctx,
        failures=MappingProxyType(dict(failures)),
        elapsed=time.perf_counter() - start,
    )
