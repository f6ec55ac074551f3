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
from mprr.parameters import Parameters
from mprr.protocols.steps import Arguments, Release, Released, Report, Step, call_program
from mprr.streams import Randomness, draw_uniforms

__all__ = ["LocalProtocol", "local_protocol", "run_local"]

R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)


def run_local(
    program: Callable[..., Generator[Step, Released, R]], dataset: Dataset, params: Arguments | None = None, /, *,
    rng: Randomness, **keywords: Any
) -> R:
    """Run ``program`` on every record of ``dataset``: ``program(dataset.schema, params)`` with its
    parameter object, or ``program(dataset.schema, **keywords)``
    (:func:`~mprr.protocols.steps.call_program`).

    Parameters
    ----------
    program
        A step-program function (e.g. :func:`mprr.protocols.independent.rr_independent_steps`).
    dataset
        The parties' true records (party i holds row i).
    params
        The program's parameter object (e.g. :class:`mprr.protocols.parameters.RRClustersParameters`,
        validated when it was built), or a mapping of keywords.
    rng
        ``numpy.random.Generator`` or :class:`mprr.streams.PartyStreams` (one stream per record).
    keywords
        The parameters of a program that takes keywords.

    Raises
    ------
    ConfigurationError
        For an invalid data set or randomness source (checked first), or the program's own
        parameter errors.
    """
    check_inputs(dataset, rng)
    steps = call_program(program, dataset.schema, params, **keywords)
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


def local_protocol(program: Callable[..., Generator[Step, Released, R]], name: str,
                   parameters: type[Parameters] | None = None, *, positional: tuple[str, ...] = ()
                   ) -> LocalProtocol[R]:
    """The fast-path function ``name(dataset, *, rng, **params)`` of a step program.

    With ``parameters`` (the program takes that parameter object), it builds the object from the
    keywords, which validates them once (:meth:`mprr.parameters.Parameters.from_mapping`), and
    runs ``run_local(program, dataset, params, rng=rng)``; its signature is the object's fields
    (keyword-only, but for those named in ``positional``, which come first and may be passed
    positionally).
    Without, it runs ``run_local(program, dataset, rng=rng, **params)``; its signature is the
    program's (parameters the program takes positionally after ``schema`` may be passed
    positionally).  Either way ``dataset`` comes first and ``rng`` is keyword-only, and the
    docstring points to the program's, so each protocol's parameters are documented once.
    """
    signature = inspect.signature(parameters if parameters is not None else program)
    declared = list(signature.parameters.values())[0 if parameters is not None else 1:]
    if positional:  # fields of the parameter object that may also be passed positionally, first
        first = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for key in positional
                 for p in declared if p.name == key]
        declared = first + [p for p in declared if p.name not in positional]
    taken = [p.name for p in declared if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]

    def run(dataset: Dataset, /, *args: Any, rng: Randomness, **params: Any) -> R:
        if len(args) > len(taken):
            raise TypeError(f"{name}() takes {1 + len(taken)} positional arguments but {1 + len(args)} were given")
        given = {**dict(zip(taken, args)), **params}
        if parameters is not None:
            return run_local(program, dataset, parameters.from_mapping(given), rng=rng)
        return run_local(program, dataset, rng=rng, **given)

    summary = (program.__doc__ or "").strip().splitlines()  # a program without a docstring: its name
    head = summary[0].split(" as a step program")[0] if summary else f"The step program ``{program.__name__}``"
    returns = str(inspect.signature(program).return_annotation)  # "Program" or "Generator[Step, Released, X]"
    returns = "ProtocolResult" if returns == "Program" else returns.rsplit(",", 1)[-1].strip(" ]")
    setattr(run, "__signature__", signature.replace(  # read by inspect, help() and Sphinx
        parameters=[
            inspect.Parameter("dataset", inspect.Parameter.POSITIONAL_ONLY, annotation="Dataset"),
            *declared,
            inspect.Parameter("rng", inspect.Parameter.KEYWORD_ONLY, annotation="Randomness"),
        ],
        return_annotation=returns,
    ))
    run.__name__ = run.__qualname__ = name
    run.__module__ = program.__module__
    how = (f"``run_local({program.__name__}, dataset, {parameters.__name__}(**params), rng=rng)``"
           if parameters is not None else f"``run_local({program.__name__}, dataset, rng=rng, **params)``")
    run.__doc__ = (
        f"{head}, run on every record of ``dataset``.\n\n"
        f"``{name}(dataset, *, rng, **params)`` is {how} (:func:`mprr.protocols.local.run_local`): ``dataset`` "
        f"holds the parties' true records (party i holds row i), ``rng`` is a ``numpy.random.Generator`` or a "
        f":class:`mprr.streams.PartyStreams` (one stream per record).  Parameters, result and draw "
        f"order: :func:`{program.__module__}.{program.__name__}`.\n"
    )
    return run
