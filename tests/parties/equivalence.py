"""The equivalence checks shared by the runtime tests: fast path ≡ actors, and run ≡ run between runtimes.

- :func:`assert_equal` — a field-by-field comparison of two values (arrays exactly, NaN equal
  to NaN, dataclasses by their fields), failing with the path of the first difference;
- :func:`assert_same` — an actor run's :class:`~mprr.protocols.result.ProtocolResult` is the
  fast path's: every release (for a phase the parties fed into a secure sum, its tallies:
  the controller never holds the codes), the estimate, the ledger, the dependences and
  clusters, the parameters;
- :func:`party_ledgers` — what the fast path books for each party (a party that sat a phase
  out books nothing for it);
- :func:`assert_same_runs` — two runs of one job on two runtimes: the same result and details,
  the same party ledgers, privacy summary, refusals and exclusions, the same controller's view
  and the same traffic statistics (every counter of :meth:`TrafficStatistics.to_dict`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mprr.privacy import Ledger
from mprr.protocols.oracle_reports import reporters
from mprr.protocols.release import ReleasedData
from mprr.protocols.result import ProtocolResult

__all__ = ["TRAFFIC_KEYS", "assert_equal", "assert_same", "assert_same_runs", "party_ledgers", "same_estimate"]

TRAFFIC_KEYS = ("messages", "bytes", "delivered", "rounds", "by_sender", "by_receiver", "by_kind", "by_phase",
                "round_log", "faults", "crashed")
"""The counters of :meth:`parties.traffic.TrafficStatistics.to_dict` two runtimes must agree on."""


def assert_equal(a: Any, b: Any, path: str = "value") -> None:
    """``a`` equals ``b`` field by field (AssertionError naming the first differing path)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray), f"{path}: {type(a)} vs {type(b)}"
        assert a.shape == b.shape, f"{path}: shape {a.shape} vs {b.shape}"
        nan = a.dtype.kind in "fc" and b.dtype.kind in "fc"
        assert np.array_equal(a, b, equal_nan=nan), f"{path}: arrays differ"
    elif isinstance(a, Mapping):
        assert isinstance(b, Mapping), f"{path}: {type(a)} vs {type(b)}"
        assert list(a) == list(b), f"{path}: keys {list(a)} vs {list(b)}"
        for key in a:
            assert_equal(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert type(a) is type(b), f"{path}: {type(a)} vs {type(b)}"
        assert len(a) == len(b), f"{path}: length {len(a)} vs {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            assert_equal(x, y, f"{path}[{k}]")
    elif dataclasses.is_dataclass(a) and not isinstance(a, type):
        assert type(a) is type(b), f"{path}: {type(a)} vs {type(b)}"
        for f in dataclasses.fields(a):
            assert_equal(getattr(a, f.name), getattr(b, f.name), f"{path}.{f.name}")
    elif isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        assert math.isnan(b), f"{path}: nan vs {b!r}"
    elif type(a).__eq__ is object.__eq__ and not callable(a):  # an object without an equality: its state
        assert type(a) is type(b), f"{path}: {type(a)} vs {type(b)}"
        assert_equal(_state(a), _state(b), path)
    else:
        assert a == b, f"{path}: {a!r} vs {b!r}"


def _state(obj: Any) -> dict[str, Any]:
    """An object's attributes (its ``__dict__`` and its slots) but its caches: the values of its
    ``functools.cached_property`` and the private attributes it fills on first use (``None``
    until then), which hold what one run asked of the object and another did not."""
    slots = [s for klass in type(obj).__mro__ for s in getattr(klass, "__slots__", ())]
    state = {**getattr(obj, "__dict__", {}), **{s: getattr(obj, s) for s in slots if hasattr(obj, s)}}
    return {k: v for k, v in state.items()
            if not isinstance(getattr(type(obj), k, None), functools.cached_property)
            and not (k.startswith("_") and v is None)}


def same_estimate(a: object, b: object) -> None:
    """The two estimates are equal (same type, every array exactly)."""
    assert_equal(a, b, "estimate")


def _same_release(actor: ReleasedData, fast: ReleasedData, path: str) -> None:
    if actor.codes is None and fast.codes is not None:
        # a secure-sum phase: the controller holds the tallies only, of values nobody linked to a party
        assert not fast.linkable, f"{path}: the actor run has no codes for a linkable release"
        actor = dataclasses.replace(actor, codes=fast.codes)
    assert_equal(actor, fast, path)


def assert_same(actor: ProtocolResult, fast: ProtocolResult) -> None:
    """The actor run released exactly the fast path's data and derived the same result from it
    (``details`` may add the secure-sum engine's record; ``timings`` are the runs' own)."""
    assert type(actor) is type(fast)
    assert len(actor.releases) == len(fast.releases), (actor.phases, fast.phases)
    for k, (a, b) in enumerate(zip(actor.releases, fast.releases)):
        _same_release(a, b, f"releases[{k}]")
    for f in dataclasses.fields(fast):
        if f.name in ("releases", "timings", "details"):
            continue
        assert_equal(getattr(actor, f.name), getattr(fast, f.name), f.name)
    extra = set(actor.details) - set(fast.details)
    assert extra <= {"secure_sum"}, f"details: the actor run adds {sorted(extra)}"
    assert_equal({k: actor.details[k] for k in fast.details}, dict(fast.details), "details")


def party_ledgers(fast: ProtocolResult, names: Sequence[str]) -> list[tuple[Any, ...]]:
    """Each party's ledger entries on the fast path: those of the phases it reported in (a
    release of every party's values: every phase)."""
    took = np.stack([reporters(r) if r.oracle_reports else np.ones(fast.n, dtype=bool) for r in fast.releases],
                    axis=1)
    return [tuple(e for r, t in zip(fast.releases, row) if t for e in r.ledger_entries(names)) for row in took]


def ledgers_match_the_fast_path(ledgers: Sequence[Ledger], fast: ProtocolResult, names: Sequence[str]) -> None:
    """Every party's own ledger books what the fast path books for it."""
    if all(not r.oracle_reports for r in fast.releases):
        assert all(ledger == fast.ledger for ledger in ledgers), "a party's ledger is not the result's ledger"
    else:
        assert [ledger.releases for ledger in ledgers] == party_ledgers(fast, names)


def assert_same_runs(a: Any, b: Any) -> None:
    """Two :class:`~parties.simulate.SimulationResult` of one job on two runtimes agree on
    everything but time and the runtime's own wire figures."""
    assert_equal(a.result.details, b.result.details, "details")
    assert_same(b.result, a.result)
    assert a.ledgers == b.ledgers
    assert a.privacy == b.privacy
    assert a.refusals == b.refusals and dict(a.excluded) == dict(b.excluded) and a.crashed == b.crashed
    assert a.view == b.view
    va, vb = (sorted(((e.src, e.phase, e.kind, e.size, e.index) for e in sim.view_log), key=lambda t: t[:4])
              for sim in (a, b))
    assert [t[:4] for t in va] == [t[:4] for t in vb]
    # the same message where it derives from the seed (secure-sum keys and masks are fresh in every run)
    seeded = ("RandomizedValues", "OracleReport", "Refusal")
    pairs = [(a.view_log.entry(i).message, b.view_log.entry(j).message) for (*_, i), (*_, j) in zip(va, vb)]
    assert all(x == y for x, y in pairs if x.NAME in seeded)
    ta, tb = a.traffic.to_dict(), b.traffic.to_dict()
    for key in TRAFFIC_KEYS:
        assert ta.get(key) == tb.get(key), f"traffic {key}: {ta.get(key)!r} vs {tb.get(key)!r}"
