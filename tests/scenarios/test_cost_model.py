"""scenarios.cost_model: the hand-derived secure-sum formulas of docs/cost_model.md (section 3)
against the counting driver's counts (closed_form), and the per-combination reduction against a
full count."""

from __future__ import annotations

import pytest

from parties.secure.engine import counted_cost
from parties.secure.paper import PaperEngine
from scenarios.cost_model import ClosedForm, closed_form, element_bytes


def paper_by_hand(n: int, L: int, S: int) -> ClosedForm:
    """docs/cost_model.md: per party (n − 1) shares + n broadcasts of 27 + S + L·b bytes."""
    msg = 27 + S + L * element_bytes(n + 1)
    pm = 2 * n - 1
    return ClosedForm(n * pm, n * pm * msg, 2, pm, pm * msg, 0, 0, "")


def per_combination_by_hand(n: int, L: int, S: int) -> ClosedForm:
    """docs/cost_model.md: L runs of one combination, (2n − 1) messages of 27 + S + b bytes each."""
    msg = 27 + S + element_bytes(n + 1)
    pm = L * (2 * n - 1)
    return ClosedForm(n * pm, n * pm * msg, 2 * L, pm, pm * msg, 0, 0, "")


def graph_direct_by_hand(n: int, L: int, k: int, S: int) -> ClosedForm:
    """docs/cost_model.md: k shares + 1 partial of 27 + S + 4L bytes per party (Z_2^32)."""
    msg = 27 + S + 4 * L
    return ClosedForm(n * (k + 1), n * (k + 1) * msg, 2, k + 1, (k + 1) * msg, 0, 0, "")


def graph_relay_by_hand(n: int, L: int, k: int, S: int) -> ClosedForm:
    """docs/cost_model.md: per party a signed key (117 + S), k sealed shares of c = 4L + 28
    bytes (33 + S + 8k + kc) and a partial (27 + S + 4L); the controller per party a directory
    with signatures (27 + S + 100k) and the relayed shares (33 + S + 8k + kc)."""
    c = 4 * L + 28
    sealed = 33 + S + 8 * k + k * c
    party = (117 + S) + sealed + (27 + S + 4 * L)
    controller = (27 + S + 100 * k) + sealed
    return ClosedForm(5 * n, n * (party + controller), 3, 3, party, 2 * n, n * controller, "")


FIELDS = ("messages", "bytes", "rounds", "party_messages", "party_bytes", "controller_messages",
          "controller_bytes")


def same(a: ClosedForm, b: ClosedForm) -> bool:
    return all(getattr(a, f) == getattr(b, f) for f in FIELDS)


@pytest.mark.parametrize(("n", "L", "S"), [(2, 1, 16), (5, 7, 16), (30, 461, 45), (256, 2, 16)])
def test_paper_formula_equals_the_count(n: int, L: int, S: int) -> None:
    """Including 2 bytes a cell from n = 256 on (modulus n + 1 > 256)."""
    assert same(closed_form("paper", n, L, S=S), paper_by_hand(n, L, S))


@pytest.mark.parametrize(("n", "L", "S"), [(2, 3, 16), (6, 5, 45), (40, 461, 16)])
def test_paper_per_combination_formula_equals_the_count(n: int, L: int, S: int) -> None:
    assert same(closed_form("paper-per-combination", n, L, S=S), per_combination_by_hand(n, L, S))


@pytest.mark.parametrize(("n", "L"), [(2, 1), (5, 4), (7, 3)])
def test_per_combination_is_L_runs_of_one_combination_by_a_full_count(n: int, L: int) -> None:
    """The reduction closed_form uses (count L = 1, multiply by L) equals the full count of
    the per-combination engine, per actor."""
    engine = PaperEngine(batched=False)
    full = counted_cost(engine, engine.context(range(n), L, session="s" * 16))
    reduced = closed_form("paper-per-combination", n, L)
    assert (full.messages, full.bytes, full.rounds) == (reduced.messages, reduced.bytes, reduced.rounds)
    assert tuple(full.party_max()) == (reduced.party_messages, reduced.party_bytes)


@pytest.mark.parametrize(("n", "L", "degree", "S"), [(3, 1, 8, 16), (10, 6, 4, 16), (64, 461, 8, 45), (101, 20, 6, 16)])
def test_graph_formulas_equal_the_count(n: int, L: int, degree: int, S: int) -> None:
    k = min(degree, n - 1)
    assert same(closed_form("graph-direct", n, L, degree=degree, S=S), graph_direct_by_hand(n, L, k, S))
    assert same(closed_form("graph", n, L, degree=degree, S=S), graph_relay_by_hand(n, L, k, S))
