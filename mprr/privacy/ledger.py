"""What a party has released, and what it costs under a named composition policy.

A :class:`Release` (defined in :mod:`mprr.privacy.release`) records one local randomized-response
release of one party: which attributes (one attribute, a pair or a cluster), the ε of the
matrix (main paper eq. (4)), its entropy rate and β (bistochastic-privacy paper,
Definition 1), whether the controller can link it to the party (a direct message) or not (a
contribution hidden in a secure sum), whether it is an exact release of true values (main
paper 4.2: ε = ∞, no DP guarantee) and the protocol phase.  A :class:`Ledger` is an
immutable, append-only sequence of releases.

Composition is always explicit and named (:class:`CompositionPolicy`):

``sequential``
    ε = Σ_r ε_r over every release.  Record-level local DP: valid whatever the controller
    links; RR-Independent over m attributes gives mε (RR-Ind-Joint paper Theorem 2), an
    RR-Clusters release of cluster C through a matrix carrying Σ_{A∈C} ε_A gives the same total
    (main paper 6.3).

``parallel``
    McSherry's parallel composition over the *attributes* of the party.  The releases of a
    phase are grouped into the connected components of their attribute-overlap graph
    (two releases are connected when they share an attribute).  Inside a component the
    releases compose sequentially (sum); different components read disjoint data and compose
    by max.  So releases on disjoint attribute sets cost max ε, and any chain of overlaps
    (A,B), (B,C) adds up.  The guarantee protects any change of the party's values confined
    to one component; it is *not* a record-level guarantee (use ``sequential`` for that).

``unlinkable-pairs``
    The main paper's Section 4.3 argument, made explicit: releases hidden in a secure sum are
    unlinkable to the party and to each other, so "we can waive sequential composition and
    take the overall level of differential privacy to be the same as if each attribute were
    released only once".  Each unlinkable release r spends a share s_{r,A} on each of its
    attributes A (its per-factor ε when the matrix is a Kronecker product with one factor per
    attribute, otherwise ε_r / |r|); per attribute only the largest unlinkable share counts,
    and the per-attribute maxima add up.  The argument covers one draw of each attribute set:
    a *fresh* draw of a set already released (the same pair in another secure sum) is another
    sample of the same values, which a controller can link by repetition (a majority vote over
    41 draws recovers the pair), so it is new spending.  The k-th unlinkable release of an
    attribute set (k = 0, 1, ...) is in draw layer k, and the layers add:
    ε = Σ_{linkable r} ε_r + Σ_k Σ_A max_{unlinkable r ∋ A in layer k} s_{r,A}.  Linkable
    releases still add.  Properties: equals ``sequential`` when the unlinkable releases are
    pairwise disjoint; never exceeds ``sequential``; for the m(m-1)/2 pair releases of 4.3 at
    ε each it gives mε/2 (as many as ⌈m/2⌉ disjoint pairs, i.e. each attribute released once)
    instead of m(m-1)ε/2, and j fresh draws of all pairs cost j·mε/2.  (Counting the full ε_r once per attribute
    would charge a single unlinkable pair 2ε_r, more than sequential composition, which is
    why shares are used.)

Whatever the policy, phases compose sequentially: the total is the sum over phases of the
policy applied within each phase (main paper Section 4: dependence phase ε1 + release phase
ε2).  An exact release (or any matrix with eq. (4) ε = ∞) makes the total ∞: "no DP guarantee".

The policies are implemented in :mod:`mprr.privacy.composition` as incremental
per-phase totals (:class:`~mprr.privacy.composition.PolicyTotals`).  A :class:`Ledger` carries its totals and a replay
index from snapshot to snapshot, so appending, ``total``, ``lookup`` and a budget check cost
microseconds whatever the ledger's length (32,561 parties share one process in the actor
simulator).
"""

from __future__ import annotations

from collections.abc import Iterator
from weakref import WeakValueDictionary
from dataclasses import dataclass, field
from typing import Any

from mprr.privacy.composition import CompositionPolicy, PolicyTotals, as_policy
from mprr.errors import ConfigurationError
from mprr.privacy.release import Release

__all__ = ["Ledger"]


# ---------------------------------------------------------------------- ledger
def _index(positions: dict[tuple[Any, ...], int], release: Release, position: int) -> None:
    """Record ``release``'s replay keys (:attr:`Release.replay_keys`) at ``position`` (first wins)."""
    by_key, by_id, keyless = release.replay_keys
    if by_key is not None:
        positions.setdefault(by_key, position)
    if by_id is not None:
        positions.setdefault(by_id, position)
        if by_key is None and keyless is not None:
            positions.setdefault(keyless, position)


_INDEX = object()
"""Cache key of the replay index (the other cache keys are policies, :data:`_CHILDREN` and :data:`_PARENT`)."""
_CHILDREN = object()
"""Cache key of a ledger's appended snapshots, by release (weak references: :meth:`Ledger.appended`)."""
_PARENT = object()
"""Cache key of the ledger a snapshot was appended to (kept alive while the snapshot is)."""


