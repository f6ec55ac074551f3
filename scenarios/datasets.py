"""Reading data files into :class:`mprr.data.Dataset` (the file I/O that ``mprr`` does not do).

- :func:`load_adult` — UCI Adult (``adult.data`` / ``adult.test``, plain or gzip-compressed), the
  8 categorical attributes of main paper 6.1 with ``?`` kept as a category (1,814,400 cells);
  :data:`BUNDLED_ADULT_DIR` / :func:`bundled_adult` — the copy shipped in ``scenarios/data/adult``
  (gzip-compressed, unchanged; CC BY 4.0, attribution and citation in its ``README.md``).
- :func:`load_table` — a CSV or Parquet file through pandas (what ``mprr run --data`` uses);
  every listed column is read as categorical text, its categories found in the data or
  declared; missing cells become a label or an error.
- :func:`short_row` — the first record of a CSV file with fewer fields than its header (named
  as malformed by :func:`load_table`, not read as missing values);
- :func:`parse_ordinal` / :func:`declare_ordinal` — ordinal columns of a file and their order
  (``--ordinal educ``, ``--ordinal 'size=S,M,L'``);
- :func:`check_category_counts` — refuses columns with a single value, or too many categories
  for randomized response (a continuous measurement, an identifier, or a first record read as
  the header);
- :func:`header_among_values` — the columns whose header name is also one of their values
  (a sign that the file has no header row and its first record was read as one);
- :func:`file_sha256` — the digest recorded as ``provenance.data_sha256``.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import hashlib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from mprr.data import Attribute, Dataset, Schema, parse_adult
from mprr.domain import MAX_MATRIX_CELLS
from mprr.errors import DataError

__all__ = ["BUNDLED_ADULT_DIR", "MAX_CATEGORIES", "MIN_RECORDS_PER_CATEGORY", "PARQUET_SUFFIXES", "SMALL_FILE_CATEGORIES",
           "bundled_adult", "check_category_counts", "declare_ordinal", "delimiter_hint", "file_sha256", "header_among_values", "load_adult",
           "load_table", "max_categories", "parse_ordinal", "short_row"]

PARQUET_SUFFIXES = (".parquet", ".pq")
"""File name endings read as Parquet by :func:`load_table`; anything else is CSV."""


MIN_RECORDS_PER_CATEGORY = 5
"""Fewest records per category, on average, of a column used by randomized response: each
category's frequency is estimated from the randomized reports of the records that hold it, and
5 is the usual smallest expected count of a contingency-table cell (the chi-squared rule of
thumb; Algorithm 1's dependences come from such tables)."""

SMALL_FILE_CATEGORIES = 64
"""Categories a column may have whatever the number of records (the most an attribute of the
built-in synthetic data has), so that a small file is not refused for a few records."""

MAX_CATEGORIES = math.isqrt(MAX_MATRIX_CELLS)
"""Most categories of a column (4,096): its dense randomization matrix (categories²) must fit in
:data:`mprr.domain.MAX_MATRIX_CELLS` (2^24 cells)."""

BUNDLED_ADULT_DIR = Path(__file__).resolve().parent / "data" / "adult"
"""The copy of UCI Adult shipped with the package (package data of :mod:`scenarios`):
``adult.data.gz``, ``adult.test.gz`` (the UCI files, gzip-compressed, otherwise unchanged) and
``adult.names``.  Becker, B. & Kohavi, R. (1996), *Adult*, UCI Machine Learning Repository,
https://doi.org/10.24432/C5XW20, licensed CC BY 4.0."""

ADULT_FILES = ("adult.data", "adult.test")
"""The two Adult files :func:`load_adult` reads (plain, or with ``.gz`` appended)."""


def bundled_adult(name: str = "adult.data") -> Path:
    """Path of the shipped, gzip-compressed Adult file ``name`` (``"adult.data"`` or ``"adult.test"``).

    Raises
    ------
    DataError
        If ``name`` is not one of the two files, or the package was installed without its data.
    """
    if name not in ADULT_FILES:
        raise DataError(f"bundled Adult file must be one of {', '.join(ADULT_FILES)}, got {name!r}")
    path = BUNDLED_ADULT_DIR / f"{name}.gz"
    if not path.is_file():
        raise DataError(f"the bundled UCI Adult file {str(path)!r} is missing: the package was installed without "
                        "its data; reinstall mprr, or give another copy (adult_path / MPRR_ADULT_DIR)")
    return path


CSV_DELIMITERS = (";", "\t", "|")
"""Separators :func:`delimiter_hint` looks for in a header read as a single field."""


def _existing_file(path: str | Path, what: str) -> Path:
    p = Path(path)
    if p.is_dir():
        raise DataError(f"{what} file {str(p)!r} is a directory, not a file; give the path of a file")
    if not p.is_file():
        raise DataError(f"{what} file not found: {str(p)!r}")
    return p


def load_adult(path: str | Path, *, encoding: str = "utf-8") -> Dataset:
    """Load UCI Adult on :func:`mprr.data.adult_schema`.

    Parameters
    ----------
    path
        ``adult.data`` or ``adult.test``, either gzip-compressed (name ending ``.gz``), or a
        directory holding ``adult.data`` or ``adult.data.gz`` (the plain file first).
    encoding
        Text encoding of the file.

    Raises
    ------
    DataError
        Missing file, malformed line or unknown category (see :func:`mprr.data.parse_adult`).
    """
    p = Path(path)
    if p.is_dir():
        p = next((c for c in (p / "adult.data", p / "adult.data.gz") if c.is_file()), p / "adult.data")
    p = _existing_file(p, "Adult")
    opened = (gzip.open(p, "rt", encoding=encoding, newline="") if p.suffix == ".gz"
              else p.open(encoding=encoding, newline=""))
    with opened as fh:
        try:
            return parse_adult(fh)
        except DataError as exc:
            raise DataError(f"{p}: {exc}") from exc
        except (OSError, EOFError) as exc:  # a damaged or truncated .gz file
            raise DataError(f"Adult file {str(p)!r} is not a readable gzip file: {exc}") from exc


def file_sha256(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes (read in 1 MiB blocks)."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_table(
    path: str | Path,
    columns: Sequence[str | Attribute] | None = None,
    *,
    missing: str | None = None,
    kinds: Mapping[str, str] | None = None,
    delimiter: str | None = None,
    encoding: str | None = None,
) -> Dataset:
    """Load categorical columns of a CSV or Parquet file with pandas.

    Parameters
    ----------
    path
        A ``.parquet`` / ``.pq`` file (needs ``pyarrow``: ``pip install 'mprr[parquet]'``) or a
        CSV file with a header line (``.tsv`` files are tab-separated).
    columns
        Columns to use, in this order (default: every column of the file): names, whose
        categories are the distinct values found (:func:`mprr.data.infer_schema`), or
        :class:`~mprr.data.Attribute` objects (declared categories; any other value is an
        error).  Every value is read as text, so ``1`` and ``1.0`` are different categories.
    missing
        Label of empty / NA cells, kept as a category (e.g. ``"?"`` as in UCI Adult); without it
        a missing cell is an error naming the column and the row.
    kinds
        ``{"name": "ordinal"|"nominal"}`` for inferred columns (default nominal).
    delimiter
        CSV field separator, one character (default ``,``; tab for ``.tsv``).
    encoding
        Text encoding of a CSV file (e.g. ``latin-1``).

    Raises
    ------
    DataError
        Missing file (or a directory), unreadable file, text not in ``encoding``, unknown
        columns, no records, missing values without ``missing``, values outside declared
        categories, Parquet without pyarrow, a delimiter that is not one character.
    """
    import pandas as pd

    p = _existing_file(path, "data")
    suffix = p.suffix.lower()
    if suffix in PARQUET_SUFFIXES and (delimiter is not None or encoding is not None):
        given = ", ".join(f"{k} = {v!r}" for k, v in (("delimiter", delimiter), ("encoding", encoding))
                          if v is not None)
        raise DataError(f"{p}: {given} applies to CSV files only; a {suffix} file is read as Parquet "
                        "(drop --delimiter / --encoding)")
    if delimiter is not None and len(delimiter) != 1:
        raise DataError(f"delimiter must be a single character, got {delimiter!r}")
    if encoding is None:
        encoding = "utf-8"
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise DataError(f"encoding must be a Python text encoding such as 'utf-8' or 'latin-1', "
                        f"got {encoding!r}") from None
    specs = None if columns is None else [c if isinstance(c, Attribute) else str(c).strip() for c in columns]
    cols = None if specs is None else [c.name if isinstance(c, Attribute) else c for c in specs]
    if cols is not None:
        if not cols:
            raise DataError("columns must list at least one column, got an empty list")
        if len(set(cols)) != len(cols):
            raise DataError(f"columns must be distinct, got {cols}")
    try:
        if suffix in PARQUET_SUFFIXES:
            try:
                frame = pd.read_parquet(p)
            except ImportError as exc:
                raise DataError(
                    f"{p}: reading Parquet needs pyarrow ({exc}); install it with "
                    "pip install 'mprr[parquet]' or convert the file to CSV"
                ) from None
            frame = frame.astype(object).where(frame.notna(), None)
            frame.columns = [str(c) for c in frame.columns]
        else:
            sep = delimiter if delimiter is not None else ("\t" if suffix == ".tsv" else ",")
            frame = pd.read_csv(p, sep=sep, dtype=str, keep_default_na=False, na_values=[""],
                                skipinitialspace=True, encoding=encoding)
            frame.columns = [str(c).strip() for c in frame.columns]
    except DataError:
        raise
    except UnicodeDecodeError as exc:
        raise DataError(f"{p}: the file is not {encoding} text ({exc}); pass its encoding, e.g. "
                        "encoding='latin-1' (--encoding latin-1 on the command line)") from None
    except pd.errors.EmptyDataError:
        raise DataError(f"{p}: the file is empty (no header line, no records)") from None
    except (ValueError, OSError) as exc:  # pandas' parser errors are ValueErrors
        raise DataError(f"{p}: cannot read the file as {'Parquet' if suffix in PARQUET_SUFFIXES else 'CSV'}: "
                        f"{exc}") from None
    if suffix not in PARQUET_SUFFIXES and frame.isna().to_numpy().any():  # a short row reads as missing cells
        sep = delimiter if delimiter is not None else ("\t" if suffix == ".tsv" else ",")
        short = short_row(p, sep=sep, encoding=encoding, width=len(frame.columns))
        if short is not None:
            row, line, fields = short
            raise DataError(
                f"{p}: data row {row:,} (line {line:,}) is malformed: it has {fields} field"
                f"{'' if fields == 1 else 's'}, the header has {len(frame.columns)}; fix the row (a field or a "
                "separator is missing): a missing value is an empty field between separators, which --missing keeps"
            )
    names = list(frame.columns) if cols is None else cols
    absent = [c for c in names if c not in frame.columns]
    if absent:
        raise DataError(f"{p}: columns {absent} are not in the file; it has {list(frame.columns)}"
                        f"{delimiter_hint(list(frame.columns))}")
    frame = frame[names]
    if len(frame) == 0:
        raise DataError(f"{p}: no records after the header line")
    na = frame.isna()
    for name in names:
        if na[name].any():
            if missing is None:
                row = int(na[name].to_numpy().argmax())
                raise DataError(
                    f"{p}: column {name!r} has {int(na[name].sum())} missing value(s) (first at data "
                    f"row {row + 1}); pass missing='?' (--missing '?' on the command line) to keep "
                    "them as a category"
                )
            frame[name] = frame[name].where(~na[name], missing)
    text = frame.astype(str).apply(lambda col: col.str.strip())
    try:
        return Dataset.from_frame(text, names if specs is None else specs, kinds=kinds)
    except DataError as exc:
        raise DataError(f"{p}: {exc}") from exc


def short_row(path: Path, *, sep: str, encoding: str, width: int) -> tuple[int, int, int] | None:
    """The first record of a CSV file with fewer than ``width`` fields, as (data row, line,
    fields), or ``None``.  pandas pads such a row with missing cells; read here with :mod:`csv`
    (the same quoting), blank lines skipped as pandas does."""
    with path.open(encoding=encoding, newline="") as fh:
        reader = csv.reader(fh, delimiter=sep, skipinitialspace=True)
        next(reader, None)  # the header
        row = 0
        for record in reader:
            if not record or (len(record) == 1 and not record[0].strip()):
                continue
            row += 1
            if len(record) < width:
                return row, reader.line_num, len(record)
    return None


def parse_ordinal(entries: Sequence[str]) -> dict[str, tuple[str, ...] | None]:
    """The ``ordinal`` parameter (``--ordinal``): each entry is a column name (ordinal, its
    categories in :func:`mprr.data.label_order`) or ``name=c1,c2,...`` (ordinal, in that order).

    Raises
    ------
    DataError
        An empty name, an order with an empty or repeated category, a column given twice.
    """
    out: dict[str, tuple[str, ...] | None] = {}
    for entry in entries:
        name, eq, order = (part.strip() for part in str(entry).partition("="))
        labels = tuple(c.strip() for c in order.split(",")) if eq else None
        if not name:
            raise DataError(f"ordinal entry {entry!r} must start with a column name: 'name' or 'name=c1,c2,...'")
        if labels is not None and (len(labels) < 2 or "" in labels or len(set(labels)) != len(labels)):
            raise DataError(f"ordinal entry {entry!r} must list at least 2 distinct, non-empty categories in "
                            "order after '=', e.g. 'size=S,M,L'")
        if name in out:
            raise DataError(f"ordinal names column {name!r} twice; give it once")
        out[name] = labels
    return out


def declare_ordinal(dataset: Dataset, declared: Mapping[str, tuple[str, ...] | None], source: str | Path) -> Dataset:
    """``dataset`` with the columns of :func:`parse_ordinal` made ordinal, in the declared order
    when one is given (the records unchanged, their codes renumbered).

    Raises
    ------
    DataError
        A declared column that is not used, or an order that leaves out a category found in
        the column (declared categories that never occur are kept: they have frequency 0).
    """
    names = list(dataset.schema.names)
    unknown = [n for n in declared if n not in names]
    if unknown:
        several = len(unknown) > 1
        raise DataError(f"ordinal names column{'s' if several else ''} {', '.join(map(repr, unknown))}, which "
                        f"{'are' if several else 'is'} not among the columns used {names}")
    attributes, codes = [], dataset.codes.copy()
    for j, attr in enumerate(dataset.schema):
        if attr.name not in declared:
            attributes.append(attr)
            continue
        order = declared[attr.name] or attr.categories
        left_out = [c for c in attr.categories if c not in order]
        if left_out:
            raise DataError(f"{source}: ordinal order of column {attr.name!r} {list(order)} leaves out "
                            f"categor{'ies' if len(left_out) > 1 else 'y'} {left_out} found in the column; "
                            f"list every category: {attr.name}={','.join([*order, *left_out])}")
        position = np.array([order.index(c) for c in attr.categories], dtype=codes.dtype)
        codes[:, j] = position[dataset.codes[:, j]]
        attributes.append(Attribute(attr.name, tuple(order), "ordinal"))
    return Dataset(Schema(tuple(attributes)), codes)


def delimiter_hint(header: Sequence[str]) -> str:
    """``"; ..."`` suggesting ``delimiter`` when ``header`` is one field holding a common
    separator other than the comma (a ``;``- or tab-separated file read as CSV), else ``""``."""
    if len(header) != 1:
        return ""
    found = [d for d in CSV_DELIMITERS if d in header[0]]
    if not found:
        return ""
    option = found[0].replace("\t", "\\t")  # what to type in a shell
    return (f"; the header was read as the single field {header[0]!r}: if the file is separated by "
            f"{found[0]!r}, pass delimiter={found[0]!r} (--delimiter '{option}' on the command line)")


def max_categories(n: int) -> int:
    """Most categories a column of ``n`` records may have for randomized response:
    ``n // MIN_RECORDS_PER_CATEGORY``, at least :data:`SMALL_FILE_CATEGORIES` and at most
    :data:`MAX_CATEGORIES`."""
    return min(MAX_CATEGORIES, max(SMALL_FILE_CATEGORIES, n // MIN_RECORDS_PER_CATEGORY))


def header_among_values(dataset: Dataset) -> list[str]:
    """Names of the columns whose header name is also one of their categories.

    In a file without a header row, the first record is read as the header, so each of its
    values reappears as a column's name; every column of ``dataset`` whose name is one of its
    own categories is returned (in column order).  A real header can do this too (a column
    ``smoker`` with the value ``smoker``), so the caller warns rather than refuses.
    """
    return [a.name for a in dataset.schema if a.name in a.categories]


def check_category_counts(dataset: Dataset, source: str | Path, *, columns_given: bool) -> None:
    """Refuse columns with a single value, or more categories than :func:`max_categories` of
    the record count.

    A column with one value (a constant column, or a column of a very small file) has nothing to
    randomize: randomized response needs at least 2 categories.  A column with too many is almost
    always a continuous measurement or an identifier, or every column looks like one because the
    file has no header row and its first record was read as one.

    Parameters
    ----------
    dataset
        The loaded table.
    source
        The file it came from (for the message).
    columns_given
        Whether the columns were chosen by name (then the header is known to be one).

    Raises
    ------
    DataError
        Naming every such column and its number of distinct values (or its single value), and
        the ``--columns`` that leave them out.
    """
    constant = [a for a in dataset.schema if a.size < 2]
    if constant:
        rest = [a.name for a in dataset.schema if a.size >= 2]
        listed = ", ".join(f"{a.name!r} (only {a.categories[0]!r})" if a.size else repr(a.name) for a in constant)
        several = len(constant) > 1
        leave_out = (f"leave {'them' if several else 'it'} out with --columns {','.join(rest)}" if len(rest) >= 2 else
                     "use a file with at least 2 columns that each take at least 2 values")
        raise DataError(
            f"{source}: column{'s' if several else ''} {listed} {'have' if several else 'has'} a single value in "
            f"all {dataset.n:,} records: randomized response needs at least 2 categories per column; {leave_out}"
        )
    limit = max_categories(dataset.n)
    wide = [(a.name, a.size) for a in dataset.schema if a.size > limit]
    if not wide:
        return
    listed = ", ".join(f"{name!r} ({size:,} distinct values)" for name, size in wide)
    header = "" if columns_given else (
        f", or, if the file has no header row, add one (the header read was "
        f"{list(dataset.schema.names)})")
    raise DataError(
        f"{source}: column{'s' if len(wide) > 1 else ''} {listed} "
        f"{'have' if len(wide) > 1 else 'has'} too many categories for randomized response: at most "
        f"{limit:,} for {dataset.n:,} records (one per {MIN_RECORDS_PER_CATEGORY} records, at least "
        f"{SMALL_FILE_CATEGORIES}, at most {MAX_CATEGORIES:,}); a continuous or identifier column "
        f"must be binned into a few categories or left out with --columns{header}"
    )
