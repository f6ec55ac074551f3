"""What a party has released, and what it costs under a named composition policy.

A :class:`Release` records one local randomized-response release of one party: which
attributes (one attribute, a pair or a cluster), the ε of the matrix (main paper eq. (4)),
its entropy rate and β (bistochastic-privacy paper, Definition 1), whether the controller can
link it to the party (a direct message) or not (a contribution hidden in a secure sum), whether
it is an exact release of true values (main paper 4.2: ε = ∞, no DP guarantee) and the protocol
phase.  A :class:`Ledger` is an immutable, append-only sequence of releases.

Composition (:func:`compose`) is always explicit and named (:class:`CompositionPolicy`):

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
    and the per-attribute maxima add up:  ε = Σ_{linkable r} ε_r + Σ_A max_{unlinkable r ∋ A}
    s_{r,A}.  Linkable releases still add.  Properties: equals ``sequential`` when the
    unlinkable releases are pairwise disjoint; never exceeds ``sequential``; for the m(m-1)/2
    pair releases of 4.3 at ε each it gives mε/2 (as many as ⌈m/2⌉ disjoint pairs, i.e. each
    attribute released once) instead of m(m-1)ε/2.  (Counting the full ε_r once per attribute
    would charge a single unlinkable pair 2ε_r, more than sequential composition, which is
    why shares are used.)

Whatever the policy, phases compose sequentially: the total is the sum over phases of the
policy applied within each phase (main paper Section 4: dependence phase ε1 + release phase
ε2).  An exact release (or any matrix with eq. (4) ε = ∞) makes the total ∞: "no DP guarantee".
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

import numpy as np

from mprr.errors import ConfigurationError

__all__ = [
    "Attr",
    "Release",
    "Ledger",
    "CompositionPolicy",
    "COMPOSITION_RULES",
    "as_policy",
    "compose",
    "compose_by_phase",
    "attribute_components",
    "matrix_fingerprint",
    "EXACT_KEY",
]

Attr = str | int
"""An attribute is named (``"age"``) or indexed (``0``) — one convention per ledger."""

EXACT_KEY = "exact"
"""Matrix key of an exact release (the identity: true values are sent)."""

_BETA_TOL = 1e-9


def matrix_fingerprint(matrix: Any) -> str | None:
    """A stable digest of a matrix's probabilities, used to recognise a repeated request.

    Duck-typed: an object with ``factors`` (a Kronecker product) is digested factor by
    factor; an object with ``values`` (or an array-like) by its float64 entries and shape.

    Parameters
    ----------
    matrix
        ``mprr.matrices.RandomizationMatrix``, ``KroneckerMatrix``, an ndarray, or anything
        exposing ``values`` / ``factors``.

    Returns
    -------
    str or None
        Hex SHA-256 digest, or ``None`` when the object exposes no probabilities.
    """
    digest = hashlib.sha256()
    factors = getattr(matrix, "factors", None)
    parts = tuple(factors) if factors is not None else (matrix,)
    for part in parts:
        values = getattr(part, "values", part)
        if callable(values):  # e.g. a Mapping's .values method: no probabilities here
            return None
        try:
            array = np.ascontiguousarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            return None
        if array.ndim != 2:
            return None
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def _check_float(name: str, value: Any, *, allow_inf: bool, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ConfigurationError(f"{name} must be a number >= 0, got {value!r}")
    number = float(value)
    if math.isnan(number) or number < 0 or (math.isinf(number) and not allow_inf):
        allowed = "a number >= 0 or math.inf" if allow_inf else "a finite number >= 0"
        raise ConfigurationError(f"{name} must be {allowed}, got {value!r}")
    return number


@dataclass(frozen=True)
class Release:
    """One randomized (or exact) release of one party, as recorded in its ledger.

    Parameters
    ----------
    attributes
        Attribute names or indices released together: one attribute, a pair (main paper 4.3)
        or a cluster (RR-Clusters).  Order matters for :meth:`same_as` (the released code of a
        pair depends on it); a permuted request is treated as a different release.
    epsilon
        ε of the matrix, main paper eq. (4); ``math.inf`` when a column mixes zero and non-zero
        probabilities, and for exact releases.
    entropy_bits
        Entropy rate H(P) of the matrix in bits (mean row entropy); ``None`` if unknown.
    beta
        β = H(P) / log2 r (bistochastic-privacy paper, Definition 1); ``None`` if unknown.
    linkable
        ``True`` for a direct message the controller can attribute to the party; ``False``
        for a contribution hidden in a secure sum (main paper 4.2/4.3).
    exact
        ``True`` for a release of true values (main paper 4.2): ε must be ∞.
    phase
        Protocol phase, e.g. ``"dependence"`` or ``"release"``.  Phases compose sequentially.
    request_id
        Optional label of the controller's request; a repeated id with the same content is a
        duplicate (see :meth:`same_as`).
    matrix_key
        Digest of the matrix (:func:`matrix_fingerprint`); ``EXACT_KEY`` for exact releases.
    attribute_epsilons
        Optional per-attribute ε (one per attribute, e.g. the factor ε of a Kronecker matrix);
        used by the ``unlinkable-pairs`` policy as the per-attribute shares.  Defaults to an
        equal split ε / |attributes|.
    """

    attributes: tuple[Attr, ...]
    epsilon: float
    entropy_bits: float | None = None
    beta: float | None = None
    linkable: bool = True
    exact: bool = False
    phase: str = "release"
    request_id: str | None = None
    matrix_key: str | None = None
    attribute_epsilons: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        attributes = self.attributes
        if isinstance(attributes, (str, int, np.integer)):
            attributes = (attributes,)
        try:
            attributes = tuple(attributes)
        except TypeError:
            raise ConfigurationError(
                f"attributes must be a non-empty sequence of names or indices, got {self.attributes!r}"
            ) from None
        normalised: list[Attr] = []
        for attribute in attributes:
            if isinstance(attribute, (bool, np.bool_)) or not isinstance(attribute, (str, int, np.integer)):
                raise ConfigurationError(
                    f"attributes must be names (str) or indices (int), got {attribute!r} in {attributes!r}"
                )
            normalised.append(attribute if isinstance(attribute, str) else int(attribute))
        if not normalised or len(set(normalised)) != len(normalised):
            raise ConfigurationError(
                f"attributes must be non-empty and without repeats, got {tuple(normalised)!r}"
            )
        object.__setattr__(self, "attributes", tuple(normalised))
        object.__setattr__(self, "epsilon", _check_float("epsilon", self.epsilon, allow_inf=True))
        object.__setattr__(
            self, "entropy_bits", _check_float("entropy_bits", self.entropy_bits, allow_inf=False, allow_none=True)
        )
        beta = _check_float("beta", self.beta, allow_inf=False, allow_none=True)
        if beta is not None and beta > 1 + _BETA_TOL:
            raise ConfigurationError(f"beta must be in [0, 1], got {self.beta!r}")
        object.__setattr__(self, "beta", beta)
        for flag in ("linkable", "exact"):
            if not isinstance(getattr(self, flag), (bool, np.bool_)):
                raise ConfigurationError(f"{flag} must be True or False, got {getattr(self, flag)!r}")
            object.__setattr__(self, flag, bool(getattr(self, flag)))
        if self.exact and not math.isinf(self.epsilon):
            raise ConfigurationError(
                f"an exact release (true values, main paper 4.2) has epsilon = inf, got {self.epsilon!r}"
            )
        if not isinstance(self.phase, str) or not self.phase:
            raise ConfigurationError(f"phase must be a non-empty string, got {self.phase!r}")
        for name in ("request_id", "matrix_key"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise ConfigurationError(f"{name} must be a string or None, got {value!r}")
        if self.attribute_epsilons is not None:
            shares = tuple(
                _check_float("attribute_epsilons entry", e, allow_inf=True) for e in self.attribute_epsilons
            )
            if len(shares) != len(normalised):
                raise ConfigurationError(
                    f"attribute_epsilons must have one entry per attribute ({len(normalised)}), "
                    f"got {len(shares)}"
                )
            object.__setattr__(self, "attribute_epsilons", shares)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_matrix(
        cls,
        attributes: Sequence[Attr] | Attr,
        matrix: Any,
        *,
        linkable: bool = True,
        phase: str = "release",
        request_id: str | None = None,
    ) -> Release:
        """Record a release through ``matrix`` (duck-typed: ``.epsilon``, ``.entropy_rate``, ``.beta``).

        Works with ``mprr.matrices.RandomizationMatrix`` and ``KroneckerMatrix`` without
        importing them.  For a Kronecker product with one factor per attribute, the factor ε
        become :attr:`attribute_epsilons` (the exact per-attribute shares of the
        ``unlinkable-pairs`` policy; RR-Ind-Joint Theorem 2: their sum is the matrix ε).

        Parameters
        ----------
        attributes
            Attribute names or indices, in the order of the matrix's joint coding.
        matrix
            Object exposing ``epsilon`` (main paper eq. (4)), ``entropy_rate`` (bits) and
            ``beta``; ``values`` or ``factors`` (optional) identify the matrix for replays.
        linkable, phase, request_id
            See :class:`Release`.
        """
        for name in ("epsilon", "entropy_rate", "beta"):
            if not hasattr(matrix, name):
                raise ConfigurationError(
                    f"matrix must expose .epsilon, .entropy_rate and .beta, {type(matrix).__name__} has no .{name}"
                )
        attrs = (attributes,) if isinstance(attributes, (str, int, np.integer)) else tuple(attributes)
        factors = getattr(matrix, "factors", None)
        shares = None
        if factors is not None and len(tuple(factors)) == len(attrs) and len(attrs) > 1:
            shares = tuple(float(f.epsilon) for f in factors)
        return cls(
            attributes=attrs,
            epsilon=float(matrix.epsilon),
            entropy_bits=float(matrix.entropy_rate),
            beta=float(matrix.beta),
            linkable=linkable,
            exact=False,
            phase=phase,
            request_id=request_id,
            matrix_key=matrix_fingerprint(matrix),
            attribute_epsilons=shares,
        )

    @classmethod
    def exact_values(
        cls,
        attributes: Sequence[Attr] | Attr,
        *,
        linkable: bool = False,
        phase: str = "dependence",
        request_id: str | None = None,
    ) -> Release:
        """Record a release of true values (main paper 4.2): ε = ∞, H = 0 bits, β = 0.

        Defaults to ``linkable=False`` because 4.2 sends true pairs inside a secure sum.
        """
        return cls(
            attributes=attributes,  # type: ignore[arg-type]
            epsilon=math.inf,
            entropy_bits=0.0,
            beta=0.0,
            linkable=linkable,
            exact=True,
            phase=phase,
            request_id=request_id,
            matrix_key=EXACT_KEY,
        )

    # ------------------------------------------------------------------ queries
    @property
    def name(self) -> str:
        """Human-readable label: the request id, else ``phase(attributes)``."""
        if self.request_id is not None:
            return self.request_id
        return f"{self.phase}({', '.join(map(str, self.attributes))})"

    @property
    def shares(self) -> tuple[float, ...]:
        """Per-attribute ε shares (``attribute_epsilons`` or the equal split ε / |attributes|)."""
        if self.attribute_epsilons is not None:
            return self.attribute_epsilons
        k = len(self.attributes)
        return (self.epsilon / k,) * k

    @property
    def no_dp_guarantee(self) -> bool:
        """``True`` when ε = ∞ (exact release, or a matrix with structural zeros)."""
        return math.isinf(self.epsilon)

    def same_as(self, other: Release) -> bool:
        """Whether ``other`` asks for exactly this release again (so it can be replayed).

        Same attributes (same order), same exactness and linkability, same ε, and the same
        matrix: equal :attr:`matrix_key` when both are known, otherwise equal non-``None``
        :attr:`request_id`.  A request id alone never matches a different content.  The phase
        does not matter: resending an already released value reveals nothing new.
        """
        if (
            self.attributes != other.attributes
            or self.exact != other.exact
            or self.linkable != other.linkable
            or self.epsilon != other.epsilon
        ):
            return False
        if self.matrix_key is not None and other.matrix_key is not None:
            return self.matrix_key == other.matrix_key
        return self.request_id is not None and self.request_id == other.request_id

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly dict (ε = ∞ written as the string ``"inf"``)."""
        return {
            "attributes": list(self.attributes),
            "epsilon": _json_float(self.epsilon),
            "entropy_bits": self.entropy_bits,
            "beta": self.beta,
            "linkable": self.linkable,
            "exact": self.exact,
            "phase": self.phase,
            "request_id": self.request_id,
            "no_dp_guarantee": self.no_dp_guarantee,
        }


