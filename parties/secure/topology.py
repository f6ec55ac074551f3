"""Communication graphs of the secure-sum engines (who exchanges shares with whom).

- ``complete``: every pair of parties (main paper 4.2, Bonawitz et al. 2017);
- ``regular``:  a random k-regular graph (the pairing algorithm of Steger and Wormald 1999, edge
  for edge the graph of networkx ``random_regular_graph`` with the same integer seed, built
  here without networkx: a worker builds the graph of 32,561 parties inside the secure sum), as
  in the sparse secure aggregation of Bell et al. 2020 (each party talks to k = O(log n)
  neighbours);
- ``harary``:   the Harary graph H_{k,n} (networkx ``hkn_harary_graph``), the k-connected graph
  with the fewest edges; deterministic.

The graph is public (its seed is not secret), so it is built from a plain integer seed.  It
must be connected: the controller of the graph engine learns the sum over every connected
component, so a disconnected graph would reveal partial sums.
"""

from __future__ import annotations

import random
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from types import MappingProxyType

from mprr.errors import ConfigurationError

__all__ = ["TOPOLOGIES", "CompleteNeighbourhoods", "Neighbourhoods", "build_neighbourhoods", "neighbour_rank"]

TOPOLOGIES = ("complete", "regular", "harary")

Neighbourhoods = Mapping[int, tuple[int, ...]]
"""Party id -> sorted tuple of neighbour ids (symmetric, no self loops)."""


class CompleteNeighbourhoods(Mapping[int, tuple[int, ...]]):
    """Adjacency of the complete graph, computed on access (O(n) memory instead of O(n^2))."""

    def __init__(self, parties: Sequence[int]) -> None:
        self._parties = tuple(sorted(int(p) for p in parties))
        self._set = frozenset(self._parties)

    def __getitem__(self, party: int) -> tuple[int, ...]:
        if party not in self._set:
            raise KeyError(party)
        return tuple(p for p in self._parties if p != party)

    def __iter__(self) -> Iterator[int]:
        return iter(self._parties)

    def __len__(self) -> int:
        return len(self._parties)

    @property
    def parties(self) -> tuple[int, ...]:
        """The roster, sorted: H(o) = N(o) + {o} of every party o."""
        return self._parties

    def rank(self, party: int, neighbour: int) -> int:
        """Position of ``neighbour`` in ``self[party]`` (``bisect_left``), in O(log n) without
        building the O(n) tuple."""
        if party not in self._set:
            raise KeyError(party)
        position = bisect_left(self._parties, neighbour)
        return position - (1 if party < neighbour else 0)


def neighbour_rank(neighbours: Neighbourhoods, party: int, neighbour: int) -> int:
    """``bisect_left(neighbours[party], neighbour)``: the position of ``neighbour`` among the
    sorted neighbours of ``party`` (O(log n) on the complete graph too)."""
    if isinstance(neighbours, CompleteNeighbourhoods):
        return neighbours.rank(party, neighbour)
    return bisect_left(neighbours[party], neighbour)


def build_neighbourhoods(
    parties: Sequence[int], topology: str, degree: int | None = None, *, seed: int = 0,
    max_tries: int = 20,
) -> Neighbourhoods:
    """Adjacency of a connected communication graph over ``parties``.

    Parameters
    ----------
    parties
        Distinct party ids (at least 2).
    topology
        One of :data:`TOPOLOGIES`.
    degree
        k for ``regular`` / ``harary`` (1 <= k); k >= n - 1 gives the complete graph.  A random
        k-regular graph needs n * k even.
    seed
        Public seed of the random regular graph (re-tried with seed + 1, ... until connected).

    Raises
    ------
    ConfigurationError
        Unknown topology, bad degree, or no connected graph with these parameters.
    """
    return _build(tuple(sorted(int(p) for p in parties)), topology, degree, seed, max_tries)


