"""Helpers shared by the choreographies: matrix specifications mirroring the fast path.

Every choreography asks for exactly the matrices :mod:`mprr.protocols` uses, through
:class:`~parties.protocol_messages.MatrixSpec` objects whose parameters are the very floats
the fast path passes to the matrix constructors, so both engines build bit-identical matrices.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mprr.matrices import RandomizationMatrix
from mprr.protocols.budget import attribute_matrices
from parties.protocol_messages import MatrixSpec

__all__ = ["attribute_specs", "per_attribute", "singletons"]


def per_attribute(value: object, m: int) -> list[object]:
    """A scalar repeated ``m`` times, or the ``m`` values of a sequence (as the fast path)."""
    if isinstance(value, (Sequence, np.ndarray)) and not isinstance(value, (str, bytes)):
        return list(value)  # type: ignore[arg-type]
    return [value] * m


def singletons(m: int) -> tuple[tuple[int, ...], ...]:
    """``((0,), (1,), ..., (m-1,))`` — one unit per attribute, schema order."""
    return tuple((j,) for j in range(m))


def attribute_specs(
    sizes: Sequence[int],
    *,
    p: float | Sequence[float] | None = None,
    epsilon: float | Sequence[float] | None = None,
    matrices: Sequence[RandomizationMatrix] | None = None,
) -> tuple[tuple[MatrixSpec, ...], tuple[RandomizationMatrix, ...]]:
    """Per-attribute matrix specifications and the matrices they give.

    Validates exactly as :func:`mprr.protocols.budget.attribute_matrices` (same errors), then
    describes each matrix: ``keep-or-uniform(p_j)`` (main paper 6.3.1), ``grr(ε_j)`` or the
    explicit matrix (``dense``).

    Returns
    -------
    (specs, matrices)
        One :class:`MatrixSpec` and one :class:`~mprr.matrices.RandomizationMatrix` per attribute.
    """
    mats = attribute_matrices(sizes, p=p, epsilon=epsilon, matrices=matrices)
    m = len(mats)
    if p is not None:
        specs = tuple(MatrixSpec.keep_or_uniform(float(v)) for v in per_attribute(p, m))  # type: ignore[arg-type]
    elif epsilon is not None:
        specs = tuple(MatrixSpec.grr(float(v)) for v in per_attribute(epsilon, m))  # type: ignore[arg-type]
    else:
        specs = tuple(MatrixSpec.dense(mat) for mat in mats)
    return specs, mats
