"""Public, deterministic state shared by the actors of one simulated run — nothing private.

:class:`ReleaseBook`
    Memo of what every party derives from a (public) request: the matrix rebuilt from its
    :class:`~mprr.protocols.steps.MatrixSpec`, the ledger :class:`~mprr.privacy.release.Release`
    record, the CDF rows used for sampling, the secure-sum context a party derives from a
    :class:`~parties.wire.requests.SecureSumStart` and its own engine.  32,561 parties in
    one process would otherwise rebuild the same objects 32,561 times.  Each party still makes
    its own decisions (plan, budget, replay, session binding) and draws from its own stream.
    For a :class:`~parties.wire.requests.ReportRequest` it holds the rebuilt
    :class:`~mprr.protocols.steps.Report` step, its frequency oracles and the ledger entries
    of a reporting party (:class:`ReportResolution`).
    The book holds only deterministic functions of what a party received and of its set-up;
    the controller has no handle on it (in a multi-process runtime each process has its own).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from mprr.data import Schema
from mprr.domain import encode_joint
from mprr.errors import ConfigurationError
from mprr.kronecker import KroneckerMatrix
from mprr.privacy import Ask, RefusalReason, Release
from mprr.oracles import FrequencyOracle
from mprr.protocols.oracle_reports import report_releases, report_uniforms
from mprr.protocols.release import unit_codes
from mprr.randomize import inverse_cdf, randomize_joint
from mprr.protocols.steps import Matrix, MatrixSpec, Report
from parties.secure.agreement import agreed_session, request_digest
from parties.wire.requests import ReleaseRequest, ReportRequest, SecureRelease, SecureSumStart

__all__ = ["ReleaseBook", "ReportResolution", "Resolution", "ResolvedUnit"]

class ResolvedUnit:
    """A unit of a request with everything public precomputed: names, matrix, Release.

    ``matrix`` is ``None`` for an exact release (main paper 4.2: the true value, ε = ∞).
    Sampling has one home, :mod:`mprr.randomize` (the fast path's functions): :meth:`sample`
    releases the unit for many parties at once (a shard's cohort, :mod:`parties.cohort`) or
    for one (a row of one record).
    """

    __slots__ = ("unit", "names", "sizes", "cells", "matrix", "release", "_schema_sizes", "_strides")

    def __init__(
        self,
        unit: tuple[int, ...],
        schema: Schema,
        matrix: Matrix | None,
        phase: str,
        *,
        linkable: bool = True,
    ) -> None:
        self.unit = unit
        self.names = tuple(schema.names[a] for a in unit)
        self.sizes = tuple(schema.sizes[a] for a in unit)
        self.cells = math.prod(self.sizes)
        self._schema_sizes = schema.sizes
        self._strides = tuple(math.prod(self.sizes[k + 1:]) for k in range(len(unit)))  # C order
        self.matrix = matrix
        if matrix is None:
            self.release = Release.exact_values(self.names, linkable=linkable, phase=phase)
        else:
            self.release = Release.from_matrix(self.names, matrix, linkable=linkable, phase=phase)

    @property
    def exact(self) -> bool:
        """True for an exact release (no randomization, no uniform)."""
        return self.matrix is None

    def values(self, records: np.ndarray) -> np.ndarray:
        """The true joint codes (C order) of the unit for each row of ``records`` (``(k, m)``
        true codes): :func:`mprr.protocols.release.unit_codes`."""
        return unit_codes(records, self._schema_sizes, self.unit)

    def value_of(self, record: Sequence[int]) -> int:
        """The true joint code (C order) of the unit for one record (a party's codes, already
        checked against the schema): :meth:`values` for a single row, in plain integers — what
        a party computes per unit when it answers on its own."""
        return sum(record[a] * stride for a, stride in zip(self.unit, self._strides))

    def sample_one(self, record: Sequence[int], uniform: float) -> int:
        """Released joint code of the unit for one record and one uniform: :meth:`sample` for a
        single row.  A dense matrix's inverse CDF is one ``searchsorted`` of the value's CDF row
        (the first ``v`` with ``cdf[x, v] > u``, the rule of :func:`mprr.randomize.inverse_cdf`);
        a Kronecker matrix goes through :meth:`sample`."""
        matrix = self.matrix
        if matrix is None or isinstance(matrix, KroneckerMatrix):
            return int(self.sample(np.array([record], dtype=np.int64), np.array([uniform]))[0])
        return int(np.searchsorted(matrix.cdf[self.value_of(record)], uniform, side="right"))

    def sample(self, records: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
        """Released joint codes (C order) of the unit for each row of ``records``, one uniform each.

        The fast path's sampling (:func:`mprr.protocols.release.release_units`): a dense matrix
        releases the joint code by inverse CDF (:func:`mprr.randomize.inverse_cdf`, eq. (1) of
        the main paper); a Kronecker matrix factor by factor
        (:func:`mprr.randomize.randomize_joint`), then the C-order code.
        """
        matrix = self.matrix
        if matrix is None:
            raise ConfigurationError(f"unit {self.unit} is an exact release: it has no matrix to sample")
        if isinstance(matrix, KroneckerMatrix):
            rec = randomize_joint(records[:, list(self.unit)], matrix, self.sizes, uniforms=uniforms)
            out: np.ndarray = encode_joint(rec, self.sizes) if len(self.unit) > 1 else rec[:, 0]
            return out
        return inverse_cdf(matrix.cdf, self.values(records), uniforms)


@dataclass(frozen=True)
class Resolution:
    """A request resolved against a schema: the :class:`~mprr.privacy.Ask` its parties put to
    their accountants and its units, or (``units`` is ``None``) why it cannot be evaluated."""

    ask: Ask
    units: tuple[ResolvedUnit, ...] | None
    reason: RefusalReason | None = None
    message: str = ""


@dataclass(frozen=True)
class ReportResolution:
    """A :class:`~parties.wire.requests.ReportRequest` resolved against a schema.

    ``ask`` holds the ledger entries a reporting party books
    (:func:`mprr.protocols.oracle_reports.report_releases`: one per unit for ``"every"``, one
    for a sampled assignment); ``step`` the rebuilt :class:`~mprr.protocols.steps.Report`,
    ``oracles`` its frequency oracles over the units' domains and ``uniforms`` the uniforms a
    party draws for it — or (``step`` is ``None``) why the request cannot be evaluated.
    """

    ask: Ask
    step: Report | None
    oracles: tuple[FrequencyOracle, ...] = ()
    uniforms: int = 0
    reason: RefusalReason | None = None
    message: str = ""


class ReleaseBook:
    """Memo of the public objects derived from requests, shared by the parties of one run.

    Everything cached is a deterministic function of the (public) request and schema —
    matrices, ledger ``Release`` records, CDF rows — never of a party's record or stream.

    Parameters
    ----------
    schema
        The schema every party of the run holds.
    """

    def __init__(self, schema: Schema) -> None:
        self.schema = schema
        self.names = schema.names
        self.sizes = schema.sizes
        self._matrices: dict[tuple[MatrixSpec, tuple[int, ...]], Matrix] = {}
        self._units: dict[tuple[Any, ...], ResolvedUnit] = {}
        self._contexts: dict[tuple[Any, ...], Any] = {}
        self._last: tuple[object, Resolution] | None = None
        self._reports: dict[tuple[Any, ...], tuple[Report, tuple[FrequencyOracle, ...], int, tuple[Release, ...]]] = {}
        self._last_report: tuple[object, ReportResolution] | None = None
        self._last_digest: tuple[object, bytes] | None = None

    def matrix(self, spec: MatrixSpec, sizes: tuple[int, ...]) -> Matrix:
        """The matrix of ``spec`` over a unit with ``sizes`` (built once)."""
        key = (spec, sizes)
        mat = self._matrices.get(key)
        if mat is None:
            mat = self._matrices[key] = spec.build(sizes)
        return mat

    def resolve(self, request: ReleaseRequest | SecureRelease) -> Resolution:
        """Resolve ``request`` (memoized on the request object: a broadcast decodes once)."""
        last = self._last
        if last is not None and last[0] is request:
            return last[1]
        resolution = self._resolve(request)
        self._last = (request, resolution)
        return resolution

    def _resolve(self, request: ReleaseRequest | SecureRelease) -> Resolution:
        m = len(self.names)
        secure = isinstance(request, SecureRelease)
        exact = isinstance(request, SecureRelease) and request.exact
        invalid = Ask((), request.phase, request.request_id, request.units)
        for what, groups in (("plan", request.plan), ("units", request.units)):
            for group in groups:
                unknown = [a for a in group if a >= m]
                if unknown:
                    return Resolution(
                        invalid,
                        None,
                        RefusalReason.PLAN_VIOLATION,
                        f"request {request.request_id} ({request.phase}) names attributes {unknown} "
                        f"in its {what}; the party holds attributes 0..{m - 1} only",
                    )
        specs: tuple[MatrixSpec | None, ...] = (None,) * len(request.units) if exact else request.specs
        units = []
        for unit, spec in zip(request.units, specs):
            key = (request.phase, unit, spec, not secure)
            resolved = self._units.get(key)
            if resolved is None:
                sizes = tuple(self.sizes[a] for a in unit)
                try:
                    matrix = None if spec is None else self.matrix(spec, sizes)
                except ConfigurationError as exc:
                    return Resolution(
                        invalid,
                        None,
                        RefusalReason.INVALID_REQUEST,
                        f"request {request.request_id} ({request.phase}): matrix of unit {unit} "
                        f"({spec.family}) is invalid: {exc}",  # type: ignore[union-attr]
                    )
                resolved = self._units[key] = ResolvedUnit(
                    unit, self.schema, matrix, request.phase, linkable=not secure
                )
            units.append(resolved)
        ask = Ask(
            tuple(u.release for u in units),
            request.phase,
            request.request_id,
            request.units,
            plan=tuple(tuple(self.names[a] for a in g) for g in request.plan),
            session=request.session if isinstance(request, SecureRelease) else None,
            exact=exact,
        )
        return Resolution(ask, tuple(units))


    def resolve_report(self, request: ReportRequest) -> ReportResolution:
        """Resolve a report request (memoized on the request object, and its public derivations
        on its content: the parties of a run share one step, its oracles and ledger entries)."""
        last = self._last_report
        if last is not None and last[0] is request:
            return last[1]
        resolution = self._resolve_report(request)
        self._last_report = (request, resolution)
        return resolution

    def _resolve_report(self, request: ReportRequest) -> ReportResolution:
        m = len(self.names)
        rid, phase = request.request_id, request.phase
        invalid = Ask((), phase, rid, request.units)
        unknown = sorted({a for unit in request.units for a in unit if a >= m})
        if unknown:
            return ReportResolution(invalid, None, reason=RefusalReason.PLAN_VIOLATION, message=(
                f"request {rid} ({phase}) names attributes {unknown} in its units; the party holds "
                f"attributes 0..{m - 1} only"))
        key = (phase, request.units, request.families, request.epsilons, request.assign, request.weights,
               request.abstain, request.exclude)
        known = self._reports.get(key)
        if known is None:
            try:
                step = request.step
                oracles = tuple(o.build([self.sizes[a] for a in u]) for o, u in zip(step.oracles, step.units))
            except ConfigurationError as exc:
                return ReportResolution(invalid, None, reason=RefusalReason.INVALID_REQUEST,
                                        message=f"request {rid} ({phase}): invalid report step: {exc}")
            releases = report_releases(phase, step.assign, step.units, oracles, self.names)
            known = self._reports[key] = (step, oracles, report_uniforms(step, self.sizes), releases)
        step, oracles, uniforms, releases = known
        groups = step.units if step.assign == "every" else (tuple(sorted({a for u in step.units for a in u})),)
        return ReportResolution(Ask(releases, phase, rid, groups), step, oracles, uniforms)

    def digest(self, request: SecureRelease) -> bytes:
        """:func:`~parties.secure.agreement.request_digest` of ``request`` (memoized on the request
        object: a broadcast decodes once)."""
        last = self._last_digest
        if last is not None and last[0] is request:
            return last[1]
        digest = request_digest(request)
        self._last_digest = (request, digest)
        return digest

    def secure_context(self, engine: Any, start: SecureSumStart, length: int, registry: Any = None,
                       network: Any = None, *, digest: bytes) -> Any:
        """The :class:`~parties.secure.context.SecureSumContext` a party derives from ``start``.

        A deterministic function of the party's own engine (set-up), the roster of the
        :class:`~parties.wire.requests.SecureSumStart` it received, the agreed session id of
        the start and the request the party committed to (``digest``,
        :func:`~parties.secure.agreement.agreed_session`), the length of its committed input,
        the PKI directory (set-up) and the party's network (which links it has: direct or
        relayed shares), memoized so that n parties build it once.  Nothing here comes from an
        object the controller holds.

        Raises
        ------
        ConfigurationError
            A roster the engine cannot run (e.g. ids beyond the network): the party refuses it.
        """
        key = (id(engine), start.session, start.request_id, start.engine, start.roster, digest, length,
               id(registry), id(network))
        ctx = self._contexts.get(key)
        if ctx is None:
            ctx = self._contexts[key] = engine.context(start.parties, length, session=agreed_session(digest, start),
                                                       registry=registry, network=network)
        return ctx