@lru_cache(maxsize=4)
def _build(ids: tuple[int, ...], topology: str, degree: int | None, seed: int, max_tries: int) -> Neighbourhoods:
    """:func:`build_neighbourhoods` of sorted ids, memoized: a process that runs the engine more
    than once over one roster (the controller's cost estimate, then the run) builds the graph of
    32,561 parties (about 1 s) once; the result is read-only."""
    n = len(ids)
    if n < 2:
        raise ConfigurationError(f"a secure sum needs at least 2 parties, got {n}")
    if len(set(ids)) != n:
        raise ConfigurationError("party ids must be distinct")
    if topology not in TOPOLOGIES:
        raise ConfigurationError(f"topology must be one of {TOPOLOGIES}, got {topology!r}")
    if topology == "complete" or (degree is not None and degree >= n - 1):
        return CompleteNeighbourhoods(ids)
    else:
        if isinstance(degree, bool) or not isinstance(degree, int) or degree < 1:
            raise ConfigurationError(
                f"degree must be an integer >= 1 for topology {topology!r}, got {degree!r}"
            )
        if topology == "harary":
            import networkx as nx  # only for this topology

            harary = nx.hkn_harary_graph(degree, n)
            adjacency = [list(harary.adj[u]) for u in range(n)]
        else:
            if n * degree % 2:
                raise ConfigurationError(
                    f"a random {degree}-regular graph on {n} parties needs n * degree even, "
                    f"got {n} * {degree}; use an even degree or the harary topology"
                )
            for attempt in range(max_tries):
                adjacency = _adjacency(n, _random_regular_edges(degree, n, random.Random(seed + attempt)))
                if _connected(adjacency):
                    break
            else:
                raise ConfigurationError(
                    f"no connected random {degree}-regular graph on {n} parties found in "
                    f"{max_tries} tries; use degree >= 3"
                )
    if not _connected(adjacency):
        raise ConfigurationError(
            f"the {topology} graph with degree {degree} on {n} parties is not connected; "
            "the controller would learn partial sums — use a larger degree"
        )
    return MappingProxyType({ids[u]: tuple(sorted([ids[v] for v in adjacency[u]])) for u in range(n)})


def _random_regular_edges(degree: int, n: int, rng: random.Random) -> set[tuple[int, int]]:
    """The edges (u < v) of a random ``degree``-regular graph on 0..n-1 (Steger and Wormald
    1999, "Generating random regular graphs quickly"): pair up the n * degree stubs at random,
    keep the pairs that are neither loops nor repeated edges and pair up the stubs left, until
    none is left; start again when the stubs left cannot be paired.  The same draws from
    ``rng`` as networkx 3's ``random_regular_graph``, so the same edges for the same seed
    (a test checks it)."""
    if degree == 0:
        return set()
    while True:  # a failed attempt draws again from the same stream, as networkx does
        edges: set[tuple[int, int]] = set()
        stubs = list(range(n)) * degree
        while stubs:
            potential: defaultdict[int, int] = defaultdict(int)
            rng.shuffle(stubs)
            pairs = iter(stubs)
            for s1, s2 in zip(pairs, pairs):
                if s1 > s2:
                    s1, s2 = s2, s1
                if s1 != s2 and (s1, s2) not in edges:
                    edges.add((s1, s2))
                else:
                    potential[s1] += 1
                    potential[s2] += 1
            if not _suitable(edges, potential):
                break
            stubs = [node for node, count in potential.items() for _ in range(count)]
        else:
            return edges


def _suitable(edges: set[tuple[int, int]], potential: Mapping[int, int]) -> bool:
    """Whether two of the stubs left can still be paired into a new edge."""
    if not potential:
        return True
    for s1 in potential:
        for s2 in potential:
            if s1 == s2:
                break
            if s1 > s2:  # (as networkx: the swap carries over to the next s2)
                s1, s2 = s2, s1
            if (s1, s2) not in edges:
                return True
    return False


def _adjacency(n: int, edges: set[tuple[int, int]]) -> list[list[int]]:
    adjacency: list[list[int]] = [[] for _ in range(n)]
    for u, v in edges:
        adjacency[u].append(v)
        adjacency[v].append(u)
    return adjacency


def _connected(adjacency: list[list[int]]) -> bool:
    """Whether the graph of ``adjacency`` (nodes 0..n-1) is connected (breadth-first search)."""
    seen = bytearray(len(adjacency))
    seen[0] = 1
    frontier, reached = [0], 1
    while frontier:
        nxt = []
        for u in frontier:
            for v in adjacency[u]:
                if not seen[v]:
                    seen[v] = 1
                    nxt.append(v)
        reached += len(nxt)
        frontier = nxt
    return reached == len(adjacency)

