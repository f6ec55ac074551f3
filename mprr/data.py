"""Categorical attributes, schemas and encoded data sets (no file I/O here).

A :class:`Dataset` is a :class:`Schema` plus an ``(n, m)`` int64 array of category codes:
``codes[i, j]`` is the index of record ``i``'s value in ``schema.attributes[j].categories``.
Joint tallies are tensors with one axis per attribute in schema order.

The UCI Adult schema of main paper Section 6.1 (8 categorical attributes, ``?`` kept as a
category, 9·16·7·15·6·5·2·2 = 1,814,400 cells) is :func:`adult_schema`; :func:`parse_adult`
encodes lines of ``adult.data`` / ``adult.test``.  Reading files is the job of
``scenarios.datasets``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mprr.distributions import WeightedSample, check_axes
from mprr.domain import MAX_TENSOR_CELLS, check_cells
from mprr.errors import DataError

__all__ = [
    "Attribute",
    "Schema",
    "Dataset",
    "KINDS",
    "infer_schema",
    "label_order",
    "adult_schema",
    "parse_adult",
    "ADULT_COLUMNS",
    "ADULT_ATTRIBUTES",
]

KINDS = ("nominal", "ordinal")


def _short(values: Sequence[Any], limit: int = 12) -> str:
    vals = list(values)
    text = ", ".join(repr(v) for v in vals[:limit])
    return text + (f", ... ({len(vals)} in all)" if len(vals) > limit else "")


# --------------------------------------------------------------------------- attribute


@dataclass(frozen=True)
class Attribute:
    """One categorical attribute.

    Parameters
    ----------
    name
        Non-empty attribute name.
    categories
        Non-empty tuple of distinct, non-empty category labels; the code of a value is its
        index here.  For ordinal attributes the tuple order is the order of the scale.
    kind
        One of :data:`KINDS`, ``"nominal"`` or ``"ordinal"`` (chooses |Pearson| vs Cramér's V,
        main paper 4.1); checked when the attribute is made.
    """

    name: str
    categories: tuple[str, ...]
    kind: str = "nominal"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise DataError(f"attribute name must be a non-empty string, got {self.name!r}")
        if isinstance(self.categories, str) or not isinstance(self.categories, Iterable):
            raise DataError(
                f"categories of {self.name!r} must be a tuple of strings, got {self.categories!r}"
            )
        cats = tuple(self.categories)
        object.__setattr__(self, "categories", cats)
        if not cats:
            raise DataError(f"attribute {self.name!r} must have at least one category, got none")
        bad = [c for c in cats if not isinstance(c, str) or c == ""]
        if bad:
            raise DataError(
                f"categories of {self.name!r} must be non-empty strings (map missing values to "
                f"an explicit category such as '?'), got {_short(bad)}"
            )
        if len(set(cats)) != len(cats):
            dup = sorted({c for c in cats if cats.count(c) > 1})
            raise DataError(f"categories of {self.name!r} must be distinct, duplicated: {_short(dup)}")
        if self.kind not in KINDS:
            raise DataError(
                f"kind of {self.name!r} must be one of {KINDS}, got {self.kind!r}"
            )

    @property
    def size(self) -> int:
        """Number of categories."""
        return len(self.categories)

    def code(self, value: str) -> int:
        """Code of one category label (DataError if it is not declared)."""
        try:
            return self.categories.index(value)
        except ValueError:
            raise DataError(
                f"value {value!r} is not a category of {self.name!r}; allowed: {_short(self.categories)}"
            ) from None

    def encode(self, values: Sequence[Any] | np.ndarray, *, strip: bool = True) -> np.ndarray:
        """Vectorized codes of many labels (values are converted with ``str``).

        Raises
        ------
        DataError
            If a value is not a declared category (the message lists the first offenders).
        """
        obj = np.asarray(values, dtype=object)
        missing = (obj == None) | (obj != obj)  # noqa: E711 - elementwise None / NaN test
        if np.any(missing):
            raise DataError(
                f"attribute {self.name!r} has missing values (None/NaN) in {int(missing.sum())} "
                "records; map them to an explicit category such as '?'"
            )
        arr = obj.astype(str)
        if strip:
            arr = np.char.strip(arr)
        cats = np.asarray(self.categories, dtype=str)
        order = np.argsort(cats)
        pos = np.searchsorted(cats, arr, sorter=order) if arr.size else np.zeros(0, dtype=np.int64)
        pos = np.clip(pos, 0, cats.size - 1)
        codes = order[pos]
        bad = cats[codes] != arr
        if np.any(bad):
            unknown = list(dict.fromkeys(arr[bad].tolist()))
            raise DataError(
                f"attribute {self.name!r} has values outside its declared categories: "
                f"{_short(unknown, 5)}; allowed: {_short(self.categories)}"
            )
        return codes.astype(np.int64)


# --------------------------------------------------------------------------- schema


@dataclass(frozen=True)
class Schema:
    """An ordered tuple of attributes with distinct names."""

    attributes: tuple[Attribute, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        attrs = tuple(self.attributes)
        object.__setattr__(self, "attributes", attrs)
        if not attrs:
            raise DataError("a schema needs at least one attribute, got none")
        bad = [a for a in attrs if not isinstance(a, Attribute)]
        if bad:
            raise DataError(f"schema attributes must be Attribute instances, got {_short(bad, 3)}")
        names = [a.name for a in attrs]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise DataError(f"attribute names must be distinct, duplicated: {_short(dup)}")
        object.__setattr__(self, "_index", {n: i for i, n in enumerate(names)})

    def __len__(self) -> int:
        return len(self.attributes)

    def __iter__(self) -> Iterator[Attribute]:
        return iter(self.attributes)

    def __getitem__(self, key: int | str) -> Attribute:
        return self.attributes[self.index(key) if isinstance(key, str) else key]

    @property
    def m(self) -> int:
        """Number of attributes."""
        return len(self.attributes)

    @property
    def names(self) -> tuple[str, ...]:
        """Attribute names, in schema order."""
        return tuple(a.name for a in self.attributes)

    @property
    def sizes(self) -> tuple[int, ...]:
        """Category counts |A_j| (the joint domain's tensor shape)."""
        return tuple(a.size for a in self.attributes)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Attribute kinds (nominal / ordinal: eq. (9) or eq. (8) in main paper Section 4)."""
        return tuple(a.kind for a in self.attributes)

    @property
    def cells(self) -> int:
        """Number of cells of the joint domain (product of the sizes), exact Python int."""
        return math.prod(self.sizes)

    def index(self, name: str) -> int:
        """Position of the attribute called ``name``."""
        try:
            return self._index[name]
        except (KeyError, TypeError):
            raise DataError(
                f"unknown attribute {name!r}; the schema has {_short(self.names)}"
            ) from None

    def resolve(self, name_or_index: str | int) -> int:
        """Position of an attribute given by name or index."""
        if isinstance(name_or_index, str):
            return self.index(name_or_index)
        if isinstance(name_or_index, (int, np.integer)) and not isinstance(name_or_index, bool):
            if 0 <= int(name_or_index) < self.m:
                return int(name_or_index)
        raise DataError(
            f"attribute must be a name or an index in [0, {self.m}), got {name_or_index!r}"
        )

    def subset(self, names: Sequence[str | int]) -> Schema:
        """Schema of the attributes ``names`` (names or indices), in the order given."""
        if isinstance(names, str):
            names = (names,)
        idx = [self.resolve(n) for n in names]
        return Schema(tuple(self.attributes[i] for i in idx))


def label_order(label: str) -> tuple[int, float, str]:
    """Sort key of inferred category labels: labels that read as finite numbers first, in
    numeric order (``"9"`` before ``"12"``; equal numbers such as ``"1"`` and ``"1.0"`` in
    code-point order), then every other label in code-point order (as ``sorted`` on ``str``)."""
    try:
        number = float(label)
    except ValueError:
        return (1, 0.0, label)
    return (0, number, label) if math.isfinite(number) else (1, 0.0, label)


def infer_schema(
    rows: Sequence[Sequence[Any]] | np.ndarray,
    names: Sequence[str],
    kinds: Mapping[str, str] | Sequence[str] | None = None,
) -> Schema:
    """Build a schema whose categories are the distinct values found in ``rows``.

    Categories are sorted by :func:`label_order` (numbers numerically, then the other labels in
    code-point order), whatever the kind; an ordinal attribute whose order is not that one is
    declared as an :class:`Attribute`.  Values are stripped ``str``.
    ``kinds`` maps a name to its kind (or lists kinds in column order); default nominal.
    ``rows`` may be a 2-D array (one column per name); values are converted and stripped
    as whole columns (no Python loop over records).
    """
    names = list(names)
    if len(rows) == 0:
        raise DataError("cannot infer a schema from empty data (no rows)")
    if kinds is None:
        kind_of = {n: "nominal" for n in names}
    elif isinstance(kinds, Mapping):
        unknown = set(kinds) - set(names)
        if unknown:
            raise DataError(f"kinds given for unknown columns {sorted(unknown)}; columns: {names}")
        kind_of = {n: kinds.get(n, "nominal") for n in names}
    else:
        if len(kinds) != len(names):
            raise DataError(f"need one kind per column ({len(names)}), got {len(kinds)}")
        kind_of = dict(zip(names, kinds))
    try:
        raw = np.asarray(rows, dtype=object)
    except ValueError:  # ragged rows
        raw = np.empty(0, dtype=object)
    if raw.ndim != 2 or raw.shape[1] != len(names):
        lengths = sorted({len(r) for r in rows if isinstance(r, (list, tuple)) or getattr(r, "ndim", 0) == 1})
        raise DataError(
            f"rows must each have {len(names)} values (one per name in names={names}), "
            f"got rows of {lengths or 'no'} values"
        )
    table = np.char.strip(raw.astype(str))
    attrs = []
    for j, name in enumerate(names):
        values = sorted(np.unique(table[:, j]).tolist(), key=label_order)
        attrs.append(Attribute(name, tuple(values), kind_of[name]))
    return Schema(tuple(attrs))


# --------------------------------------------------------------------------- dataset


@dataclass(frozen=True, eq=False)
class Dataset:
    """A data set of ``n`` records over a schema, stored as category codes.

    Parameters
    ----------
    schema
        The attributes (columns) in order.
    codes
        ``(n, m)`` integer array, ``n >= 1``, ``codes[:, j]`` in ``[0, sizes[j])``.  Stored as a
        read-only int64 copy.

    Raises
    ------
    DataError
        Wrong shape, no records, non-integer codes, codes out of range.
    """

    schema: Schema
    codes: np.ndarray

    def __post_init__(self) -> None:
        if not isinstance(self.schema, Schema):
            raise DataError(f"schema must be a Schema, got {type(self.schema).__name__}")
        arr = np.asarray(self.codes)
        m = self.schema.m
        if arr.ndim != 2 or arr.shape[1] != m:
            raise DataError(f"codes must have shape (n, {m}) for this schema, got shape {arr.shape}")
        if arr.shape[0] == 0:
            raise DataError("a data set needs at least one record, got 0")
        if arr.dtype == bool or not np.issubdtype(arr.dtype, np.integer):
            raise DataError(f"codes must be integers, got dtype {arr.dtype}")
        lo, hi = arr.min(axis=0), arr.max(axis=0)
        sizes = np.asarray(self.schema.sizes)
        bad = np.flatnonzero((lo < 0) | (hi >= sizes))
        if bad.size:
            j = int(bad[0])
            raise DataError(
                f"codes of attribute {self.schema.names[j]!r} must lie in [0, {sizes[j]}), "
                f"got values in [{lo[j]}, {hi[j]}]"
            )
        out = np.array(arr, dtype=np.int64, copy=True)
        out.setflags(write=False)
        object.__setattr__(self, "codes", out)

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.codes.shape[0])

    @property
    def m(self) -> int:
        """Number of attributes."""
        return self.schema.m

    @property
    def sizes(self) -> tuple[int, ...]:
        """Category counts of the schema."""
        return self.schema.sizes

    def column(self, name_or_index: str | int) -> np.ndarray:
        """Read-only ``(n,)`` codes of one attribute."""
        return self.codes[:, self.schema.resolve(name_or_index)]

    def select(self, names: Sequence[str | int]) -> Dataset:
        """The data set restricted to ``names`` (names or indices), in that order."""
        if isinstance(names, str):
            names = (names,)
        idx = [self.schema.resolve(n) for n in names]
        return Dataset(self.schema.subset(idx), self.codes[:, idx])

    def joint_counts(
        self, axes: Sequence[str | int] | None = None, *, max_cells: int = MAX_TENSOR_CELLS
    ) -> np.ndarray:
        """Contingency tensor of counts over ``axes`` (default all), axes in the order given.

        Raises
        ------
        DomainTooLargeError
            If the tensor would have more than ``max_cells`` cells.
        """
        idx = list(range(self.m)) if axes is None else [self.schema.resolve(a) for a in axes]
        idx = list(check_axes(idx, self.m))
        sub = tuple(self.schema.sizes[a] for a in idx)
        cells = check_cells(math.prod(sub), max_cells, f"joint_counts over {[self.schema.names[a] for a in idx]}")
        if not idx:
            return np.array(self.n, dtype=np.int64)
        flat = np.ravel_multi_index(tuple(self.codes[:, a] for a in idx), sub)
        return np.bincount(flat, minlength=cells).astype(np.int64).reshape(sub)

    def marginal(self, axis: str | int) -> np.ndarray:
        """``(r,)`` counts of the categories of one attribute (divide by ``n`` for frequencies)."""
        return self.joint_counts((axis,))

    def distribution(self) -> WeightedSample:
        """The empirical joint distribution (unit weight per record), never dense."""
        return WeightedSample(self.codes, np.ones(self.n), self.schema.sizes)

    def values(self, name_or_index: str | int) -> np.ndarray:
        """Category labels of one attribute (decoded column)."""
        j = self.schema.resolve(name_or_index)
        labels: np.ndarray = np.asarray(self.schema.attributes[j].categories, dtype=object)[self.codes[:, j]]
        return labels

    @classmethod
    def from_frame(
        cls,
        df: Any,
        attributes: Schema | Sequence[Attribute | str],
        *,
        kinds: Mapping[str, str] | None = None,
        strip: bool = True,
    ) -> Dataset:
        """Encode a pandas-like DataFrame (anything with ``.columns`` and ``df[name]``).

        Parameters
        ----------
        df
            The frame; pandas is not imported by this module.
        attributes
            A Schema, or a sequence whose items are Attributes (declared categories) or column
            names (categories inferred from the data, see :func:`infer_schema`).
        kinds
            Kinds of inferred attributes (default nominal).
        strip
            Strip surrounding whitespace from values before matching.

        Raises
        ------
        DataError
            Missing columns, empty frame, values outside the declared categories.
        """
        attrs = list(attributes.attributes if isinstance(attributes, Schema) else attributes)
        if not attrs:
            raise DataError("attributes must name at least one column")
        names = [a.name if isinstance(a, Attribute) else a for a in attrs]
        columns = [str(c) for c in getattr(df, "columns", [])]
        missing = [n for n in names if n not in columns]
        if missing:
            raise DataError(f"missing columns {missing}; the frame has {_short(columns)}")
        cols = [np.asarray(df[n], dtype=object) for n in names]
        if cols[0].shape[0] == 0:
            raise DataError("a data set needs at least one record, the frame is empty")
        resolved = [a for a in attrs if isinstance(a, Attribute)]
        if len(resolved) < len(attrs):
            infer_names = [n for a, n in zip(attrs, names) if not isinstance(a, Attribute)]
            rows = np.stack([cols[names.index(n)] for n in infer_names], axis=1)
            inferred = infer_schema(rows, infer_names, {k: v for k, v in (kinds or {}).items() if k in infer_names})
            resolved = [a if isinstance(a, Attribute) else inferred[a] for a in attrs]
        schema = Schema(tuple(resolved))
        codes = np.stack([a.encode(c, strip=strip) for a, c in zip(schema, cols)], axis=1)
        return cls(schema, codes)

    def __repr__(self) -> str:
        return f"Dataset(n={self.n}, attributes={self.schema.names})"


# --------------------------------------------------------------------------- UCI Adult

#: Column names of adult.data / adult.test, in file order (adult.names).
ADULT_COLUMNS = (
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
)

#: The 8 categorical attributes of main paper Section 6.1, in paper order.
ADULT_ATTRIBUTES = (
    "workclass", "education", "marital-status", "occupation",
    "relationship", "race", "sex", "income",
)

_ADULT_CATEGORIES: dict[str, tuple[str, ...]] = {
    # Nominal: the order of adult.names, with "?" (missing) appended where it occurs.
    "workclass": (
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov", "Local-gov",
        "State-gov", "Without-pay", "Never-worked", "?",
    ),
    # Ordinal, ordered by education-num 1..16.
    "education": (
        "Preschool", "1st-4th", "5th-6th", "7th-8th", "9th", "10th", "11th", "12th",
        "HS-grad", "Some-college", "Assoc-voc", "Assoc-acdm", "Bachelors", "Masters",
        "Prof-school", "Doctorate",
    ),
    "marital-status": (
        "Married-civ-spouse", "Divorced", "Never-married", "Separated", "Widowed",
        "Married-spouse-absent", "Married-AF-spouse",
    ),
    "occupation": (
        "Tech-support", "Craft-repair", "Other-service", "Sales", "Exec-managerial",
        "Prof-specialty", "Handlers-cleaners", "Machine-op-inspct", "Adm-clerical",
        "Farming-fishing", "Transport-moving", "Priv-house-serv", "Protective-serv",
        "Armed-Forces", "?",
    ),
    "relationship": ("Wife", "Own-child", "Husband", "Not-in-family", "Other-relative", "Unmarried"),
    "race": ("White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"),
    "sex": ("Female", "Male"),
    "income": ("<=50K", ">50K"),
}


def adult_schema() -> Schema:
    """Schema of the 8 categorical Adult attributes (main paper 6.1): sizes
    (9, 16, 7, 15, 6, 5, 2, 2), 1,814,400 cells; education ordinal, the rest nominal."""
    return Schema(
        tuple(
            Attribute(name, _ADULT_CATEGORIES[name], "ordinal" if name == "education" else "nominal")
            for name in ADULT_ATTRIBUTES
        )
    )


def parse_adult(lines: Iterable[str]) -> Dataset:
    """Encode lines of UCI Adult (``adult.data`` or ``adult.test``) on :func:`adult_schema`.

    Handles the spaces after commas, blank lines (the trailing empty line), the header line
    of adult.test (starting with ``|``) and the ``.`` after its income labels.  ``?`` is kept
    as a category (main paper 6.1).

    Raises
    ------
    DataError
        A line without 15 fields, a value outside the schema (with the line number), no records.
    """
    schema = adult_schema()
    cols = [ADULT_COLUMNS.index(a) for a in ADULT_ATTRIBUTES]
    lookup = [{c: i for i, c in enumerate(a.categories)} for a in schema]
    rows: list[list[int]] = []
    for lineno, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("|"):
            continue
        fields = [f.strip() for f in text.split(",")]
        if len(fields) != len(ADULT_COLUMNS):
            raise DataError(
                f"Adult line {lineno} must have {len(ADULT_COLUMNS)} comma-separated fields, "
                f"got {len(fields)}: {text[:80]!r}"
            )
        fields[-1] = fields[-1].rstrip(".")
        try:
            rows.append([lk[fields[c]] for lk, c in zip(lookup, cols)])
        except KeyError:
            for attr, lk, c in zip(schema, lookup, cols):
                if fields[c] not in lk:
                    raise DataError(
                        f"Adult line {lineno}: value {fields[c]!r} of {attr.name!r} is not a "
                        f"known category; allowed: {_short(attr.categories)}"
                    ) from None
    if not rows:
        raise DataError("no Adult records found (empty input)")
    return Dataset(schema, np.asarray(rows, dtype=np.int64))
