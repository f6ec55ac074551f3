"""The secure-sum engines by name: :data:`ENGINES`, a :class:`mprr.registry.Registry` of :class:`EngineEntry`.

One registry for the actor driver, the scenarios and the benchmarks, and the one public way in
for an engine of one's own (:func:`register_engine`)::

    make_engine("masked-sparse", degree=6, round_timeout=5.0)
    register_engine(EngineEntry("my-engine", MyEngine))

An entry carries everything the rest of the code knows of an engine, so that nothing else
matches engine names: its message kinds (what a party's and the controller's endpoints
accept), what its network needs, how it meets a dropout (the fault scenario's predictions and
crash points), how its closed-form traffic is counted (:attr:`EngineEntry.per_cell`), and how
the figures draw it (:attr:`EngineEntry.colour`, :attr:`EngineEntry.line`).

The shipped engines:

``paper``
    main paper 4.2: additive shares over a full mesh (:mod:`parties.secure.paper`)
``paper-per-combination``
    the paper engine with one sum per value combination (``batched=False``: the paper's
    message count, for cost measurements)
``graph``
    sparse additive shares on a k-regular graph, relayed by the controller
``graph-direct``
    the same, shares over direct party links (needs a full mesh)
``masked``
    Bonawitz et al. 2017 pairwise masks with dropout recovery, full graph
``masked-sparse``
    the masked engine on a k-regular graph (k = ``degree``, default 8)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

from mprr.errors import ConfigurationError
from mprr.registry import Registry
from parties.secure import messages as secure
from parties.secure.engine import SecureSumEngine
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine
from parties.wire.codec import Message

__all__ = [
    "DROPOUTS", "ENGINES", "EngineEntry", "MESH", "controller_kinds", "engine_kinds", "engine_needs_mesh", "make_engine",
    "party_kinds", "register_engine", "sized_engine",
]

MESH = "mesh"
"""A need of an engine: direct links between every two parties (a full-mesh network)."""

DROPOUTS: tuple[str, ...] = ("stall", "threshold")
"""How an engine meets a party that drops out: ``"stall"`` (every roster member's input is
needed: the sum stops with a clear error, P(success) = (1 − ρ)^n) or ``"threshold"`` (the exact
sum of the survivors while at least max(t, 2) remain, Bonawitz et al. 2017)."""


@dataclass(frozen=True)
class EngineEntry:
    """A secure-sum engine by name: how to build it, what it may be configured with, what it needs.

    Attributes
    ----------
    name
        Canonical name (:func:`make_engine`'s argument, a scenario's ``secure_sum``).
    factory
        The engine class (or any callable taking keyword options) that builds it.
    options
        Options the name implies (``batched=False`` for ``paper-per-combination``).
    parameters
        The options a sized set-up varies (:func:`sized_engine`): ``degree`` (of a regular
        graph), ``threshold``, ``seed``.  Any keyword option of ``factory`` may be given to
        :meth:`build` (:attr:`configurable`).
    sized
        Options the sized set-up adds (``relay=True`` for ``graph``: the controller relays the
        shares even on a network with direct links).
    needs
        What the network must offer: :data:`MESH` for direct party links.
    aliases
        Other accepted names.
    messages
        The message kinds its actors exchange (:mod:`parties.wire.codec` classes): a party's
        endpoint accepts them during a run with a secure sum (:func:`party_kinds`).
    to_controller
        Those of :attr:`messages` a party sends the controller: the controller's endpoint
        accepts them (:func:`controller_kinds`).  Default: the factory's ``controller_kinds``
        class attribute, which :func:`~parties.secure.run.run_secure_sum` reads too (an
        engine of one's own declares its kinds there; the shipped engines' are
        :data:`parties.secure.messages.TO_CONTROLLER`).
    dropouts
        How it meets a dropout (:data:`DROPOUTS`).
    family
        The engine whose settings it shares where a setting is kept per family (the fault
        scenario's ``crash_send``; ``masked-sparse``: ``masked``); default: its own name.
    crash_send
        The send at which a dropping party crashes in the middle of the protocol, in the fault
        scenario (``None``: the scenario does not sweep it).
    input_send
        The send that first carries a party's input (a party crashing at or before it cannot
        be a contributor).
    per_cell
        One run per cell of the vector, each the traffic of a one-cell sum
        (``paper-per-combination``): its closed form is the one-cell count times L.
    colour, line
        How the figures draw it: a matplotlib colour (``"C0"``) and a line format (``"-o"``).
    """

    name: str
    factory: Callable[..., SecureSumEngine]
    options: Mapping[str, Any] = field(default_factory=dict)
    parameters: tuple[str, ...] = ()
    needs: frozenset[str] = frozenset()
    aliases: tuple[str, ...] = ()
    sized: Mapping[str, Any] = field(default_factory=dict)
    messages: tuple[type[Message], ...] = ()
    to_controller: tuple[type[Message], ...] = ()
    dropouts: str = "stall"
    family: str = ""
    crash_send: int | None = None
    input_send: int = 1
    per_cell: bool = False
    colour: str | None = None
    line: str = "-o"

    def __post_init__(self) -> None:
        if not callable(self.factory):
            raise ConfigurationError(f"factory of engine {self.name!r} must be callable, got {self.factory!r}")
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        object.__setattr__(self, "needs", frozenset(self.needs))
        object.__setattr__(self, "sized", MappingProxyType(dict(self.sized)))
        kinds = tuple(self.messages)
        if not all(isinstance(k, type) and issubclass(k, Message) and k.KIND for k in kinds):
            raise ConfigurationError(f"messages of engine {self.name!r} must be registered Message classes, "
                                     f"got {kinds!r}")
        object.__setattr__(self, "messages", kinds)
        upward = tuple(self.to_controller) or tuple(getattr(self.factory, "controller_kinds", ()))
        if not set(upward) <= set(kinds):
            raise ConfigurationError(f"to_controller of engine {self.name!r} must be among its messages "
                                     f"{[k.__name__ for k in kinds]}, got {[getattr(k, '__name__', k) for k in upward]}")
        object.__setattr__(self, "to_controller", upward)
        if self.dropouts not in DROPOUTS:
            raise ConfigurationError(f"dropouts of engine {self.name!r} must be one of {list(DROPOUTS)}, "
                                     f"got {self.dropouts!r}")
        if self.crash_send is not None and (not isinstance(self.crash_send, int) or self.crash_send < 1):
            raise ConfigurationError(f"crash_send of engine {self.name!r} must be an int >= 1 or None, "
                                     f"got {self.crash_send!r}")
        if not isinstance(self.input_send, int) or self.input_send < 1:
            raise ConfigurationError(f"input_send of engine {self.name!r} must be an int >= 1, got {self.input_send!r}")
        object.__setattr__(self, "family", self.family or self.name)

    @property
    def tolerates_dropouts(self) -> bool:
        """Whether a dropout still leaves a sum (of the survivors): :attr:`dropouts` ``"threshold"``."""
        return self.dropouts == "threshold"

    @property
    def configurable(self) -> tuple[str, ...]:
        """The keyword options ``factory`` takes (read from its signature)."""
        try:
            declared = inspect.signature(self.factory).parameters.values()
        except (TypeError, ValueError):  # pragma: no cover - a builtin without a signature
            return ()
        return tuple(p.name for p in declared if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD))

    def validate(self, options: Mapping[str, Any]) -> None:
        """Refuse an option the engine does not take, naming the configurable ones."""
        unknown = sorted(set(options) - set(self.configurable))
        if unknown:
            raise ConfigurationError(
                f"bad option for secure-sum engine {self.name!r}: it takes no {unknown}; "
                f"configurable: {list(self.configurable)}"
            )

    def build(self, **options: Any) -> SecureSumEngine:
        """The engine with ``options`` (ConfigurationError for an option it does not take or a bad value)."""
        self.validate(options)
        try:
            engine = self.factory(**{**self.options, **options})
        except TypeError as exc:
            raise ConfigurationError(f"bad option for secure-sum engine {self.name!r}: {exc}") from None
        if not isinstance(engine, SecureSumEngine):
            raise ConfigurationError(
                f"engine {self.name!r} built a {type(engine).__name__}, not a SecureSumEngine"
            )
        return engine


ENGINES: Registry[EngineEntry] = Registry("secure-sum engine")
"""Secure-sum engines by name (module docstring)."""


def register_engine(entry: EngineEntry, *, replace: bool = False) -> EngineEntry:
    """Register ``entry`` in :data:`ENGINES`; the actor driver, ``simulate(..., engine=NAME)`` and a
    scenario's ``secure_sum`` then build it by name (ConfigurationError if the name is taken)."""
    if not isinstance(entry, EngineEntry):
        raise ConfigurationError(f"entry must be an EngineEntry, got {entry!r}")
    return ENGINES.register(entry, replace=replace)


