"""Engine registry: build a secure-sum engine from its name and options (for configs / CLI).

``make_engine("masked", topology="regular", degree=8)`` — the names are those of issue 5 and
DESIGN.md: ``paper`` (main paper 4.2), ``graph`` (sparse additive shares), ``masked``
(Bonawitz et al. 2017).
"""

from __future__ import annotations

from typing import Any

from mprr.errors import ConfigurationError
from parties.secure.engine import SecureSumEngine
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine

__all__ = ["ENGINES", "make_engine"]

ENGINES: dict[str, type[SecureSumEngine]] = {
    "paper": PaperEngine,
    "graph": GraphEngine,
    "masked": MaskedEngine,
}


def make_engine(name: str, **options: Any) -> SecureSumEngine:
    """Instantiate the engine called ``name`` with keyword ``options``.

    Raises
    ------
    ConfigurationError
        Unknown engine name, or an option the engine does not take.
    """
    try:
        cls = ENGINES[name]
    except KeyError:
        raise ConfigurationError(
            f"secure-sum engine must be one of {sorted(ENGINES)}, got {name!r}"
        ) from None
    try:
        return cls(**options)
    except TypeError as exc:
        raise ConfigurationError(f"bad option for secure-sum engine {name!r}: {exc}") from None
