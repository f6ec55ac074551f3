"""Protocol names understood by :func:`parties.simulate.simulate`, and parameter checking.

Canonical names are the fast path's :attr:`ProtocolResult.protocol` names; lookup ignores case,
spaces and underscores, and accepts a few aliases (``"independent"``, ``"clusters"``, ``"lambda"``,
``"rr-adjustment"`` with ``base=``...).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mprr.errors import ConfigurationError
from mprr.protocols.result import ProtocolResult
from parties.choreographies.basic import lambda_randomization, rr_ind_joint, rr_independent, rr_joint
from parties.choreographies.clusters import rr_adjustment_choreography, rr_clusters
from parties.controller import Controller

__all__ = ["Choreography", "PROTOCOLS", "lookup"]

Runner = Callable[..., Awaitable[ProtocolResult]]


@dataclass(frozen=True)
class Choreography:
    """A protocol of the actor path.

    Attributes
    ----------
    name
        Canonical name (the ``protocol`` of its :class:`ProtocolResult`).
    run
        ``async run(controller, **params) -> ProtocolResult``.
    fixed
        Parameters the name implies (e.g. ``base="RR-Clusters"`` for RR-Clusters+Adjustment).
    aliases
        Other accepted names.
    """

    name: str
    run: Runner
    fixed: Mapping[str, Any]
    aliases: tuple[str, ...] = ()

    def bind(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Check ``params`` against the protocol's parameters; returns the full keyword set.

        Raises
        ------
        ConfigurationError
            On an unknown or missing parameter, naming the allowed ones.
        """
        clash = sorted(set(params) & set(self.fixed))
        if clash:
            raise ConfigurationError(f"{self.name} fixes {clash}; do not pass them")
        kwargs = {**self.fixed, **params}
        signature = inspect.signature(self.run)
        named = [p for p in signature.parameters.values() if p.kind is p.KEYWORD_ONLY]
        open_ended = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
        allowed = sorted(p.name for p in named if p.name not in self.fixed)
        if not open_ended:
            unknown = sorted(set(kwargs) - {p.name for p in named})
            if unknown:
                raise ConfigurationError(
                    f"unknown parameter(s) {unknown} for protocol {self.name!r}; allowed: {allowed}"
                )
        missing = sorted(p.name for p in named if p.default is p.empty and p.name not in kwargs)
        if missing:
            raise ConfigurationError(f"protocol {self.name!r} needs parameter(s) {missing}")
        return kwargs

    async def __call__(self, controller: Controller, params: Mapping[str, Any]) -> ProtocolResult:
        return await self.run(controller, **self.bind(params))


PROTOCOLS: Mapping[str, Choreography] = {
    c.name: c
    for c in (
        Choreography("RR-Independent", rr_independent, {}, ("independent", "protocol-1")),
        Choreography("RR-Joint", rr_joint, {}, ("joint", "protocol-2")),
        Choreography("RR-Clusters", rr_clusters, {}, ("clusters",)),
        Choreography("RR-Independent+Adjustment", rr_adjustment_choreography, {"base": "RR-Independent"},
                     ("independent+adjustment",)),
        Choreography("RR-Clusters+Adjustment", rr_adjustment_choreography, {"base": "RR-Clusters"},
                     ("clusters+adjustment",)),
        Choreography("RR-Adjustment", rr_adjustment_choreography, {}, ("adjustment",)),
        Choreography("RR-Ind-Joint", rr_ind_joint, {}, ("ind-joint",)),
        Choreography("lambda-randomization", lambda_randomization, {}, ("lambda", "λ-randomization")),
    )
}
"""Every protocol of the actor path, by canonical name."""


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


_INDEX = {
    _key(alias): c
    for c in PROTOCOLS.values()
    for alias in (c.name, *c.aliases, c.name.removeprefix("RR-"))
}


def lookup(name: str) -> Choreography:
    """The :class:`Choreography` of ``name`` (canonical name or alias).

    Raises
    ------
    ConfigurationError
        If the name is unknown (the message lists the canonical names).
    """
    if not isinstance(name, str) or _key(name) not in _INDEX:
        raise ConfigurationError(f"protocol must be one of {list(PROTOCOLS)}, got {name!r}")
    return _INDEX[_key(name)]