def party_kinds() -> tuple[type[Message], ...]:
    """Every registered engine's message kinds, in registration order (a party's endpoint
    accepts them during a run with a secure sum)."""
    return tuple(dict.fromkeys(k for name in ENGINES for k in ENGINES.lookup(name).messages))


def engine_kinds(engine: str | SecureSumEngine) -> tuple[type[Message], ...]:
    """The message kinds of ``engine`` (a registered name, or an engine object whose name is a
    registered entry's): what a party's endpoint accepts in a run of that engine, no other
    engine's.  An engine object of no registered entry, or an entry that declares no
    ``messages`` (one that speaks a shipped engine's kinds): every registered engine's kinds
    (:func:`party_kinds`)."""
    name = engine if isinstance(engine, str) else getattr(engine, "name", "")
    if isinstance(engine, str) or ENGINES.accepts(name):
        return ENGINES.lookup(name).messages or party_kinds()
    return party_kinds()


def controller_kinds() -> tuple[type[Message], ...]:
    """Every registered engine's party -> controller kinds (the controller's endpoint accepts them)."""
    return tuple(dict.fromkeys(k for name in ENGINES for k in ENGINES.lookup(name).to_controller))


_ADDITIVE = (secure.ShareVector, secure.PartialSum)
_RELAYED = (*_ADDITIVE, secure.PublicKeys, secure.KeyDirectory, secure.SealedShares, secure.RelayedShares)
_MASKED = (secure.PublicKeys, secure.KeyDirectory, secure.SealedShares, secure.RelayedShares, secure.MaskedInput,
           secure.UnmaskRequest, secure.UnmaskShares, secure.SurvivorSet, secure.SurvivorTags)
