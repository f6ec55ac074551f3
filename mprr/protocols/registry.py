"""Protocols by name: :data:`PROTOCOLS`, a :class:`mprr.registry.Registry` of :class:`ProtocolEntry`.

Canonical names are the :attr:`ProtocolResult.protocol` names; lookup ignores case, spaces and
underscores, and accepts a few aliases (``"independent"``, ``"clusters"``, ``"lambda"``,
``"rr-adjustment"`` with ``base=``...).  Any driver runs the program of an entry:
:func:`mprr.protocols.local.run_local` or :func:`parties.driver.run_actors`.

A protocol of one's own is registered with :func:`register_protocol` (the same call registers
the shipped ones); ``parties.simulate.simulate`` and the command line (``mprr simulate NAME``,
with ``--plugin MODULE`` for a module of one's own) then run it by name.  An entry with a
:class:`~mprr.parameters.Parameters` class validates its parameters once, by building that
object (:mod:`mprr.protocols.parameters`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mprr.data import Schema
from mprr.errors import ConfigurationError
from mprr.parameters import Parameters
from mprr.protocols.adjustment import rr_adjustment_steps
from mprr.protocols.clusters import rr_clusters_steps
from mprr.protocols.ind_joint import rr_ind_joint_steps
from mprr.protocols.independent import rr_independent_steps
from mprr.protocols.joint import rr_joint_steps
from mprr.protocols.lambda_protocol import lambda_steps
from mprr.protocols.marginal_release import calm_steps
from mprr.protocols.multidim import rsfd_steps, smp_steps, spl_steps
from mprr.protocols.parameters import (AdjustmentOptions, CALMParameters, LambdaParameters, OracleParameters,
                                       RRClustersAdjustmentParameters, RRClustersParameters,
                                       RRIndependentAdjustmentParameters,
                                       RRIndependentParameters, RRIndJointParameters, RRJointParameters,
                                       RSFDParameters, SampledClustersParameters)
from mprr.protocols.plan import Plan, plan_of
from mprr.protocols.sampled_clusters import rr_clusters_sampled_steps
from mprr.protocols.steps import Arguments, Program
from mprr.registry import Registry

__all__ = ["PROTOCOLS", "ProtocolEntry", "custom_entry", "lookup", "register_protocol"]


@dataclass(frozen=True)
class ProtocolEntry:
    """A protocol by name.

    Attributes
    ----------
    name
        Canonical name (the ``protocol`` of its :class:`ProtocolResult`).
    program
        The step program (:mod:`mprr.protocols.steps`): ``program(schema, params)`` with the
        entry's parameter object (:attr:`takes_parameters`), else ``program(schema, **params)``.
    fixed
        Parameters the name implies (e.g. ``base="RR-Clusters"`` for RR-Clusters+Adjustment).
    aliases
        Other accepted names.
    parameters
        The protocol's :class:`~mprr.parameters.Parameters` class, or ``None``: its parameters
        are then checked against the program's signature only.
    """

    name: str
    program: Callable[..., Program]
    fixed: Mapping[str, Any]
    aliases: tuple[str, ...] = ()
    parameters: type[Parameters] | None = None

    @property
    def takes_parameters(self) -> bool:
        """Whether the program takes the entry's parameter object, ``program(schema, params)``
        (else keywords, ``program(schema, **params)``: a program of one's own may take keywords and
        still have its parameters checked by a :class:`~mprr.parameters.Parameters` class)."""
        if self.parameters is None:
            return False
        after = list(inspect.signature(self.program).parameters.values())[1:]
        return len(after) == 1 and after[0].kind in (inspect.Parameter.POSITIONAL_ONLY,
                                                     inspect.Parameter.POSITIONAL_OR_KEYWORD)

    def bind(self, params: Mapping[str, Any] | Parameters, driver: tuple[str, ...] = ()) -> Arguments:
        """Check ``params`` against the protocol's parameters; returns what its program is started
        with (:func:`mprr.protocols.steps.call_program`).

        ``params`` is a mapping, or the entry's own :class:`~mprr.parameters.Parameters` object
        (validated when it was built).  An entry whose program takes its parameter object
        (:attr:`takes_parameters`) returns that object, built here from a mapping: the one
        validation of the values; the driver keeps its own options apart.  Any other entry returns
        the full keyword set; ``driver`` names parameters the driver takes itself (e.g.
        ``("engine",)``), returned as given (the driver checks them against the program's
        :meth:`plan`).

        Raises
        ------
        ConfigurationError
            On an unknown or missing parameter, naming the allowed ones, or a bad value (from
            the entry's parameter object).
        """
        if isinstance(params, Parameters):
            # a class naming no protocol (AdjustmentOptions, the generic RR-Adjustment's) stands for its subclasses
            if self.parameters is None or not isinstance(params, self.parameters) or (
                    type(params) is not self.parameters and self.parameters.protocol):
                expected = self.parameters.__name__ if self.parameters else "a mapping of parameters"
                raise ConfigurationError(
                    f"protocol {self.name!r} takes {expected}, got {type(params).__name__}"
                )
            return params if self.takes_parameters else {**self.fixed, **params.as_kwargs()}
        clash = sorted(set(params) & set(self.fixed))
        if clash:
            raise ConfigurationError(f"{self.name} fixes {clash}; do not pass them")
        if self.parameters is not None:
            extra = set() if self.takes_parameters else set(driver)
            own = self.parameters.from_mapping({k: v for k, v in params.items() if k not in extra},
                                               protocol=self.name)
            if self.takes_parameters:
                return own
            return {**self.fixed, **own.as_kwargs(), **{k: v for k, v in params.items() if k in extra}}
        kwargs = {**self.fixed, **params}
        named = _named(self.program)
        declared = inspect.signature(self.program).parameters
        open_ended = any(p.kind is p.VAR_KEYWORD for p in declared.values())
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

    def plan(self, schema: Schema, params: Arguments) -> Plan:
        """The program's plan (:func:`mprr.protocols.plan.plan_of`) with ``params``: what
        :meth:`bind` returned, or the entry's parameter object, or (an entry whose program takes
        its parameter object) the mapping it is built from."""
        if isinstance(params, Parameters) or self.takes_parameters:
            params = self.bind(params)
        return plan_of(self.program, schema, params)


def _named(program: Callable[..., Any], skip: int = 1) -> list[inspect.Parameter]:
    """The parameters a program is called with by name (after the schema: ``skip``)."""
    return [p for p in list(inspect.signature(program).parameters.values())[skip:]
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


PROTOCOLS: Registry[ProtocolEntry] = Registry("protocol")
"""Every protocol, by canonical name (:func:`register_protocol` adds one)."""


def register_protocol(
    program: Callable[..., Program] | ProtocolEntry,
    *,
    name: str | None = None,
    aliases: Sequence[str] = (),
    parameters: type[Parameters] | None = None,
    fixed: Mapping[str, Any] | None = None,
    replace: bool = False,
) -> ProtocolEntry:
    """Register a step program (or a ready :class:`ProtocolEntry`) under ``name``.

    Parameters
    ----------
    program
        ``program(schema, **params)``, a step program (:mod:`mprr.protocols.steps`), or an entry.
    name
        Canonical name (default: the function's name without ``_steps``).
    aliases
        Other accepted names.
    parameters
        Its :class:`~mprr.parameters.Parameters` class, if it has one.
    fixed
        Parameters the name implies.
    replace
        Replace an entry registered under the same name.

    Returns
    -------
    ProtocolEntry
        The registered entry; :func:`lookup` finds it by name, and ``parties.simulate.simulate``
        and ``mprr run`` run it by name.

    Raises
    ------
    ConfigurationError
        If ``program`` is not callable, or the name is taken (and not ``replace``).
    """
    if isinstance(program, ProtocolEntry):
        return PROTOCOLS.register(program, replace=replace)
    if not callable(program):
        raise ConfigurationError(f"program must be a step-program function, got {type(program).__name__}")
    if parameters is not None and not (isinstance(parameters, type) and issubclass(parameters, Parameters)):
        raise ConfigurationError(f"parameters must be a mprr.parameters.Parameters class, got {parameters!r}")
    entry = ProtocolEntry(name or getattr(program, "__name__", "").removesuffix("_steps"), program,
                          dict(fixed or {}), tuple(aliases), parameters)
    return PROTOCOLS.register(entry, replace=replace)


def _shipped(name: str, program: Callable[..., Program], fixed: Mapping[str, Any], aliases: tuple[str, ...],
             **options: Any) -> None:
    short = name.removeprefix("RR-")
    register_protocol(program, name=name, fixed=fixed, aliases=aliases + ((short,) if short != name else ()),
                      **options)


_shipped("RR-Independent", rr_independent_steps, {}, ("independent", "protocol-1"),
         parameters=RRIndependentParameters)
_shipped("RR-Joint", rr_joint_steps, {}, ("joint", "protocol-2"), parameters=RRJointParameters)
_shipped("RR-Clusters", rr_clusters_steps, {}, ("clusters",), parameters=RRClustersParameters)
_shipped("RR-Independent+Adjustment", rr_adjustment_steps, {"base": "RR-Independent"}, ("independent+adjustment",),
         parameters=RRIndependentAdjustmentParameters)
_shipped("RR-Clusters+Adjustment", rr_adjustment_steps, {"base": "RR-Clusters"}, ("clusters+adjustment",),
         parameters=RRClustersAdjustmentParameters)
_shipped("RR-Adjustment", rr_adjustment_steps, {}, ("adjustment",), parameters=AdjustmentOptions)
_shipped("RR-Ind-Joint", rr_ind_joint_steps, {}, ("ind-joint",), parameters=RRIndJointParameters)
_shipped("lambda-randomization", lambda_steps, {}, ("lambda", "λ-randomization"), parameters=LambdaParameters)
_shipped("SPL", spl_steps, {}, ("split",), parameters=OracleParameters)
_shipped("SMP", smp_steps, {}, ("sample",), parameters=OracleParameters)
_shipped("RS+FD", rsfd_steps, {}, ("rsfd", "rs-fd"), parameters=RSFDParameters)
_shipped("CALM-style", calm_steps, {}, ("calm",), parameters=CALMParameters)
_shipped("RR-Clusters-Sampled", rr_clusters_sampled_steps, {}, ("clusters-sampled",),
         parameters=SampledClustersParameters)


def lookup(name: str) -> ProtocolEntry:
    """The :class:`ProtocolEntry` of ``name`` (canonical name or alias).

    Raises
    ------
    ConfigurationError
        If the name is unknown (the message lists the canonical names).
    """
    return PROTOCOLS.lookup(name)


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
