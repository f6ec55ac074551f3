"""Plugins: modules an operator loads so that their protocols, engines and families can run here.

A plugin registers at import what it defines (a protocol, a matrix family, a secure-sum engine
and its message kinds: :mod:`mprr.protocols.registry`, :mod:`mprr.matrix_families`,
:mod:`parties.secure.registry`).  Loading one through :func:`load_plugins` also makes it
*trusted* in this process: the frame channel's restricted unpickler (:mod:`parties.channel`)
rebuilds classes of a loaded plugin module, as it does those of ``mprr`` and ``parties``, so a
run's set-up may name a user's engine.  The trust is the operator's decision, never the
controller's: a worker only rebuilds classes of the modules it was started with (``mprr party
--plugin MODULE``), and a set-up naming any other module is refused.  A runtime that starts its
own workers (:class:`~parties.tcp.TcpRuntime`) hands them the plugins of its own process
(:func:`loaded_plugins`) and the module of the run's engine.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from mprr.errors import ConfigurationError

__all__ = ["load_plugins", "loaded_plugins", "trusted"]

_LOADED: dict[str, None] = {}  # ordered set of the modules loaded in this process


def load_plugins(modules: Sequence[str], *, option: str = "--plugin") -> None:
    """Import every module of ``modules``, each of which registers what it defines at import,
    and trust it for the frame channel (module docstring).

    Parameters
    ----------
    modules
        Dotted module names, importable here (on ``PYTHONPATH`` or installed).
    option
        How the user gave them, for the error messages.

    Raises
    ------
    ConfigurationError
        If a name is not a dotted module name, or a module (or a package above it) does not
        exist, naming it; an error raised inside the module, a missing import of its own
        included, propagates.
    """
    for module in modules:
        if not isinstance(module, str) or not module or not all(p.isidentifier() for p in module.split(".")):
            raise ConfigurationError(f"{option} must be a dotted module name (e.g. my_package.protocols), "
                                     f"got {module!r}")
        try:
            importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name and (module == exc.name or module.startswith(exc.name + ".")):
                raise ConfigurationError(f"{option} {module}: no module named {exc.name!r} "
                                         "(is it on PYTHONPATH, or installed?)") from None
            raise
        _LOADED[module] = None


def loaded_plugins() -> tuple[str, ...]:
    """The modules :func:`load_plugins` loaded in this process, in the order first loaded."""
    return tuple(_LOADED)


def trusted(module: str) -> bool:
    """Whether classes of ``module`` may be rebuilt from a control record: a loaded plugin."""
    return module in _LOADED
