"""Tests of mprr.domain: the parameter checks, joint codes (C order) and tallies."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from mprr.domain import check_cells, check_real, check_sizes, decode_joint, encode_joint, joint_tally, tally
from mprr.errors import ConfigurationError, DataError, DomainTooLargeError


def test_encode_is_c_order_like_ravel_multi_index(rng: np.random.Generator) -> None:
    sizes = (3, 4, 2)
    codes = np.stack([rng.integers(0, s, 500) for s in sizes], axis=1)
    flat = encode_joint(codes, sizes)
    np.testing.assert_array_equal(flat, np.ravel_multi_index(tuple(codes.T), sizes))
    assert flat.dtype == np.int64
    np.testing.assert_array_equal(decode_joint(flat, sizes), codes)
    # exact known values: (1, 2, 1) -> 1*8 + 2*2 + 1 = 13
    assert encode_joint(np.array([[1, 2, 1], [0, 0, 0], [2, 3, 1]]), sizes).tolist() == [13, 0, 23]


def test_empty_inputs() -> None:
    assert encode_joint(np.zeros((0, 2), dtype=int), (2, 3)).shape == (0,)
    assert decode_joint(np.zeros(0, dtype=int), (2, 3)).shape == (0, 2)
    np.testing.assert_array_equal(tally(np.zeros(0, dtype=int), 3), [0, 0, 0])


def test_tally_and_joint_tally(rng: np.random.Generator) -> None:
    np.testing.assert_array_equal(tally(np.array([0, 2, 2, 1, 2]), 4), [1, 1, 3, 0])
    sizes = (2, 3)
    codes = np.array([[0, 0], [1, 2], [1, 2], [0, 1]])
    t = joint_tally(codes, sizes)
    np.testing.assert_array_equal(t, [[1, 1, 0], [0, 0, 2]])
    codes = np.stack([rng.integers(0, s, 1000) for s in (4, 5, 3)], axis=1)
    t = joint_tally(codes, (4, 5, 3))
    assert t.shape == (4, 5, 3) and t.sum() == 1000
    np.testing.assert_array_equal(t.sum(axis=(1, 2)), np.bincount(codes[:, 0], minlength=4))


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: encode_joint(np.array([[0, 3]]), (2, 3)), DataError, r"column 1 must be in \[0, 3\), got 3"),
        (lambda: encode_joint(np.array([[-1, 0]]), (2, 3)), DataError, r"column 0 must be in \[0, 2\), got -1"),
        (lambda: encode_joint(np.array([[0.5, 0]]), (2, 3)), DataError, "integer array"),
        (lambda: encode_joint(np.array([[0, 0, 0]]), (2, 3)), DataError, "2 columns"),
        (lambda: encode_joint(np.array([0, 0]), (2, 3)), DataError, "2-D"),
        (lambda: decode_joint(np.array([6]), (2, 3)), DataError, r"flat must be in \[0, 6\), got 6"),
        (lambda: tally(np.array([0, 4]), 4), DataError, r"in \[0, 4\), got 4"),
        (lambda: tally(np.array([0]), 0), ConfigurationError, "r must be an integer >= 1, got 0"),
        (lambda: check_sizes(()), ConfigurationError, "non-empty"),
        (lambda: check_sizes((2, 0)), ConfigurationError, r"sizes\[1\] must be an integer >= 1, got 0"),
        (lambda: check_sizes("ab"), ConfigurationError, "sequence"),
        (lambda: check_sizes((2**40, 2**40)), DomainTooLargeError, "2\\*\\*62"),
        (lambda: joint_tally(np.zeros((1, 3), dtype=int), (2**10, 2**10, 2**10)), DomainTooLargeError, "cells"),
    ],
)
def test_bad_inputs(call: object, exc: type[Exception], match: str) -> None:
    with pytest.raises(exc, match=match):
        call()  # type: ignore[operator]


def test_check_cells_names_what_the_value_and_the_limit() -> None:
    assert check_cells(12, 12, "x") == 12
    with pytest.raises(DomainTooLargeError, match=r"^a table needs 13 cells, more than max_cells=12$") as info:
        check_cells(13, 12, "a table")
    assert (info.value.cells, info.value.limit) == (13, 12)
    with pytest.raises(DomainTooLargeError, match=r"needs 1,000,000 cells, more than LIMIT=999; do less"):
        check_cells(10**6, 999, "it", name="LIMIT", remedy="do less")
    with pytest.raises(DomainTooLargeError, match=r"tally tensor of sizes \(3, 4\) needs 12 cells, more than max_cells=11"):
        joint_tally(np.zeros((1, 2), dtype=np.int64), (3, 4), max_cells=11)


def test_check_sizes_is_strict_and_names_the_parameter() -> None:
    assert check_sizes(np.array([2, 3])) == (2, 3)
    with pytest.raises(ConfigurationError, match=r"block_sizes\[1\] must be an integer >= 1, got 2.0"):
        check_sizes((2, 2.0), name="block_sizes")
    with pytest.raises(DomainTooLargeError, match=r"joint domain of sizes .* more than 2\*\*62"):
        check_sizes((2**31, 2**31, 4))


def test_check_real_takes_real_numbers_only_and_names_the_rule() -> None:
    assert check_real("tol", 0) == 0.0 and check_real("tol", np.float32(0.5)) == 0.5
    assert check_real("budget", math.inf, allow_inf=True) == math.inf
    assert check_real("Tv", -3, minimum=None, allow_inf=True) == -3.0
    assert check_real("timeout", 1e-9, strict=True) == 1e-9 and check_real("every", math.inf, strict=True, allow_inf=True) == math.inf
    for value, kwargs, allowed in [
        (-1.0, {}, "a finite number >= 0"),
        (math.inf, {}, "a finite number >= 0"),
        (math.nan, {"allow_inf": True}, r"a number >= 0 or math.inf"),
        ("0.5", {}, "a finite number >= 0"),  # strings are not parsed
        (True, {"minimum": None, "allow_inf": True}, "a real number"),
        (0.5, {"minimum": 1.0}, "a finite number >= 1"),
        (0, {"strict": True}, "a finite number > 0"),
        (0.0, {"strict": True, "allow_inf": True}, r"a number > 0 or math.inf"),
    ]:
        with pytest.raises(ConfigurationError, match=rf"x must be {allowed}, got {re.escape(repr(value))}"):
            check_real("x", value, **kwargs)
