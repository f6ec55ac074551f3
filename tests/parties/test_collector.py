"""The garbage collector's schedule during a run (parties.collector)."""

from __future__ import annotations

import gc

from parties.collector import FULL_COLLECTION_EVERY, rare_full_collections


def test_full_collections_are_rare_during_a_run_and_the_setting_is_restored() -> None:
    before = gc.get_threshold()
    with rare_full_collections():
        inside = gc.get_threshold()
        with rare_full_collections():
            assert gc.get_threshold() == inside
        assert gc.get_threshold() == inside  # the outer block still runs
    assert inside == (before[0], before[1], max(before[2], FULL_COLLECTION_EVERY))
    assert gc.get_threshold() == before
