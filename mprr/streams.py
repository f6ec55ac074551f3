"""Per-party random streams: one seed per run, one independent stream per party.

A run is reproducible from a single integer seed.  ``numpy.random.SeedSequence(seed)`` is
spawned once per party, so party ``i`` owns the stream ``Generator(PCG64(children[i]))``.
The fast path (:mod:`mprr.protocols`) and the actor simulator (:mod:`parties`) both draw the
randomness of party ``i`` from that stream **in the same order**, which is what makes the two
engines release exactly the same data for the same seed.

Draw-order contract (every protocol follows it): each randomized release of one value
(one attribute, one attribute pair or one cluster) consumes exactly one uniform from the
party's stream, ``stream.random()``, in the order the protocol releases them; the released
value is the inverse-CDF sample of the matrix row (:func:`mprr.randomize.randomize`).

The streams of all parties are computed as vectors (numpy's SeedSequence and PCG64 algorithms
over every party at once), so ``PartyStreams(seed, 32561)`` costs milliseconds, not the second
that 32,561 spawned Generators take, and draws the very same numbers.

Cryptographic material never comes from here (see ``parties``).
"""

from __future__ import annotations

from array import array
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

from mprr.domain import check_int
from mprr.errors import ConfigurationError

__all__ = ["PartyStream", "PartyStreams", "PresetSeed", "Randomness", "StreamTable", "draw_uniforms",
           "run_seed_sequence"]


def run_seed_sequence(seed: int | np.random.SeedSequence) -> np.random.SeedSequence:
    """Normalise a run seed into a :class:`numpy.random.SeedSequence`.

    Parameters
    ----------
    seed
        Non-negative integer or an existing ``SeedSequence``.

    Raises
    ------
    ConfigurationError
        If ``seed`` is negative or not an integer.
    """
    if isinstance(seed, np.random.SeedSequence):
        return seed
    return np.random.SeedSequence(check_int("seed", seed, 0))


