"""Pair covers: every attribute pair in a unit of at most three attributes, start units kept."""

from __future__ import annotations

import itertools
import math

import pytest

from mprr.errors import ConfigurationError
from mprr.pair_cover import cover_pairs, covered_pairs, unit_error, unit_weights

ADULT = (9, 16, 7, 15, 6, 5, 2, 2)


def test_unit_error_worked_example() -> None:
    # two binary attributes at ε = ln 3: GRR over 4 cells, σ² = (e^ε + d − 2)/(e^ε − 1)² = 5/4;
    # the pair is the unit: ½·4·sqrt(1·5/4 + ¼·¾)
    assert unit_error((0, 1), (2, 2), math.log(3.0)) == pytest.approx(2.0 * math.sqrt(1.25 + 0.1875))
    # a single attribute is its own "pair": ½·2·sqrt(σ² + ¼) with σ² = (3 + 0)/4 for d = 2
    assert unit_error((0,), (2,), math.log(3.0)) == pytest.approx(math.sqrt(0.75 + 0.25))


@pytest.mark.parametrize("epsilon", [1.0, 4.0, 8.0])
@pytest.mark.parametrize("sizes", [ADULT, (4, 3, 5, 2, 6, 3, 8, 2), (3, 4, 2, 5, 3), (2, 2, 2)])
def test_every_pair_is_covered_by_units_of_at_most_three_attributes(sizes: tuple[int, ...], epsilon: float) -> None:
    units = cover_pairs(sizes, epsilon)
    m = len(sizes)
    assert covered_pairs(units) == set(itertools.combinations(range(m), 2))
    assert all(2 <= len(u) <= 3 and list(u) == sorted(set(u)) for u in units)
    # no added unit is redundant: each covers a pair no other unit covers
    for u in units:
        assert not set(itertools.combinations(u, 2)) <= covered_pairs([v for v in units if v != u])


def test_large_epsilon_uses_triples_and_start_units_are_kept() -> None:
    units = cover_pairs(ADULT, 8.0)
    assert len(units) < 28 and any(len(u) == 3 for u in units)
    # at ε = 1 the oracle noise of a triple's projection outweighs the shared sampling: pairs only
    assert all(len(u) == 2 for u in cover_pairs(ADULT, 1.0))
    kept = cover_pairs(ADULT, 8.0, start=[(3, 1), (0, 2, 4, 5)])
    assert kept[:2] == ((1, 3), (0, 2, 4, 5)) and covered_pairs(kept) == set(itertools.combinations(range(8), 2))
    capped = cover_pairs(ADULT, 8.0, max_cells=100)
    assert all(len(u) == 2 or math.prod(ADULT[a] for a in u) <= 100 for u in capped)
    assert covered_pairs(capped) == set(itertools.combinations(range(8), 2))


def test_unit_weights_are_shares_proportional_to_error_two_thirds() -> None:
    units = ((0, 1), (0, 2, 3), (1, 2))
    w = unit_weights(units, (3, 4, 2, 5), 2.0)
    raw = [unit_error(u, (3, 4, 2, 5), 2.0) ** (2.0 / 3.0) for u in units]
    assert sum(w) == pytest.approx(1.0) and w == pytest.approx([r / sum(raw) for r in raw])


def test_bad_arguments_are_named() -> None:
    with pytest.raises(ConfigurationError, match="max_cells must be an integer >= 1 or None, got 0"):
        cover_pairs(ADULT, 8.0, max_cells=0)
    with pytest.raises(ConfigurationError, match=r"start units must be distinct attribute indices in \[0, 8\), got \(1, 1\)"):
        cover_pairs(ADULT, 8.0, start=[(1, 1)])
    with pytest.raises(ConfigurationError, match="epsilon"):
        cover_pairs(ADULT, 0.0)
