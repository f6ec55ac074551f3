"""One release phase of every party: the local randomization of "units" and its record.

A *unit* is what one party randomizes and releases as one value: one attribute, one pair of
attributes (main paper 4.3) or one cluster (RR-Joint / RR-Clusters).  Its value is the joint
code of the unit's attributes in C order (``numpy.ravel_multi_index`` over the unit's sizes,
attributes in the unit's order).

Draw-order contract (:mod:`mprr.streams`): releasing the ``k`` units of a phase consumes ``k``
uniforms from each party's stream, one per unit **in the order of** ``units``; the released
value of unit ``j`` is the inverse-CDF sample of row ``x_j`` of its matrix with uniform ``u_j``
(:func:`mprr.randomize.randomize`).  A Kronecker matrix over a unit is sampled with one uniform
too (:func:`mprr.randomize.randomize_joint`: the inverse-CDF of the Kronecker row in C order,
factor by factor, without materializing it).

:class:`ReleasedData` keeps what a phase released (codes of every party, or for exact
releases only the tallies a secure sum reveals) with the matrices used.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mprr.domain import check_cells, decode_joint, encode_joint, joint_tally, tally
from mprr.errors import ConfigurationError
from mprr.privacy.release import Release
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import RandomizationMatrix
from mprr.randomize import randomize, randomize_joint, sample_rows

__all__ = [
    "ReleasedData",
    "unit_codes",
    "release_units",
    "exact_tables",
    "all_pairs",
    "check_inputs",
    "readonly",
]

Matrix = RandomizationMatrix | KroneckerMatrix


def all_pairs(m: int) -> tuple[tuple[int, int], ...]:
    """All attribute pairs ``(i, j)``, ``i < j``, in lexicographic order (main paper 4.2/4.3)."""
    return tuple((i, j) for i in range(m) for j in range(i + 1, m))


def readonly(a: np.ndarray) -> np.ndarray:
    """``a`` itself, made read-only (released codes and tallies are never written again)."""
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class ReleasedData:
    """What one release phase of the protocol produced.

    Attributes
    ----------
    phase
        Name of the phase (``"attributes"``, ``"pairs"``, ``"exact-pairs"``, ``"clusters"``,
        ``"joint"``, ``"record"``, ``"pram"``).
    units
        Attribute indices of each released value, in draw order.
    unit_sizes
        Category counts of each unit's attributes.
    matrices
        Matrix of each unit (``None`` for exact releases).
    codes
        ``(n, len(units))`` int64 released codes (joint code of the unit, C order), or
        ``None`` for exact releases (main paper 4.2: true values only ever enter a secure sum,
        the fast path computes the exact tables centrally).  For secure-sum phases (4.3) these
        are the randomized values the parties feed into the secure sum; the controller sees
        only :attr:`counts`.
    counts
        Tally of each unit's released values, tensor of shape ``unit_sizes[j]``.
    linkable
        ``True`` when the controller receives each party's values directly; ``False`` when
        they only enter a secure sum.
    exact
        ``True`` for releases of true values (ε = ∞, no DP guarantee).
    replayed
        Per unit, whether it was a **replay**: the same attributes were released before with
        the same matrix, so every party resends the value it released then — no uniform, no
        new ε (the :class:`mprr.privacy.PrivacyAccountant` rule).  ``None``: no replay.
    """

    phase: str
    units: tuple[tuple[int, ...], ...]
    unit_sizes: tuple[tuple[int, ...], ...]
    matrices: tuple[Matrix | None, ...]
    codes: np.ndarray | None
    counts: tuple[np.ndarray, ...]
    linkable: bool = True
    exact: bool = False
    replayed: tuple[bool, ...] | None = None

    @classmethod
    def randomized(cls, phase: str, units: tuple[tuple[int, ...], ...], unit_sizes: tuple[tuple[int, ...], ...],
                   matrices: tuple[Matrix | None, ...], codes: np.ndarray, *, linkable: bool = True,
                   replayed: tuple[bool, ...] | None = None,
                   tallies: Sequence[np.ndarray | None] | None = None) -> ReleasedData:
        """A phase of randomized releases from its ``(n, len(units))`` released codes: each
        unit's tally is the count of its released values (the one place both drivers build it:
        the local driver after randomizing, the controller from the parties' replies).

        ``tallies`` (optional, per unit) are counts the caller already took of the unit's
        column (``numpy.bincount`` of codes known to lie in the unit's domain, as
        :func:`release_units` takes them of the values it just sampled); ``None`` entries are
        tallied here, with the range check of :func:`mprr.domain.tally`.
        """
        given = list(tallies) if tallies is not None else [None] * len(unit_sizes)
        counts = tuple(
            readonly(np.asarray(tally(codes[:, j], math.prod(us)) if t is None else t,
                                dtype=np.float64).reshape(us))
            for j, (us, t) in enumerate(zip(unit_sizes, given))
        )
        return cls(phase=phase, units=units, unit_sizes=unit_sizes, matrices=matrices, codes=readonly(codes),
                   counts=counts, linkable=linkable, exact=False, replayed=replayed)

    @property
    def oracle_reports(self) -> bool:
        """Whether the units were reported through frequency oracles (``ReportedData``)."""
        return False

    def unit_variance(self, j: int, f: np.ndarray | None = None) -> np.ndarray:
        """Closed-form per-cell variance of unit ``j``'s unbiased estimate, for oracle reports
        (:class:`mprr.protocols.oracle_reports.ReportedData`); matrix releases use Nayak's
        eq. 3.2 (:mod:`mprr.protocols.uncertainty`)."""
        raise ConfigurationError(f"phase {self.phase!r} released values through matrices: use Nayak's eq. 3.2")

    @property
    def epsilons(self) -> tuple[float, ...]:
        """ε of each unit's matrix (main paper eq. 4); ∞ for exact releases."""
        return tuple(math.inf if mat is None else float(mat.epsilon) for mat in self.matrices)

    @property
    def uniforms_per_party(self) -> int:
        """Uniforms this phase consumed from each party's stream (0 for exact releases and
        replayed units)."""
        if self.codes is None:
            return 0
        return len(self.units) - (sum(self.replayed) if self.replayed is not None else 0)

    def unit_records(self, j: int) -> np.ndarray:
        """Released values of unit ``j`` decoded into ``(n, len(unit))`` attribute codes."""
        if self.codes is None:
            raise ConfigurationError(f"phase {self.phase!r} released no per-record values (exact tables only)")
        if len(self.units[j]) == 1:
            return self.codes[:, j : j + 1].copy()
        return decode_joint(self.codes[:, j], self.unit_sizes[j])

    def records(self, m: int) -> np.ndarray:
        """Released data as ``(n, m)`` attribute codes when the units partition ``range(m)``.

        Raises
        ------
        ConfigurationError
            If the units do not cover every attribute exactly once, or nothing was released
            per record.
        """
        flat = sorted(a for u in self.units for a in u)
        if flat != list(range(m)):
            raise ConfigurationError(
                f"phase {self.phase!r} units {self.units} do not partition the {m} attributes"
            )
        if self.codes is None:
            raise ConfigurationError(f"phase {self.phase!r} released no per-record values (exact tables only)")
        out = np.empty((self.codes.shape[0], m), dtype=np.int64)
        for j, unit in enumerate(self.units):
            out[:, list(unit)] = self.unit_records(j)
        return out

    @property
    def randomized_matrices(self) -> tuple[Matrix, ...]:
        """The units' matrices, for a release in which every unit was randomized.

        Raises
        ------
        ConfigurationError
            If a unit has no matrix (an exact release).
        """
        matrices = tuple(mat for mat in self.matrices if mat is not None)
        if len(matrices) != len(self.matrices):
            raise ConfigurationError(f"phase {self.phase!r} released exact values: its units have no matrix")
        return matrices

    def ledger_entries(self, names: Sequence[str]) -> tuple[Release, ...]:
        """One :class:`mprr.privacy.release.Release` per unit, as every party records this phase.

        Attributes are named by ``names`` (the schema names).  Replayed units add no entry (nothing new is released).
        """
        entries = []
        for j, (unit, mat) in enumerate(zip(self.units, self.matrices)):
            if self.replayed is not None and self.replayed[j]:
                continue
            attrs = tuple(names[a] for a in unit)
            if self.exact or mat is None:
                entries.append(Release.exact_values(attrs, linkable=self.linkable, phase=self.phase))
                continue
            entries.append(Release.from_matrix(attrs, mat, linkable=self.linkable, phase=self.phase))
        return tuple(entries)


