"""Tests of mprr.clustering: main paper Algorithm 1 and the dependence graph."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mprr.clustering import (
    REASON_BELOW_TD,
    REASON_EXCEEDS_TV,
    REASON_MERGED,
    REASON_NOT_SIGNIFICANT,
    Clustering,
    MergeStep,
    cluster_attributes,
    cluster_significant,
    significant_pairs,
)
from mprr.dependence import bivariate_tables, dependence_matrix
from mprr.errors import ConfigurationError
from mprr.independence import pearson_chi2
from mprr.matrices import grr
from mprr.randomize import randomize
from mprr.synthetic import planted_clusters


def sym(m: int, pairs: dict[tuple[int, int], float]) -> np.ndarray:
    d = np.eye(m)
    for (i, j), v in pairs.items():
        d[i, j] = d[j, i] = v
    return d


def reference_algorithm_1(
    d: np.ndarray, sizes: list[int], tv: float, td: float
) -> tuple[list[tuple[int, ...]], list[tuple]]:
    """Line-by-line transcription of Algorithm 1 with Python lists (slow, obviously literal)."""
    clusters = [(i,) for i in range(len(sizes))]

    def dep_list() -> list[tuple[float, tuple[int, ...], tuple[int, ...]]]:
        out = []
        for x in range(len(clusters)):
            for y in range(x + 1, len(clusters)):
                a, b = clusters[x], clusters[y]
                out.append((max(d[i, j] for i in a for j in b), a, b))
        out.sort(key=lambda e: (-e[0], e[1][0], e[2][0]))  # ties: lower indices first
        return out

    trace = []
    lst = dep_list()  # steps 4-5
    pos = 0  # step 6
    while pos < len(lst):
        dep, c1, c2 = lst[pos]
        cells = math.prod(sizes[a] for a in c1 + c2)
        if not dep >= td:  # step 7
            trace.append((c1, c2, dep, cells, False))
            break
        if cells <= tv:  # step 9
            trace.append((c1, c2, dep, cells, True))
            clusters.remove(c1)  # step 10
            clusters.remove(c2)
            clusters.append(tuple(sorted(c1 + c2)))  # step 11
            clusters.sort()
            lst = dep_list()  # steps 12-13
            pos = 0  # step 14
        else:
            trace.append((c1, c2, dep, cells, False))
            pos += 1  # step 16
    return clusters, trace


# --------------------------------------------------------------------------- hand-made cases


def test_all_dependences_below_td_leave_singletons() -> None:
    d = sym(3, {(0, 1): 0.05, (0, 2): 0.08, (1, 2): 0.01})
    res = cluster_attributes(d, [2, 2, 2], Tv=100, Td=0.1)
    assert res.clusters == ((0,), (1,), (2,))
    assert res.trace == (MergeStep(1, (0,), (2,), 0.08, 4, False, REASON_BELOW_TD),)


def test_dependence_equal_to_td_merges_and_cells_equal_to_tv_merge() -> None:
    d = sym(3, {(0, 1): 0.3, (0, 2): 0.1, (1, 2): 0.2})
    res = cluster_attributes(d, [5, 4, 3], Tv=20, Td=0.3)
    assert res.clusters == ((0, 1), (2,))
    assert res.trace[0] == MergeStep(1, (0,), (1,), 0.3, 20, True, REASON_MERGED)
    assert res.trace[1].reason == REASON_BELOW_TD
    assert res.trace[1].dependence == pytest.approx(0.2)  # max(d02, d12) for ({0,1}, {2})


def test_tv_blocks_the_strongest_pair() -> None:
    d = sym(3, {(0, 1): 0.9, (0, 2): 0.4, (1, 2): 0.2})
    res = cluster_attributes(d, [10, 10, 3], Tv=50, Td=0.3)
    assert res.clusters == ((0, 2), (1,))
    assert [(s.left, s.right, s.merged, s.reason) for s in res.trace] == [
        ((0,), (1,), False, REASON_EXCEEDS_TV),
        ((0,), (2,), True, REASON_MERGED),
        # Recomputed list: ({0,2}, {1}) has dependence max(0.9, 0.2) = 0.9, 300 cells.
        ((0, 2), (1,), False, REASON_EXCEEDS_TV),
    ]
    assert res.trace[-1].cells == 300


def test_skipping_leads_to_a_later_merge_and_restart_from_the_top() -> None:
    # A(10) B(10) C(2) D(2): AB is too big (skipped), BD merges, the list is recomputed and the
    # walk restarts at its top (AB's successor A-{B,D} is skipped again), then AC merges.
    d = sym(4, {(0, 1): 0.9, (0, 2): 0.5, (0, 3): 0.1, (1, 2): 0.2, (1, 3): 0.6, (2, 3): 0.3})
    res = cluster_attributes(d, [10, 10, 2, 2], Tv=50, Td=0.15)
    assert res.clusters == ((0, 2), (1, 3))
    assert res.trace == (
        MergeStep(1, (0,), (1,), 0.9, 100, False, REASON_EXCEEDS_TV),
        MergeStep(2, (1,), (3,), 0.6, 20, True, REASON_MERGED),
        MergeStep(3, (0,), (1, 3), 0.9, 200, False, REASON_EXCEEDS_TV),
        MergeStep(4, (0,), (2,), 0.5, 20, True, REASON_MERGED),
        MergeStep(5, (0, 2), (1, 3), 0.9, 400, False, REASON_EXCEEDS_TV),
    )


def test_merge_raises_cluster_dependence_to_the_max_of_members() -> None:
    # After {0,1} merges, the pair ({0,1}, {2}) gets d12 = 0.7 > d03 = 0.6, so the restarted
    # walk merges 2 into the cluster before looking at (0, 3).
    d = sym(4, {(0, 1): 0.8, (1, 2): 0.7, (0, 3): 0.6, (0, 2): 0.0, (1, 3): 0.0, (2, 3): 0.0})
    res = cluster_attributes(d, [2, 2, 2, 2], Tv=8, Td=0.5)
    assert [(s.left, s.right, s.dependence, s.reason) for s in res.trace] == [
        ((0,), (1,), 0.8, REASON_MERGED),
        ((0, 1), (2,), 0.7, REASON_MERGED),
        ((0, 1, 2), (3,), 0.6, REASON_EXCEEDS_TV),
    ]
    assert res.clusters == ((0, 1, 2), (3,))


def test_ties_are_broken_by_lower_attribute_indices() -> None:
    d = sym(3, {(0, 1): 0.7, (0, 2): 0.7, (1, 2): 0.7})
    res = cluster_attributes(d, [3, 3, 3], Tv=9, Td=0.5)
    assert res.clusters == ((0, 1), (2,))
    d = sym(3, {(0, 1): 0.2, (0, 2): 0.7, (1, 2): 0.7})
    res = cluster_attributes(d, [3, 3, 3], Tv=9, Td=0.5)
    assert res.clusters == ((0, 2), (1,))
    d = sym(4, {(0, 1): 0.5, (2, 3): 0.5, (0, 2): 0.1, (0, 3): 0.1, (1, 2): 0.1, (1, 3): 0.1})
    res = cluster_attributes(d, [2, 2, 3, 3], Tv=100, Td=0.4)
    assert [s.left + s.right for s in res.trace if s.merged] == [(0, 1), (2, 3)]


def test_trace_on_ties_with_tv_skips() -> None:
    # Every pair has dependence 0.5: the list order is (0,1), (0,2), (1,2) by attribute index.
    # (0,1) has 16 cells > Tv = 8 (skip, step 16), (0,2) merges, the recomputed list holds only
    # ({0,2}, {1}) with 32 cells: skipped, and the list is exhausted.
    d = sym(3, {(0, 1): 0.5, (0, 2): 0.5, (1, 2): 0.5})
    res = cluster_attributes(d, [4, 4, 2], Tv=8, Td=0.5)
    assert res.trace == (
        MergeStep(1, (0,), (1,), 0.5, 16, False, REASON_EXCEEDS_TV),
        MergeStep(2, (0,), (2,), 0.5, 8, True, REASON_MERGED),
        MergeStep(3, (0, 2), (1,), 0.5, 32, False, REASON_EXCEEDS_TV),
    )
    assert res.clusters == ((0, 2), (1,))
    # A tie that straddles Td: equal to Td merges, the next (smaller) one stops the walk.
    d = sym(4, {(0, 1): 0.3, (2, 3): 0.3, (0, 2): 0.2, (0, 3): 0.2, (1, 2): 0.2, (1, 3): 0.2})
    res = cluster_attributes(d, [2, 2, 2, 2], Tv=4, Td=0.3)
    assert [(s.left, s.right, s.reason) for s in res.trace] == [
        ((0,), (1,), REASON_MERGED),
        ((2,), (3,), REASON_MERGED),
        ((0, 1), (2, 3), REASON_BELOW_TD),
    ]
    assert res.trace[-1].dependence == 0.2 and res.clusters == ((0, 1), (2, 3))


def test_singleton_larger_than_tv_stays_alone() -> None:
    d = sym(3, {(0, 1): 0.9, (0, 2): 0.9, (1, 2): 0.1})
    res = cluster_attributes(d, [200, 2, 2], Tv=100, Td=0.0)
    assert res.clusters == ((0,), (1, 2))
    assert res.cells([200, 2, 2]) == (200, 4)
    assert res.labels == (0, 1, 1)


def test_no_limits_merge_everything_and_single_attribute_is_trivial() -> None:
    d = sym(4, {(0, 1): 0.0, (2, 3): 0.3})
    res = cluster_attributes(d, [2, 3, 4, 5], Tv=math.inf, Td=0.0)
    assert res.clusters == ((0, 1, 2, 3),)
    assert sum(s.merged for s in res.trace) == 3
    single = cluster_attributes(np.ones((1, 1)), [7], Tv=1, Td=1.0)
    assert single == Clustering(clusters=((0,),), trace=())


def test_is_deterministic() -> None:
    rng = np.random.default_rng(7)
    x = rng.random((6, 6))
    d = (x + x.T) / 2
    a = cluster_attributes(d, [2, 3, 2, 4, 2, 3], Tv=30, Td=0.3)
    b = cluster_attributes(d.copy(), (2, 3, 2, 4, 2, 3), Tv=30.0, Td=0.3)
    assert a == b


@pytest.mark.parametrize(
    ("dep", "sizes", "tv", "td", "match"),
    [
        (np.ones((2, 3)), [2, 2], 10, 0.1, "square"),
        (np.ones((0, 0)), [], 10, 0.1, "non-empty square"),
        (sym(2, {(0, 1): 1.5}), [2, 2], 10, 0.1, r"\[0, 1\]"),
        (sym(2, {(0, 1): -0.1}), [2, 2], 10, 0.1, r"\[0, 1\]"),
        (sym(2, {(0, 1): np.nan}), [2, 2], 10, 0.1, "finite"),
        (np.array([[1.0, 0.2], [0.3, 1.0]]), [2, 2], 10, 0.1, "symmetric"),
        (sym(2, {}), [2], 10, 0.1, "one entry per attribute"),
        (sym(2, {}), [2, 0], 10, 0.1, r"sizes\[1\] must be an integer >= 1, got 0"),
        (sym(2, {}), [2, True], 10, 0.1, r"sizes\[1\]"),
        (sym(2, {}), [2, 2.5], 10, 0.1, r"sizes\[1\]"),
        (sym(2, {}), [2, 2], 0.5, 0.1, "Tv must be >= 1"),
        (sym(2, {}), [2, 2], math.nan, 0.1, "Tv must be a real number"),
        (sym(2, {}), [2, 2], "10", 0.1, "Tv must be a real number"),
        (sym(2, {}), [2, 2], 10, 1.5, r"Td must be a real number in \[0, 1\] \(minimum dependence\)"),
        (sym(2, {}), [2, 2], 10, -0.1, r"Td must be a real number in \[0, 1\] \(minimum dependence\)"),
    ],
)
def test_rejects_bad_input(dep: object, sizes: list, tv: object, td: object, match: str) -> None:
    with pytest.raises(ConfigurationError, match=match):
        cluster_attributes(dep, sizes, tv, td)


# --------------------------------------------------------------------------- properties


@st.composite
def problems(draw: st.DrawFn) -> tuple[np.ndarray, list[int], float, float]:
    m = draw(st.integers(1, 7))
    # Dependences from a small grid so that ties are frequent.
    values = draw(
        st.lists(
            st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 0.8, 1.0]), min_size=m * m, max_size=m * m
        )
    )
    x = np.array(values).reshape(m, m)
    d = np.triu(x, 1) + np.triu(x, 1).T + np.eye(m)
    sizes = draw(st.lists(st.integers(1, 6), min_size=m, max_size=m))
    tv = draw(st.sampled_from([1, 4, 10, 36, 100, 1000, math.inf]))
    td = draw(st.sampled_from([0.0, 0.1, 0.25, 0.5, 0.8, 1.0]))
    return d, sizes, tv, td


def cluster_dep(d: np.ndarray, a: tuple[int, ...], b: tuple[int, ...]) -> float:
    return float(max(d[i, j] for i in a for j in b))


@settings(max_examples=300, deadline=None)
@given(problems())
def test_properties_of_algorithm_1(problem: tuple[np.ndarray, list[int], float, float]) -> None:
    d, sizes, tv, td = problem
    m = len(sizes)
    res = cluster_attributes(d, sizes, tv, td)
    # Partition of the attributes, canonical order.
    flat = [a for c in res.clusters for a in c]
    assert sorted(flat) == list(range(m))
    assert all(list(c) == sorted(c) for c in res.clusters)
    assert list(res.clusters) == sorted(res.clusters)
    # Every merged cluster within Tv (a singleton may exceed it).
    for c in res.clusters:
        assert len(c) == 1 or math.prod(sizes[a] for a in c) <= tv
    # No two final clusters with dependence >= Td could still be merged within Tv.
    for x in range(len(res.clusters)):
        for y in range(x + 1, len(res.clusters)):
            a, b = res.clusters[x], res.clusters[y]
            if cluster_dep(d, a, b) >= td:
                assert math.prod(sizes[i] for i in a + b) > tv
    # Trace is consistent: steps numbered, dependence = max pairwise, merges replay to clusters.
    current = [(i,) for i in range(m)]
    for k, step in enumerate(res.trace, start=1):
        assert step.step == k
        assert step.dependence == cluster_dep(d, step.left, step.right)
        assert step.cells == math.prod(sizes[a] for a in step.left + step.right)
        assert step.merged == (step.reason == REASON_MERGED)
        if step.merged:
            current.remove(step.left)
            current.remove(step.right)
            current = sorted(current + [tuple(sorted(step.left + step.right))])
    assert tuple(current) == res.clusters
    # Same result as the literal line-by-line transcription.
    ref_clusters, ref_trace = reference_algorithm_1(d, sizes, tv, td)
    assert tuple(ref_clusters) == res.clusters
    assert [(s.left, s.right, s.dependence, s.cells, s.merged) for s in res.trace] == ref_trace


# --------------------------------------------------------------------------- significant pairs only


def test_significant_pairs_worked_example() -> None:
    p = {(0, 1): 0.001, (0, 2): 0.015, (1, 2): 0.04, (2, 3): 0.3}  # 4 pairs tested, alpha 0.05
    assert significant_pairs(p, 0.05) == ((0, 1),)  # p < 0.0125
    # Holm: 0.001 < 0.05/4, 0.015 < 0.05/3, then 0.04 >= 0.05/2 stops
    assert significant_pairs(p, 0.05, correction="holm") == ((0, 1), (0, 2))
    assert significant_pairs(p, 0.05, correction="none") == ((0, 1), (0, 2), (1, 2))
    assert significant_pairs({}, 0.05) == ()


def test_significant_pairs_refuses_bad_input() -> None:
    with pytest.raises(ConfigurationError, match=r"correction must be one of \['bonferroni', 'holm', 'none'\], got 'bh'"):
        significant_pairs({(0, 1): 0.5}, 0.05, correction="bh")
    with pytest.raises(ConfigurationError, match=r"keys of p_values must be pairs \(i, j\) of attribute indices i < j, got \(1, 0\)"):
        significant_pairs({(1, 0): 0.5}, 0.05)
    with pytest.raises(ConfigurationError, match=r"p_values\[\(0, 1\)\] must be a real number in \[0, 1\], got 1.5"):
        significant_pairs({(0, 1): 1.5}, 0.05)
    with pytest.raises(ConfigurationError, match=r"alpha must be a real number in \(0, 1\)"):
        significant_pairs({(0, 1): 0.5}, 0.0)


def test_cluster_significant_ignores_strong_but_insignificant_dependence() -> None:
    d = sym(4, {(0, 1): 0.9, (1, 2): 0.3, (2, 3): 0.05})
    result = cluster_significant(d, [(1, 2), (2, 3)], [2, 2, 2, 2], Tv=4)
    assert result.clusters == ((0,), (1, 2), (3,))
    # (1,2) merged; then {1,2}-{3} (significant, 0.05) exceeds Tv; then {0}-{1,2} is not significant
    assert [(s.left, s.right, s.dependence, s.reason) for s in result.trace] == [
        ((1,), (2,), 0.3, REASON_MERGED),
        ((1, 2), (3,), 0.05, REASON_EXCEEDS_TV),
        ((0,), (1, 2), 0.0, REASON_NOT_SIGNIFICANT),
    ]
    assert cluster_significant(d, [(1, 2), (2, 3)], [2, 2, 2, 2], Tv=8).clusters == ((0,), (1, 2, 3))
    assert cluster_significant(d, [(1, 2), (2, 3)], [2, 2, 2, 2], Tv=8, Td=0.1).clusters == ((0,), (1, 2), (3,))
    with pytest.raises(ConfigurationError, match=r"significant must be pairs \(i, j\) of attribute indices i < j in \[0, 4\), got \(3, 4\)"):
        cluster_significant(d, [(3, 4)], [2, 2, 2, 2], Tv=8)


def test_cluster_significant_is_algorithm_1_on_the_significant_pairs(rng: np.random.Generator) -> None:
    for _ in range(200):
        m = int(rng.integers(2, 8))
        d = sym(m, {(i, j): float(rng.choice([0.1, 0.2, 0.5, rng.random()]))
                    for i in range(m) for j in range(i + 1, m)})
        sizes = [int(s) for s in rng.integers(2, 5, size=m)]
        tv = float(rng.choice([4, 16, 64, math.inf]))
        pairs = [(i, j) for i in range(m) for j in range(i + 1, m) if rng.random() < 0.5]
        if not pairs:
            continue
        td = min(d[i, j] for i, j in pairs)
        masked = np.eye(m)
        for i, j in pairs:
            masked[i, j] = masked[j, i] = d[i, j]
        ours = cluster_significant(d, pairs, sizes, tv)
        literal = cluster_attributes(masked, sizes, tv, td)
        assert ours.clusters == literal.clusters
        strip = [(s.left, s.right, s.dependence, s.merged) for s in ours.trace if s.reason != REASON_NOT_SIGNIFICANT]
        assert strip == [(s.left, s.right, s.dependence, s.merged) for s in literal.trace if s.reason != REASON_BELOW_TD]
        everything = [(i, j) for i in range(m) for j in range(i + 1, m)]
        all_td = min(d[i, j] for i, j in everything)
        assert cluster_significant(d, everything, sizes, tv, Td=all_td).clusters == cluster_attributes(d, sizes, tv, all_td).clusters


def test_clustering_on_significant_pairs_finds_planted_clusters_and_merges_no_independent_attributes(
    rng: np.random.Generator,
) -> None:
    """Planted clusters {0,1,2}, {3,4} (strength 0.7) among 8 attributes; every attribute through
    GRR with ε = 1; Pearson's χ² on each released pair table, Bonferroni at α = 0.05 over the
    28 pairs.  Over R = 100 runs, a merge across planted groups needs a false rejection, so
    it happens in at most α + 3 SE of the runs; the planted clusters are found in >= 90 %."""
    runs, alpha = 100, 0.05
    wrong = found = 0
    for _ in range(runs):
        data = planted_clusters(20_000, rng=rng)
        sizes = data.dataset.sizes
        codes = data.dataset.codes
        released = np.column_stack([
            randomize(codes[:, j], grr(s, 1.0), uniforms=rng.random(codes.shape[0])) for j, s in enumerate(sizes)
        ])
        tables = bivariate_tables(released, sizes)
        p_values = {pair: pearson_chi2(t).p_value for pair, t in tables.items()}
        significant = significant_pairs(p_values, alpha)
        dep = dependence_matrix(tables, ["nominal"] * len(sizes))
        clusters = cluster_significant(dep, significant, sizes, Tv=math.inf).clusters
        group = {a: k for k, c in enumerate(data.clusters) for a in c}
        wrong += any(len({group.get(a, ("alone", a)) for a in c}) > 1 for c in clusters)
        found += all(c in clusters for c in data.clusters)
    assert wrong / runs <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / runs)
    assert found / runs >= 0.9
