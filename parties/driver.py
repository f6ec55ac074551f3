"""The actor driver: runs a step program with the controller actor and the party actors.

:func:`run_actors` answers each step of a program (:mod:`mprr.protocols.steps`) over the
network:

- :class:`~mprr.protocols.steps.Release`: :meth:`Controller.release` broadcasts one
  :class:`~parties.wire.requests.ReleaseRequest` (the units, their
  :class:`~mprr.protocols.steps.MatrixSpec`) and gathers one reply per party; a party that
  already released the same unit with the same matrix replays it (the step's ``replays``
  say which units the program expects to be replays);
- :class:`~mprr.protocols.steps.Report`: :meth:`Controller.report` broadcasts one
  :class:`~parties.wire.requests.ReportRequest` (units, oracle family and ε, assignment,
  weights, abstention, exclusions); each party draws, perturbs and books as the fast path
  does and replies an :class:`~parties.wire.messages.OracleReport`; the phase's data is built
  by :func:`mprr.protocols.oracle_reports.reported_data`;
- :class:`~mprr.protocols.steps.SecureSum`: :meth:`Controller.secure_release` — the parties
  commit, then a secure-sum engine of :mod:`parties.secure` adds their one-hot vectors and
  the controller learns only the tallies (its wall-clock seconds, commitments included, in
  ``result.timings["secure_sum"]``).

Every step is first checked against the program's plan (:meth:`mprr.protocols.plan.Plan.check`,
the plan the run was set up for): a step the plan does not declare stops the run with a
:class:`~mprr.errors.ProtocolError` before anything is sent.  What comes back goes to the
program as :class:`~mprr.protocols.steps.Released` over the parties that answered; the values the program derived (``notes`` of a step) and its final
estimate are noted in the controller's view.  The same program run by
:func:`mprr.protocols.local.run_local` gives the same result for the same seed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from mprr.errors import ConfigurationError
from mprr.protocols.plan import Plan
from mprr.protocols.result import ProtocolResult
from mprr.protocols.steps import Arguments, Program, Release, Released, Report, Step, call_program
from parties.controller import Controller
from parties.secure.engine import SecureSumEngine

__all__ = ["run_actors"]


async def run_actors(
    program: Callable[..., Program],
    ctl: Controller,
    params: Arguments | None = None,
    /,
    *,
    plan: Plan,
    engine: SecureSumEngine | None = None,
    **keywords: Any,
) -> ProtocolResult:
    """Run ``program`` with the controller ``ctl`` and its parties: ``program(ctl.schema, params)``
    with its parameter object, or ``program(ctl.schema, **keywords)``
    (:func:`mprr.protocols.steps.call_program`).

    Parameters
    ----------
    program
        A step-program function (e.g. :func:`mprr.protocols.clusters.rr_clusters_steps`).
    ctl
        The controller, connected to the parties.
    params
        The program's parameter object (e.g. :class:`mprr.protocols.parameters.RRClustersParameters`,
        validated when it was built), or a mapping of keywords.
    plan
        The program's plan with these parameters (:func:`mprr.protocols.plan.plan_of`), which the
        run was set up for; every step is checked against it.
    engine
        The configured secure-sum engine of the :class:`~mprr.protocols.steps.SecureSum`
        steps; required when the plan needs one.
    keywords
        The parameters of a program that takes keywords.

    Raises
    ------
    ConfigurationError
        The plan needs an engine and none was given, or the program's parameter errors.
    ProtocolError
        The program yielded a step its plan does not declare.
    RoundTimeout, ReleaseRefused, PartyDropped
        As the controller's rounds (:mod:`parties.controller`).
    """
    if plan.needs.engine and engine is None:
        raise ConfigurationError(f"the plan has secure sums {[p.phase for p in plan.secure_sums]}: give engine, "
                                 "a configured secure-sum engine (parties.secure.registry.make_engine), got None")
    steps = call_program(program, ctl.schema, params, **keywords)
    sizes = ctl.schema.sizes
    seconds = 0.0  # wall clock spent in secure-sum steps (commitments and the sum)
    try:
        index = 0
        step = next(steps)
        while True:
            plan.check(index, step, sizes)
            index += 1
            started = time.perf_counter()
            reply = await _answer(step, ctl, engine)
            if not isinstance(step, Release):
                seconds += time.perf_counter() - started
            step = steps.send(reply)
    except StopIteration as stop:
        result: ProtocolResult = stop.value
    plan.check_done(index)
    ctl.note("estimate", result.estimate)
    if seconds:
        result.timings["secure_sum"] = seconds
    return result


async def _answer(step: Step, ctl: Controller, engine: SecureSumEngine | None) -> Released:
    schema = ctl.schema
    if isinstance(step, Release):
        for name, value in step.notes.items():
            ctl.note(name, value)
        phase = await ctl.release(step.phase, step.units, step.specs)
        return Released(phase.released_data(schema, replayed=step.replayed), len(phase.contributors))
    if isinstance(step, Report):
        for name, value in step.notes.items():
            ctl.note(name, value)
        reported = await ctl.report(step)
        return Released(reported.reported_data(schema), len(reported.contributors))
    assert engine is not None  # the plan declared this secure sum (checked), so the run has its engine
    tally = await ctl.secure_release(step.phase, step.units, engine=engine, specs=step.specs)
    details = {"secure_sum": {"engine": tally.engine, "session": tally.session,
                              "contributors": len(tally.contributors)}}
    return Released(tally.released_data(schema), len(tally.contributors), details)
