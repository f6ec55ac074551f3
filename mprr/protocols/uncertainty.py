"""Standard errors and confidence intervals of a protocol's estimated tables.

A table is the estimated marginal of some attributes (one row per value combination, as
:meth:`mprr.protocols.result.ProtocolResult.to_frame` shows it).  Every table's uncertainty
says which of two methods produced it:

``"closed-form"``
    For direct estimates, the eq. (2) estimate of each released unit (attribute, cluster,
    whole record, Kronecker group) untouched by post-processing.  The variance of a unit's
    estimate is Nayak's eq. (3.2) ("A concise theory of randomized response"; main paper
    eq. 5–6 bound the same quantity), evaluated at the estimate as Nayak suggests; a marginal
    of a unit is a linear map of it, so its variance is exact
    (:func:`mprr.estimation.marginal_variance`).  A table spanning several units is the
    product of the units' marginals (RR-Independent's joint is the product of its marginals);
    the units are randomized independently, so the variance of a product cell is
    ``Π (a_k² + v_k) − Π a_k²`` — the delta method ``Σ_k v_k Π_{j≠k} a_j²`` plus the
    products of variances that make it exact for independent unbiased factors (Goodman 1960).
    Interval: estimate ± z·SE (normal), clipped to [0, 1].
``"parametric-bootstrap"``
    Where the estimator depends on the data: a post-processing that changed the estimate
    (clip-rescale, simplex projection, IBU at the boundary) or RR-Adjustment (Algorithm 2).
    Each replicate draws the released tallies from the fitted model (every unit's records
    through the unit's matrix, so each unit's tally is multinomial with λ = Pᵀπ̂ and the same
    n), re-estimates with the same post-processing (and RR-Adjustment on the replicate's
    released records), and takes the table.  SE: the replicates' standard deviation;
    interval: their percentiles, shifted by the estimate minus the table the replicates
    estimate (the fitted records' table, which rounding n·π̂ to whole records can move off the
    estimate; a lower percentile at 0 stays at 0).  Seeded by a keyword-only ``rng``.

``"auto"`` picks the closed form when it applies to the table and the bootstrap otherwise.
The clusters of RR-Clusters come from its own dependence phase; both methods take them as
given (the dependence phase and Algorithm 1 are not re-run), and the description says so.

Two targets, two variances:

``"data"`` (default)
    The n records the parties hold, fixed; only the randomization is random.  This is the
    truth every mprr report measures against (the data set's own distribution); its variance
    is the randomization term of Nayak's eq. (3.2) alone.  The bootstrap keeps one set of
    records (n·π̂ rounded, or the adjusted sample's records by their weights).
``"population"``
    The records a random sample of n from a population π (Nayak's setting): both terms of
    eq. (3.2); the bootstrap draws new records for every replicate.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

from mprr.adjustment import adjust
from mprr.distributions import JointDistribution, WeightedSample
from mprr.domain import MAX_TENSOR_CELLS, check_cells, check_int, check_unit, decode_joint, encode_joint, joint_tally
from mprr.errors import ConfigurationError
from mprr.estimation import marginal_variance
from mprr.kronecker import KroneckerMatrix
from mprr.protocols.estimate import estimate_unit
from mprr.protocols.fitted_model import EstimatedUnit, FittedModel, Matrix, round_counts
from mprr.protocols.release import ReleasedData
from mprr.randomize import randomize_joint, sample_rows

__all__ = [
    "METHODS",
    "TARGETS",
    "DEFAULT_REPLICATES",
    "TableUncertainty",
    "table_uncertainty",
    "oracle_table_uncertainty",
]

METHODS: tuple[str, ...] = ("auto", "closed-form", "bootstrap")
"""Accepted ``method`` values: the closed form where it applies else the bootstrap, or one of them."""
TARGETS: tuple[str, ...] = ("data", "population")
"""What an interval covers: the parties' own records (fixed) or a population they are a sample of."""
DEFAULT_REPLICATES = 200
"""Bootstrap replicates unless told otherwise."""
_CHUNK = 1 << 21
"""Most records randomized at once when replicates are drawn together."""


