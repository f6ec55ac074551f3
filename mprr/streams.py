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

Cryptographic material never comes from here (see ``parties``).
"""

from __future__ import annotations

import numpy as np

from mprr.errors import ConfigurationError

__all__ = ["PartyStreams", "Randomness", "draw_uniforms", "run_seed_sequence"]


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
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ConfigurationError(f"seed must be a non-negative integer, got {seed!r}")
    return np.random.SeedSequence(int(seed))


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
    Generators are created lazily; :meth:`uniforms` draws ``k`` uniforms from every party's
    stream at once (one Python call per party, ~1 µs each) and advances them, exactly as if
    each party had called ``stream.random()`` ``k`` times.
    """

    def __init__(self, seed: int | np.random.SeedSequence, n: int) -> None:
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 1:
            raise ConfigurationError(f"n (number of parties) must be an integer >= 1, got {n!r}")
        self.n = int(n)
        root = run_seed_sequence(seed)
        children = root.spawn(self.n + 1)
        self._seeds = children[: self.n]
        self._controller_seed = children[self.n]
        self._generators: list[np.random.Generator] | None = None

    def seed_sequence(self, party: int) -> np.random.SeedSequence:
        """Return the ``SeedSequence`` of ``party`` (what an actor builds its Generator from)."""
        self._check_party(party)
        return self._seeds[party]

    def generator(self, party: int) -> np.random.Generator:
        """Return the (shared, stateful) Generator of ``party``."""
        self._check_party(party)
        return self._all()[party]

    def controller_generator(self) -> np.random.Generator:
        """A Generator independent of every party's stream, for run-level choices."""
        return np.random.Generator(np.random.PCG64(self._controller_seed))

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
            Shape ``(len(parties), k)``; row ``j`` are the next ``k`` draws of that party.
        """
        if k < 0:
            raise ConfigurationError(f"k must be >= 0, got {k!r}")
        gens = self._all()
        idx = range(self.n) if parties is None else (int(i) for i in np.asarray(parties))
        rows = [gens[i].random(k) for i in idx]
        if not rows:
            return np.empty((0, k))
        return np.stack(rows)

    def _all(self) -> list[np.random.Generator]:
        if self._generators is None:
            self._generators = [np.random.Generator(np.random.PCG64(s)) for s in self._seeds]
        return self._generators

    def _check_party(self, party: int) -> None:
        if not 0 <= int(party) < self.n:
            raise ConfigurationError(f"party must be in [0, {self.n}), got {party!r}")


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