class PartyStreams:
    """The independent random streams of ``n`` parties, spawned from one run seed.

    Parameters
    ----------
    seed
        Run seed (non-negative int) or ``SeedSequence``.  Child ``i`` of
        ``SeedSequence(seed).spawn(n + 1)`` belongs to party ``i``; the last child is reserved
        for the controller / run-level statistical choices (e.g. query generation).
    n
        Number of parties, at least 1.

    Notes
    -----
    Party ``i``'s stream is exactly ``Generator(PCG64(children[i]))``, but no per-party object
    is built unless asked for (:meth:`generator`, :meth:`seed_sequence`): the ``n`` children's
    entropy pools, their PCG64 seeds and the PCG64 states are computed for all parties at once
    with numpy (:func:`_child_pools`, :func:`_pcg64_seed`, :func:`_pcg64_next`, the algorithms of
    ``numpy.random.SeedSequence`` and ``PCG64``), and :meth:`uniforms` advances every party's
    state as one vector.  The draws are bit-identical to the per-party Generators (checked at
    construction against party 0's, and in the tests).  A party whose :meth:`generator` was
    handed out draws from that Generator from then on, so both ways of drawing stay one stream.
    """

    def __init__(self, seed: int | np.random.SeedSequence, n: int) -> None:
        self.n = check_int("n (number of parties)", n, 1)
        root = run_seed_sequence(seed)
        self._root = root
        self._first = int(root.n_children_spawned)
        if isinstance(seed, np.random.SeedSequence):
            root.spawn(self.n + 1)  # advance the caller's SeedSequence as spawn(n + 1) does
        self._pools = _child_pools(root, self._first, self.n)
        self._words = _generate_state64(self._pools, 4)  # what PCG64 asks each child for
        self._state = _pcg64_seed(self._words)  # (hi, lo, inc_hi, inc_lo)
        self._handed: dict[int, np.random.Generator] = {}
        check = np.random.PCG64(self.seed_sequence(0)).state["state"]
        if check["state"] != _as_int(self._state, 0) or check["inc"] != _as_int(self._state, 0, inc=True):
            raise ConfigurationError(  # pragma: no cover - numpy changed its SeedSequence/PCG64
                "this numpy's SeedSequence/PCG64 differ from the vectorized party streams"
            )

    def seed_sequence(self, party: int) -> np.random.SeedSequence:
        """Return the ``SeedSequence`` of ``party`` (what an actor builds its Generator from)."""
        self._check_party(party)
        root = self._root
        return np.random.SeedSequence(
            root.entropy, spawn_key=(*root.spawn_key, self._first + int(party)), pool_size=root.pool_size
        )

    def seed(self, party: int) -> PresetSeed:
        """Party ``party``'s seed as a :class:`PresetSeed`: a cheap stand-in for :meth:`seed_sequence`.

        ``Generator(PCG64(streams.seed(i)))`` is the same stream as
        ``Generator(PCG64(streams.seed_sequence(i)))`` (at its start), built about five times
        faster, because the child's pool and seed words were computed with everyone else's.
        """
        self._check_party(party)
        return PresetSeed(self._pools[int(party)], self._words[int(party)])

    def generator(self, party: int) -> np.random.Generator:
        """Return the (shared, stateful) Generator of ``party``, at the stream's current position."""
        self._check_party(party)
        party = int(party)
        gen = self._handed.get(party)
        if gen is None:
            bits = np.random.PCG64(0)
            bits.state = {
                "bit_generator": "PCG64",
                "state": {"state": _as_int(self._state, party), "inc": _as_int(self._state, party, inc=True)},
                "has_uint32": 0,
                "uinteger": 0,
            }
            gen = self._handed[party] = np.random.Generator(bits)
        return gen

    def uniforms(self, k: int = 1, parties: np.ndarray | None = None) -> np.ndarray:
        """Draw ``k`` uniforms in [0, 1) from each party's stream.

        Parameters
        ----------
        k
            Number of draws per party (>= 0).
        parties
            Optional index array of the parties that draw (default: all, in order).

        Returns
        -------
        numpy.ndarray
            Shape ``(len(parties), k)``; row ``j`` are the next ``k`` draws of that party,
            exactly ``generator(party).random(k)``.
        """
        if k < 0:
            raise ConfigurationError(f"k must be >= 0, got {k!r}")
        if parties is None:
            idx = np.arange(self.n)
        else:
            idx = np.asarray(parties, dtype=np.int64).reshape(-1)
            if idx.size and (idx.min() < 0 or idx.max() >= self.n):
                bad = idx[(idx < 0) | (idx >= self.n)][0]
                raise ConfigurationError(f"party must be in [0, {self.n}), got {int(bad)!r}")
        out = np.empty((idx.size, k))
        if idx.size == 0 or k == 0:
            return out
        handed = np.zeros(idx.size, dtype=bool)
        if self._handed:
            for j, i in enumerate(idx.tolist()):
                gen = self._handed.get(i)
                if gen is not None:
                    handed[j] = True
                    out[j] = gen.random(k)
        if parties is None and not handed.any():  # every party, all vectorized: no gathers
            hi, lo = _pcg64_draws(self._state, out)
            self._state[0], self._state[1] = hi, lo
            return out
        vec = idx[~handed]
        if vec.size:
            cols = np.empty((vec.size, k))
            hi, lo = _pcg64_draws([a[vec] for a in self._state], cols)
            self._state[0][vec], self._state[1][vec] = hi, lo
            out[~handed] = cols
        return out

    def _check_party(self, party: int) -> None:
        if not 0 <= int(party) < self.n:
            raise ConfigurationError(f"party must be in [0, {self.n}), got {party!r}")


# ---------------------------------------------------------------------- vectorized PCG64
# numpy.random.SeedSequence (O'Neill's seed_seq_fe, numpy/random/bit_generator.pyx) and PCG64
# (XSL-RR 128/64, numpy/random/src/pcg64) computed for many children at once; uint32 / uint64
# array arithmetic wraps like the C code.
_INIT_A, _MULT_A, _INIT_B, _MULT_B = 0x43B0D7E5, 0x931E8875, 0x8B51F9DD, 0x58F38DED
_MIX_L, _MIX_R, _M32 = 0xCA01F9DD, 0x4973F715, 0xFFFFFFFF
_PCG_MULT_HI, _PCG_MULT_LO = 2549297995355413924, 4865540595714422341
_TWO_M53 = 1.0 / 9007199254740992.0
_U32, _U64 = np.uint32, np.uint64


def _words32(value: object) -> list[int]:
    """The uint32 words numpy's SeedSequence makes of an entropy value or spawn key."""
    from numpy.random.bit_generator import _coerce_to_uint32_array  # type: ignore[attr-defined]

    return [int(w) for w in _coerce_to_uint32_array(value)]


