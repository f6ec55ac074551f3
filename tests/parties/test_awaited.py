"""parties.awaited: the sources a receive still awaits, one flag per actor of their span."""

from __future__ import annotations

import numpy as np
import pytest

from parties.awaited import Awaited


@pytest.mark.parametrize("sources", [range(3, 8), [7, 3, 5, 4, 6], np.array([3, 4, 5, 6, 7, 5]), (3, 4, 5, 6, 7)])
def test_any_form_of_the_same_sources_awaits_the_same_actors(sources) -> None:
    want = Awaited(sources)
    assert len(want) == 5 and want.ids().tolist() == [3, 4, 5, 6, 7] and list(want) == [3, 4, 5, 6, 7]
    assert 3 in want and 7 in want and np.int64(5) in want
    assert 2 not in want and 8 not in want and -1 not in want and "3" not in want
    assert want.bounds() == {3, 7}


def test_discard_take_and_add_again() -> None:
    want = Awaited(range(10))
    assert want.discard(4) and not want.discard(4) and not want.discard(12) and len(want) == 9
    hit = want.take(np.array([0, 4, 9, 11, -3], dtype=np.int64))
    assert hit.tolist() == [True, False, True, False, False]
    assert want.ids().tolist() == [1, 2, 3, 5, 6, 7, 8] and want.bounds() == {1, 8}
    want.add(4)
    want.add(4)
    assert want.ids().tolist() == [1, 2, 3, 4, 5, 6, 7, 8] and len(want) == 8
    with pytest.raises(ValueError, match="src must lie in 0..9 to be awaited again, got 10"):
        want.add(10)
    assert not Awaited(()) and Awaited(()).bounds() == set() and Awaited(()).ids().tolist() == []


def test_thinly_spread_sources_are_kept_as_a_set_and_behave_the_same() -> None:
    want = Awaited([5, 10**9, 7])
    assert want._flags is None  # (a span of a billion flags for three actors would not do)
    assert len(want) == 3 and 10**9 in want and 6 not in want and want.bounds() == {5, 10**9}
    assert want.take(np.array([7, 8, 10**9])).tolist() == [True, False, True]
    assert want.ids().tolist() == [5] and want.discard(5) and not want
    want.add(8)
    assert want.ids().tolist() == [8]


def test_a_million_parties_cost_a_flag_each() -> None:
    want = Awaited(range(1_000_000))
    assert want._flags is not None and len(want._flags) == 1_000_000
    hit = want.take(np.arange(0, 1_000_000, 2, dtype=np.int64))
    assert hit.all() and len(want) == 500_000 and want.ids()[:3].tolist() == [1, 3, 5]
