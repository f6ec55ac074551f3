"""The common result of every fast-path protocol.

A :class:`ProtocolResult` says what was run (protocol name, parameters, post-processing), what
every party released in each phase (:class:`~mprr.protocols.release.ReleasedData`: released
codes, tallies, matrices), what it cost each party (an :class:`mprr.privacy.ledger.Ledger`; in the fast
path every party runs the same releases, so one ledger describes each of them), and what the
controller estimated (``estimate``: a :class:`mprr.distributions.ProductDistribution` of
cluster distributions, a ``DenseDistribution``, or a ``WeightedSample`` after RR-Adjustment).

``timings`` is an empty dict for the caller to fill: ``mprr`` reads no clock.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from mprr.data import Schema
from mprr.distributions import JointDistribution
from mprr.errors import ConfigurationError
from mprr.privacy import CompositionPolicy, Ledger, Release, as_policy, summarize
from mprr.protocols.release import ReleasedData
from mprr.protocols.fitted_model import FittedModel, fitted_model
from mprr.protocols.uncertainty import DEFAULT_REPLICATES, TableUncertainty, oracle_table_uncertainty, table_uncertainty

if TYPE_CHECKING:
    from mprr.adjustment import Adjustment

__all__ = ["ProtocolResult", "release_result"]


@dataclass(frozen=True, eq=False)
class ProtocolResult:
    """Outcome of one run of a protocol on a data set.

    Attributes
    ----------
    protocol
        Protocol name (``"RR-Independent"``, ``"RR-Joint"``, ``"RR-Clusters"``,
        ``"RR-Independent+Adjustment"``, ``"RR-Clusters+Adjustment"``, ``"RR-Ind-Joint"``,
        ``"lambda-randomization"``, ``"PRAM"``).
    parameters
        The protocol's parameters (JSON-friendly values).
    schema
        Schema of the data set (attribute names, sizes, kinds).
    estimate
        The controller's estimate of the joint distribution.
    releases
        What each phase released, in the order the phases ran (= draw order).
    ledger
        The releases of one party under :mod:`mprr.privacy.ledger`; identical for every party.
    postprocessing
        Post-processing applied to the eq. (2) estimates (``"clip-rescale"``, ...).
    clusters
        Attribute clusters (RR-Joint: one cluster; RR-Independent: singletons), else ``None``.
    clustering_trace
        Merge trace of Algorithm 1 (RR-Clusters), else ``None``.
    dependence
        ``(m, m)`` dependence matrix used by Algorithm 1 (RR-Clusters), else ``None``.
    adjustment
        The :class:`mprr.adjustment.Adjustment` of Algorithm 2 (RR-Adjustment), else ``None``.
    details
        Protocol-specific extras (e.g. the entropy check of λ-randomization, PRAM variance).
    timings
        Empty dict for the caller (wall-clock seconds per step, if it measures them).
    """

    protocol: str
    parameters: Mapping[str, Any]
    schema: Schema
    estimate: JointDistribution
    releases: tuple[ReleasedData, ...]
    ledger: Ledger
    postprocessing: str
    clusters: tuple[tuple[int, ...], ...] | None = None
    clustering_trace: tuple[Any, ...] | None = None
    dependence: np.ndarray | None = None
    adjustment: Adjustment | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    # ------------------------------------------------------------------ releases
    @property
    def n(self) -> int:
        """Number of parties (records)."""
        return int(self.parameters["n"])

    @property
    def phases(self) -> tuple[str, ...]:
        """Names of the release phases, in the order they ran."""
        return tuple(r.phase for r in self.releases)

    def release(self, phase: str) -> ReleasedData:
        """The :class:`ReleasedData` of ``phase``.

        Raises
        ------
        ConfigurationError
            If the protocol has no such phase.
        """
        for r in self.releases:
            if r.phase == phase:
                return r
        raise ConfigurationError(f"phase must be one of {list(self.phases)}, got {phase!r}")

    @property
    def matrices(self) -> dict[str, tuple[Any, ...]]:
        """Matrices used, per phase (``None`` entries for exact releases)."""
        return {r.phase: r.matrices for r in self.releases}

    @property
    def uniforms_per_party(self) -> int:
        """Uniforms each party drew from its stream over the whole run."""
        return sum(r.uniforms_per_party for r in self.releases)

    @property
    def released_records(self) -> np.ndarray:
        """The final per-record release as ``(n, m)`` attribute codes (the randomized data Y).

        The last phase whose units partition the attributes (the data set RR-Adjustment
        weights).
        """
        m = self.schema.m
        for r in reversed(self.releases):
            flat = sorted(a for u in r.units for a in u)
            if r.codes is not None and flat == list(range(m)):
                return r.records(m)
        raise ConfigurationError(f"{self.protocol} released no per-record data over all attributes")

    # ------------------------------------------------------------------ privacy
    def epsilon(self, policy: CompositionPolicy | str = "sequential") -> float:
        """ε spent by each party under ``policy`` (phases compose sequentially; ∞ = no DP)."""
        return self.ledger.total(as_policy(policy))

    def epsilon_by_phase(self, policy: CompositionPolicy | str = "sequential") -> dict[str, float]:
        """ε spent by each party in each phase under ``policy``."""
        return self.ledger.by_phase(as_policy(policy))

    @property
    def no_dp_guarantee(self) -> bool:
        """``True`` when some release had ε = ∞ (main paper 4.2 exact tables)."""
        return self.ledger.no_dp_guarantee

    # ------------------------------------------------------------------ tables
    def _axes(self, attributes: Sequence[str | int] | None, max_cells: int) -> tuple[int, ...]:
        """Validated attribute indices of a table (names or indices, distinct, at most
        ``max_cells`` value combinations)."""
        names = self.schema.names if attributes is None else tuple(attributes)
        if not names:
            raise ConfigurationError("attributes must name at least one attribute, got an empty list")
        axes = tuple(self.schema.resolve(a) for a in names)
        if len(set(axes)) != len(axes):
            raise ConfigurationError(f"attributes must be distinct, got {list(names)}")
        attrs = [self.schema[a] for a in axes]
        cells = math.prod(a.size for a in attrs)
        if cells > max_cells:
            raise ConfigurationError(
                f"attributes {[a.name for a in attrs]} span {cells:,} value combinations, more than "
                f"max_cells = {max_cells:,}; pick fewer attributes or raise max_cells"
            )
        return axes

    def fitted_model(self) -> FittedModel:
        """The units behind the estimate, for its uncertainty (:func:`mprr.protocols.fitted_model.fitted_model`).

        Raises
        ------
        ConfigurationError
            For an estimate not built from released units (invariant PRAM: its matrix depends
            on the data; ``details["variance"]`` holds its eq. (4.4) conditional variance).
        """
        if self.details.get("estimator") == "S/n":
            raise ConfigurationError(
                f"{self.protocol} with an invariant matrix estimates by S/n with a matrix built from the data; "
                "its conditional variance (concise paper eq. 4.4) is details['variance']"
            )
        adjusted = self.adjustment is not None
        return fitted_model(
            estimate=self.estimate, releases=self.releases, n=self.n, sizes=self.schema.sizes,
            postprocess=self.postprocessing, base=self.details.get("base_estimate") if adjusted else None,
            adjustment=dict(self.parameters.get("adjustment") or {}) if adjusted else None,
            given=("given the clusters Algorithm 1 formed from the dependence phase (not re-run)"
                   if self.protocol.startswith("RR-Clusters") else ""),
        )

    def uncertainty(
        self,
        tables: Sequence[Sequence[str | int]],
        *,
        confidence: float = 0.95,
        method: str = "auto",
        target: str = "data",
        replicates: int = DEFAULT_REPLICATES,
        rng: np.random.Generator | None = None,
        max_cells: int = 1_000_000,
    ) -> tuple[TableUncertainty, ...]:
        """Standard errors and confidence intervals of the estimated marginal of each table.

        The closed form (Nayak eq. 3.2 mapped to the marginal; delta method across units) for
        direct estimates, a parametric bootstrap where the estimator depends on the data
        (a post-processing that changed the estimate, RR-Adjustment); each
        :class:`~mprr.protocols.uncertainty.TableUncertainty` says which
        (:mod:`mprr.protocols.uncertainty`).

        Parameters
        ----------
        tables
            Attribute names or indices of each table (one bootstrap serves them all).
        confidence
            Nominal coverage of the intervals, in (0, 1).
        method
            ``"auto"``, ``"closed-form"`` or ``"bootstrap"``.
        target
            ``"data"`` (default: the parties' own records, the truth mprr's reports measure
            against) or ``"population"`` (the records a sample of n; Nayak's eq. 3.2 in full).
        replicates
            Bootstrap replicates.
        rng
            ``numpy.random.Generator`` of the bootstrap (needed only when one runs).
        max_cells
            Largest table.
        """
        axes = [self._axes(t, max_cells) for t in tables]
        if self.releases and self.releases[-1].oracle_reports:
            if method == "bootstrap" or target != "data":
                raise ConfigurationError(
                    f"{self.protocol} released frequency-oracle reports: its tables have the closed form for "
                    "target='data' only (method 'auto' or 'closed-form')"
                )
            return oracle_table_uncertainty(self.estimate, self.releases[-1], axes, confidence=confidence)
        return table_uncertainty(self.fitted_model(), axes, confidence=confidence, method=method, target=target,
                                 replicates=replicates, rng=rng)

    def to_frame(
        self,
        attributes: Sequence[str | int] | None = None,
        *,
        confidence: float | None = 0.95,
        method: str = "auto",
        target: str = "data",
        replicates: int = DEFAULT_REPLICATES,
        rng: np.random.Generator | None = None,
        max_cells: int = 1_000_000,
    ) -> Any:
        """The estimated distribution of ``attributes`` as a labelled pandas DataFrame.

        One row per value combination, in joint-code order (last attribute fastest): one column
        per attribute holding the category *labels* (not codes), then ``probability`` (the
        controller's estimate, marginalized over the other attributes), ``count``
        (``probability × n``, the estimated number of parties) and, unless ``confidence`` is
        ``None``, ``se``, ``ci_low`` and ``ci_high`` (standard error and confidence interval of
        ``probability``, :meth:`uncertainty`).  ``frame.attrs["uncertainty"]`` says which method
        produced them (``method``, ``confidence``, ``target``, ``replicates``, ``description``).

        Parameters
        ----------
        attributes
            Names or indices of the attributes to keep (default: all, the estimated joint);
            one attribute gives its estimated marginal.
        confidence
            Nominal coverage of the intervals, or ``None`` for the estimate alone.
        method, target, replicates, rng
            As in :meth:`uncertainty` (``rng`` is needed only when the bootstrap runs: after
            RR-Adjustment, or when the post-processing changed the estimate).
        max_cells
            Largest number of rows allowed (the full Adult domain has 1,814,400 cells).

        Raises
        ------
        DataError
            Unknown attribute.
        ConfigurationError
            Repeated attribute, more than ``max_cells`` rows, a bootstrap needed without ``rng``.
        """
        import pandas as pd  # the one optional-looking import of mprr: tables only, no I/O

        axes = self._axes(attributes, max_cells)
        attrs = [self.schema[a] for a in axes]
        probability = np.asarray(self.estimate.marginal(axes), dtype=float).ravel()
        index = np.indices([a.size for a in attrs]).reshape(len(attrs), -1)
        columns: dict[str, Any] = {
            a.name: pd.Categorical.from_codes(index[k], categories=pd.Index(a.categories))
            for k, a in enumerate(attrs)
        }
        columns["probability"] = probability
        columns["count"] = probability * self.n
        info = None
        if confidence is not None:
            (u,) = self.uncertainty([axes], confidence=confidence, method=method, target=target,
                                    replicates=replicates, rng=rng, max_cells=max_cells)
            columns["se"], columns["ci_low"], columns["ci_high"] = u.se.ravel(), u.low.ravel(), u.high.ravel()
            info = u.to_dict()
        frame = pd.DataFrame(columns)
        if info is not None:
            frame.attrs["uncertainty"] = info
        return frame

    def summary(self) -> dict[str, Any]:
        """JSON-friendly description (no arrays): protocol, parameters, clusters, and per
        composition policy the :func:`mprr.privacy.summarize` of the ledger (one party's)."""
        return {
            "protocol": self.protocol,
            "parameters": dict(self.parameters),
            "postprocessing": self.postprocessing,
            "phases": list(self.phases),
            "clusters": None if self.clusters is None else [list(c) for c in self.clusters],
            "uniforms_per_party": self.uniforms_per_party,
            "privacy": {p.value: summarize([self.ledger], p).to_dict() for p in CompositionPolicy},
        }


def release_result(
    protocol: str,
    *,
    n: int,
    parameters: Mapping[str, Any],
    schema: Schema,
    estimate: JointDistribution,
    releases: tuple[ReleasedData, ...],
    postprocessing: str,
    clusters: tuple[tuple[int, ...], ...] | None,
    ledger_prefix: tuple[Release, ...] = (),
    ledger: Ledger | None = None,
    **extra: Any,
) -> ProtocolResult:
    """A :class:`ProtocolResult` whose ledger holds every phase's releases, in order.

    The assembly shared by every protocol, in the fast path and in the actor choreographies
    (:mod:`parties.choreographies`).  ``parameters`` starts with ``n`` (parties whose values
    were released), ``m`` and ``sizes`` (from ``schema``), then the protocol's own
    ``parameters``.  One party's ledger is the concatenation of
    :meth:`ReleasedData.ledger_entries` over the phases, after ``ledger_prefix`` (e.g. PRAM's
    exact collection by the curator); ``ledger`` replaces it when respondents take part in different
    phases (:func:`mprr.protocols.oracle_reports.respondent_ledger`).  ``extra`` goes to the result
    (``clustering_trace``, ``dependence``, ``details``).
    """
    entries = ledger_prefix + tuple(e for r in releases for e in r.ledger_entries(schema.names))
    book = Ledger(entries) if ledger is None else ledger
    return ProtocolResult(
        protocol=protocol,
        parameters={"n": n, "m": schema.m, "sizes": list(schema.sizes), **parameters},
        schema=schema,
        estimate=estimate,
        releases=releases,
        ledger=book,
        postprocessing=postprocessing,
        clusters=clusters,
        **extra,
    )