def _child_pools(root: np.random.SeedSequence, first: int, count: int) -> np.ndarray:
    """Entropy pools, shape ``(count, pool_size)``, of ``root``'s children ``first .. first+count-1``."""
    if first + count > _M32:
        raise ConfigurationError(f"at most {_M32} party streams, got {first + count}")
    run = _words32(root.entropy) if root.entropy is not None else []
    spawn = _words32(tuple(root.spawn_key)) if root.spawn_key else []
    pool_size = int(root.pool_size)
    run += [0] * max(0, pool_size - len(run))  # a spawned child pads its run entropy
    cols = [np.full(count, w, dtype=_U32) for w in run + spawn]
    cols.append(np.arange(first, first + count, dtype=np.int64).astype(_U32))
    hash_const = _INIT_A

    def hashmix(v: np.ndarray) -> np.ndarray:
        nonlocal hash_const
        v = v ^ _U32(hash_const)
        hash_const = (hash_const * _MULT_A) & _M32
        v = v * _U32(hash_const)
        return v ^ (v >> _U32(16))

    def mix(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        r: np.ndarray = _U32(_MIX_L) * x - _U32(_MIX_R) * y
        r = r ^ (r >> _U32(16))
        return r

    zeros = np.zeros(count, dtype=_U32)
    mixer = [hashmix(cols[i] if i < len(cols) else zeros) for i in range(pool_size)]
    for src in range(pool_size):
        for dst in range(pool_size):
            if src != dst:
                mixer[dst] = mix(mixer[dst], hashmix(mixer[src]))
    for src in range(pool_size, len(cols)):
        for dst in range(pool_size):
            mixer[dst] = mix(mixer[dst], hashmix(cols[src]))
    return np.stack(mixer, axis=1)


def _generate_state64(pools: np.ndarray, words: int) -> np.ndarray:
    """``SeedSequence.generate_state(words, uint64)`` of every pool, shape ``(count, words)``."""
    out = _generate_state32(pools, 2 * words)
    # word i is (out[:, 2i] | out[:, 2i+1] << 32): the pair read as one little-endian uint64
    pairs: np.ndarray = out.astype("<u4", copy=False).view("<u8")
    return pairs.astype(_U64, copy=False)


def _generate_state32(pools: np.ndarray, words: int) -> np.ndarray:
    """``SeedSequence.generate_state(words, uint32)`` of every pool, shape ``(count, words)``."""
    hash_const = _INIT_B
    out = np.empty((pools.shape[0], words), dtype=_U32)
    for i in range(words):
        v = pools[:, i % pools.shape[1]] ^ _U32(hash_const)
        hash_const = (hash_const * _MULT_B) & _M32
        v = v * _U32(hash_const)
        out[:, i] = v ^ (v >> _U32(16))
    return out


def _mulhi64(a: np.ndarray, b: int) -> np.ndarray:
    """High uint64 words of the 128-bit products ``a * b`` (32-bit halves, schoolbook; in place
    on fresh temporaries)."""
    m = _U64(_M32)
    a0, a1 = a & m, a >> _U64(32)
    b0, b1 = _U64(b & _M32), _U64(b >> 32)
    p01, p10 = a0 * b1, a1 * b0
    mid = a0 * b0
    mid >>= _U64(32)
    np.bitwise_and(p01, m, out=a0)
    mid += a0
    np.bitwise_and(p10, m, out=a0)
    mid += a0
    mid >>= _U64(32)  # carry into the high word
    a1 *= b1
    p01 >>= _U64(32)
    a1 += p01
    p10 >>= _U64(32)
    a1 += p10
    a1 += mid
    return a1


def _pcg64_step(hi: np.ndarray, lo: np.ndarray, inc_hi: np.ndarray,
                inc_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """state * multiplier + increment (mod 2^128), the PCG64 LCG step."""
    p_hi = _mulhi64(lo, _PCG_MULT_LO)
    p_hi += hi * _U64(_PCG_MULT_LO)
    p_hi += lo * _U64(_PCG_MULT_HI)
    new_lo = lo * _U64(_PCG_MULT_LO)
    new_lo += inc_lo
    p_hi += inc_hi
    p_hi += new_lo < inc_lo  # carry of the low word (wrapped iff the sum is below an addend)
    return p_hi, new_lo


def _xsl_rr(hi: np.ndarray, lo: np.ndarray) -> np.ndarray:
    """PCG64's output of a state: rotr64(hi ^ lo, hi >> 58)."""
    x = hi ^ lo
    rot = hi >> _U64(58)
    out: np.ndarray = x >> rot
    np.subtract(_U64(64), rot, out=rot)
    rot &= _U64(63)
    x <<= rot
    out |= x
    return out


def _pcg64_draws(state: list[np.ndarray], out: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fill ``out`` (``(count, k)`` float64) with the next k ``random()`` draws of each state of
    ``state`` (hi, lo, inc_hi, inc_lo); returns the advanced (hi, lo).

    A draw is numpy's ``next_double``: ``(next_uint64 >> 11) * 2^-53``; the 53-bit integer is
    read as int64 (same bits, exact) because numpy converts int64 to float64 faster than uint64.
    """
    hi, lo, inc_hi, inc_lo = state
    for c in range(out.shape[1]):
        hi, lo = _pcg64_step(hi, lo, inc_hi, inc_lo)
        bits = _xsl_rr(hi, lo)
        bits >>= _U64(11)
        np.multiply(bits.view(np.int64), _TWO_M53, out=out[:, c])
    return hi, lo


def _pcg64_seed(words: np.ndarray) -> list[np.ndarray]:
    """PCG64 states (hi, lo, inc_hi, inc_lo) of ``pcg64_set_seed(words[:, :2], words[:, 2:])``."""
    s_hi, s_lo, q_hi, q_lo = (words[:, j] for j in range(4))  # each read once or twice
    inc_hi = (q_hi << _U64(1)) | (q_lo >> _U64(63))
    inc_lo = (q_lo << _U64(1)) | _U64(1)
    lo = inc_lo + s_lo  # state = inc (first step from 0), then += initstate
    hi = inc_hi + s_hi + (lo < inc_lo).astype(_U64)
    hi, lo = _pcg64_step(hi, lo, inc_hi, inc_lo)
    return [hi, lo, inc_hi, inc_lo]


def _as_int(state: list[np.ndarray], party: int, *, inc: bool = False) -> int:
    """Party ``party``'s 128-bit state (or increment) as a Python int (numpy's state dict)."""
    hi, lo = (state[2], state[3]) if inc else (state[0], state[1])
    return (int(hi[party]) << 64) | int(lo[party])


class PresetSeed(ISeedSequence):
    """One party's ``SeedSequence`` output, precomputed by :class:`PartyStreams`.

    A numpy ``ISeedSequence``: a bit generator built from it (``PCG64(seed)``) is seeded exactly
    as from the ``SeedSequence`` child it stands for.  It cannot spawn.

    Parameters
    ----------
    pool
        The child's entropy pool (uint32 words, ``SeedSequence.pool``).
    words
        ``generate_state(4, numpy.uint64)`` of that pool (what PCG64 asks for), or ``None``.
    """

    __slots__ = ("pool", "_words")

    def __init__(self, pool: np.ndarray, words: np.ndarray | None = None) -> None:
        self.pool = np.asarray(pool, dtype=np.uint32).reshape(-1)  # a view of PartyStreams' pools: no copy
        self._words = None if words is None else np.asarray(words, dtype=np.uint64)

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        """``SeedSequence.generate_state`` of the pool: ``n_words`` words of ``dtype``."""
        dt = np.dtype(dtype)
        if dt == np.uint64:
            if n_words == 4 and self._words is not None:
                return self._words.copy()
            out: np.ndarray = _generate_state64(self.pool[None, :], int(n_words))[0]
            return out
        if dt == np.uint32:
            out = _generate_state32(self.pool[None, :], int(n_words))[0]
            return out
        raise ConfigurationError(f"dtype must be uint32 or uint64, got {dt}")


_M64 = (1 << 64) - 1
_M128 = (1 << 128) - 1
_PCG_MULT = (_PCG_MULT_HI << 64) | _PCG_MULT_LO


class StreamTable:
    """The streams of parties ``parties`` of a run, one row of PCG64 state each, for many parties
    in one process (a shard host) at 32 bytes per party.

    Row ``k`` is the PCG64 state (128-bit state and increment, as uint64 halves) of child
    ``parties[k]`` of ``SeedSequence(seed)``, computed for every row at once as in
    :class:`PartyStreams`; :meth:`stream` hands out party ``parties[k]``'s stream, whose draws are
    bit-identical to ``Generator(PCG64(PartyStreams(seed, n).seed_sequence(i))).random()``
    (checked at construction against the first row's).  A Generator, its PCG64 and its
    SeedSequence cost about 870 bytes per party instead.

    Parameters
    ----------
    seed
        Run seed (non-negative int).
    parties
        Contiguous party ids (``range`` with step 1).
    """

    def __init__(self, seed: int, parties: range) -> None:
        if not isinstance(parties, range) or parties.step != 1 or parties.start < 0:
            raise ConfigurationError(f"parties must be a range of party ids with step 1, got {parties!r}")
        root = run_seed_sequence(seed)
        self.parties = parties
        words = _generate_state64(_child_pools(root, int(root.n_children_spawned) + parties.start, len(parties)), 4)
        # array.array: its items read and write as Python ints, several times faster than numpy's
        self._hi, self._lo, self._inc_hi, self._inc_lo = (array("Q", a.tobytes()) for a in _pcg64_seed(words))
        if len(parties):
            first = np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, parties.start),
                                           pool_size=root.pool_size)
            check = np.random.PCG64(first).state["state"]
            if check["state"] != self._int(0) or check["inc"] != self._int(0, inc=True):
                raise ConfigurationError(  # pragma: no cover - numpy changed its SeedSequence/PCG64
                    "this numpy's SeedSequence/PCG64 differ from the vectorized party streams"
                )

    def __len__(self) -> int:
        return len(self.parties)

    def _int(self, row: int, *, inc: bool = False) -> int:
        hi, lo = (self._inc_hi, self._inc_lo) if inc else (self._hi, self._lo)
        return (hi[row] << 64) | lo[row]

    def random(self, row: int) -> float:
        """The next uniform in [0, 1) of row ``row``: numpy's ``PCG64`` step and XSL-RR output, then
        ``Generator.random``'s 53-bit double."""
        state = ((((self._hi[row] << 64) | self._lo[row]) * _PCG_MULT
                  + ((self._inc_hi[row] << 64) | self._inc_lo[row])) & _M128)
        hi, lo = state >> 64, state & _M64
        self._hi[row], self._lo[row] = hi, lo
        x, rot = hi ^ lo, hi >> 58
        return ((((x >> rot) | (x << ((64 - rot) & 63))) & _M64) >> 11) * _TWO_M53

    def uniforms(self, rows: np.ndarray) -> np.ndarray:
        """The next uniform of each row of ``rows`` (distinct row indices), advanced as one vector.

        Row ``rows[j]``'s value is exactly its next :meth:`random` (the same PCG64 step and
        53-bit double as ``Generator.random``, :func:`_pcg64_step` / :func:`_xsl_rr` over every
        row at once, as :meth:`PartyStreams.uniforms`), and the rows' states advance in place.
        """
        idx = np.asarray(rows, dtype=np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= len(self.parties)):
            bad = idx[(idx < 0) | (idx >= len(self.parties))][0]
            raise ConfigurationError(f"rows must be in [0, {len(self.parties)}), got {int(bad)!r}")
        hi_all, lo_all, inc_hi, inc_lo = (np.frombuffer(a, dtype=np.uint64) for a in
                                          (self._hi, self._lo, self._inc_hi, self._inc_lo))
        hi, lo = _pcg64_step(hi_all[idx], lo_all[idx], inc_hi[idx], inc_lo[idx])
        hi_all[idx], lo_all[idx] = hi, lo
        out: np.ndarray = (_xsl_rr(hi, lo) >> np.uint64(11)) * _TWO_M53
        return out

    def stream(self, party: int) -> PartyStream:
        """Party ``party``'s stream (a view of its row)."""
        if party not in self.parties:
            raise ConfigurationError(f"party must be in {self.parties.start}..{self.parties.stop - 1}, got {party!r}")
        return PartyStream(self, party - self.parties.start)


class PartyStream:
    """One party's stream in a :class:`StreamTable`: ``random()`` as ``Generator.random()``."""

    __slots__ = ("_table", "_row")

    def __init__(self, table: StreamTable, row: int) -> None:
        self._table, self._row = table, row

    def random(self) -> float:
        """The party's next uniform in [0, 1)."""
        return self._table.random(self._row)


Randomness = np.random.Generator | PartyStreams
"""What a protocol accepts as its source of statistical randomness.

A single ``Generator`` is the fast choice for Monte Carlo sweeps (statistically equivalent);
``PartyStreams`` gives every party its own stream, so the actor simulator can reproduce the
fast path exactly.
"""


def draw_uniforms(rng: Randomness, n: int, k: int) -> np.ndarray:
    """Draw ``k`` uniforms for each of ``n`` parties, shape ``(n, k)``.

    With a ``Generator`` the block is ``rng.random((n, k))`` (row ``i`` = party ``i``); with
    :class:`PartyStreams` row ``i`` comes from party ``i``'s own stream, as the draw-order
    contract of this module requires.

    Raises
    ------
    ConfigurationError
        If ``rng`` is neither, or ``n`` does not match the number of streams.
    """
    if isinstance(rng, PartyStreams):
        if rng.n != n:
            raise ConfigurationError(
                f"rng has streams for {rng.n} parties but the data set has n={n} records"
            )
        return rng.uniforms(k)
    if isinstance(rng, np.random.Generator):
        return rng.random((n, k))
    raise ConfigurationError(
        f"rng must be a numpy.random.Generator or a PartyStreams, got {type(rng).__name__}"
    )
