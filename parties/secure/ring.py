"""Arithmetic in the ring Z_M of integers modulo M, vectorized with numpy.

Elements are stored in the smallest unsigned dtype that holds ``M - 1`` (uint8 ... uint64), so
that a message carrying a share vector is as small as the modulus allows (the main paper's
modulus n + 1 = 1001 fits in 2 bytes per cell).  Arithmetic is done in uint64 and reduced; for
``M = 2**64`` the native uint64 wrap-around *is* the reduction.

Uniform sampling draws words from a :class:`~parties.secure.prg.Keystream`: for a power of two
the low bits of a word are uniform (rejection-free); for any other modulus the low
bitlength(M - 1) bits are kept and values >= M redrawn, so the result is exactly uniform on
Z_M (no division, acceptance > 1/2).
"""

from __future__ import annotations

import math

import numpy as np

from mprr.errors import ConfigurationError
from parties.secure.prg import Keystream

__all__ = ["ZMod", "MAX_MODULUS"]

MAX_MODULUS = 1 << 64
_DTYPES = (np.dtype(np.uint8), np.dtype(np.uint16), np.dtype(np.uint32), np.dtype(np.uint64))
_LITTLE = np.little_endian


class ZMod:
    """The ring Z_M (2 <= M <= 2^64 for powers of two, M <= 2^32 otherwise).

    Parameters
    ----------
    modulus
        M: a power of two up to 2^64, or any integer up to 2^32.  Main paper Section 4.2 uses M = n + 1 (a count of n indicators is at most n, so it
        is recovered exactly mod n + 1); the graph and masked engines use M = 2^32 or 2^64.
    """

    __slots__ = ("modulus", "dtype", "_power_of_two", "_mask", "_native", "_full_range")

    def __init__(self, modulus: int) -> None:
        if isinstance(modulus, bool) or not isinstance(modulus, (int, np.integer)):
            raise ConfigurationError(f"modulus must be an integer, got {modulus!r}")
        modulus = int(modulus)
        if not 2 <= modulus <= MAX_MODULUS:
            raise ConfigurationError(f"modulus must be in [2, 2**64], got {modulus}")
        if modulus & (modulus - 1) and modulus > 1 << 32:
            raise ConfigurationError(
                f"modulus must be a power of two or at most 2**32, got {modulus}"
            )
        self.modulus = modulus
        self.dtype = next(dt for dt in _DTYPES if modulus - 1 <= np.iinfo(dt).max)
        self._power_of_two = modulus & (modulus - 1) == 0
        self._mask = np.uint64((modulus - 1) & 0xFFFF_FFFF_FFFF_FFFF)
        # M = 2^(bits of the dtype): the dtype's own wrap-around is the reduction
        self._native = modulus == 1 << (8 * self.dtype.itemsize)
        self._full_range = modulus - 1 == int(np.iinfo(self.dtype).max)

    def __repr__(self) -> str:
        return f"ZMod({self.modulus})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ZMod) and other.modulus == self.modulus

    def __hash__(self) -> int:
        return hash(("ZMod", self.modulus))

    @property
    def element_bytes(self) -> int:
        """Bytes per stored element."""
        return self.dtype.itemsize

    # ---------------------------------------------------------------- conversion
    def reduce(self, values: np.ndarray) -> np.ndarray:
        """Reduce non-negative integers (any unsigned/signed int dtype, or Python ints) mod M.

        Negative entries are mapped to their representative in [0, M).
        """
        arr = np.asarray(values)
        if arr.dtype == object:
            return np.array([int(v) % self.modulus for v in arr.ravel()], dtype=np.uint64).reshape(
                arr.shape
            ).astype(self.dtype)
        if arr.dtype.kind not in "iub":
            raise ConfigurationError(f"ring elements must be integers, got dtype {arr.dtype}")
        if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
            if self.modulus == MAX_MODULUS:
                return arr.astype(np.uint64)  # two's complement is the residue mod 2^64
            return np.mod(arr.astype(np.int64), np.int64(self.modulus)).astype(self.dtype)
        return self._reduce_u64(arr.astype(np.uint64, copy=False))

    def _reduce_u64(self, arr: np.ndarray) -> np.ndarray:
        if self.modulus == MAX_MODULUS:
            return arr.astype(np.uint64, copy=False)
        if self._power_of_two:
            return (arr & self._mask).astype(self.dtype, copy=False)
        return (arr % np.uint64(self.modulus)).astype(self.dtype, copy=False)

    def check(self, values: np.ndarray, name: str = "values") -> np.ndarray:
        """Validate that ``values`` already are elements of Z_M (dtype and range)."""
        arr = np.asarray(values)
        if arr.dtype != self.dtype:
            raise ConfigurationError(
                f"{name} must have dtype {self.dtype} for Z_{self.modulus}, got {arr.dtype}"
            )
        if not self._full_range and arr.size and int(arr.max()) >= self.modulus:
            raise ConfigurationError(
                f"{name} must lie in [0, {self.modulus}), got max {int(arr.max())}"
            )
        return arr

    # ---------------------------------------------------------------- arithmetic
    def add(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(a + b) mod M, elementwise."""
        if self._native:
            total: np.ndarray = np.add(a, b, dtype=self.dtype, casting="unsafe")
            return total
        return self._reduce_u64(np.add(a, b, dtype=np.uint64))

    def sub(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """(a - b) mod M, elementwise."""
        if self._native:
            difference: np.ndarray = np.subtract(a, b, dtype=self.dtype, casting="unsafe")
            return difference
        a64 = np.asarray(a, dtype=np.uint64)
        b64 = np.asarray(b, dtype=np.uint64)
        if self.modulus == MAX_MODULUS or self._power_of_two:
            return self._reduce_u64(a64 - b64)  # uint64 wrap-around, then low bits
        return self._reduce_u64(a64 + (np.uint64(self.modulus) - b64))

    def neg(self, a: np.ndarray) -> np.ndarray:
        """(-a) mod M, elementwise."""
        return self.sub(np.zeros_like(np.asarray(a)), a)

    def accumulate(self, acc: np.ndarray, values: np.ndarray) -> None:
        """acc += values in place, *unreduced*: ``acc`` is a uint64 array; call :meth:`reduce`
        once at the end.  Exact for fewer than 2^64 / M additions (2^32 when M = 2^32), and
        for M = 2^64 the uint64 wrap-around is the reduction itself."""
        np.add(acc, values, out=acc, dtype=np.uint64, casting="unsafe")

    def sum(self, rows: np.ndarray, axis: int = 0) -> np.ndarray:
        """Sum along ``axis`` mod M, without overflow for any number of rows."""
        arr = np.asarray(rows)
        if self.modulus == MAX_MODULUS or self._power_of_two:
            return self._reduce_u64(arr.sum(axis=axis, dtype=np.uint64))
        if self.modulus <= 1 << 32 and arr.shape[axis] < 1 << 31:
            return self._reduce_u64(arr.sum(axis=axis, dtype=np.uint64))
        moved = np.moveaxis(arr, axis, 0)
        acc = np.zeros(moved.shape[1:], dtype=self.dtype)
        for row in moved:
            acc = self.add(acc, row)
        return acc

    # ---------------------------------------------------------------- sampling
    def random(self, stream: Keystream, shape: int | tuple[int, ...]) -> np.ndarray:
        """Exactly uniform elements of Z_M drawn from a ChaCha20 keystream (a read-only array).

        For a power of two the low bits of each word are kept.  Otherwise the low
        b = bitlength(M - 1) bits of each word are kept (uniform on [0, 2^b)) and every value
        >= M is redrawn from fresh words until it is below M, so each element is the first
        accepted draw of independent uniform words: exactly uniform, no division, acceptance
        M / 2^b > 1/2 per draw.
        """
        shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
        count = math.prod(shape)
        words = self._words(stream, count)
        if self._power_of_two:
            if not self._full_range:
                words = words & self.dtype.type(self.modulus - 1)
            return words.reshape(shape)
        low = self.dtype.type((1 << (self.modulus - 1).bit_length()) - 1)
        top = self.dtype.type(self.modulus)
        out = words & low
        redraw = np.flatnonzero(out >= top)
        while redraw.size:
            fresh = self._words(stream, redraw.size) & low
            out[redraw] = fresh
            redraw = redraw[fresh >= top]
        out.flags.writeable = False
        return out.reshape(shape)

    def _words(self, stream: Keystream, count: int) -> np.ndarray:
        """``count`` keystream words of the ring's dtype, read-only, without a copy."""
        words = np.frombuffer(stream.read(count * self.dtype.itemsize), dtype=self.dtype.newbyteorder("<"))
        return words if _LITTLE else words.astype(self.dtype)  # big-endian hosts: native copy
