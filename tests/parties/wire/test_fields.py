"""parties.wire.fields: annotation parsing and per-field coercion (used by messages and the codec)."""

from __future__ import annotations

from typing import Annotated, Optional

import numpy as np
import pytest

from mprr.errors import MessageError
from parties.wire.fields import (
    INT64_MAX,
    ArraySpec,
    FieldType,
    FloatArray,
    IntArray,
    coercer,
    has_array,
    parse_type,
)


@pytest.mark.parametrize(
    ("annotation", "described"),
    [
        (int, "int"),
        (float, "float"),
        (bool, "bool"),
        (str, "str"),
        (bytes, "bytes"),
        (tuple[int, ...], "tuple[int, ...]"),
        (tuple[int, str], "tuple[int, str]"),
        (tuple[tuple[float, ...], ...], "tuple[tuple[float, ...], ...]"),
        (int | None, "int | None"),
        (Optional[str], "str | None"),  # noqa: UP007 - both spellings must work
        (np.ndarray, "ndarray[any]"),
        (FloatArray, "ndarray[float64]"),
        (IntArray, "ndarray[int64]"),
        (Annotated[np.ndarray, ArraySpec(("int8", "uint8"), ndim=2)], "ndarray[int8|uint8, ndim=2]"),
        (tuple[np.ndarray, ...], "tuple[ndarray[any], ...]"),
        (Annotated[int, "doc only"], "int"),
    ],
)
def test_parse_and_describe(annotation: object, described: str) -> None:
    assert parse_type(annotation, "X.f").describe() == described


@pytest.mark.parametrize("annotation", [list[int], tuple[()], tuple[int, ...] | str, int | str | None, dict])
def test_unsupported_annotations(annotation: object) -> None:
    with pytest.raises(MessageError, match=r"X\.f: field type .* is not supported"):
        parse_type(annotation, "X.f")


def test_array_spec_rejects_unknown_dtypes() -> None:
    with pytest.raises(MessageError, match=r"ArraySpec dtype must be one of .*got 'float32'"):
        ArraySpec(("float32",))


def test_has_array_looks_inside_containers() -> None:
    assert has_array(parse_type(tuple[int | None, tuple[np.ndarray, ...]], "f"))
    assert not has_array(parse_type(tuple[int, ...], "f"))
    assert has_array(FieldType("array", spec=ArraySpec()))


def test_coercers() -> None:
    c_int = coercer(parse_type(int, "M.n"), "M.n")
    assert c_int(np.uint8(7)) == 7 and c_int(INT64_MAX) == INT64_MAX
    with pytest.raises(MessageError, match=r"M\.n must fit in a signed 64-bit integer"):
        c_int(INT64_MAX + 1)
    c_fixed = coercer(parse_type(tuple[int, str], "M.p"), "M.p")
    assert c_fixed([1, "a"]) == (1, "a")
    with pytest.raises(MessageError, match=r"M\.p must be tuple\[int, str\], got \(1,\)"):
        c_fixed((1,))
    with pytest.raises(MessageError, match=r"M\.p\[1\] must be str, got 2"):
        c_fixed((1, 2))
    c_seq = coercer(parse_type(tuple[int, ...], "M.s"), "M.s")
    assert c_seq(np.array([1, 2])) == (1, 2)
    with pytest.raises(MessageError, match=r"M\.s must be tuple\[int, \.\.\.\], got 'ab'"):
        c_seq("ab")
    c_any = coercer(parse_type(np.ndarray, "M.a"), "M.a")
    assert c_any([1.5, 2]).dtype == np.float64 and c_any([1, 2]).dtype == np.int64
    with pytest.raises(MessageError, match=r"M\.a must have dtype in .*got dtype bool"):
        c_any([True])
    long = "x" * 200
    with pytest.raises(MessageError, match=r"got '.{70,}\.\.\.$"):
        c_int(long)
