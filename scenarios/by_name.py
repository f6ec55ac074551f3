"""``mprr simulate PROTOCOL``: run any registered protocol by name, a user's own included.

A user's protocol, secure-sum engine or matrix family is registered by a module of their own
(:func:`mprr.protocols.registry.register_protocol`, :func:`parties.secure.registry.register_engine`,
:func:`mprr.matrix_families.register_matrix_family`); ``--plugin MODULE`` imports that module
first (:func:`load_plugins`), and :func:`simulate_by_name` runs the protocol by its name on
the built-in synthetic data or a data file, on the fast path or among the actors on any runtime.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np

from mprr.data import Dataset
from mprr.errors import ConfigurationError
from mprr.parameters import Parameters
from mprr.protocols.local import run_local
from mprr.protocols.registry import lookup
from mprr.protocols.result import ProtocolResult
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.plugins import load_plugins
from parties.runtime import Runtime
from scenarios.config import Overrides, merge_tables, override_tables
from scenarios.report import to_jsonable

__all__ = ["SimulationSummary", "load_plugins", "simulate_by_name", "synthetic_dataset", "write_summary"]


@dataclass(frozen=True)
class SimulationSummary:
    """What ``mprr simulate`` reports: the result and, on the actors, the traffic."""

    protocol: str
    n: int
    seed: int
    engine: str
    result: ProtocolResult
    parameters: Mapping[str, Any]
    messages: int | None = None
    bytes: int | None = None
    rounds: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-friendly: the run's settings, the result's summary and the traffic."""
        return {"protocol": self.protocol, "n": self.n, "seed": self.seed, "engine": self.engine,
                "parameters": to_jsonable(dict(self.parameters)), "epsilon": self.result.epsilon(), "result": to_jsonable(self.result.summary()),
                "traffic": None if self.messages is None else
                {"messages": self.messages, "bytes": self.bytes, "rounds": self.rounds}}


def simulate_by_name(
    protocol: str,
    dataset: Dataset,
    *,
    seed: int,
    engine: str = "actors",
    parameters: Overrides | None = None,
    secure_sum: str | None = None,
    runtime: Runtime | None = None,
) -> SimulationSummary:
    """Run the registered ``protocol`` on ``dataset`` with ``parameters`` (checked by its entry):
    one table, or several merged in order (``mprr simulate``'s, one per ``--set``).

    ``engine`` is ``"fast"`` (the local driver) or ``"actors"`` (``parties.simulate.simulate`` on
    ``runtime``, the memory runtime by default); ``secure_sum`` names the secure-sum engine of a
    protocol that yields secure sums (actors only; the fast path computes the same tallies
    centrally).
    """
    entry = lookup(protocol)
    given = merge_tables({}, *override_tables(parameters))
    own: Parameters | None = None
    if entry.parameters is not None:  # validated once, here, by the protocol's parameter object
        own = entry.parameters.from_mapping(given, protocol=entry.name)
    bound = entry.bind(given if own is None else own)
    if engine == "fast":
        result = run_local(entry.program, dataset, bound, rng=PartyStreams(seed, dataset.n))
        return SimulationSummary(entry.name, dataset.n, seed, engine, result, given)
    if engine != "actors":
        raise ConfigurationError(f"engine must be 'fast' or 'actors', got {engine!r}")
    from parties.simulate import simulate

    options: dict[str, Any] = {} if secure_sum is None else {"engine": secure_sum}
    if own is not None:
        sim = simulate(dataset, entry.name, seed=seed, runtime=runtime, parameters=own, **options)
    else:
        sim = simulate(dataset, entry.name, seed=seed, runtime=runtime, **given, **options)
    traffic = sim.traffic
    return SimulationSummary(entry.name, dataset.n, seed, engine, sim.result, {**given, **options},
                             traffic.messages, traffic.bytes, traffic.rounds)


def synthetic_dataset(n: int, seed: int) -> Dataset:
    """The built-in synthetic data (:func:`mprr.synthetic.planted_clusters`) of ``n`` parties."""
    return planted_clusters(n, rng=np.random.default_rng(seed)).dataset


def write_summary(summary: SimulationSummary, stdout: TextIO, *, as_json: bool, out: Path | None = None) -> None:
    """Print a few lines (or the JSON document) and, with ``out``, write the JSON there."""
    doc = summary.to_dict()
    if out is not None:
        out.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if as_json:
        stdout.write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")
        return
    eps = summary.result.epsilon()
    stdout.write(f"{summary.protocol}: {summary.n:,} parties, engine {summary.engine}, seed {summary.seed}; "
                 f"ε per respondent (sequential) {eps:g}\n")
    if summary.messages is not None:
        stdout.write(f"  traffic: {summary.messages:,} messages, {summary.bytes:,} bytes, {summary.rounds} rounds\n")
    if summary.parameters:
        stdout.write("  parameters: " + ", ".join(f"{k} = {to_jsonable(v)}" for k, v in summary.parameters.items())
                     + "\n")