def unit_codes(codes: np.ndarray, sizes: Sequence[int], unit: Sequence[int]) -> np.ndarray:
    """Joint code (C order) of the attributes ``unit`` for every record, shape ``(n,)``: the
    value a party releases for a pair (main paper 4.3) or a cluster (Protocol 2 / RR-Clusters)."""
    unit = tuple(unit)
    if len(unit) == 1:
        return np.ascontiguousarray(codes[:, unit[0]], dtype=np.int64)
    return encode_joint(codes[:, list(unit)], tuple(sizes[a] for a in unit))


def release_units(
    phase: str,
    codes: np.ndarray,
    sizes: Sequence[int],
    units: Sequence[Sequence[int]],
    matrices: Sequence[Matrix | None],
    uniforms: np.ndarray,
    *,
    linkable: bool = True,
    previous: Sequence[np.ndarray | None] | None = None,
    overwrite_uniforms: bool = False,
) -> ReleasedData:
    """Randomize every party's value of each unit (one uniform per unit, in unit order).

    Parameters
    ----------
    phase
        Phase name recorded in the result.
    codes
        ``(n, m)`` true codes of the data set.
    sizes
        Category counts of the ``m`` attributes.
    units
        Attribute indices of each unit, in draw order.
    matrices
        One matrix per unit over the unit's joint domain (a ``RandomizationMatrix`` of size
        Π sizes, or a ``KroneckerMatrix`` with one factor per attribute of the unit).
    uniforms
        ``(n, k)`` uniforms, one column per unit that is not replayed, in unit order.
    linkable
        ``False`` when the values only enter a secure sum (main paper 4.3).
    previous
        Optional, per unit: ``None`` (release afresh) or the ``(n,)`` codes the parties released
        before for the same attributes with the same matrix — a replay: those codes are
        resent, no uniform is consumed (:class:`ReleasedData` ``replayed``).
    overwrite_uniforms
        ``True`` when the caller drew ``uniforms`` for this call alone: the released codes are
        then written over them (unit j's column once its uniforms are read; float64 and int64
        have one size), so the phase needs no second ``(n, k)`` array.  Only without replays
        and for a C-contiguous float64 array; otherwise ignored.
    """
    units_t = tuple(tuple(int(a) for a in u) for u in units)
    usizes = tuple(tuple(int(sizes[a]) for a in u) for u in units_t)
    if len(matrices) != len(units_t):
        raise ConfigurationError(f"need one matrix per unit: {len(units_t)} units, {len(matrices)} matrices")
    prev = list(previous) if previous is not None else [None] * len(units_t)
    if len(prev) != len(units_t):
        raise ConfigurationError(f"previous must have one entry per unit ({len(units_t)}), got {len(prev)}")
    fresh = sum(p is None for p in prev)
    if uniforms.shape != (codes.shape[0], fresh):
        raise ConfigurationError(
            f"uniforms must have shape ({codes.shape[0]}, {fresh}) (one per unit not replayed), "
            f"got {uniforms.shape}"
        )
    reuse = (overwrite_uniforms and previous is None and uniforms.dtype == np.float64
             and uniforms.flags.c_contiguous and uniforms.flags.writeable)
    released = uniforms.view(np.int64) if reuse else np.empty((codes.shape[0], len(units_t)), dtype=np.int64)
    tallies: list[np.ndarray | None] = [None] * len(units_t)
    checked = codes.dtype.kind in "iu" and _uniforms_ok(uniforms)
    column = 0
    for j, (unit, us, mat) in enumerate(zip(units_t, usizes, matrices)):
        cells = math.prod(us)
        if mat is None:
            raise ConfigurationError(f"unit {unit} needs a matrix, got None (an exact release has none)")
        if mat.size != cells:
            raise ConfigurationError(
                f"matrix of unit {unit} must be over {cells} cells, got size {mat.size}"
            )
        if prev[j] is not None:
            released[:, j] = np.asarray(prev[j], dtype=np.int64)
        elif isinstance(mat, KroneckerMatrix):
            rec = randomize_joint(codes[:, list(unit)], mat, us, uniforms=uniforms[:, column])
            released[:, j] = encode_joint(rec, us) if len(unit) > 1 else rec[:, 0]
            column += 1
        elif checked and len(unit) == 1 and _in_range(x := unit_codes(codes, sizes, unit), cells):
            # randomize's checks, made once: the uniforms for the phase, the codes per unit
            values = sample_rows(mat, x, np.ascontiguousarray(uniforms[:, column]))
            tallies[j] = np.bincount(values, minlength=cells)
            released[:, j] = values
            column += 1
        else:
            released[:, j] = randomize(unit_codes(codes, sizes, unit), mat, uniforms=uniforms[:, column])
            column += 1
    return ReleasedData.randomized(phase, units_t, usizes, tuple(matrices), released, linkable=linkable,
                                   replayed=None if previous is None else tuple(p is not None for p in prev),
                                   tallies=tallies)


