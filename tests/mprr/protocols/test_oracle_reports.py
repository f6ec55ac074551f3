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


@pytest.mark.parametrize("oracle", ["grr", "oue"])
def test_overwriting_the_uniforms_gives_the_same_reports(oracle: str) -> None:
    from mprr.protocols.multidim import oracle_specs
    from mprr.protocols.oracle_reports import report_uniforms, report_units
    from mprr.protocols.steps import Report, singletons

    sizes = (3, 5, 2, 4)
    rng = np.random.default_rng(4)
    codes = np.stack([rng.integers(0, k, 300) for k in sizes], axis=1)
    step = Report("attributes", singletons(len(sizes)), oracle_specs(singletons(len(sizes)), sizes, 0.5, oracle))
    u = rng.random((300, report_uniforms(step, sizes)))
    kept = report_units(step, codes, sizes, u.copy())
    scratch = u.copy()
    reused = report_units(step, codes, sizes, scratch, overwrite_uniforms=True)
    np.testing.assert_array_equal(reused.codes, kept.codes)
    for a, b in zip(reused.counts, kept.counts, strict=True):
        np.testing.assert_array_equal(a, b)
    # GRR: one uniform per report, the reports take the uniforms' place; OUE needs d per report
    assert np.shares_memory(reused.codes, scratch) == (oracle == "grr")
    if oracle == "oue":
        np.testing.assert_array_equal(scratch, u)