def _json_float(value: float | None) -> float | str | None:
    if value is None:
        return None
    return "inf" if math.isinf(value) else float(value)


# ---------------------------------------------------------------------- composition
class CompositionPolicy(str, Enum):
    """Named composition policies (see the module docstring for their exact definitions)."""

    SEQUENTIAL = "sequential"
    PARALLEL = "parallel"
    UNLINKABLE_PAIRS = "unlinkable-pairs"

    def __str__(self) -> str:
        return self.value


def as_policy(policy: CompositionPolicy | str) -> CompositionPolicy:
    """Normalise a policy name; ConfigurationError naming the allowed values otherwise."""
    try:
        return CompositionPolicy(policy)
    except ValueError:
        allowed = ", ".join(repr(p.value) for p in CompositionPolicy)
        raise ConfigurationError(f"policy must be one of {allowed}, got {policy!r}") from None


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
    """Main paper 4.3: Σ linkable ε_r + Σ_A max over unlinkable releases of the share on A."""
    linkable = math.fsum(r.epsilon for r in releases if r.linkable)
    best: dict[Attr, float] = {}
    for release in releases:
        if release.linkable:
            continue
        for attribute, share in zip(release.attributes, release.shares):
            if share > best.get(attribute, -1.0):
                best[attribute] = share
    return math.fsum([linkable, *best.values()])


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


