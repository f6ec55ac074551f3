"""Dependence between pairs of attributes: |Pearson| (main paper eq. 8) and Cramér's V (eq. 9),
and the Cramér's V that randomization noise alone gives an independent pair (:func:`noise_cramers_v`).

Both measures are computed from a two-way contingency table (rows = categories of the first
attribute, columns = categories of the second).  The table may hold counts or probabilities:
both measures are scale-invariant, so it is normalised to probabilities first.

Tables estimated through main paper eq. (2) (RR on pairs of attributes, Section 4.3) can hold
small negative entries.  **Every function here clips negative entries to 0 before computing**
(the clipped table is the closest non-negative table cell by cell); a table whose clipped
total is 0 carries no evidence of dependence and gives 0.

Degenerate tables never produce NaN: a constant attribute (a single category with positive
mass), or an all-zero table, has dependence 0.

Main paper discrepancy (documented in ``docs/reproduction.md``): the printed χ² formula divides
by the observed frequency ``f^j_ab``; the chi-squared independence statistic divides by the
expected frequency ``e^ij_ab = n^i_a n^j_b / n``, which is what :func:`cramers_v` uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from mprr.domain import check_sizes
from mprr.errors import ConfigurationError, DataError

__all__ = [
    "KINDS",
    "bivariate_tables",
    "cramers_v",
    "dependence",
    "dependence_matrix",
    "noise_cramers_v",
    "pearson_abs",
]

#: Attribute kinds understood by :func:`dependence` (same spelling as ``mprr.data.Attribute``).
KINDS = frozenset({"nominal", "ordinal"})


def _probability_table(table: object, name: str = "table", *, clip_negative: bool = False) -> np.ndarray | None:
    """Validate a 2-D table, normalise it; ``None`` if its mass is 0.

    Negative entries are a DataError unless ``clip_negative`` (then they are set to 0).
    """
    try:
        arr = np.asarray(table, dtype=float)
    except (TypeError, ValueError) as exc:
        raise DataError(f"{name} must be a 2-D numeric array, got {table!r}") from exc
    if arr.ndim != 2 or arr.shape[0] < 1 or arr.shape[1] < 1:
        raise DataError(f"{name} must be a non-empty 2-D array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise DataError(f"{name} must contain only finite values, got non-finite entries")
    if not clip_negative and bool(np.any(arr < 0.0)):
        at = tuple(int(i) for i in np.unravel_index(int(np.argmin(arr)), arr.shape))
        raise DataError(
            f"{name} must hold counts or probabilities >= 0, got {float(arr[at])!r} at {at}; "
            "pass clip_negative=True for an eq. (2) estimate with negative cells"
        )
    clipped = np.clip(arr, 0.0, None)
    total = float(clipped.sum())
    if total <= 0.0:
        return None
    normalised: np.ndarray = clipped / total
    return normalised


def pearson_abs(table: object, *, clip_negative: bool = False) -> float:
    """Absolute Pearson correlation of two ordinal attributes (main paper eq. 8).

    Category indices ``0, 1, ..., r - 1`` are used as scores.

    Parameters
    ----------
    table
        ``(r_a, r_b)`` contingency table of counts or probabilities (entries >= 0).
    clip_negative
        Set negative entries (of an eq. 2 estimate) to 0 first instead of rejecting them.

    Returns
    -------
    float
        ``|r_ab|`` in ``[0, 1]``; 0 when either attribute is constant (zero variance) or the
        table has no positive mass.

    Raises
    ------
    DataError
        If ``table`` is not a non-empty 2-D array of finite numbers, or has a negative entry
        and ``clip_negative`` is False.
    """
    p = _probability_table(table, clip_negative=clip_negative)
    if p is None:
        return 0.0
    pa = p.sum(axis=1)
    pb = p.sum(axis=0)
    sa = np.arange(p.shape[0], dtype=float)
    sb = np.arange(p.shape[1], dtype=float)
    da = sa - float(pa @ sa)
    db = sb - float(pb @ sb)
    var_a = float(pa @ (da * da))
    var_b = float(pb @ (db * db))
    # Scores are integers in [0, r); a variance below this is rounding noise of a constant.
    eps = 1e-14
    if var_a <= eps or var_b <= eps:
        return 0.0
    cov = float(da @ p @ db)
    return float(min(1.0, abs(cov) / np.sqrt(var_a * var_b)))


def cramers_v(table: object, *, clip_negative: bool = False) -> float:
    """Cramér's V of two attributes (main paper eq. 9, expected frequency in the χ² denominator).

    ``V = sqrt( (χ²/n) / min(r_a - 1, r_b - 1) )`` with
    ``χ²/n = Σ_ab (p_ab - p_a p_b)² / (p_a p_b)``, i.e. the chi-squared statistic with the
    expected frequency ``e_ab = n_a n_b / n`` in the denominator.

    Parameters
    ----------
    table
        ``(r_a, r_b)`` contingency table of counts or probabilities (entries >= 0).
    clip_negative
        Set negative entries (of an eq. 2 estimate) to 0 first instead of rejecting them.

    Returns
    -------
    float
        V in ``[0, 1]``.  Categories with zero marginal mass are left out (their expected
        frequency is 0 and so is every observed frequency in them), and ``r_a``, ``r_b`` count
        only the categories that occur; this equals eq. (9) whenever every category occurs and
        keeps V = 1 reachable otherwise.  0 when fewer than two categories of either attribute
        occur (constant attribute) or the table has no positive mass.

    Raises
    ------
    DataError
        If ``table`` is not a non-empty 2-D array of finite numbers, or has a negative entry
        and ``clip_negative`` is False.
    """
    p = _probability_table(table, clip_negative=clip_negative)
    if p is None:
        return 0.0
    pa = p.sum(axis=1)
    pb = p.sum(axis=0)
    p = p[pa > 0.0][:, pb > 0.0]
    pa = pa[pa > 0.0]
    pb = pb[pb > 0.0]
    k = min(pa.size, pb.size) - 1
    if k < 1:
        return 0.0
    expected = np.outer(pa, pb)
    terms = np.divide(
        (p - expected) ** 2, expected, out=np.zeros_like(p), where=expected > 0.0
    )
    phi2 = float(terms.sum())
    return float(min(1.0, np.sqrt(max(phi2, 0.0) / k)))


def noise_cramers_v(pa: np.ndarray, pb: np.ndarray, marginal_a: np.ndarray, marginal_b: np.ndarray,
                    n: int) -> float:
    """Cramér's V that randomization and sampling noise alone give an *independent* pair.

    The pair's table is estimated by main paper eq. (2) from the ``n`` values released through
    ``P_a ⊗ P_b`` (RR per attribute, Section 4.1): ``π̂ = (P_aᵀ)⁻¹ Λ̂ P_b⁻¹`` with ``Λ̂`` the
    tally of the released pairs over ``n``.  For independent attributes with marginals
    ``a``, ``b`` (``π = a bᵀ``, ``Λ = P_aᵀ π P_b``), the multinomial covariance of ``Λ̂``
    gives, cell by cell,

    ``D = π̂ − π̂_a π̂_bᵀ ≈ G Λ̂ Hᵀ`` to first order, with ``G = (I − a 1ᵀ)(P_aᵀ)⁻¹`` and
    ``H = (I − b 1ᵀ)(P_bᵀ)⁻¹`` (``G Λ Hᵀ = 0``), so the multinomial covariance of ``Λ̂`` gives
    ``Var(D) = (G∘G) Λ (H∘H)ᵀ / n`` cell by cell (the Kronecker structure: no ``(r_a r_b)²``
    matrix is formed) and ``E[φ²] = Σ Var(D_ij) / (a_i b_j)``; for ``P = I`` this is
    ``(r_a − 1)(r_b − 1)/n``, the χ² test's expectation.  Returns ``sqrt(E[φ²] / (min(r_a, r_b) − 1))``:
    an estimated dependence of the same size or smaller is within the noise.

    Parameters
    ----------
    pa, pb
        Dense randomization matrices of the two attributes (``P[u, v] = Pr(Y = v | X = u)``).
    marginal_a, marginal_b
        Marginal distributions of the two attributes (categories of probability 0 are left out).
    n
        Number of released records.

    Raises
    ------
    ConfigurationError
        If the sizes do not match or ``n`` is not positive.
    """
    pa, pb = np.asarray(pa, dtype=float), np.asarray(pb, dtype=float)
    a, b = np.asarray(marginal_a, dtype=float), np.asarray(marginal_b, dtype=float)
    if pa.shape != (a.size, a.size) or pb.shape != (b.size, b.size):
        raise ConfigurationError(f"noise_cramers_v needs square matrices matching the marginals, got shapes "
                                 f"{pa.shape}, {pb.shape} for marginals of {a.size} and {b.size} categories")
    if n < 1:
        raise ConfigurationError(f"n must be a positive number of records, got {n}")
    g = (np.eye(a.size) - np.outer(a, np.ones(a.size))) @ np.linalg.inv(pa.T)
    h = (np.eye(b.size) - np.outer(b, np.ones(b.size))) @ np.linalg.inv(pb.T)
    lam = pa.T @ np.outer(a, b) @ pb
    var = (g * g) @ lam @ (h * h).T / n
    keep_a, keep_b = a > 0, b > 0
    ra, rb = int(keep_a.sum()), int(keep_b.sum())
    if min(ra, rb) < 2:
        return 0.0
    phi2 = float((var[keep_a][:, keep_b] / np.outer(a[keep_a], b[keep_b])).sum())
    return float(min(1.0, np.sqrt(max(phi2, 0.0) / (min(ra, rb) - 1))))


def _check_kind(kind: object, name: str) -> str:
    if kind not in KINDS:
        raise ConfigurationError(f"{name} must be one of {sorted(KINDS)}, got {kind!r}")
    return str(kind)


def dependence(table: object, kind_a: str, kind_b: str, *, clip_negative: bool = False) -> float:
    """Dependence measure of main paper Section 4: eq. (8) for two ordinals, eq. (9) otherwise.

    Parameters
    ----------
    table
        ``(r_a, r_b)`` contingency table (counts or probabilities, entries >= 0).
    kind_a, kind_b
        ``"nominal"`` or ``"ordinal"``.
    clip_negative
        Set negative entries (of an eq. 2 estimate) to 0 first instead of rejecting them.

    Returns
    -------
    float
        :func:`pearson_abs` if both attributes are ordinal, else :func:`cramers_v`.

    Raises
    ------
    ConfigurationError
        If a kind is not ``"nominal"`` or ``"ordinal"``.
    DataError
        If the table is invalid.
    """
    a = _check_kind(kind_a, "kind_a")
    b = _check_kind(kind_b, "kind_b")
    if a == "ordinal" and b == "ordinal":
        return pearson_abs(table, clip_negative=clip_negative)
    return cramers_v(table, clip_negative=clip_negative)


def dependence_matrix(
    tables: Mapping[tuple[int, int], object], kinds: Sequence[str]
) -> np.ndarray:
    """Symmetric ``(m, m)`` matrix of pairwise dependences, 1 on the diagonal.

    The input of Algorithm 1 (main paper Section 4): eq. (8) or (9) per pair by kind.

    Parameters
    ----------
    tables
        One contingency table per attribute pair, keyed ``(i, j)``.  Every pair ``i < j`` must
        be present as ``(i, j)`` (rows = attribute i) or ``(j, i)`` (rows = attribute j).  The
        tables may be empirical counts (:func:`bivariate_tables`) or estimated probabilities;
        negative cells of an eq. (2) estimate are clipped to 0 before eq. (8) / (9).
    kinds
        Kind of each attribute (``"nominal"`` / ``"ordinal"``), in attribute order; ``m`` is
        its length.

    Returns
    -------
    numpy.ndarray
        ``D[i, j] = D[j, i] = dependence(table_ij, kinds[i], kinds[j])``, ``D[i, i] = 1``.

    Raises
    ------
    ConfigurationError
        On a missing pair, a key out of range, a bad kind, or tables whose shapes disagree on
        the number of categories of one attribute.
    """
    kinds = [_check_kind(k, f"kinds[{i}]") for i, k in enumerate(kinds)]
    m = len(kinds)
    if m < 1:
        raise ConfigurationError("kinds must name at least one attribute, got an empty sequence")
    oriented: dict[tuple[int, int], np.ndarray] = {}
    for key, table in tables.items():
        if (
            not isinstance(key, tuple)
            or len(key) != 2
            or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in key)
            or not all(0 <= x < m for x in key)
            or key[0] == key[1]
        ):
            raise ConfigurationError(
                f"tables keys must be pairs (i, j) of distinct attribute indices in [0, {m}), "
                f"got {key!r}"
            )
        try:
            arr = np.asarray(table, dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"tables[{key!r}] must be a numeric 2-D array") from exc
        i, j = int(key[0]), int(key[1])
        if arr.ndim != 2:
            raise ConfigurationError(
                f"tables[{key!r}] must be a 2-D contingency table, got shape {arr.shape}"
            )
        if i > j:
            i, j, arr = j, i, arr.T
        if (i, j) in oriented:
            raise ConfigurationError(f"tables holds pair ({i}, {j}) twice (as (i, j) and (j, i))")
        oriented[(i, j)] = arr
    sizes: dict[int, int] = {}
    for (i, j), arr in oriented.items():
        for axis, attr in ((0, i), (1, j)):
            r = arr.shape[axis]
            if sizes.setdefault(attr, r) != r:
                raise ConfigurationError(
                    f"tables disagree on the number of categories of attribute {attr}: "
                    f"{sizes[attr]} and {r}"
                )
    out = np.eye(m)
    for i in range(m):
        for j in range(i + 1, m):
            if (i, j) not in oriented:
                raise ConfigurationError(
                    f"tables must hold every attribute pair i < j; pair ({i}, {j}) is missing"
                )
            d = dependence(oriented[(i, j)], kinds[i], kinds[j], clip_negative=True)
            out[i, j] = out[j, i] = d
    return out


def bivariate_tables(codes: object, sizes: Sequence[int]) -> dict[tuple[int, int], np.ndarray]:
    """Count tables of every attribute pair ``i < j`` (one ``bincount`` of ``x_i |A_j| + x_j`` per pair).

    The bivariate distributions of main paper 4.1 (on released data) and 4.2 (exact tables).

    Parameters
    ----------
    codes
        ``(n, m)`` integer codes, column ``j`` in ``[0, sizes[j])``.
    sizes
        Number of categories of each attribute (length ``m``).

    Returns
    -------
    dict
        ``{(i, j): (sizes[i], sizes[j]) int64 counts}`` for all ``0 <= i < j < m``.

    Raises
    ------
    DataError
        If codes are not a 2-D integer array with ``m`` columns and values in range.
    ConfigurationError
        If sizes are not positive integers.
    """
    sizes_t = check_sizes(sizes)
    arr = np.asarray(codes)
    if arr.ndim != 2 or arr.shape[1] != len(sizes_t):
        raise DataError(
            f"codes must be a 2-D array with {len(sizes_t)} columns (one per size), "
            f"got shape {arr.shape}"
        )
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise DataError(f"codes must be integers, got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    m = len(sizes_t)
    columns = [np.ascontiguousarray(arr[:, j]) for j in range(m)]  # each read once per pair
    if arr.shape[0] and any(int(c.min()) < 0 or int(c.max()) >= k for c, k in zip(columns, sizes_t)):
        sz = np.asarray(sizes_t, dtype=np.int64)
        bad = np.argwhere((arr < 0) | (arr >= sz[None, :]))[0]
        raise DataError(
            f"codes[{bad[0]}, {bad[1]}] = {arr[bad[0], bad[1]]} is outside "
            f"[0, {sizes_t[bad[1]]}) for attribute {bad[1]}"
        )
    tables: dict[tuple[int, int], np.ndarray] = {}
    for i in range(m):
        scaled = {k: columns[i] * k for k in set(sizes_t[i + 1:])}  # x_i * |A_j|, one per distinct size
        for j in range(i + 1, m):
            flat = scaled[sizes_t[j]] + columns[j]
            tables[(i, j)] = np.bincount(flat, minlength=sizes_t[i] * sizes_t[j]).reshape(sizes_t[i], sizes_t[j])
    return tables



