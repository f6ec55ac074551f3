"""The local driver: runs a step program for every party at once, vectorized (the fast path).

:func:`run_local` answers each step of a program (:mod:`mprr.protocols.steps`) for the n
records of a :class:`~mprr.data.Dataset`:

- :class:`~mprr.protocols.steps.Release`: every party draws one uniform per fresh unit from
  its stream (draw-order contract of :mod:`mprr.streams`) and randomizes the unit's joint
  value through the unit's matrix; a replayed unit resends the earlier phase's codes;
- :class:`~mprr.protocols.steps.SecureSum`: the tallies a secure sum would reveal, computed
  centrally — exact tables (4.2) or tallies of values randomized through the unit matrices
  (4.3, unlinkable);
- :class:`~mprr.protocols.steps.Report`: every party perturbs its unit(s) through the units'
  frequency oracles (:func:`mprr.protocols.oracle_reports.report_units`).

Matrices are built from the steps' :class:`~mprr.protocols.steps.MatrixSpec` with the same
constructors the parties use, so the actor driver (:func:`parties.driver.run_actors`) gives
the same result for the same seed.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Generator
from typing import Any, Protocol, TypeVar

import numpy as np

from mprr.data import Dataset
from mprr.domain import MAX_TABLE_CELLS
from mprr.protocols.release import ReleasedData, check_inputs, exact_tables, release_units
from mprr.protocols.oracle_reports import report_uniforms, report_units, reporters
from mprr.protocols.steps import Release, Released, Report, Step
from mprr.streams import Randomness, draw_uniforms

__all__ = ["LocalProtocol", "local_protocol", "run_local"]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


def run_local(
    program: Callable[..., Generator[Step, Released, R]], dataset: Dataset, *, rng: Randomness, **params: Any
) -> R:
    """Run ``program(dataset.schema, **params)`` on every record of ``dataset``.

    Parameters
    ----------
    program
        A step-program function (e.g. :func:`mprr.protocols.independent.rr_independent_steps`).
    dataset
        The parties' true records (party i holds row i).
    rng
        ``numpy.random.Generator`` or :class:`mprr.streams.PartyStreams` (one stream per record).
    params
        The program's parameters.

    Raises
    ------
    ConfigurationError
        For an invalid data set or randomness source (checked first), or the program's own
        parameter errors.
    """
    check_inputs(dataset, rng)
    steps = program(dataset.schema, **params)
    done: dict[str, ReleasedData] = {}
    try:
        step = next(steps)
        while True:
            data = _answer(step, dataset, rng, done)
            done[step.phase] = data
            step = steps.send(Released(data, dataset.n))
    except StopIteration as stop:
        result: R = stop.value
        return result


def _answer(step: Step, dataset: Dataset, rng: Randomness, done: dict[str, ReleasedData]) -> ReleasedData:
    sizes = dataset.sizes
    codes = dataset.codes
    if isinstance(step, Report):
        excluded = None
        if step.exclude:
            excluded = np.zeros(dataset.n, dtype=bool)
            for phase in step.exclude:
                excluded |= reporters(done[phase])
        return report_units(step, codes, sizes, draw_uniforms(rng, dataset.n, report_uniforms(step, sizes)),
                            excluded, overwrite_uniforms=True)
    if isinstance(step, Release):
        replays = step.replays if step.replays is not None else (None,) * len(step.units)
        mats = tuple(
            s.build([sizes[a] for a in u]) if r is None else done[r[0]].matrices[r[1]]
            for s, u, r in zip(step.specs, step.units, replays)
        )
        previous = None
        if step.replays is not None:
            previous = [None if r is None else done[r[0]].codes[:, r[1]] for r in step.replays]  # type: ignore[index]
        fresh = len(step.units) if previous is None else sum(p is None for p in previous)
        uniforms = draw_uniforms(rng, dataset.n, fresh)
        return release_units(step.phase, codes, sizes, step.units, mats, uniforms, previous=previous,
                             overwrite_uniforms=True)
    if step.specs is None:
        return exact_tables(step.phase, codes, sizes, step.units, max_cells=MAX_TABLE_CELLS)
    mats = tuple(s.build([sizes[a] for a in u]) for s, u in zip(step.specs, step.units))
    uniforms = draw_uniforms(rng, dataset.n, len(step.units))
    return release_units(step.phase, codes, sizes, step.units, mats, uniforms, linkable=False, overwrite_uniforms=True)


class LocalProtocol(Protocol[R_co]):
    """A protocol run on every record of a data set: ``f(dataset, *, rng, **params)``."""

    __name__: str

    def __call__(self, dataset: Dataset, /, *args: Any, rng: Randomness, **params: Any) -> R_co: ...


def local_protocol(program: Callable[..., Generator[Step, Released, R]], name: str) -> LocalProtocol[R]:
    """The fast-path function ``name(dataset, *, rng, **params)`` of a step program.

    It runs ``run_local(program, dataset, rng=rng, **params)``; its signature is the program's,
    with ``dataset`` for ``schema`` and the keyword-only ``rng`` (parameters the program takes
    positionally after ``schema`` may be passed positionally), and its docstring points to the
    program's, so each protocol's parameters are written once, on its step program.
    """
    signature = inspect.signature(program)
    positional = [p.name for p in list(signature.parameters.values())[1:]
                  if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]

    def run(dataset: Dataset, /, *args: Any, rng: Randomness, **params: Any) -> R:
        if len(args) > len(positional):
            raise TypeError(f"{name}() takes {1 + len(positional)} positional arguments but {1 + len(args)} were given")
        return run_local(program, dataset, rng=rng, **dict(zip(positional, args)), **params)

    summary = (program.__doc__ or "").strip().splitlines()  # a program without a docstring: its name
    head = summary[0].split(" as a step program")[0] if summary else f"The step program ``{program.__name__}``"
    parameters = list(signature.parameters.values())
    returns = str(signature.return_annotation)  # "Program" or "Generator[Step, Released, X]"
    returns = "ProtocolResult" if returns == "Program" else returns.rsplit(",", 1)[-1].strip(" ]")
    setattr(run, "__signature__", signature.replace(  # read by inspect, help() and Sphinx
        parameters=[
            inspect.Parameter("dataset", inspect.Parameter.POSITIONAL_ONLY, annotation="Dataset"),
            *parameters[1:],
            inspect.Parameter("rng", inspect.Parameter.KEYWORD_ONLY, annotation="Randomness"),
        ],
        return_annotation=returns,
    ))
    run.__name__ = run.__qualname__ = name
    run.__module__ = program.__module__
    run.__doc__ = (
        f"{head}, run on every record of ``dataset``.\n\n"
        f"``{name}(dataset, *, rng, **params)`` is ``run_local({program.__name__}, dataset, rng=rng, "
        f"**params)`` (:func:`mprr.protocols.local.run_local`): ``dataset`` holds the parties' true "
        f"records (party i holds row i), ``rng`` is a ``numpy.random.Generator`` or a "
        f":class:`mprr.streams.PartyStreams` (one stream per record).  Parameters, result and draw "
        f"order: :func:`{program.__module__}.{program.__name__}`.\n"
    )
    return run
