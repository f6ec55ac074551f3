"""The secure-sum engines by name: one registry for the actor driver, the scenarios and the benchmarks.

``make_engine("masked-sparse", degree=6, round_timeout=5.0)``.  Names:

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

import functools
from collections.abc import Callable, Mapping
from typing import Any

from mprr.errors import ConfigurationError
from parties.secure.engine import SecureSumEngine
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine

__all__ = ["ENGINES", "engine_needs_mesh", "make_engine", "sized_engine"]

ENGINES: Mapping[str, Callable[..., SecureSumEngine]] = {
    "paper": PaperEngine,
    "paper-per-combination": functools.partial(PaperEngine, batched=False),
    "graph": GraphEngine,
    "graph-direct": functools.partial(GraphEngine, relay=False),
    "masked": MaskedEngine,
    "masked-sparse": functools.partial(MaskedEngine, topology="regular", degree=8),
}
"""Secure-sum engine constructors by name (module docstring)."""


def make_engine(name: str | SecureSumEngine, **options: Any) -> SecureSumEngine:
    """The engine called ``name`` built with keyword ``options`` (an engine is returned as is).

    Raises
    ------
    ConfigurationError
        Unknown engine name, or an option the engine does not take.
    """
    if isinstance(name, SecureSumEngine):
        return name
    if not isinstance(name, str) or name not in ENGINES:
        raise ConfigurationError(
            f"secure-sum engine must be one of {list(ENGINES)} or a SecureSumEngine, got {name!r}"
        )
    try:
        return ENGINES[name](**options)
    except TypeError as exc:
        raise ConfigurationError(f"bad option for secure-sum engine {name!r}: {exc}") from None


def engine_needs_mesh(engine: str | SecureSumEngine) -> bool:
    """Whether ``engine`` sends shares over direct party links (paper, graph-direct): its
    network needs a full mesh."""
    return (engine in ("paper", "paper-per-combination", "graph-direct") or getattr(engine, "name", None) == "paper"
            or getattr(engine, "relay", None) is False)


def sized_engine(
    name: str, *, degree: int, round_timeout: float, threshold: int | None = None, seed: int | None = None
) -> SecureSumEngine:
    """The engine ``name`` as the scenarios and benchmarks configure it: the sparse engines
    (``graph``, ``graph-direct``, ``masked-sparse``) on a ``degree``-regular graph, the masked
    ones with ``threshold`` (``None``: the engine's default), every one with ``round_timeout``.
    """
    options: dict[str, Any] = {"round_timeout": round_timeout}
    if name in ("graph", "graph-direct", "masked-sparse"):
        options.update(topology="regular", degree=degree)
    if name == "graph":
        options["relay"] = True
    if name in ("masked", "masked-sparse") and threshold is not None:
        options["threshold"] = threshold
    if seed is not None and name not in ("paper", "paper-per-combination"):
        options["seed"] = seed
    return make_engine(name, **options)
