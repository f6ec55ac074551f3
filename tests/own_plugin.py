"""A user's plugin, as ``mprr --plugin tests.own_plugin`` imports it: a protocol, its parameter
object and a secure-sum engine of one's own, registered through the public API only.

- ``pairs``: every listed attribute pair released through GRR at ε / len(pairs) (a plain release);
- ``pair-sums``: the same pairs added by a secure sum of GRR-randomized values (4.3 style), so
  it runs with whichever registered secure-sum engine the caller names;
- ``ring``: the graph engine's additive shares on a ring (each party shares with its two
  neighbours), a configuration of public parts under a name of its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from mprr.data import Schema
from mprr.distributions import ProductDistribution
from mprr.parameters import Float, Int, List, Parameters, parameter
from mprr.protocols.estimate import estimate_unit
from mprr.protocols.registry import register_protocol
from mprr.protocols.result import release_result
from mprr.protocols.steps import MatrixSpec, Program, Release, SecureSum
from parties.secure.graph import GraphEngine
from parties.secure.registry import EngineEntry, register_engine


@dataclass(frozen=True, kw_only=True)
class PairsParameters(Parameters):
    """Parameters of ``pairs`` and ``pair-sums``: disjoint attribute pairs and ε per respondent."""

    protocol: ClassVar[str] = "pairs"

    pairs: tuple[tuple[int, int], ...] = parameter(List(List(Int(min=0), min_len=2, max_len=2), min_len=1),
                                                   help="disjoint attribute pairs to release")
    epsilon: float = parameter(Float(min=0.0, min_exclusive=True), help="ε per respondent, split over the pairs")

    def validate(self) -> None:
        flat = [a for pair in self.pairs for a in pair]
        if len(flat) != len(set(flat)):
            from mprr.errors import ConfigurationError

            raise ConfigurationError(f"pairs must be disjoint, got {[list(p) for p in self.pairs]}")


def _result(name: str, schema: Schema, pairs: tuple[tuple[int, int], ...], epsilon: float, got: object) -> object:
    data = got.data  # type: ignore[attr-defined]
    tables = [estimate_unit(P, counts, "clip-rescale") for P, counts in zip(data.randomized_matrices, data.counts)]
    rest = [(a,) for a in range(schema.m) if not any(a in p for p in pairs)]
    uniform = [[1.0 / schema.sizes[a]] * schema.sizes[a] for (a,) in rest]
    estimate = ProductDistribution(tuple(pairs) + tuple(rest), tables + uniform, schema.sizes)
    return release_result(name, n=got.n, parameters={"epsilon": epsilon, "pairs": [list(p) for p in pairs]},  # type: ignore[attr-defined]
                          schema=schema, estimate=estimate, releases=(data,), postprocessing="clip-rescale",
                          clusters=tuple(pairs))


def pairs_steps(schema: Schema, *, pairs: tuple[tuple[int, int], ...], epsilon: float) -> Program:
    """Release each listed pair through GRR with ε / len(pairs)."""
    spec = MatrixSpec.grr(epsilon / len(pairs))
    got = yield Release("pairs", tuple(pairs), (spec,) * len(pairs))
    return _result("pairs", schema, pairs, epsilon, got)  # type: ignore[return-value]


def pair_sums_steps(schema: Schema, *, pairs: tuple[tuple[int, int], ...], epsilon: float) -> Program:
    """Add each listed pair's GRR-randomized values (ε / len(pairs)) with a secure sum."""
    spec = MatrixSpec.grr(epsilon / len(pairs))
    got = yield SecureSum("pairs", tuple(pairs), (spec,) * len(pairs))
    return _result("pair-sums", schema, pairs, epsilon, got)  # type: ignore[return-value]


class RingEngine(GraphEngine):
    """Additive shares on a ring: the graph engine with degree 2, relayed by the controller."""

    name = "ring"

    def __init__(self, *, seed: int = 0, round_timeout: float = 30.0, max_value: int = 1) -> None:
        super().__init__(topology="regular", degree=2, seed=seed, relay=True, round_timeout=round_timeout,
                         max_value=max_value)


register_protocol(pairs_steps, name="pairs", parameters=PairsParameters, replace=True)
register_protocol(pair_sums_steps, name="pair-sums", aliases=("pair_sums",), parameters=PairsParameters,
                  replace=True)
register_engine(EngineEntry("ring", RingEngine, parameters=("seed",)), replace=True)