def _in_range(x: np.ndarray, cells: int) -> bool:
    """Whether the non-empty int64 codes ``x`` lie in ``[0, cells)``."""
    return x.size > 0 and int(x.min()) >= 0 and int(x.max()) < cells


def _uniforms_ok(uniforms: np.ndarray) -> bool:
    """Whether every uniform lies in [0, 1) (the check of :func:`mprr.randomize.randomize`), in
    one integer reduction: a float64 is in [+0, 1) exactly when its bit pattern, read as an
    unsigned integer, is below that of 1.0 (negative numbers, NaN and ∞ lie above).  ``False``
    (also for ``-0.0``, which the per-unit check accepts) sends each unit through ``randomize``."""
    if uniforms.dtype != np.float64:
        return False
    return uniforms.size == 0 or int(uniforms.view(np.uint64).max()) < _ONE_BITS


_ONE_BITS = int(np.float64(1.0).view(np.uint64))


def exact_tables(
    phase: str,
    codes: np.ndarray,
    sizes: Sequence[int],
    units: Sequence[Sequence[int]],
    *,
    max_cells: int,
) -> ReleasedData:
    """Exact tallies of the true values of each unit (main paper 4.2, computed centrally).

    Stands in for the modular secure sum of 4.2: the controller learns exactly these counts
    and nothing per record.  ε = ∞ ("no DP guarantee").  Consumes no uniforms.
    """
    units_t = tuple(tuple(int(a) for a in u) for u in units)
    usizes = tuple(tuple(int(sizes[a]) for a in u) for u in units_t)
    counts = []
    for unit, us in zip(units_t, usizes):
        check_cells(math.prod(us), max_cells, f"the exact table of attributes {unit}")
        counts.append(readonly(np.asarray(joint_tally(codes[:, list(unit)], us), dtype=np.float64)))
    return ReleasedData(
        phase=phase,
        units=units_t,
        unit_sizes=usizes,
        matrices=(None,) * len(units_t),
        codes=None,
        counts=tuple(counts),
        linkable=False,
        exact=True,
    )


def check_inputs(dataset: object, rng: object) -> None:
    """Validate the data set and the randomness source of a protocol call.

    Raises
    ------
    ConfigurationError
        If ``dataset`` is not a :class:`mprr.data.Dataset` or ``rng`` is neither a
        ``numpy.random.Generator`` nor a :class:`mprr.streams.PartyStreams` with one stream
        per record.
    """
    from mprr.data import Dataset
    from mprr.streams import PartyStreams

    if not isinstance(dataset, Dataset):
        raise ConfigurationError(f"dataset must be a mprr.data.Dataset, got {type(dataset).__name__}")
    if isinstance(rng, PartyStreams):
        if rng.n != dataset.n:
            raise ConfigurationError(
                f"rng has streams for {rng.n} parties but the data set has n={dataset.n} records"
            )
    elif not isinstance(rng, np.random.Generator):
        raise ConfigurationError(
            f"rng must be a numpy.random.Generator or a PartyStreams, got {type(rng).__name__}"
        )