@dataclass(frozen=True)
class Ledger:
    """Immutable, append-only record of one party's releases.

    :meth:`appended` returns a new ledger; the old one is an unchanged snapshot.  Totals are
    kept per policy (:class:`~mprr.privacy.composition.PolicyTotals`, computed on first use and then
    carried incrementally to each appended snapshot) and repeats are found through an index
    (:meth:`lookup`), so neither recomposes nor rescans the ledger.

    Snapshots are shared: appending the same release object to the same ledger returns the
    same snapshot, and accountants start from one empty ledger (:meth:`empty`), so the parties
    of a run that release the same things (release objects are shared through the parties'
    public :class:`~parties.public_state.ReleaseBook`) hold one ledger object between them,
    with its totals and index computed once.  Pickling keeps the releases only.
    """

    releases: tuple[Release, ...] = ()
    _cache: dict[Any, Any] = field(default_factory=dict, init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        releases = tuple(self.releases)
        for release in releases:
            if not isinstance(release, Release):
                raise ConfigurationError(f"a ledger holds Release objects, got {release!r}")
        object.__setattr__(self, "releases", releases)

    def __len__(self) -> int:
        return len(self.releases)

    def __iter__(self) -> Iterator[Release]:
        return iter(self.releases)

    def __getitem__(self, index: int) -> Release:
        return self.releases[index]

    def __reduce__(self) -> tuple[Any, ...]:
        return (type(self), (self.releases,))

    @staticmethod
    def empty() -> Ledger:
        """The shared empty ledger (where accountants start; see the class docstring)."""
        return _EMPTY

    def appended(self, release: Release) -> Ledger:
        """The ledger with ``release`` at the end (totals and index carried over incrementally).

        The same release object appended to the same ledger gives the same snapshot (kept while
        someone holds it), so equal histories share their ledgers.
        """
        if not isinstance(release, Release):
            raise ConfigurationError(f"a ledger holds Release objects, got {release!r}")
        releases = self.releases + (release,)
        if type(self) is not Ledger:
            return type(self)(releases)
        children = self._cache.get(_CHILDREN)
        if children is not None:
            # a live child holds its release, so no other release can have this id meanwhile
            found: Ledger | None = children.get(id(release))
            if found is not None:
                return found
        cache: dict[Any, Any] = {}
        for key, value in self._cache.items():
            if key is _CHILDREN or key is _PARENT:
                continue
            if key is _INDEX:
                value = dict(value)
                _index(value, release, len(self.releases))
            else:
                value = value.plus(release)
            cache[key] = value
        cache[_PARENT] = self  # so that the next party appending the same release finds the child
        new = _new_ledger(Ledger)
        new.__dict__.update(releases=releases, _cache=cache)
        if children is None:
            children = self._cache[_CHILDREN] = WeakValueDictionary()
        children[id(release)] = new
        return new

    def extended(self, releases: tuple[Release, ...]) -> Ledger:
        """The ledger with ``releases`` appended in order: the ledger :meth:`appended` gives one
        release at a time (equal releases, totals and index), without the snapshots in between.
        The same release objects appended to the same ledger give the same snapshot, as for
        :meth:`appended` (a party commits all the releases of a secure-sum request at once).
        """
        if len(releases) == 1:
            return self.appended(releases[0])
        for release in releases:
            if not isinstance(release, Release):
                raise ConfigurationError(f"a ledger holds Release objects, got {release!r}")
        if type(self) is not Ledger or not releases:
            return self if not releases else type(self)(self.releases + tuple(releases))
        key = tuple(map(id, releases))
        children = self._cache.get(_CHILDREN)
        if children is not None:
            found: Ledger | None = children.get(key)  # the live child holds these releases
            if found is not None:
                return found
        cache: dict[Any, Any] = {}
        start = len(self.releases)
        for name, value in self._cache.items():
            if name is _CHILDREN or name is _PARENT:
                continue
            if name is _INDEX:
                value = dict(value)
                for position, release in enumerate(releases, start):
                    _index(value, release, position)
            else:
                value = value.plus_all(releases)
            cache[name] = value
        cache[_PARENT] = self
        new = _new_ledger(Ledger)
        new.__dict__.update(releases=self.releases + tuple(releases), _cache=cache)
        if children is None:
            children = self._cache[_CHILDREN] = WeakValueDictionary()
        children[key] = new
        return new

    @property
    def phases(self) -> tuple[str, ...]:
        """Phases in order of first release."""
        return tuple(dict.fromkeys(r.phase for r in self.releases))

    def lookup(self, request: Release) -> int | None:
        """Index of the earliest release that ``request`` repeats (:meth:`Release.same_as`), or None.

        O(1): a dict from the content :meth:`Release.same_as` compares, plus the matrix key or
        the request id, to the first position holding it (built on first use, then carried to
        each appended snapshot).
        """
        positions = self._cache.get(_INDEX)
        if positions is None:
            positions = self._cache[_INDEX] = {}
            for position, release in enumerate(self.releases):
                _index(positions, release, position)
        by_key, by_id, keyless = request.replay_keys
        if by_key is None:  # no matrix key: only an equal request id (and content) repeats
            return None if by_id is None else positions.get(by_id)
        found = positions.get(by_key)
        if keyless is not None:  # an entry without a matrix key matches by request id
            other = positions.get(keyless)
            if other is not None and (found is None or other < found):
                found = other
        return found

    def totals(self, policy: CompositionPolicy | str) -> PolicyTotals:
        """Incremental totals under ``policy`` (cached; carried over by :meth:`appended`)."""
        key = policy if type(policy) is CompositionPolicy else as_policy(policy)
        totals = self._cache.get(key)
        if totals is None:
            totals = self._cache[key] = PolicyTotals.of(self.releases, key)
        return totals

    def by_phase(self, policy: CompositionPolicy | str) -> dict[str, float]:
        """ε per phase under ``policy`` (cached)."""
        return self.totals(policy).by_phase

    def total(self, policy: CompositionPolicy | str) -> float:
        """Total ε under ``policy``; phases compose sequentially (cached)."""
        return self.totals(policy).total

    @property
    def no_dp_guarantee(self) -> bool:
        """``True`` when some release has ε = ∞ (then every policy's total is ∞)."""
        return any(r.no_dp_guarantee for r in self.releases)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly list of releases."""
        return {"releases": [r.to_dict() for r in self.releases]}


_new_ledger = object.__new__
_EMPTY = Ledger()