_UP = frozenset(secure.TO_CONTROLLER)

for _entry in (
    EngineEntry("paper", PaperEngine, {}, (), frozenset({MESH}), messages=_ADDITIVE, colour="C0", line="-o",
                crash_send=2),
    EngineEntry("paper-per-combination", PaperEngine, {"batched": False}, (), frozenset({MESH}), messages=_ADDITIVE,
                family="paper", per_cell=True, colour="C5"),
    EngineEntry("graph", GraphEngine, {}, ("degree", "seed"), sized={"relay": True}, messages=_RELAYED,
                colour="C1", line="--x", crash_send=2),
    EngineEntry("graph-direct", GraphEngine, {"relay": False}, ("degree", "seed"), frozenset({MESH}),
                messages=_RELAYED, family="graph", colour="C4", line=":+"),
    EngineEntry("masked", MaskedEngine, {}, ("threshold", "seed"), messages=_MASKED, dropouts="threshold",
                crash_send=3, input_send=3, colour="C2", line="-s"),
    EngineEntry("masked-sparse", MaskedEngine, {"topology": "regular", "degree": 8}, ("degree", "threshold", "seed"),
                messages=_MASKED, dropouts="threshold", family="masked", crash_send=3, input_send=3, colour="C3",
                line="--^"),
):
    ENGINES.register(replace(_entry, to_controller=tuple(k for k in _entry.messages if k in _UP)))


def make_engine(name: str | SecureSumEngine, **options: Any) -> SecureSumEngine:
    """The engine called ``name`` built with keyword ``options`` (an engine is returned as is).

    Raises
    ------
    ConfigurationError
        Unknown engine name, or an option the engine does not take.
    """
    if isinstance(name, SecureSumEngine):
        return name
    if not ENGINES.accepts(name):
        raise ConfigurationError(
            f"secure-sum engine must be one of {list(ENGINES)} or a SecureSumEngine, got {name!r}"
        )
    return ENGINES.lookup(name).build(**options)


def engine_needs_mesh(engine: str | SecureSumEngine) -> bool:
    """Whether ``engine`` sends shares over direct party links (its network needs a full mesh):
    a registered name whose entry needs :data:`MESH`, or an engine object whose name is such an
    entry's, or that never relays (a graph engine with ``relay=False``)."""
    if isinstance(engine, str):
        return MESH in ENGINES.lookup(engine).needs
    name = getattr(engine, "name", "")
    return bool((ENGINES.accepts(name) and MESH in ENGINES.lookup(name).needs)
                or getattr(engine, "relay", None) is False)


def sized_engine(
    name: str, *, degree: int, round_timeout: float, threshold: int | None = None, seed: int | None = None
) -> SecureSumEngine:
    """The engine ``name`` as the scenarios and benchmarks configure it: on a ``degree``-regular
    graph where the degree is configurable and not implied (graph, graph-direct, masked-sparse), with
    ``threshold`` where configurable (``None``: the engine's default), ``seed`` where configurable,
    every one with ``round_timeout``.
    """
    entry = ENGINES.lookup(name)
    options: dict[str, Any] = {"round_timeout": round_timeout, **entry.sized}
    if "degree" in entry.parameters:
        options.update(topology="regular", degree=degree)
    if "threshold" in entry.parameters and threshold is not None:
        options["threshold"] = threshold
    if "seed" in entry.parameters and seed is not None:
        options["seed"] = seed
    return entry.build(**options)
