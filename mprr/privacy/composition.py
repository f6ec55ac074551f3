"""Composition policies: how the ε of a party's releases add up (rules and incremental totals).

The policies are defined in :mod:`mprr.privacy.ledger` (module docstring).  Each policy is kept incrementally (:class:`PolicyTotals`): one small immutable state per
phase that :meth:`PolicyTotals.plus` extends by one release in O(size of the release) instead of
recomposing the whole ledger.  A :class:`~mprr.privacy.ledger.Ledger` keeps one per policy it was
asked about, so a party's ``spent()`` and budget checks cost microseconds.  Sums use
``math.fsum`` (exactly rounded, order-independent); the tests check the totals, bit for bit,
against the policies' rules written from scratch.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from enum import Enum
from typing import TYPE_CHECKING, Any

from mprr.errors import ConfigurationError

if TYPE_CHECKING:  # pragma: no cover - typing only (mprr.privacy.ledger imports this module)
    from mprr.privacy.release import Attr, Release

__all__ = [
    "CompositionPolicy",
    "as_policy",
    "PolicyTotals",
]


class CompositionPolicy(str, Enum):
    """Named composition policies (see :mod:`mprr.privacy.ledger` for their exact definitions)."""

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    UNLINKABLE_PAIRS = "unlinkable-pairs"

    def __str__(self) -> str:
        return self.value


_POLICY_BY_NAME: dict[object, CompositionPolicy] = {p: p for p in CompositionPolicy}
_POLICY_BY_NAME.update({p.value: p for p in CompositionPolicy})


def as_policy(policy: CompositionPolicy | str) -> CompositionPolicy:
    """Normalise a policy name; ConfigurationError naming the allowed values otherwise."""
    if type(policy) is CompositionPolicy:
        return policy
    try:
        return _POLICY_BY_NAME[policy]
    except (KeyError, TypeError):
        pass
    try:
        return CompositionPolicy(policy)
    except ValueError:
        allowed = ", ".join(repr(p.value) for p in CompositionPolicy)
        raise ConfigurationError(f"policy must be one of {allowed}, got {policy!r}") from None


# ---------------------------------------------------------------------- accumulators (incremental)
# One immutable state per phase and a step function per policy:  step(state | None, release)
# -> (new state, ε of the phase).  Steps never mutate a state: snapshots stay valid.
_PhaseState = Any


def _sequential_step(state: tuple[float, ...] | None, release: Release) -> tuple[tuple[float, ...], float]:
    """State: the ε of the phase's releases; value: their exact sum."""
    epsilons = (release.epsilon,) if state is None else state + (release.epsilon,)
    return epsilons, math.fsum(epsilons)


def _unlinkable_step(
    state: tuple[tuple[float, ...], float, tuple[dict[Attr, float], ...], dict[frozenset[Attr], int]] | None,
    release: Release,
) -> tuple[tuple[tuple[float, ...], float, tuple[dict[Attr, float], ...], dict[frozenset[Attr], int]], float]:
    """State: (linkable ε, their exact sum, largest unlinkable share per attribute in each draw
    layer, unlinkable releases so far per attribute set).  The k-th unlinkable release of an
    attribute set (k = 0, 1, ...) is in layer k: a fresh draw of a set already released adds
    a layer (:mod:`mprr.privacy.ledger`)."""
    linkable, linkable_sum, layers, drawn = ((), 0.0, (), {}) if state is None else state
    if release.linkable:
        linkable = linkable + (release.epsilon,)
        linkable_sum = math.fsum(linkable)
    else:
        key = frozenset(release.attributes)
        layer = drawn.get(key, 0)
        drawn = {**drawn, key: layer + 1}
        best = layers[layer] if layer < len(layers) else {}
        copied = False
        for attribute, share in zip(release.attributes, release.shares):
            if share > best.get(attribute, -1.0):
                if not copied:
                    best, copied = dict(best), True
                best[attribute] = share
        layers = layers[:layer] + (best,) + layers[layer + 1:]
    return (linkable, linkable_sum, layers, drawn), math.fsum([linkable_sum, *(v for b in layers for v in b.values())])


