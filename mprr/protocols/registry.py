"""Protocol names and their step programs, with parameter checking.

Canonical names are the :attr:`ProtocolResult.protocol` names; lookup ignores case, spaces and
underscores, and accepts a few aliases (``"independent"``, ``"clusters"``, ``"lambda"``,
``"rr-adjustment"`` with ``base=``...).  Any driver runs the program of an entry:
:func:`mprr.protocols.local.run_local` or :func:`parties.driver.run_actors`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from mprr.data import Schema
from mprr.errors import ConfigurationError
from mprr.protocols.adjustment import ADJUSTABLE, rr_adjustment, rr_adjustment_steps
from mprr.protocols.clusters import rr_clusters_steps
from mprr.protocols.ind_joint import rr_ind_joint_steps
from mprr.protocols.independent import rr_independent_steps
from mprr.protocols.joint import rr_joint_steps
from mprr.protocols.lambda_protocol import lambda_steps
from mprr.protocols.marginal_release import calm_steps
from mprr.protocols.multidim import rsfd_steps, smp_steps, spl_steps
from mprr.protocols.sampled_clusters import rr_clusters_sampled_steps
from mprr.protocols.plan import Plan, plan_of
from mprr.protocols.steps import Program

__all__ = ["PROTOCOLS", "ProtocolEntry", "custom_entry", "lookup"]


@dataclass(frozen=True)
class ProtocolEntry:
    """A protocol by name.

    What a run of the program needs (a secure sum and its engine...) is its plan
    (:meth:`plan`, :mod:`mprr.protocols.plan`), not a property of the name.

    Attributes
    ----------
    name
        Canonical name (the ``protocol`` of its :class:`ProtocolResult`).
    program
        ``program(schema, **params)``: the step program (:mod:`mprr.protocols.steps`).
    fixed
        Parameters the name implies (e.g. ``base="RR-Clusters"`` for RR-Clusters+Adjustment).
    aliases
        Other accepted names.
    """

    name: str
    program: Callable[..., Program]
    fixed: Mapping[str, Any]
    aliases: tuple[str, ...] = ()

    def bind(self, params: Mapping[str, Any], driver: tuple[str, ...] = ()) -> dict[str, Any]:
        """Check ``params`` against the protocol's parameters; returns the full keyword set.

        ``driver`` names parameters the driver takes itself (e.g. ``("engine",)``); they are
        returned as given (the driver checks them against the program's :meth:`plan`).

        Raises
        ------
        ConfigurationError
            On an unknown or missing parameter, naming the allowed ones.
        """
        clash = sorted(set(params) & set(self.fixed))
        if clash:
            raise ConfigurationError(f"{self.name} fixes {clash}; do not pass them")
        kwargs = {**self.fixed, **params}
        named = _named(self.program)
        declared = inspect.signature(self.program).parameters
        open_ended = any(p.kind is p.VAR_KEYWORD for p in declared.values())
        base = kwargs.get("base", declared["base"].default if "base" in declared else None)
        if open_ended and base in ADJUSTABLE:  # RR-Adjustment: the base protocol's and Algorithm 2's
            named += _named(PROTOCOLS[base].program) + list(inspect.signature(rr_adjustment).parameters.values())[1:]
            open_ended = False
        extra = set(driver)
        allowed = sorted({p.name for p in named if p.name not in self.fixed} | extra)
        if not open_ended:
            unknown = sorted(set(kwargs) - {p.name for p in named} - extra)
            if unknown:
                raise ConfigurationError(
                    f"unknown parameter(s) {unknown} for protocol {self.name!r}; allowed: {allowed}"
                )
        missing = sorted(p.name for p in named if p.default is p.empty and p.name not in kwargs)
        if missing:
            raise ConfigurationError(f"protocol {self.name!r} needs parameter(s) {missing}")
        return kwargs


    def plan(self, schema: Schema, params: Mapping[str, Any]) -> Plan:
        """The program's plan with the bound ``params`` (:func:`mprr.protocols.plan.plan_of`)."""
        return plan_of(self.program, schema, **params)


def _named(program: Callable[..., Any]) -> list[inspect.Parameter]:
    """The parameters a program is called with by name (after the schema)."""
    return [p for p in list(inspect.signature(program).parameters.values())[1:]
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


PROTOCOLS: Mapping[str, ProtocolEntry] = {
    c.name: c
    for c in (
        ProtocolEntry("RR-Independent", rr_independent_steps, {}, ("independent", "protocol-1")),
        ProtocolEntry("RR-Joint", rr_joint_steps, {}, ("joint", "protocol-2")),
        ProtocolEntry("RR-Clusters", rr_clusters_steps, {}, ("clusters",)),
        ProtocolEntry("RR-Independent+Adjustment", rr_adjustment_steps, {"base": "RR-Independent"},
                      ("independent+adjustment",)),
        ProtocolEntry("RR-Clusters+Adjustment", rr_adjustment_steps, {"base": "RR-Clusters"},
                      ("clusters+adjustment",)),
        ProtocolEntry("RR-Adjustment", rr_adjustment_steps, {}, ("adjustment",)),
        ProtocolEntry("RR-Ind-Joint", rr_ind_joint_steps, {}, ("ind-joint",)),
        ProtocolEntry("lambda-randomization", lambda_steps, {}, ("lambda", "λ-randomization")),
        ProtocolEntry("SPL", spl_steps, {}, ("split",)),
        ProtocolEntry("SMP", smp_steps, {}, ("sample",)),
        ProtocolEntry("RS+FD", rsfd_steps, {}, ("rsfd", "rs-fd")),
        ProtocolEntry("CALM-style", calm_steps, {}, ("calm",)),
        ProtocolEntry("RR-Clusters-Sampled", rr_clusters_sampled_steps, {}, ("clusters-sampled",)),
    )
}
"""Every protocol, by canonical name."""


def _key(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


_INDEX = {
    _key(alias): c
    for c in PROTOCOLS.values()
    for alias in (c.name, *c.aliases, c.name.removeprefix("RR-"))
}


def lookup(name: str) -> ProtocolEntry:
    """The :class:`ProtocolEntry` of ``name`` (canonical name or alias).

    Raises
    ------
    ConfigurationError
        If the name is unknown (the message lists the canonical names).
    """
    if not isinstance(name, str) or _key(name) not in _INDEX:
        raise ConfigurationError(f"protocol must be one of {list(PROTOCOLS)}, got {name!r}")
    return _INDEX[_key(name)]


def custom_entry(program: Callable[..., Program]) -> ProtocolEntry:
    """The entry of a step-program function of one's own (``program(schema, **params)``).

    Its parameters are checked against its signature like a shipped protocol's; its plan is
    the one it declares (:func:`mprr.protocols.plan.declares`), else a dry run's.

    Raises
    ------
    ConfigurationError
        If ``program`` is not callable.
    """
    if not callable(program):
        raise ConfigurationError(f"protocol must be a name or a step-program function, got {type(program).__name__}")
    name = getattr(program, "__name__", "custom").removesuffix("_steps")
    return ProtocolEntry(name, program, {})
