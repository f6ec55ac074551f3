"""Oracle reports: units released through frequency oracles, every unit or one sampled unit.

The answer to a :class:`~mprr.protocols.steps.Report` step.  ``assign="every"``: each party
reports every unit (SPL with any oracle; ε adds up).  The methods that win at the budgets
people deploy let every respondent spend its whole ε on **one** report instead of splitting it
over every attribute (Wang et al., USENIX Security 2017; Arcolezi et al., CIKM 2021; Zhang et
al., CCS 2018):

- ``"sampled"`` (SMP, CALM-style marginals, sampled clusters) (SMP, CALM-style marginals, sampled clusters) the party sends the index
  of its unit and one oracle report; the aggregator estimates unit ``j`` from the ``n_j``
  reports of the parties assigned to it (:meth:`FrequencyOracle.estimate`);
- ``"sampled-fake"`` (RS+FD) the party sends a value for every unit: the assigned one through
  its GRR oracle, uniform fake values for the others, so the controller does not learn which
  is real.  With assignment probability ``π_j`` and GRR probabilities ``p, q`` over ``k_j``
  values, a report of unit j supports value v with probability
  ``λ_v = π_j (q + (p − q) f_v) + (1 − π_j)/k_j``, so
  ``f̂_v = (λ̂_v − (1 − π_j)/k_j − π_j q) / (π_j (p − q))`` (Arcolezi et al., eq. for
  RS+FD[GRR]) with variance ``λ_v (1 − λ_v) / (n (π_j (p − q))²)``.

Privacy: with ``"every"`` the ledger books one release per unit (sequential: the ε add up).
A sampled party releases one report with the oracle's ε (fake values are independent of its
record), so its record-level ε is the oracle's: the ledger books one release of ε over the
attributes of every unit it could have released.  With fake values that also holds for two
records that differ in every attribute (each term of the mixture over the assigned unit has
likelihood ratio at most e^ε), which is why RS+FD's *per-attribute* ε of the paper is not
what is booked here: see :func:`rsfd_oracle_epsilon`.

Draw order: :class:`~mprr.protocols.steps.Report`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mprr.errors import ConfigurationError
from mprr.estimation import clip_rescale, project_simplex
from mprr.marginals import norm_sub
from mprr.oracles import FrequencyOracle
from mprr.privacy.ledger import Ledger
from mprr.privacy.release import Release
from mprr.protocols.release import ReleasedData, readonly, unit_codes
from mprr.protocols.steps import Report

__all__ = [
    "ORACLE_POSTPROCESS",
    "DEFAULT_ORACLE_POSTPROCESS",
    "ReportedData",
    "check_oracle_postprocess",
    "report_releases",
    "report_rows",
    "postprocess_frequencies",
    "report_uniforms",
    "report_units",
    "reported_data",
    "respondent_ledger",
    "rsfd_oracle_epsilon",
]

ORACLE_POSTPROCESS: tuple[str, ...] = ("norm-sub", "clip-rescale", "project-simplex", "none")
"""Post-processing of oracle estimates: Norm-Sub (the literature's, default), the paper's
clip-and-rescale, the Euclidean projection onto the simplex, or none (the raw estimate shifted
by the same amount in every cell to sum to 1: still unbiased, as its sum's expectation is 1;
OUE / OLH estimates do not sum to 1 by themselves)."""

DEFAULT_ORACLE_POSTPROCESS = "norm-sub"


def check_oracle_postprocess(method: object) -> str:
    """Validate the post-processing of oracle estimates against :data:`ORACLE_POSTPROCESS`."""
    if method not in ORACLE_POSTPROCESS:
        raise ConfigurationError(f"postprocess must be one of {list(ORACLE_POSTPROCESS)}, got {method!r}")
    return str(method)


def rsfd_oracle_epsilon(epsilon: float, d: int) -> float:
    """The per-attribute ε of RS+FD as published whose record-level ε is ``epsilon``.

    RS+FD (Arcolezi et al., CIKM 2021) perturbs the sampled attribute with the amplified
    ``ε' = ln(d(e^ε − 1) + 1)`` for its published ε; for two records that differ in every
    attribute the likelihood ratio reaches ``e^{ε'}``.  Booked at record level, a budget ε per
    respondent therefore allows the published ``ln((e^ε − 1)/d + 1)``.
    """
    return math.log(math.expm1(epsilon) / d + 1.0)


def _uniforms(assign: str, per: Sequence[int]) -> int:
    if assign == "every":
        return sum(per)
    return 1 + (sum(per) if assign == "sampled-fake" else max(per))


def report_uniforms(step: Report, sizes: Sequence[int]) -> int:
    """Uniforms each party draws for ``step`` (the draw order of :class:`Report`)."""
    per = [o.build([sizes[a] for a in u]).uniforms_per_report for o, u in zip(step.oracles, step.units)]
    return _uniforms(step.assign, per)


@dataclass(frozen=True, eq=False)
class ReportedData(ReleasedData):
    """What a phase of oracle reports produced.

    Besides :class:`ReleasedData` (``codes``: the ``(n, k)`` reports, ``-1`` where a party sent
    nothing for a unit; ``counts``: each unit's *support* counts, shaped like its domain):

    Attributes
    ----------
    oracles
        The frequency oracle of each unit.
    assign
        ``"every"``, ``"sampled"`` or ``"sampled-fake"`` (:class:`~mprr.protocols.steps.Report`).
    assigned
        ``"sampled"``: ``(n,)`` index of the unit each party reported, ``-1`` for a party that
        reported nothing in this phase (it abstained or was excluded); else ``None`` (with fake
        values the controller does not learn it).
    reports
        Number of reports per unit that carry the party's value (``n_j``); ``n`` for every unit
        with ``"every"`` and ``"sampled-fake"`` (where they are real with probability π_j).
    probabilities
        The probability that a party reports each unit for real (1 with ``"every"``).
    """

    oracles: tuple[FrequencyOracle, ...] = ()
    assign: str = "every"
    assigned: np.ndarray | None = None
    reports: tuple[int, ...] = ()
    probabilities: tuple[float, ...] = ()

    @property
    def fake(self) -> bool:
        """Whether fake values hid the assignment (RS+FD)."""
        return self.assign == "sampled-fake"

    @property
    def oracle_reports(self) -> bool:
        return True

    def unit_variance(self, j: int, f: np.ndarray | None = None) -> np.ndarray:
        """:meth:`variance` (the closed form of unit ``j``'s unbiased estimate)."""
        return self.variance(j, f)

    @property
    def epsilons(self) -> tuple[float, ...]:
        """ε of each unit's oracle (what one report costs)."""
        return tuple(float(o.epsilon_spent) for o in self.oracles)

    @property
    def uniforms_per_party(self) -> int:
        return _uniforms(self.assign, [o.uniforms_per_report for o in self.oracles])

    def unit_records(self, j: int) -> np.ndarray:
        if self.assign == "sampled":
            raise ConfigurationError(
                f"phase {self.phase!r}: each party released one sampled unit, not every unit (no per-record data)"
            )
        return super().unit_records(j)

    @property
    def randomized_matrices(self) -> tuple[object, ...]:  # type: ignore[override]
        raise ConfigurationError(
            f"phase {self.phase!r} released frequency-oracle reports, not values through matrices"
        )

    def ledger_entries(self, names: Sequence[str]) -> tuple[Release, ...]:
        """What one reporting party books (:func:`report_releases`)."""
        return report_releases(self.phase, self.assign, self.units, self.oracles, names)

    def raw_frequencies(self, j: int) -> np.ndarray:
        """Unbiased estimate of unit ``j``'s distribution (flat, may be negative).

        Without fake values :meth:`FrequencyOracle.estimate` over the ``n_j`` reports of unit j
        (the uniform distribution when no party drew it); with fake values the RS+FD inversion
        of the module docstring.
        """
        oracle = self.oracles[j]
        support = np.asarray(self.counts[j], dtype=np.float64).reshape(-1)
        if not self.fake:
            if self.reports[j] == 0:
                return np.full(oracle.d, 1.0 / oracle.d)
            return np.asarray(oracle.estimate(support, int(self.reports[j])), dtype=np.float64)
        n = int(self.reports[j])
        pi = self.probabilities[j]
        p, q = oracle.p_star, oracle.q_star
        lam = support / n
        return np.asarray((lam - (1.0 - pi) / oracle.d - pi * q) / (pi * (p - q)), dtype=np.float64)

    def variance(self, j: int, f: np.ndarray | None = None) -> np.ndarray:
        """Per-cell variance of :meth:`raw_frequencies` as an estimate of the *population*
        frequencies ``f`` (closed forms; without ``f`` the approximate variance at f = 0, or for
        fake values at the observed λ).

        ``"every"``: the oracle's variance over n reports (Wang et al. eq. 2).  ``"sampled"``:
        the oracle's variance over the n_j reports plus the sampling variance of the n_j
        respondents drawn from the n, ``f(1 − f)(1/n_j − 1/n)``.  ``"sampled-fake"``: each of the
        n reports supports v with probability ``p_v = π(q + (p − q)) + (1 − π)/k`` when the
        respondent's value is v, else ``p_o = πq + (1 − π)/k``, so
        ``Var[f̂_v] = (f p_v(1 − p_v) + (1 − f) p_o(1 − p_o)) / (n (π(p − q))²)``.
        """
        oracle = self.oracles[j]
        n_j = max(int(self.reports[j]), 1)
        if self.assign == "every":
            return np.asarray(oracle.variance(n_j, f), dtype=np.float64)
        if self.assign == "sampled":
            out = np.asarray(oracle.variance(n_j, f), dtype=np.float64)
            if f is not None:
                ff = np.asarray(f, dtype=np.float64).reshape(-1)
                n = len(self.assigned) if self.assigned is not None else n_j
                out = out + ff * (1.0 - ff) * max(1.0 / n_j - 1.0 / n, 0.0)
            return out
        pi = self.probabilities[j]
        p, q = oracle.p_star, oracle.q_star
        scale = n_j * (pi * (p - q)) ** 2
        if f is None:
            lam = np.asarray(self.counts[j], dtype=np.float64).reshape(-1) / n_j
            return np.asarray(lam * (1.0 - lam) / scale, dtype=np.float64)
        ff = np.asarray(f, dtype=np.float64).reshape(-1)
        p_v = pi * p + (1.0 - pi) / oracle.d
        p_o = pi * q + (1.0 - pi) / oracle.d
        return np.asarray((ff * p_v * (1.0 - p_v) + (1.0 - ff) * p_o * (1.0 - p_o)) / scale, dtype=np.float64)

    def frequencies(self, j: int, method: str) -> np.ndarray:
        """Unit ``j``'s estimated distribution, post-processed, shaped like its domain."""
        return postprocess_frequencies(self.raw_frequencies(j), method).reshape(self.unit_sizes[j])


def postprocess_frequencies(raw: np.ndarray, method: str) -> np.ndarray:
    """An unbiased frequency estimate post-processed by ``method`` (flat).

    ``"norm-sub"``, ``"clip-rescale"``, ``"project-simplex"``, or ``"none"`` (the total shifted
    to 1 evenly over the cells); an estimate without a positive cell (tiny n, small ε) is the
    uniform distribution.
    """
    raw = np.asarray(raw, dtype=np.float64).reshape(-1)
    method = check_oracle_postprocess(method)
    if method != "none" and not np.any(raw > 0.0):  # nothing to post-process: no information left
        out = np.full(raw.size, 1.0 / raw.size)
    elif method == "norm-sub":
        out = norm_sub(raw)
    elif method == "clip-rescale":
        out = clip_rescale(raw)
    elif method == "project-simplex":
        out = project_simplex(raw)
    else:
        out = raw + (1.0 - raw.sum()) / raw.size
    return np.asarray(out, dtype=np.float64)


def report_releases(phase: str, assign: str, units: Sequence[Sequence[int]], oracles: Sequence[FrequencyOracle],
                    names: Sequence[str]) -> tuple[Release, ...]:
    """The ledger entries of a party that reported in a phase of oracle reports.

    ``"every"``: one release per unit with its oracle's ε.  Sampled: one release, one report of
    ε = max over the units' oracles (the unit is the party's draw; fake values carry no
    information), over every attribute it may concern.  ε is each oracle's own
    :attr:`~mprr.frequency_oracle.FrequencyOracle.epsilon_spent`.  The fast path books these for every
    reporting party (:meth:`ReportedData.ledger_entries`); a party actor books the same ones.
    """
    def key(group: Sequence[FrequencyOracle]) -> str:
        return f"{assign}:" + ";".join(f"{type(o).__name__}({o.d},{o.epsilon!r})" for o in group)

    if assign == "every":
        return tuple(Release(tuple(names[a] for a in u), float(o.epsilon_spent), None, None, True, False,
                             phase, None, key([o]), None)
                     for u, o in zip(units, oracles))
    attrs = sorted({a for u in units for a in u})
    return (Release(tuple(names[a] for a in attrs), max(float(o.epsilon_spent) for o in oracles), None, None, True,
                    False, phase, None, key(oracles), None),)


def report_rows(step: Report, oracles: Sequence[FrequencyOracle], codes: np.ndarray, sizes: Sequence[int],
                uniforms: np.ndarray, excluded: np.ndarray | None = None, *,
                overwrite_uniforms: bool = False) -> tuple[np.ndarray, np.ndarray | None]:
    """The reports of ``codes``' rows for ``step`` (the draw order of :class:`~mprr.protocols.steps.Report`).

    The computation both drivers share: the local driver over every party at once
    (:func:`report_units`), a party actor over its one row.

    Parameters
    ----------
    step
        The report step.
    oracles
        The oracle of each unit (``step.oracles`` built over the units' domains).
    codes
        ``(n, m)`` true codes.
    sizes
        Category counts of the m attributes.
    uniforms
        ``(n, report_uniforms(step, sizes))`` uniforms, row i from party i's stream.
    excluded
        ``(n,)`` booleans: the parties that reported in a phase of ``step.exclude``.
    overwrite_uniforms
        ``True`` when the caller drew ``uniforms`` for this call alone: when every party reports
        every unit with one uniform each, the reports are written over them (unit j's column
        once its uniforms are read; float64 and int64 have one size), so no second ``(n, k)``
        array is needed.  Otherwise ignored.

    Returns
    -------
    tuple
        ``(reports, assigned)``: the ``(n, k)`` int64 reports, ``-1`` where a party sends
        nothing for a unit; when sampled the ``(n,)`` unit index each party drew (``-1``: it
        abstained or was excluded; with fake values the party's own, never sent), else ``None``.
    """
    n = codes.shape[0]
    usizes = tuple(tuple(int(sizes[a]) for a in u) for u in step.units)
    per = [o.uniforms_per_report for o in oracles]
    need = _uniforms(step.assign, per)
    if uniforms.shape != (n, need):
        raise ConfigurationError(f"uniforms must have shape ({n}, {need}) for this report step, got {uniforms.shape}")
    k = len(step.units)
    if (overwrite_uniforms and step.assign == "every" and all(p == 1 for p in per) and uniforms.dtype == np.float64
            and uniforms.flags.c_contiguous and uniforms.flags.writeable):
        reports = uniforms.view(np.int64)  # column j is written after unit j's uniform is read
    else:
        reports = np.full((n, k), -1, dtype=np.int64)
    if step.assign == "every":
        starts = np.concatenate([[0], np.cumsum(per)[:-1]]).astype(int)
        for j, (unit, oracle) in enumerate(zip(step.units, oracles)):
            reports[:, j] = oracle.perturb(unit_codes(codes, sizes, unit), uniforms[:, starts[j]:starts[j] + per[j]])
        return reports, None
    cdf = np.cumsum(step.probabilities)
    cdf[-1] = 1.0
    u0 = uniforms[:, 0]
    if step.abstain:
        cdf = step.abstain + (1.0 - step.abstain) * cdf
        cdf[-1] = 1.0
    assigned = np.minimum(np.searchsorted(cdf, u0, side="right"), k - 1).astype(np.int64)
    if step.abstain:
        assigned[u0 < step.abstain] = -1
    if excluded is not None:
        assigned[excluded] = -1
    fake = step.assign == "sampled-fake"
    starts = (1 + np.concatenate([[0], np.cumsum(per)[:-1]])).astype(int) if fake else np.ones(k, dtype=int)
    if fake:  # every block's first uniform draws that unit's fake value
        cells = np.array([math.prod(s) for s in usizes], dtype=np.int64)
        reports[:] = np.minimum((uniforms[:, starts] * cells).astype(np.int64), cells - 1)
    for j in np.unique(assigned[assigned >= 0]).tolist():  # the units some party drew
        mine = assigned == j
        start = int(starts[j])
        values = unit_codes(codes[mine], sizes, step.units[j])
        reports[mine, j] = oracles[j].perturb(values, uniforms[mine, start:start + per[j]])
    return reports, assigned


def report_units(step: Report, codes: np.ndarray, sizes: Sequence[int], uniforms: np.ndarray,
                 excluded: np.ndarray | None = None, *, overwrite_uniforms: bool = False) -> ReportedData:
    """Answer ``step`` for every party at once (vectorized), from its uniforms.

    Parameters
    ----------
    step
        The report step.
    codes
        ``(n, m)`` true codes.
    sizes
        Category counts of the m attributes.
    uniforms
        ``(n, report_uniforms(step, sizes))`` uniforms, row i from party i's stream.
    excluded
        ``(n,)`` booleans: the parties that reported in a phase of ``step.exclude``.
    overwrite_uniforms
        As in :func:`report_rows` (the local driver's uniforms, drawn for this step alone).
    """
    oracles = tuple(o.build([sizes[a] for a in u]) for o, u in zip(step.oracles, step.units))
    usizes = tuple(tuple(int(sizes[a]) for a in u) for u in step.units)
    reports, assigned = report_rows(step, oracles, codes, sizes, uniforms, excluded,
                                    overwrite_uniforms=overwrite_uniforms)
    return reported_data(step, usizes, oracles, reports, None if step.assign == "sampled-fake" else assigned)


def reported_data(step: Report, usizes: tuple[tuple[int, ...], ...], oracles: tuple[FrequencyOracle, ...],
                  reports: np.ndarray, assigned: np.ndarray | None) -> ReportedData:
    """The :class:`ReportedData` of ``step`` from every party's reports (``-1``: no report for that unit).

    The one place both drivers build it: the local driver after perturbing, the controller
    from the parties' replies.
    """
    counts = []
    n_reports = []
    for j, oracle in enumerate(oracles):
        col = reports[:, j]
        got = col[col >= 0]
        n_reports.append(int(got.size))
        support = oracle.support(got) if got.size else np.zeros(oracle.d)
        counts.append(readonly(np.asarray(support, dtype=np.float64).reshape(usizes[j])))
    return ReportedData(
        phase=step.phase, units=step.units, unit_sizes=usizes, matrices=(None,) * len(step.units),
        codes=readonly(reports), counts=tuple(counts), linkable=True, exact=False, replayed=None,
        oracles=oracles, assign=step.assign, assigned=None if assigned is None else readonly(assigned),
        reports=tuple(n_reports), probabilities=step.probabilities,
    )



def reporters(data: ReleasedData) -> np.ndarray:
    """``(n,)`` booleans: the parties that released something in the phase ``data``."""
    if isinstance(data, ReportedData) and data.assign == "sampled":
        assert data.assigned is not None
        return np.asarray(data.assigned >= 0)
    n = 0 if data.codes is None else data.codes.shape[0]
    return np.ones(n, dtype=bool)


def respondent_ledger(releases: Sequence[ReleasedData], names: Sequence[str]) -> Ledger:
    """The ledger of the respondent who spent the most, when respondents take part in different phases.

    Each respondent's ledger holds the entries of the phases it reported in (a sampled phase
    books one report; a party that abstained or was excluded books nothing); the parties are
    grouped by the phases they took part in and the ledger of the group with the largest
    sequential total is returned (parallel composition across disjoint respondents: every
    respondent's own guarantee is at most that total).
    """
    if not releases:
        return Ledger(())
    took = np.stack([reporters(r) for r in releases], axis=1)
    patterns = np.unique(took, axis=0)
    best: Ledger | None = None
    for pattern in patterns:
        entries = tuple(e for r, t in zip(releases, pattern) if t for e in r.ledger_entries(names))
        ledger = Ledger(entries)
        if best is None or ledger.total("sequential") > best.total("sequential"):
            best = ledger
    assert best is not None
    return best
