"""From-scratch composition rules: the model the incremental totals of mprr.privacy are tested against.

Each policy of :mod:`mprr.privacy.ledger` (module docstring) written as a rule over a whole
sequence of releases; :class:`mprr.privacy.composition.PolicyTotals` keeps the same numbers
incrementally, and the tests check the two agree to the last bit on random ledgers (both use
``math.fsum`` on the same multisets of numbers).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from mprr.privacy.composition import CompositionPolicy, as_policy
from mprr.privacy.release import Attr, Release

def _sequential(releases: Sequence[Release]) -> float:
    """Sequential composition: Σ ε_r (exactly rounded, order-independent)."""
    return math.fsum(r.epsilon for r in releases)


def attribute_components(releases: Sequence[Release]) -> list[list[int]]:
    """Indices of ``releases`` grouped by connected components of the attribute-overlap graph.

    Two releases are in the same component when a chain of releases, each sharing an
    attribute with the next, joins them (union-find over attributes).  Components are listed
    by their first release.
    """
    parent: dict[Attr, Attr] = {}

    def find(a: Attr) -> Attr:
        root = a
        while parent[root] != root:
            root = parent[root]
        while parent[a] != root:
            parent[a], a = root, parent[a]
        return root

    for release in releases:
        for attribute in release.attributes:
            parent.setdefault(attribute, attribute)
        first = find(release.attributes[0])
        for attribute in release.attributes[1:]:
            root = find(attribute)
            if root != first:
                parent[root] = first
    groups: dict[Attr, list[int]] = {}
    for index, release in enumerate(releases):
        groups.setdefault(find(release.attributes[0]), []).append(index)
    return list(groups.values())


def _parallel(releases: Sequence[Release]) -> float:
    """Parallel composition: max over overlap components of the within-component sum."""
    if not releases:
        return 0.0
    return max(_sequential([releases[i] for i in comp]) for comp in attribute_components(releases))


def _unlinkable_pairs(releases: Sequence[Release]) -> float:
    """Main paper 4.3, one draw per attribute set: Σ linkable ε_r + Σ over draw layers k of
    Σ_A max over the unlinkable releases of layer k of the share on A (the k-th release of an
    attribute set is in layer k)."""
    linkable = math.fsum(r.epsilon for r in releases if r.linkable)
    seen: dict[frozenset[Attr], int] = {}
    layers: dict[int, dict[Attr, float]] = {}
    for release in releases:
        if release.linkable:
            continue
        key = frozenset(release.attributes)
        best = layers.setdefault(seen.get(key, 0), {})
        seen[key] = seen.get(key, 0) + 1
        for attribute, share in zip(release.attributes, release.shares):
            if share > best.get(attribute, -1.0):
                best[attribute] = share
    return math.fsum([linkable, *(v for best in layers.values() for v in best.values())])


COMPOSITION_RULES: Mapping[CompositionPolicy, Callable[[Sequence[Release]], float]] = {
    CompositionPolicy.SEQUENTIAL: _sequential,
    CompositionPolicy.PARALLEL: _parallel,
    CompositionPolicy.UNLINKABLE_PAIRS: _unlinkable_pairs,
}
"""Within-phase rule of each policy; :func:`compose` sums the rule over phases."""


def _by_phase(releases: Iterable[Release]) -> dict[str, list[Release]]:
    phases: dict[str, list[Release]] = {}
    for release in releases:
        phases.setdefault(release.phase, []).append(release)
    return phases


def compose_by_phase(releases: Iterable[Release], policy: CompositionPolicy | str) -> dict[str, float]:
    """ε spent in each phase under ``policy`` (phases in order of first release)."""
    rule = COMPOSITION_RULES[as_policy(policy)]
    return {phase: rule(group) for phase, group in _by_phase(releases).items()}


def compose(releases: Iterable[Release], policy: CompositionPolicy | str) -> float:
    """Total ε of ``releases`` under ``policy``; phases compose sequentially (main paper 4).

    Returns ``math.inf`` ("no DP guarantee") as soon as an exact or ε = ∞ release is counted.
    """
    return math.fsum(compose_by_phase(releases, policy).values())
