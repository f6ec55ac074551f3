"""Post-processing of oracle estimates: worked examples."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from mprr.protocols.oracle_reports import postprocess_frequencies

RAW = np.array([0.6, 0.5, -0.3])


@pytest.mark.parametrize(("method", "expected"), [
    # Norm-Sub and the simplex projection: negatives to 0, 0.05 off each positive (1.1 − 2·0.05 = 1)
    ("norm-sub", [0.55, 0.45, 0.0]),
    ("project-simplex", [0.55, 0.45, 0.0]),
    # clip then rescale by 1/1.1
    ("clip-rescale", [0.6 / 1.1, 0.5 / 1.1, 0.0]),
    # none: the missing total 0.2 spread evenly
    ("none", [0.6 + 0.2 / 3, 0.5 + 0.2 / 3, -0.3 + 0.2 / 3]),
])
def test_postprocess_frequencies_worked_examples(method: str, expected: list[float]) -> None:
    np.testing.assert_allclose(postprocess_frequencies(RAW, method), expected, atol=1e-12)


def test_postprocess_frequencies_names_a_bad_method() -> None:
    with pytest.raises(ConfigurationError, match="postprocess"):
        postprocess_frequencies(RAW, "round")
