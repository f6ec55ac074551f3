"""The equivalence matrix in memory: fast path ≡ actors on one shard ≡ actors on three shards.

Every registered protocol, dependence method and secure-sum engine (the cases of
:mod:`tests.parties.equivalence_cases`, derived from the registries): the same releases,
estimates, dependences, clusters and ledgers as the fast path (``PartyStreams(seed, n)``, the
parties' own streams), every party's own ledger as the fast path books it, and between one
shard and three the same run, traffic statistics included.  ``test_equivalence_tcp`` and
``test_equivalence_ray`` hold the same cases against worker processes and Ray actors.
"""

from __future__ import annotations

import pytest

from mprr.protocols.dependences import DEPENDENCE_METHODS
from mprr.protocols.registry import PROTOCOLS
from parties.runtime import MemoryRuntime
from parties.secure.registry import ENGINES, make_engine
from tests.parties.equivalence import assert_same, assert_same_runs, ledgers_match_the_fast_path
from tests.parties.equivalence_cases import (Case, dataset, fast_path, matrix_cases, reference, secure_methods,
                                             simulate_case)

CASES = matrix_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_actors_release_what_the_fast_path_releases_on_one_shard_and_on_three(case: Case) -> None:
    if case.missing:
        pytest.fail(case.missing)
    check_in_memory(case)


def check_in_memory(case: Case) -> None:
    """fast path ≡ memory (one shard) ≡ memory (three shards) for ``case``."""
    data = dataset(case.data)
    fast = fast_path(case)
    if case.public is not None:  # the public fast-path function runs the registered program
        from mprr.streams import PartyStreams
        from tests.parties.equivalence_cases import SEED

        assert_same(case.public(data, PartyStreams(SEED, data.n)), fast)
    one = reference(case)
    assert not one.degraded and not one.refusals
    assert_same(one.result, fast)
    ledgers_match_the_fast_path(one.ledgers, fast, data.schema.names)
    if case.engine is not None:  # the controller learned the secure sum's tallies, never a party's values
        secure = one.result.releases[0]
        assert secure.codes is None and not secure.linkable
        assert one.result.details["secure_sum"]["engine"] == make_engine(case.engine).name
        released = {r.phase for r in one.result.releases[1:]}  # the later phases release codes to it
        kinds = {e.kind for e in one.view_log if e.phase not in released}
        assert "RandomizedValues" not in kinds and "Ack" in kinds
        assert {e.kind for e in one.view_log if e.phase in released} == {"RandomizedValues"}
        assert not any(p.errors for p in one.parties)
    three = simulate_case(case, MemoryRuntime(shards=3))
    assert_same_runs(one, three)


def test_the_matrix_covers_every_registered_protocol_dependence_method_and_engine() -> None:
    assert {c.protocol for c in CASES if not c.missing} == set(PROTOCOLS)
    secure = secure_methods()
    assert secure and set(secure) < set(DEPENDENCE_METHODS)
    for d in DEPENDENCE_METHODS:
        engines = {c.engine for c in CASES if c.params.get("dependence") == d and c.protocol == "RR-Clusters"}
        assert engines == (set(ENGINES) if d in secure else {None}), d


def test_a_protocol_and_an_engine_registered_by_a_plugin_enter_the_matrix(own_plugin) -> None:  # noqa: ANN001
    """The plugin's engine is covered with no edit (it runs here); its protocols, which the
    matrix has no parameters for, get cases that fail naming them."""
    cases = matrix_cases()
    missing = {c.protocol: c.missing for c in cases if c.missing}
    assert sorted(missing) == ["pair-sums", "pairs"]
    assert missing["pairs"] == ("protocol 'pairs' is registered but the equivalence matrix has no parameters for it: "
                                "add representative ones to REPRESENTATIVE in tests/parties/equivalence_cases.py")
    ring = [c for c in cases if c.engine == "ring"]
    assert sorted(c.params["dependence"] for c in ring) == secure_methods()
    check_in_memory(ring[0])
