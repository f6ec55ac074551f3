"""The runtimes by name: what ``mprr run --runtime NAME`` and ``simulate(..., runtime=NAME)`` choose.

:mod:`parties.runtime` defines a runtime (:class:`~parties.runtime.Runtime`) and the memory one;
:mod:`parties.tcp` and :mod:`parties.ray_runtime` build on it; this module sits above all three,
so none of them imports another's chooser (imports go one way).  Ray itself is imported only when
a :class:`~parties.ray_runtime.RayRuntime` starts (it is an optional extra).
"""

from __future__ import annotations

from typing import Any

from mprr.errors import ConfigurationError
from parties.ray_runtime import RayRuntime
from parties.runtime import Runtime
from parties.tcp import TcpRuntime

__all__ = ["RUNTIMES", "make_runtime"]

RUNTIMES: tuple[str, ...] = ("memory", "tcp", "ray")
"""Names of the runtimes."""


def make_runtime(name: str, **options: Any) -> Runtime | None:
    """The runtime called ``name`` with its options (``None`` for ``memory``).

    ``tcp``: ``workers`` (default 2), ``listen`` (``HOST:PORT``), ``spawn`` (default True),
    ``tls`` (default True), ``tls_dir``.  ``ray``: ``address`` (``auto``, ``HOST:PORT`` or
    ``None`` for a local cluster), ``shards``.
    """
    if name == "memory":
        extra = {k: v for k, v in options.items() if v is not None}
        if extra:
            raise ConfigurationError(f"runtime 'memory' takes no options, got {sorted(extra)}")
        return None
    if name == "tcp":
        return TcpRuntime(**{k: v for k, v in options.items() if v is not None})
    if name == "ray":
        return RayRuntime(**{k: v for k, v in options.items() if v is not None})
    raise ConfigurationError(f"runtime must be one of {', '.join(RUNTIMES)}, got {name!r}")
