"""Communication graphs: complete, random k-regular, Harary; connected and symmetric."""

from __future__ import annotations

from bisect import bisect_left

import pytest

from mprr.errors import ConfigurationError
from parties.secure.topology import CompleteNeighbourhoods, build_neighbourhoods, neighbour_rank


@pytest.mark.parametrize(("topology", "degree", "n"), [
    ("regular", 4, 20), ("regular", 3, 10), ("harary", 3, 11), ("harary", 2, 5), ("complete", None, 6),
])
def test_symmetric_connected_degrees(topology: str, degree: int | None, n: int) -> None:
    ids = [3 * i + 1 for i in range(n)]  # arbitrary ids, not 0..n-1
    nbrs = build_neighbourhoods(ids, topology, degree, seed=5)
    assert sorted(nbrs) == ids
    for p, ns in nbrs.items():
        assert p not in ns and list(ns) == sorted(ns)
        assert all(p in nbrs[q] for q in ns)
        if topology == "regular":
            assert len(ns) == degree
        if topology == "harary":
            assert degree <= len(ns) <= degree + 1
    # connected: breadth-first search reaches everyone
    seen, frontier = {ids[0]}, [ids[0]]
    while frontier:
        frontier = [q for p in frontier for q in nbrs[p] if q not in seen and not seen.add(q)]
    assert seen == set(ids)


def test_same_seed_same_graph() -> None:
    a = build_neighbourhoods(range(30), "regular", 4, seed=9)
    b = build_neighbourhoods(range(30), "regular", 4, seed=9)
    assert dict(a) == dict(b)


def test_complete_neighbourhoods_are_lazy_and_correct() -> None:
    nbrs = CompleteNeighbourhoods([5, 1, 3])
    assert nbrs[3] == (1, 5) and len(nbrs) == 3 and list(nbrs) == [1, 3, 5]
    with pytest.raises(KeyError):
        nbrs[2]
    assert build_neighbourhoods(range(4), "regular", 3)[0] == (1, 2, 3)  # k >= n - 1: complete


@pytest.mark.parametrize(("args", "match"), [
    (([0], "complete", None), "at least 2 parties"),
    (([0, 0, 1], "complete", None), "distinct"),
    (([0, 1, 2], "star", 2), "topology must be one of"),
    ((range(6), "regular", 0), "degree must be an integer >= 1"),
    ((range(7), "regular", 3), "n \\* degree even"),
    ((range(6), "regular", 1), "connected"),
])
def test_errors(args: tuple, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        build_neighbourhoods(*args)


@pytest.mark.parametrize(("n", "degree", "seed"), [
    (10, 3, 0), (20, 4, 1), (30, 4, 9), (101, 8, 0), (1000, 8, 3), (6, 5, 2), (8, 3, 7), (50, 1, 4), (40, 2, 0),
])
def test_regular_graph_is_networkx_random_regular_graph(n: int, degree: int, seed: int) -> None:
    """The pairing algorithm draws as networkx does: the same edges for the same seed."""
    import random

    import networkx as nx

    from parties.secure.topology import _random_regular_edges

    ours = _random_regular_edges(degree, n, random.Random(seed))
    theirs = {(min(u, v), max(u, v)) for u, v in nx.random_regular_graph(degree, n, seed=seed).edges}
    assert ours == theirs


def test_regular_neighbourhoods_are_those_of_the_first_connected_networkx_graph() -> None:
    import networkx as nx

    ids = list(range(0, 120, 2))
    graph = next(g for g in (nx.random_regular_graph(3, 60, seed=4 + k) for k in range(20)) if nx.is_connected(g))
    expected = {ids[u]: tuple(sorted(ids[v] for v in graph.adj[u])) for u in range(60)}
    assert dict(build_neighbourhoods(ids, "regular", 3, seed=4)) == expected


@pytest.mark.parametrize("topology", ["complete", "harary"])
def test_neighbour_rank_is_the_position_among_the_sorted_neighbours(topology: str) -> None:
    parties = (0, 2, 3, 7, 9, 12)
    nb = build_neighbourhoods(parties, topology, None if topology == "complete" else 3)
    assert isinstance(nb, CompleteNeighbourhoods) == (topology == "complete")
    for p in parties:
        for q in range(-1, 15):  # neighbours, non-neighbours, q == p, ids outside the roster
            assert neighbour_rank(nb, p, q) == bisect_left(nb[p], q)
        for q in nb[p]:
            assert neighbour_rank(nb, p, q) == nb[p].index(q)
    with pytest.raises(KeyError):
        neighbour_rank(nb, 5, 0)