@dataclass(frozen=True, eq=False)
class TableUncertainty:
    """Estimate, standard errors and confidence interval of every cell of one table.

    Arrays have one axis per attribute of ``axes`` (in that order), like
    ``estimate.marginal(axes)``.

    Attributes
    ----------
    axes
        The table's attributes.
    estimate
        The result's estimate of the table.
    se
        Standard error of every cell.
    low, high
        The confidence interval of every cell.
    method
        ``"closed-form"`` or ``"parametric-bootstrap"``.
    confidence
        Nominal coverage of the intervals.
    target
        ``"data"`` or ``"population"`` (module docstring).
    replicates
        Bootstrap replicates (``None`` for the closed form).
    description
        One sentence: the formula or the bootstrap, and what it takes as given.
    """

    axes: tuple[int, ...]
    estimate: np.ndarray
    se: np.ndarray
    low: np.ndarray
    high: np.ndarray
    method: str
    confidence: float
    target: str
    replicates: int | None
    description: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly description of the method (no arrays)."""
        return {"method": self.method, "confidence": self.confidence, "target": self.target,
                "replicates": self.replicates, "description": self.description}


# --------------------------------------------------------------------------- checks


def _check_choice(name: str, value: object, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ConfigurationError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return str(value)


def _involved(model: FittedModel, axes: tuple[int, ...]) -> list[tuple[EstimatedUnit, tuple[int, ...]]]:
    """Units holding an attribute of ``axes``, each with the positions of those attributes in
    the unit (unit order)."""
    out = []
    for unit in model.units:
        keep = tuple(pos for pos, a in enumerate(unit.attributes) if a in axes)
        if keep:
            out.append((unit, keep))
    return out


def _order(involved: Sequence[tuple[EstimatedUnit, tuple[int, ...]]], axes: tuple[int, ...]) -> list[int]:
    """Permutation from the outer product's axes (units in order) to ``axes``."""
    flat = [unit.attributes[pos] for unit, keep in involved for pos in keep]
    return [flat.index(a) for a in axes]


def _outer(pieces: Sequence[np.ndarray]) -> np.ndarray:
    result = pieces[0]
    for piece in pieces[1:]:
        result = np.multiply.outer(result, piece)
    return result


def _given(model: FittedModel) -> str:
    return f"; {model.given}" if model.given else ""


# --------------------------------------------------------------------------- closed form


def _closed_form(model: FittedModel, axes: tuple[int, ...], confidence: float, target: str) -> TableUncertainty:
    involved = _involved(model, axes)
    means, seconds = [], []
    for unit, keep in involved:
        drop = tuple(pos for pos in range(len(unit.attributes)) if pos not in keep)
        mean = unit.estimate.sum(axis=drop) if drop else unit.estimate
        var = marginal_variance(unit.matrix, unit.plug_in, model.n, keep, sampling=(target == "population"))
        means.append(mean)
        seconds.append(np.square(mean) + var)
    order = _order(involved, axes)
    mean = np.transpose(_outer(means), order)
    variance = np.maximum(np.transpose(_outer(seconds), order) - np.square(mean), 0.0)
    se = np.sqrt(variance)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    estimate = np.asarray(model.estimate.marginal(axes), dtype=np.float64)
    term = ("both terms: the records a sample of n" if target == "population"
            else "its randomization term: given the n records")
    product = (", delta method across the independently released units (exact for independent factors)"
               if len(involved) > 1 else "")
    changed = any(unit.postprocessed for unit, _ in involved)
    description = (f"closed form: Nayak eq. (3.2) variance of the eq. (2) estimate ({term}), "
                   f"mapped linearly to the marginal{product}; normal {confidence:.0%} interval clipped to [0, 1]"
                   + ("; the post-processing changed this estimate, so the interval is approximate" if changed else "")
                   + _given(model))
    return TableUncertainty(axes, estimate, se, np.clip(estimate - z * se, 0.0, 1.0),
                            np.clip(estimate + z * se, 0.0, 1.0), "closed-form", confidence, target, None,
                            description)


