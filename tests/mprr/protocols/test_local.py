"""Tests for mprr.protocols.local: the fast-path function of a step program."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from mprr.data import Attribute, Dataset, Schema
from mprr.errors import ConfigurationError
from mprr.matrices import RandomizationMatrix, grr
from mprr.protocols.independent import rr_independent_steps
from mprr.protocols.local import local_protocol, run_local
from mprr.protocols.parameters import RRIndependentParameters
from mprr.protocols.steps import Program


def test_a_step_program_without_a_docstring_gets_a_fast_path_function() -> None:
    def undocumented(schema: Schema, *, matrices: list[RandomizationMatrix]) -> Program:
        return (yield from rr_independent_steps(schema, RRIndependentParameters(matrices=matrices)))

    run = local_protocol(undocumented, "undocumented")
    assert run.__doc__ is not None and run.__doc__.startswith("The step program ``undocumented``, run on every record")
    assert list(inspect.signature(run).parameters) == ["dataset", "matrices", "rng"]
    schema = Schema((Attribute("a", ("x", "y")), Attribute("b", ("u", "v", "w"))))
    data = Dataset(schema, np.array([[0, 1], [1, 2], [0, 0], [1, 1]] * 25))
    matrices = [grr(2, 1.0), grr(3, 1.0)]
    ours = run(data, matrices=matrices, rng=np.random.default_rng(3))
    direct = run_local(rr_independent_steps, data, RRIndependentParameters(matrices=matrices), rng=np.random.default_rng(3))
    for axes in ([0], [1], [0, 1]):
        np.testing.assert_array_equal(ours.estimate.marginal(axes), direct.estimate.marginal(axes))


def test_a_program_that_takes_its_parameter_object_gets_a_fast_path_function_of_its_fields() -> None:
    """The fast path of a program that takes its parameter object builds the object from its
    keywords (the one validation) and has the object's fields as its signature."""
    run = local_protocol(rr_independent_steps, "independent_by_object", RRIndependentParameters)
    assert list(inspect.signature(run).parameters) == [
        "dataset", "p", "epsilon_per_attribute", "epsilon", "postprocess", "matrices", "rng"]
    schema = Schema((Attribute("a", ("x", "y")), Attribute("b", ("u", "v", "w"))))
    data = Dataset(schema, np.array([[0, 1], [1, 2], [0, 0], [1, 1]] * 25))
    ours = run(data, p=0.6, rng=np.random.default_rng(3))
    direct = run_local(rr_independent_steps, data, RRIndependentParameters(p=0.6), rng=np.random.default_rng(3))
    np.testing.assert_array_equal(ours.releases[0].codes, direct.releases[0].codes)
    with pytest.raises(ConfigurationError, match=r"^p must be a finite number > 0 and < 1, got 1.5 \(float\)$"):
        run(data, p=1.5, rng=np.random.default_rng(3))
    with pytest.raises(ConfigurationError, match=r"unknown parameter\(s\) \['q'\] for protocol 'RR-Independent'"):
        run(data, q=0.5, rng=np.random.default_rng(3))
