"""One party's release record: what was released, through which matrix, at what ε.

A :class:`Release` records one local randomized-response release of one party: which
attributes (one attribute, a pair or a cluster), the ε of the matrix (main paper eq. (4)),
its entropy rate and β (bistochastic-privacy paper, Definition 1), whether the controller can
link it to the party (a direct message) or not (a contribution hidden in a secure sum), whether
it is an exact release of true values (main paper 4.2: ε = ∞, no DP guarantee) and the protocol
phase.  Releases are collected in a :class:`mprr.privacy.ledger.Ledger` and composed by the policies of :mod:`mprr.privacy.composition`.

:func:`matrix_fingerprint` is how a party's ledger tells "the same matrix again" (a replay:
nothing new is spent) from "another matrix" (new spending).  A run digests each matrix once: the
actor path builds one :class:`Release` per request unit for all its parties
(``parties.public_state.ReleaseBook``), the local path one per unit.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from mprr.domain import check_real
from mprr.errors import ConfigurationError

__all__ = ["Attr", "Release", "EXACT_KEY", "json_number", "matrix_fingerprint"]

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
    factors = getattr(matrix, "factors", None)
    digest = hashlib.sha256()
    for part in (matrix,) if factors is None else tuple(factors):
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


# ---------------------------------------------------------------------- validation
def _shares_sum_to(shares: tuple[float, ...], epsilon: float) -> bool:
    """Whether per-attribute shares add up to ε (relative tolerance 1e-9; ∞ iff some share is ∞)."""
    total = math.fsum(shares) if all(math.isfinite(x) for x in shares) else math.inf
    if math.isinf(epsilon) or math.isinf(total):
        return total == epsilon
    return math.isclose(total, epsilon, rel_tol=1e-9, abs_tol=1e-12)


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
        used by the ``unlinkable-pairs`` policy as the per-attribute shares.  Each must be
        >= 0 and together they must add up to ``epsilon`` (a split, never a discount).
        Defaults to an equal split ε / |attributes|.
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
        """Validate and normalise every field (raises ConfigurationError)."""
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
        object.__setattr__(self, "epsilon", check_real("epsilon", self.epsilon, allow_inf=True))
        bits = self.entropy_bits
        object.__setattr__(self, "entropy_bits", None if bits is None else check_real("entropy_bits", bits))
        beta = None if self.beta is None else check_real("beta", self.beta)
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
                check_real("attribute_epsilons entry", e, allow_inf=True) for e in self.attribute_epsilons
            )
            if len(shares) != len(normalised):
                raise ConfigurationError(
                    f"attribute_epsilons must have one entry per attribute ({len(normalised)}), "
                    f"got {len(shares)}"
                )
            if not _shares_sum_to(shares, self.epsilon):
                raise ConfigurationError(
                    f"attribute_epsilons must add up to epsilon = {self.epsilon!r} (they split the "
                    f"release's ε among its attributes), got {shares!r} (sum {sum(shares)!r})"
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
        try:
            epsilon, entropy, beta = matrix.epsilon, matrix.entropy_rate, matrix.beta
        except AttributeError:
            for name in ("epsilon", "entropy_rate", "beta"):
                if not hasattr(matrix, name):
                    raise ConfigurationError(
                        f"matrix must expose .epsilon, .entropy_rate and .beta, "
                        f"{type(matrix).__name__} has no .{name}"
                    ) from None
            raise
        attrs = (attributes,) if isinstance(attributes, (str, int, np.integer)) else tuple(attributes)
        factors = getattr(matrix, "factors", None)
        shares = None
        if factors is not None and len(attrs) > 1:
            factors = tuple(factors)
            if len(factors) == len(attrs):
                shares = tuple(float(f.epsilon) for f in factors)
        return cls(attrs, float(epsilon), float(entropy), float(beta), linkable, False, phase, request_id,
                   matrix_fingerprint(matrix), shares)

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
        attrs = (attributes,) if isinstance(attributes, (str, int, np.integer)) else tuple(attributes)
        return cls(attrs, math.inf, 0.0, 0.0, linkable, True, phase, request_id, EXACT_KEY, None)

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

    @cached_property
    def attribute_set(self) -> frozenset[Attr]:
        """The released attributes as a set (what an announced plan group is compared with)."""
        return frozenset(self.attributes)

    @cached_property
    def replay_keys(self) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None, tuple[Any, ...] | None]:
        """Keys of the ledger's replay index (see :meth:`Ledger.lookup`), computed once.

        ``(by matrix key, by request id, by request id among releases without a matrix key)``,
        each ``None`` when the field it needs is ``None``.  Every key holds the content that
        :meth:`same_as` compares (attributes, exactness, linkability, ε).
        """
        attributes, exact, linkable, epsilon = self.attributes, self.exact, self.linkable, self.epsilon
        key, request_id = self.matrix_key, self.request_id
        by_key = None if key is None else ("key", attributes, exact, linkable, epsilon, key)
        if request_id is None:
            return by_key, None, None
        return (
            by_key,
            ("id", attributes, exact, linkable, epsilon, request_id),
            ("id-keyless", attributes, exact, linkable, epsilon, request_id),
        )

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
            "epsilon": json_number(self.epsilon),
            "entropy_bits": self.entropy_bits,
            "beta": self.beta,
            "linkable": self.linkable,
            "exact": self.exact,
            "phase": self.phase,
            "request_id": self.request_id,
            "no_dp_guarantee": self.no_dp_guarantee,
        }


def json_number(value: float) -> float | str:
    """``value`` for JSON: a float, or ``"inf"`` / ``"-inf"`` / ``"nan"`` (JSON has no literal for them)."""
    if math.isfinite(value):
        return float(value)
    return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
