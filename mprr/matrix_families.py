"""Matrix families: a randomization matrix named by family and parameters, rebuilt over any unit.

A step of a protocol never sends a dense matrix when it has a closed form: it names a
:class:`MatrixFamily` and its parameters (a :class:`MatrixSpec`), and
whoever randomizes rebuilds the matrix over the joint domain of the unit's attributes.  The
families are objects in one :class:`~mprr.registry.Registry`, :data:`MATRIX_FAMILIES`; the
shipped ones (``R = Π s`` joint values of a unit with attribute sizes ``s``):

===================  ============================  =============================================
family               parameters                    matrix over the unit
===================  ============================  =============================================
``keep-or-uniform``  ``(p,)``                      ``keep_or_uniform(R, p)`` (main paper 6.3.1)
``grr``              ``(ε,)``                      ``grr(R, ε)``
``cluster-optimal``  ``(ε,)``                      ``cluster_optimal(s, ε)`` (main paper 6.3.2)
``lambda-kron``      ``(λ_1, ..., λ_k)``           ``kron(lambda_randomization(s_j, λ_j) ...)``
                                                   (lambda paper eq. (6), Property 2)
``dense``            ``R*R`` entries, C order      ``RandomizationMatrix(values)``
===================  ============================  =============================================

A family of one's own is registered with :func:`register_matrix_family`; every driver and every
party then rebuilds it by name (the parties compute the ε they spend from the built matrix,
main paper eq. (4), never from the name).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from mprr.errors import ConfigurationError
from mprr.kronecker import KroneckerMatrix
from mprr.matrices import RandomizationMatrix, cluster_optimal, grr, keep_or_uniform, kron, lambda_randomization
from mprr.registry import Registry

__all__ = ["MATRIX_FAMILIES", "Matrix", "MatrixFamily", "MatrixSpec", "register_matrix_family"]

Matrix = RandomizationMatrix | KroneckerMatrix
"""What a family builds: a dense matrix, or a lazy Kronecker product over the unit's attributes."""


@dataclass(frozen=True)
class MatrixFamily:
    """A family of randomization matrices over a unit's joint domain.

    Attributes
    ----------
    name
        Canonical name (the one a request carries on the wire).
    parameters
        Names of the parameters, for messages and documentation (``("p",)``; ``("λ_j per
        attribute",)``).
    needs
        ``needs(sizes)``: how many parameters a unit with attribute ``sizes`` needs.
    construct
        ``construct(params, sizes)``: the matrix (raises ConfigurationError on a bad value,
        naming the parameter and what is allowed).
    aliases
        Other accepted names.
    finer
        ``finer(params)``: the parameters of a more truthful matrix of the family (a higher ε:
        keep probability p → (1 + p)/2, ε → 2ε, λ → (1 + λ)/2), what a curious controller asks
        for when it tries to buy more than the protocol spends; ``None``: the family has no
        such order (a dense matrix).
    """

    name: str
    parameters: tuple[str, ...]
    needs: Callable[[tuple[int, ...]], int]
    construct: Callable[[tuple[float, ...], tuple[int, ...]], Matrix]
    aliases: tuple[str, ...] = ()
    finer: Callable[[tuple[float, ...]], tuple[float, ...]] | None = None

    def validate(self, params: Sequence[float], sizes: Sequence[int]) -> tuple[float, ...]:
        """``params`` as finite floats, checked against the count the unit needs.

        Raises
        ------
        ConfigurationError
            If a parameter is not finite or the count does not fit the unit.
        """
        values = tuple(float(x) for x in params)
        if not all(math.isfinite(x) for x in values):
            raise ConfigurationError(f"params of a {self.name} matrix must be finite, got {values!r}")
        dims = tuple(int(s) for s in sizes)
        count = self.needs(dims)
        if len(values) != count:
            raise ConfigurationError(
                f"a {self.name} matrix over a unit of sizes {dims} takes {count} parameter(s) "
                f"({', '.join(self.parameters)}), got {len(values)}"
            )
        return values

    def build(self, params: Sequence[float], sizes: Sequence[int]) -> Matrix:
        """The matrix over the joint domain of attributes with ``sizes`` categories (C order)."""
        dims = tuple(int(s) for s in sizes)
        return self.construct(self.validate(params, dims), dims)


MATRIX_FAMILIES: Registry[MatrixFamily] = Registry("matrix family")
"""Every matrix family a step (and a release request on the wire) may name."""