def _parallel_step(
    state: tuple[dict[Attr, int], dict[int, tuple[frozenset[Attr], tuple[float, ...], float]], int] | None,
    release: Release,
) -> tuple[Any, float]:
    """State: (attribute -> component id, id -> (attributes, ε, exact sum), next id).

    Adding a release merges the overlap components it touches (a union-find over attributes,
    kept as the ledger grows); value: the largest component sum.
    """
    component_of, components, next_id = ({}, {}, 0) if state is None else state
    component_of, components = dict(component_of), dict(components)
    attributes = set(release.attributes)
    epsilons: tuple[float, ...] = ()
    for cid in sorted({component_of[a] for a in release.attributes if a in component_of}):
        members, eps, _ = components.pop(cid)
        attributes |= members
        epsilons += eps
    epsilons += (release.epsilon,)
    components[next_id] = (frozenset(attributes), epsilons, math.fsum(epsilons))
    for attribute in attributes:
        component_of[attribute] = next_id
    return (component_of, components, next_id + 1), max([c[2] for c in components.values()])


_STEPS: dict[CompositionPolicy, Callable[[Any, Release], tuple[Any, float]]] = {
    CompositionPolicy.SEQUENTIAL: _sequential_step,
    CompositionPolicy.PARALLEL: _parallel_step,
    CompositionPolicy.UNLINKABLE_PAIRS: _unlinkable_step,
}


class PolicyTotals:
    """Immutable incremental ε of a sequence of releases under one policy.

    :attr:`by_phase` maps each phase (order of first release) to its ε under the policy,
    :attr:`total` is their exact sum (phases compose sequentially).  :meth:`plus` costs
    O(size of the phase's state), not O(length of the ledger), and remembers its last result
    (a budget check followed by the grant of the same release computes it once).

    Parameters
    ----------
    policy
        The composition policy.

    Examples
    --------
    >>> from mprr.privacy.release import Release
    >>> t = PolicyTotals("sequential").plus(Release(("A",), 0.5)).plus(Release(("B",), 0.25))
    >>> t.total, t.by_phase
    (0.75, {'release': 0.75})
    """

    __slots__ = ("policy", "total", "_step", "_states", "_values", "_last")

    def __init__(self, policy: CompositionPolicy | str) -> None:
        self.policy = as_policy(policy)
        self.total = 0.0
        self._step = _STEPS[self.policy]
        self._states: dict[str, _PhaseState] = {}
        self._values: dict[str, float] = {}
        self._last: tuple[Release, PolicyTotals] | None = None

    @classmethod
    def of(cls, releases: Iterable[Release], policy: CompositionPolicy | str) -> PolicyTotals:
        """Totals of ``releases`` (in order) under ``policy``."""
        return cls(policy).plus_all(releases)

    def plus(self, release: Release) -> PolicyTotals:
        """The totals with ``release`` added (``self`` is unchanged)."""
        last = self._last
        if last is not None and last[0] is release:
            return last[1]
        phase = release.phase
        state, value = self._step(self._states.get(phase), release)
        new = _new_totals(PolicyTotals)
        new.policy, new._step, new._last = self.policy, self._step, None
        new._states = states = self._states.copy()
        new._values = values = self._values.copy()
        states[phase] = state
        values[phase] = value
        new.total = math.fsum(values.values())
        self._last = (release, new)
        return new

    def plus_all(self, releases: Iterable[Release]) -> PolicyTotals:
        """The totals with every one of ``releases`` added, in order."""
        totals = self
        for release in releases:
            totals = totals.plus(release)
        return totals

    @property
    def by_phase(self) -> dict[str, float]:
        """ε per phase (a new dict; phases in order of first release)."""
        return dict(self._values)

    @property
    def phases(self) -> tuple[str, ...]:
        """Phases in order of first release."""
        return tuple(self._values)

    def phase_value(self, phase: str) -> float:
        """ε of ``phase`` (0 when it has no release)."""
        return self._values.get(phase, 0.0)

    def __repr__(self) -> str:
        return f"PolicyTotals({self.policy.value!r}, total={self.total!r}, by_phase={self._values!r})"


_new_totals = object.__new__