# ---------------------------------------------------------------------- ledger
@dataclass(frozen=True)
class Ledger:
    """Immutable, append-only record of one party's releases.

    :meth:`appended` returns a new ledger; the old one is an unchanged snapshot.  Totals are
    cached per policy (the ledger never changes).
    """

    releases: tuple[Release, ...] = ()
    _cache: dict[tuple[str, str], Any] = field(default_factory=dict, init=False, compare=False, repr=False)

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

    def appended(self, release: Release) -> Ledger:
        """A new ledger with ``release`` at the end."""
        if not isinstance(release, Release):
            raise ConfigurationError(f"a ledger holds Release objects, got {release!r}")
        return Ledger(self.releases + (release,))

    @property
    def phases(self) -> tuple[str, ...]:
        """Phases in order of first release."""
        return tuple(dict.fromkeys(r.phase for r in self.releases))

    def lookup(self, request: Release) -> int | None:
        """Index of the earliest release that ``request`` repeats (:meth:`Release.same_as`), or None."""
        for index, release in enumerate(self.releases):
            if release.same_as(request):
                return index
        return None

    def by_phase(self, policy: CompositionPolicy | str) -> dict[str, float]:
        """ε per phase under ``policy`` (cached)."""
        key = ("by_phase", as_policy(policy).value)
        if key not in self._cache:
            self._cache[key] = compose_by_phase(self.releases, policy)
        return dict(self._cache[key])

    def total(self, policy: CompositionPolicy | str) -> float:
        """Total ε under ``policy``; phases compose sequentially (cached)."""
        return math.fsum(self.by_phase(policy).values())

    @property
    def no_dp_guarantee(self) -> bool:
        """``True`` when some release has ε = ∞ (then every policy's total is ∞)."""
        return any(r.no_dp_guarantee for r in self.releases)

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly list of releases."""
        return {"releases": [r.to_dict() for r in self.releases]}
