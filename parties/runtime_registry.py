"""The runtimes by name: what ``mprr run --runtime NAME`` and ``simulate(..., runtime=NAME)`` choose.

:mod:`parties.runtime` defines a runtime (:class:`~parties.runtime.Runtime`) and the memory one;
:mod:`parties.tcp` and :mod:`parties.ray_runtime` build on it; this module sits above all three,
so none of them imports another's chooser (imports go one way).  Ray itself is imported only when
a :class:`~parties.ray_runtime.RayRuntime` starts (it is an optional extra).
"""

from __future__ import annotations

from typing import Any

from mprr.errors import ConfigurationError
from parties.netsim.model import NetworkModel, model_from_toml
from parties.netsim.profiles import PROFILES
from parties.netsim.runtime import VirtualRuntime
from parties.ray_runtime import RayRuntime
from parties.runtime import Runtime
from parties.tcp import TcpRuntime

__all__ = ["RUNTIMES", "make_runtime"]

RUNTIMES: tuple[str, ...] = ("memory", "tcp", "ray", "virtual")
"""Names of the runtimes."""


def make_runtime(name: str, **options: Any) -> Runtime | None:
    """The runtime called ``name`` with its options (``None`` for ``memory``).

    ``tcp``: ``workers`` (default 2), ``listen`` (``HOST:PORT``), ``spawn`` (default True),
    ``tls`` (default True), ``tls_dir``.  ``ray``: ``address`` (``auto``, ``HOST:PORT`` or
    ``None`` for a local cluster), ``shards``.  ``virtual``: ``model`` (a
    :class:`~parties.netsim.model.NetworkModel`, a shipped profile's name or a TOML path;
    default ``broadband``), ``shards``.
    """
    if name == "memory":
        extra = {k: v for k, v in options.items() if v is not None}
        if extra:
            raise ConfigurationError(f"runtime 'memory' takes no options, got {sorted(extra)}")
        return None
    if name == "tcp":
        return TcpRuntime(**{k: v for k, v in options.items() if v is not None})
    if name == "virtual":
        opts = {k: v for k, v in options.items() if v is not None}
        model = opts.get("model")
        if isinstance(model, str):
            opts["model"] = NetworkModel(PROFILES[model]) if model in PROFILES else model_from_toml(model)
        return VirtualRuntime(**opts)
    if name == "ray":
        return RayRuntime(**{k: v for k, v in options.items() if v is not None})
    raise ConfigurationError(f"runtime must be one of {', '.join(RUNTIMES)}, got {name!r}")