# --------------------------------------------------------------------------- bootstrap


def _randomize(matrix: Matrix, codes: np.ndarray, sizes: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Flat released codes of flat unit codes through the unit's matrix (one uniform each)."""
    uniforms = np.asarray(rng.random(size=(codes.shape[0],)), dtype=np.float64)
    if isinstance(matrix, KroneckerMatrix):
        released = randomize_joint(decode_joint(codes, sizes), matrix, sizes, uniforms=uniforms)
        return encode_joint(released, sizes)
    return sample_rows(matrix, codes, uniforms)


def _unit_truth(unit: EstimatedUnit, n: int, target: str) -> np.ndarray:
    """What the replicates of a unit estimate: the fixed records' distribution (rounded n·π̂ / n)
    for target "data", the fitted π̂ for "population"; shaped like the unit."""
    p = unit.plug_in
    return (round_counts(n, p) / n).reshape(unit.sizes) if target == "data" else p


def _unit_tallies(unit: EstimatedUnit, n: int, replicates: int, target: str,
                  rng: np.random.Generator) -> Iterator[np.ndarray]:
    """Released tallies of one unit drawn from its fitted model, ``(k, cells)`` a chunk at a
    time (at most :data:`_CHUNK` records and tally cells per chunk), ``replicates`` rows in all."""
    cells = math.prod(unit.sizes)
    p = unit.plug_in.ravel()
    fixed = np.repeat(np.arange(cells), round_counts(n, p)) if target == "data" else None
    step = max(1, _CHUNK // max(n, cells, 1))
    for start in range(0, replicates, step):
        k = min(step, replicates - start)
        codes = np.tile(fixed, k) if fixed is not None else rng.choice(cells, size=k * n, p=p)
        released = _randomize(unit.matrix, codes, unit.sizes, rng)
        offsets = np.repeat(np.arange(k) * cells, n)
        yield np.bincount(offsets + released, minlength=k * cells).reshape(k, cells).astype(np.float64)


def _check_replicates(model: FittedModel, tables: Sequence[tuple[int, ...]], replicates: int) -> None:
    """DomainTooLargeError when the replicates of a table would not fit in memory."""
    for axes in tables:
        cells = math.prod(model.sizes[a] for a in axes)
        check_cells(replicates * cells, MAX_TENSOR_CELLS, f"{replicates} bootstrap replicates of the table of "
                    f"attributes {list(axes)} ({cells:,} cells)", name="MAX_TENSOR_CELLS",
                    remedy="pick fewer attributes or fewer replicates")


def _product_replicates(model: FittedModel, tables: Sequence[tuple[int, ...]], replicates: int, target: str,
                        rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Replicates of every table, ``(replicates, *table shape)``, from re-estimated units, each
    with the table the replicates estimate (:func:`_unit_truth` of the units, multiplied).

    Each replicate's unit estimate is reduced at once to the marginals the tables need, so a
    large unit (an RR-Ind-Joint group over the full domain) is held once, not once per replicate.
    """
    _check_replicates(model, tables, replicates)
    keeps: dict[int, tuple[EstimatedUnit, set[tuple[int, ...]]]] = {}
    for axes in tables:
        for unit, keep in _involved(model, axes):
            keeps.setdefault(id(unit), (unit, set()))[1].add(keep)
    margins: dict[tuple[int, tuple[int, ...]], list[np.ndarray]] = {}
    for key, (unit, wanted) in keeps.items():
        drops = {keep: tuple(pos for pos in range(len(unit.attributes)) if pos not in keep) for keep in wanted}
        for chunk in _unit_tallies(unit, model.n, replicates, target, rng):
            for tallies in chunk:
                f = estimate_unit(unit.matrix, tallies, model.postprocess).reshape(unit.sizes)
                for keep, drop in drops.items():
                    margins.setdefault((key, keep), []).append(f.sum(axis=drop) if drop else f)
    out = []
    for axes in tables:
        involved = _involved(model, axes)
        pieces = [np.stack(margins[(id(unit), keep)]) for unit, keep in involved]
        result = pieces[0]
        for piece in pieces[1:]:
            result = result.reshape(result.shape + (1,) * (piece.ndim - 1)) * piece.reshape(
                (piece.shape[0],) + (1,) * (result.ndim - 1) + piece.shape[1:])
        order = _order(involved, axes)
        truths = []
        for unit, keep in involved:
            drop = tuple(pos for pos in range(len(unit.attributes)) if pos not in keep)
            t = _unit_truth(unit, model.n, target)
            truths.append(t.sum(axis=drop) if drop else t)
        out.append((np.transpose(result, [0, *(1 + o for o in order)]), np.transpose(_outer(truths), order)))
    return out


def _adjusted_replicates(model: FittedModel, tables: Sequence[tuple[int, ...]], replicates: int, target: str,
                         rng: np.random.Generator) -> list[tuple[np.ndarray, np.ndarray]]:
    """Replicates of every table after RR-Adjustment: records from the fitted weighted sample,
    every unit randomized, units re-estimated, Algorithm 2 re-run on the replicate's release;
    each table with the table the replicates estimate (the fixed records', or the fitted one)."""
    fitted = model.estimate
    _check_replicates(model, tables, replicates)
    if not isinstance(fitted, WeightedSample) or model.adjustment is None:
        raise ConfigurationError(f"an adjusted model needs a WeightedSample estimate, got {type(fitted).__name__}")
    # one weight per distinct record, rounded to n records (target "data"); the rounding moves the
    # records' marginals off the fitted ones when many n·w are near 1, which the recentring of
    # _bootstrap removes
    records, where = np.unique(fitted.codes, axis=0, return_inverse=True)
    weights = np.bincount(where.ravel(), weights=fitted.weights, minlength=records.shape[0])
    weights = weights / weights.sum()
    fixed = np.repeat(records, round_counts(model.n, weights), axis=0) if target == "data" else None
    options = {k: model.adjustment[k] for k in ("tol", "max_iter", "exact_limit") if k in model.adjustment}
    out: list[list[np.ndarray]] = [[] for _ in tables]
    for _ in range(replicates):
        truth = fixed if fixed is not None else np.repeat(records, rng.multinomial(model.n, weights), axis=0)
        released = np.empty_like(truth)
        marginals = []
        for unit in model.units:
            cols = list(unit.attributes)
            codes = encode_joint(truth[:, cols], unit.sizes) if len(cols) > 1 else truth[:, cols[0]].astype(np.int64)
            rel = _randomize(unit.matrix, codes, unit.sizes, rng)
            released[:, cols] = decode_joint(rel, unit.sizes) if len(cols) > 1 else rel[:, None]
            tallies = np.bincount(rel, minlength=math.prod(unit.sizes)).astype(np.float64)
            marginals.append((unit.attributes, estimate_unit(unit.matrix, tallies, model.postprocess).reshape(unit.sizes)))
        weighted = WeightedSample(released, adjust(released, marginals, **options).weights, model.sizes)
        for k, axes in enumerate(tables):
            out[k].append(weighted.marginal(axes))
    truths = [joint_tally(fixed[:, list(axes)], tuple(model.sizes[a] for a in axes)) / model.n if fixed is not None
              else np.asarray(fitted.marginal(axes), dtype=np.float64) for axes in tables]
    return [(np.stack(reps), t) for reps, t in zip(out, truths)]


def _bootstrap(model: FittedModel, tables: Sequence[tuple[int, ...]], confidence: float, target: str,
               replicates: int, rng: np.random.Generator) -> list[TableUncertainty]:
    draw = _adjusted_replicates if model.adjustment is not None else _product_replicates
    reps = draw(model, tables, replicates, target, rng)
    alpha = 1.0 - confidence
    records = ("each unit's records fixed at n·π̂" if target == "data" and model.adjustment is None
               else "the records fixed at n × the adjusted sample's weights" if target == "data"
               else "n new records from π̂ per replicate")
    steps = model.postprocess + (" and RR-Adjustment (Algorithm 2)" if model.adjustment is not None else "")
    description = (f"parametric bootstrap: {replicates} replicates of the released tallies from the fitted model "
                   f"({records}), re-estimated with {steps}; SE = replicate standard deviation, "
                   f"{confidence:.0%} percentile interval recentred on the estimate" + _given(model))
    out = []
    for axes, (r, truth) in zip(tables, reps):
        # the replicates estimate the fitted model's table (``truth``); shifting their percentiles
        # by estimate − truth puts the interval around the estimate even where rounding the
        # fitted records moved that table (identity when they coincide); a lower percentile at 0,
        # the boundary every post-processed estimate respects, stays there
        estimate = np.asarray(model.estimate.marginal(axes), dtype=np.float64)
        q_low, q_high = np.quantile(r, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        shift = estimate - truth
        low = np.where(q_low <= 0.0, 0.0, q_low + shift)
        out.append(TableUncertainty(axes, estimate, r.std(axis=0, ddof=1), np.clip(low, 0.0, 1.0),
                                    np.clip(q_high + shift, 0.0, 1.0), "parametric-bootstrap", confidence, target,
                                    replicates, description))
    return out


# --------------------------------------------------------------------------- entry point


def table_uncertainty(
    model: FittedModel,
    tables: Sequence[tuple[int, ...]],
    *,
    confidence: float = 0.95,
    method: str = "auto",
    target: str = "data",
    replicates: int = DEFAULT_REPLICATES,
    rng: np.random.Generator | None = None,
) -> tuple[TableUncertainty, ...]:
    """Standard errors and intervals of every table (module docstring for the methods).

    Parameters
    ----------
    model
        The fitted model (:func:`fitted_model`).
    tables
        Attribute indices of every table (distinct, in the order of the table's axes).
    confidence
        Nominal coverage of the intervals, in (0, 1).
    method
        ``"auto"`` (closed form where it applies, else bootstrap), ``"closed-form"`` or
        ``"bootstrap"``.
    target
        ``"data"`` (the parties' own records) or ``"population"``.
    replicates
        Bootstrap replicates, >= 2 (one bootstrap serves every table that needs it).
    rng
        ``numpy.random.Generator`` of the bootstrap; needed only when a table is bootstrapped.

    Raises
    ------
    ConfigurationError
        Bad ``confidence``, ``method``, ``target`` or ``replicates``; the closed form asked of
        RR-Adjustment's estimate; a bootstrap needed without ``rng``.
    """
    confidence = check_unit("confidence", confidence, low_open=True, high_open=True)
    method = _check_choice("method", method, METHODS)
    target = _check_choice("target", target, TARGETS)
    replicates = check_int("replicates", replicates, 2)
    if method == "closed-form" and model.adjustment is not None:
        raise ConfigurationError(
            "method 'closed-form' needs a direct estimate, but RR-Adjustment's weights depend on the data; "
            "use method='bootstrap' or 'auto'"
        )
    bootstrapped = [
        model.adjustment is not None or method == "bootstrap"
        or (method == "auto" and any(u.postprocessed for u, _ in _involved(model, axes)))
        for axes in tables
    ]
    boot = [k for k, b in enumerate(bootstrapped) if b]
    results: dict[int, TableUncertainty] = {}
    if boot:
        if not isinstance(rng, np.random.Generator):
            why = ("RR-Adjustment's weights depend on the data" if model.adjustment is not None
                   else f"the {model.postprocess} post-processing changed the estimate" if method == "auto"
                   else "method is 'bootstrap'")
            raise ConfigurationError(
                f"rng must be a numpy.random.Generator for the parametric bootstrap ({why}), got "
                f"{type(rng).__name__}; pass rng=numpy.random.default_rng(seed)"
            )
        results = dict(zip(boot, _bootstrap(model, [tables[k] for k in boot], confidence, target, replicates, rng)))
    return tuple(results[k] if k in results else _closed_form(model, axes, confidence, target)
                 for k, axes in enumerate(tables))


def oracle_table_uncertainty(estimate: JointDistribution, released: ReleasedData, tables: Sequence[tuple[int, ...]],
                             *, confidence: float = 0.95) -> tuple[TableUncertainty, ...]:
    """Closed-form standard errors of tables estimated from frequency-oracle reports.

    A table inside one reported unit is a projection of that unit's estimate: each cell's
    variance is the sum of the variances of the unit cells it adds up (the oracle's closed form,
    Wang et al., USENIX Security 2017, eq. 2, with the estimate for the true frequencies; for SMP
    and the sampled phases plus the sampling term, :meth:`ReportedData.variance`), covariances
    between cells neglected.  A table across units that partition the attributes (SPL, SMP,
    RS+FD, disjoint clusters) is a product of independent estimates: delta method.  A table
    that only maximum entropy gives (across overlapping marginals) has no closed form: its SE
    and interval are NaN, and the description says so.  Where consistent overlapping marginals
    (CALM-style) pool several units, the SE of the one unit used is an upper bound.  Normal
    intervals clipped to [0, 1]; post-processing (Norm-Sub) is not modelled.
    """
    confidence = check_unit("confidence", confidence, low_open=True, high_open=True)
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    units = released.units
    out = []
    for axes in tables:
        est = np.asarray(estimate.marginal(axes), dtype=np.float64)
        pieces: list[tuple[tuple[int, ...], np.ndarray, np.ndarray]] = []  # (axes of the piece, mean, variance)
        covered = True
        for a in axes:
            if any(a in p[0] for p in pieces):
                continue
            j = next((k for k, u in enumerate(units) if a in u), None)
            if j is None:
                covered = False
                break
            unit = units[j]
            inside = tuple(b for b in axes if b in unit)
            full = np.asarray(estimate.marginal(unit), dtype=np.float64)
            var = np.asarray(released.unit_variance(j, np.clip(full, 0.0, 1.0).reshape(-1)),
                             dtype=np.float64).reshape(full.shape)
            drop = tuple(k for k, b in enumerate(unit) if b not in inside)
            keep = [b for b in unit if b in inside]
            mean = full.sum(axis=drop) if drop else full
            v = var.sum(axis=drop) if drop else var
            order = [keep.index(b) for b in inside]
            pieces.append((inside, np.transpose(mean, order), np.transpose(v, order)))
        if covered and len(pieces) > 1 and any(set(p[0]) & set(q[0]) for i, p in enumerate(pieces)
                                                for q in pieces[i + 1:]):
            covered = False
        if not covered:
            nan = np.full(est.shape, np.nan)
            out.append(TableUncertainty(axes, est, nan, nan.copy(), nan.copy(), "unavailable", confidence, "data",
                                        None, "no closed form: this table comes from the maximum-entropy fit of "
                                              "overlapping released marginals"))
            continue
        flat_axes = tuple(b for p in pieces for b in p[0])
        mean = pieces[0][1]
        var = pieces[0][2]
        for _, m2, v2 in pieces[1:]:  # Var(XY) = Var X · Var Y + Var X · (EY)² + (EX)² · Var Y, independent
            mean, var = (np.multiply.outer(mean, m2),
                         np.multiply.outer(var, v2) + np.multiply.outer(var, m2 ** 2) + np.multiply.outer(mean ** 2, v2))
        order = [flat_axes.index(b) for b in axes]
        se = np.sqrt(np.transpose(var, order))
        out.append(TableUncertainty(axes, est, se, np.clip(est - z * se, 0.0, 1.0), np.clip(est + z * se, 0.0, 1.0),
                                    "closed-form", confidence, "data", None,
                                    "closed form of the oracles' unbiased estimates (Wang et al. 2017 eq. 2, with the "
                                    "sampling term of sampled reports; delta method across independently estimated "
                                    "units); Norm-Sub post-processing not modelled"))
    return tuple(out)
