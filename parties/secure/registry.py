"""The secure-sum engines by name: :data:`ENGINES`, a :class:`mprr.registry.Registry` of :class:`EngineEntry`.

One registry for the actor driver, the scenarios and the benchmarks, and the one public way in
for an engine of one's own (:func:`register_engine`)::

    make_engine("masked-sparse", degree=6, round_timeout=5.0)
    register_engine(EngineEntry("my-engine", MyEngine))

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
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from mprr.errors import ConfigurationError
from mprr.registry import Registry
from parties.secure.engine import SecureSumEngine
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine

__all__ = ["ENGINES", "EngineEntry", "MESH", "engine_needs_mesh", "make_engine", "register_engine", "sized_engine"]

MESH = "mesh"
"""A need of an engine: direct links between every two parties (a full-mesh network)."""


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
    """

    name: str
    factory: Callable[..., SecureSumEngine]
    options: Mapping[str, Any] = field(default_factory=dict)
    parameters: tuple[str, ...] = ()
    needs: frozenset[str] = frozenset()
    aliases: tuple[str, ...] = ()
    sized: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not callable(self.factory):
            raise ConfigurationError(f"factory of engine {self.name!r} must be callable, got {self.factory!r}")
        object.__setattr__(self, "options", MappingProxyType(dict(self.options)))
        object.__setattr__(self, "needs", frozenset(self.needs))
        object.__setattr__(self, "sized", MappingProxyType(dict(self.sized)))

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


for _entry in (
    EngineEntry("paper", PaperEngine, {}, (), frozenset({MESH})),
    EngineEntry("paper-per-combination", PaperEngine, {"batched": False}, (), frozenset({MESH})),
    EngineEntry("graph", GraphEngine, {}, ("degree", "seed"), sized={"relay": True}),
    EngineEntry("graph-direct", GraphEngine, {"relay": False}, ("degree", "seed"), frozenset({MESH})),
    EngineEntry("masked", MaskedEngine, {}, ("threshold", "seed")),
    EngineEntry("masked-sparse", MaskedEngine, {"topology": "regular", "degree": 8}, ("degree", "threshold", "seed")),
):
    ENGINES.register(_entry)


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
    a registered name whose entry needs :data:`MESH`, or an engine object of the paper engine or
    of a graph engine that never relays."""
    if isinstance(engine, str):
        return MESH in ENGINES.lookup(engine).needs
    return bool(getattr(engine, "name", None) == "paper" or getattr(engine, "relay", None) is False)


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
