"""Synthetic microdata from any estimate (main paper Section 1 and 3.2).

"Once the estimate of the empirical joint distribution is published, any party can ... create a
synthetic data set" — here by drawing i.i.d. records from the estimate
(:func:`mprr.distributions.sample`: clusters sampled independently for a product estimate,
records resampled by weight after RR-Adjustment).
"""

from __future__ import annotations

import numpy as np

from mprr.data import Dataset, Schema
from mprr.distributions import JointDistribution, sample
from mprr.errors import ConfigurationError
from mprr.protocols.result import ProtocolResult

__all__ = ["synthesize"]


def synthesize(
    source: ProtocolResult | JointDistribution,
    n: int | None = None,
    *,
    rng: object,
    schema: Schema | None = None,
) -> Dataset:
    """Draw a synthetic data set from a protocol's estimate (or from any joint distribution).

    Parameters
    ----------
    source
        A :class:`ProtocolResult` (its ``estimate`` and ``schema`` are used) or a
        :class:`mprr.distributions.JointDistribution` (then ``schema`` is required).
    n
        Number of synthetic records (default: the number of parties of the result).
    rng
        ``numpy.random.Generator`` (the controller's randomness, not a party's stream).
    schema
        Schema of the synthetic data set; must match the distribution's sizes.

    Returns
    -------
    Dataset
        ``n`` synthetic records.

    Raises
    ------
    ConfigurationError
        ``rng`` not a ``numpy.random.Generator``; missing ``schema``/``n`` for a bare
        distribution; schema sizes that do not match.
    """
    if not isinstance(rng, np.random.Generator):
        raise ConfigurationError(
            f"rng must be a numpy.random.Generator (the controller's randomness), got {type(rng).__name__}"
        )
    if isinstance(source, ProtocolResult):
        dist = source.estimate
        schema = schema if schema is not None else source.schema
        n = source.n if n is None else n
    else:
        dist = source
        if schema is None:
            raise ConfigurationError("schema is required to synthesize from a bare distribution")
        if n is None:
            raise ConfigurationError("n is required to synthesize from a bare distribution")
    if tuple(schema.sizes) != tuple(dist.sizes):
        raise ConfigurationError(f"schema sizes {schema.sizes} do not match the distribution sizes {dist.sizes}")
    codes = sample(dist, n, rng=rng)
    return Dataset(schema, codes)