def register_matrix_family(family: MatrixFamily, *, replace: bool = False) -> MatrixFamily:
    """Register ``family`` in :data:`MATRIX_FAMILIES` (ConfigurationError if its name is taken)."""
    if not isinstance(family, MatrixFamily):
        raise ConfigurationError(f"family must be a MatrixFamily, got {family!r}")
    return MATRIX_FAMILIES.register(family, replace=replace)


def _one(_: tuple[int, ...]) -> int:
    return 1


def _halfway_to_one(params: tuple[float, ...]) -> tuple[float, ...]:
    """Each parameter halfway to 1 (a keep probability, a λ): a more truthful matrix."""
    return tuple((1.0 + x) / 2.0 for x in params)


def _doubled(params: tuple[float, ...]) -> tuple[float, ...]:
    """Each parameter doubled (an ε)."""
    return tuple(2.0 * x for x in params)


def _dense(params: tuple[float, ...], dims: tuple[int, ...]) -> RandomizationMatrix:
    cells = math.prod(dims)
    return RandomizationMatrix(np.asarray(params, dtype=np.float64).reshape(cells, cells))


for _family in (
    MatrixFamily("keep-or-uniform", ("p",), _one, lambda v, s: keep_or_uniform(math.prod(s), v[0]),
                 aliases=("keep_or_uniform",), finer=_halfway_to_one),
    MatrixFamily("grr", ("epsilon",), _one, lambda v, s: grr(math.prod(s), v[0]), finer=_doubled),
    MatrixFamily("cluster-optimal", ("epsilon",), _one, lambda v, s: cluster_optimal(s, v[0]), finer=_doubled),
    MatrixFamily("lambda-kron", ("lambda of each attribute",), len,
                 lambda v, s: kron(*(lambda_randomization(r, lam) for r, lam in zip(s, v))),
                 finer=_halfway_to_one),
    MatrixFamily("dense", ("R*R entries, C order",), lambda s: math.prod(s) ** 2, _dense),
):
    MATRIX_FAMILIES.register(_family)


@dataclass(frozen=True)
class MatrixSpec:
    """A randomization matrix described by family and parameters (see the module docstring).

    Parameters
    ----------
    family
        A name of :data:`mprr.matrix_families.MATRIX_FAMILIES` (stored as its canonical name).
    params
        The family's parameters (finite floats).
    given
        With :meth:`dense`: the matrix itself, so a local driver uses it without rebuilding
        it from ``params`` (not compared).
    """

    family: str
    params: tuple[float, ...]
    given: RandomizationMatrix | None = field(default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "family", MATRIX_FAMILIES.lookup(self.family).name)
        if self.given is not None:  # entries of a validated RandomizationMatrix
            return
        params = tuple(float(x) for x in self.params)
        if not all(math.isfinite(x) for x in params):
            raise ConfigurationError(f"params of a {self.family} matrix must be finite, got {params!r}")
        object.__setattr__(self, "params", params)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def keep_or_uniform(cls, p: float) -> MatrixSpec:
        """Keep with probability ``p``, else uniform over the unit's domain (main paper 6.3.1)."""
        return cls("keep-or-uniform", (p,))

    @classmethod
    def grr(cls, epsilon: float) -> MatrixSpec:
        """The ε-optimal generalized RR over the unit's domain."""
        return cls("grr", (epsilon,))

    @classmethod
    def cluster_optimal(cls, epsilon: float) -> MatrixSpec:
        """Main paper 6.3.2: ε-optimal matrix over the cluster's product domain."""
        return cls("cluster-optimal", (epsilon,))

    @classmethod
    def lambda_kron(cls, lambdas: Sequence[float]) -> MatrixSpec:
        """λ-randomization of each attribute of the unit, as one Kronecker product."""
        return cls("lambda-kron", tuple(lambdas))

    @classmethod
    def dense(cls, matrix: RandomizationMatrix) -> MatrixSpec:
        """An explicit matrix, sent entry by entry (C order)."""
        if not isinstance(matrix, RandomizationMatrix):
            raise ConfigurationError(f"matrix must be a RandomizationMatrix, got {type(matrix).__name__}")
        return cls("dense", tuple(matrix.values.ravel().tolist()), matrix)

    # ------------------------------------------------------------------ use
    def build(self, sizes: Sequence[int]) -> Matrix:
        """The matrix over the joint domain of attributes with ``sizes`` categories (C order).

        Raises
        ------
        ConfigurationError
            If the parameters do not fit the family or the unit (wrong count, p outside
            (0, 1), ε not > 0, λ outside (0, 1], a dense matrix of the wrong size or not
            stochastic).
        """
        if self.given is not None and self.given.size == math.prod(int(s) for s in sizes):
            return self.given
        return MATRIX_FAMILIES[self.family].build(self.params, sizes)
