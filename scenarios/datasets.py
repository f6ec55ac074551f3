"""Reading data files into :class:`mprr.data.Dataset` (the file I/O that ``mprr`` does not do).

- :func:`load_adult` — UCI Adult (``adult.data`` / ``adult.test``), the 8 categorical
  attributes of main paper 6.1 with ``?`` kept as a category (1,814,400 cells).
- :func:`load_csv` — any CSV with a header line, restricted to the listed columns.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from pathlib import Path

from mprr.data import Attribute, Dataset, Schema, infer_schema, parse_adult
from mprr.errors import DataError

__all__ = ["load_adult", "load_csv"]


def _existing_file(path: str | Path, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise DataError(f"{what} file not found: {str(p)!r}")
    return p


def load_adult(path: str | Path, *, encoding: str = "utf-8") -> Dataset:
    """Load UCI Adult on :func:`mprr.data.adult_schema`.

    Parameters
    ----------
    path
        ``adult.data`` or ``adult.test``, or a directory holding ``adult.data``.
    encoding
        Text encoding of the file.

    Raises
    ------
    DataError
        Missing file, malformed line or unknown category (see :func:`mprr.data.parse_adult`).
    """
    p = Path(path)
    if p.is_dir():
        p = p / "adult.data"
    p = _existing_file(p, "Adult")
    with p.open(encoding=encoding, newline="") as fh:
        try:
            return parse_adult(fh)
        except DataError as exc:
            raise DataError(f"{p}: {exc}") from exc


def load_csv(
    path: str | Path,
    columns: Sequence[str | Attribute],
    kinds: Mapping[str, str] | None = None,
    *,
    delimiter: str = ",",
    missing: str | None = None,
    encoding: str = "utf-8",
) -> Dataset:
    """Load the listed columns of a CSV file with a header line.

    Parameters
    ----------
    path
        The CSV file.
    columns
        Column names (categories inferred from the data, see :func:`mprr.data.infer_schema`)
        or :class:`~mprr.data.Attribute` objects (declared categories; any other value is an
        error).  The data set's attributes follow this order.
    kinds
        ``{"name": "ordinal"|"nominal"}`` for inferred columns (default nominal).
    delimiter
        Field separator.
    missing
        If given, empty cells are read as this category label (e.g. ``"?"``); otherwise an
        empty cell is an error.
    encoding
        Text encoding.

    Raises
    ------
    DataError
        Missing file, no header, missing columns, no records, ragged rows, values outside the
        declared categories, empty cells without ``missing``.
    """
    p = _existing_file(path, "CSV")
    cols = list(columns)
    if not cols:
        raise DataError("columns must list at least one column")
    names = [c.name if isinstance(c, Attribute) else c for c in cols]
    if len(set(names)) != len(names):
        raise DataError(f"columns must be distinct, got {names}")
    with p.open(encoding=encoding, newline="") as fh:
        reader = csv.reader(fh, delimiter=delimiter)
        header = next(reader, None)
        if header is None:
            raise DataError(f"{p}: the file is empty (no header line)")
        header = [h.strip() for h in header]
        absent = [n for n in names if n not in header]
        if absent:
            raise DataError(f"{p}: missing columns {absent}; the header has {header}")
        idx = [header.index(n) for n in names]
        rows = []
        for lineno, row in enumerate(reader, start=2):
            if not row or all(not f.strip() for f in row):
                continue
            if len(row) != len(header):
                raise DataError(
                    f"{p}: line {lineno} has {len(row)} fields, the header has {len(header)}"
                )
            values = [row[i].strip() for i in idx]
            if missing is not None:
                values = [v if v else missing for v in values]
            elif any(v == "" for v in values):
                empty = names[values.index("")]
                raise DataError(
                    f"{p}: line {lineno} has an empty value in column {empty!r}; pass "
                    "missing='?' (or another label) to keep missing values as a category"
                )
            rows.append(values)
    if not rows:
        raise DataError(f"{p}: no records after the header line")
    infer = [n for c, n in zip(cols, names) if not isinstance(c, Attribute)]
    if kinds:
        unknown = set(kinds) - set(infer)
        if unknown:
            raise DataError(f"kinds given for columns that are not inferred: {sorted(unknown)}")
    inferred = (
        infer_schema([[r[names.index(n)] for n in infer] for r in rows], infer, kinds)
        if infer
        else None
    )
    schema = Schema(
        tuple(c if isinstance(c, Attribute) else inferred[c] for c in cols)  # type: ignore[index]
    )
    try:
        return Dataset.from_rows(rows, schema)
    except DataError as exc:
        raise DataError(f"{p}: {exc}") from exc
