"""scenarios.cost_model: the hand-derived secure-sum formulas of docs/cost_model.md (section 3)
against the counting driver's counts (closed_form), and the per-combination reduction against a
full count."""

from __future__ import annotations

import pytest

from mprr.errors import ConfigurationError

from parties.secure.engine import counted_cost
from parties.secure.paper import PaperEngine
from parties.secure.topology import build_neighbourhoods
from scenarios.cost_model import ClosedForm, closed_form, element_bytes

# Field sizes of the codec (docs/cost_model.md, section 1)
HEADER, ARRAY_1D = 5, 1 + 1 + 8
KEY, AEAD, SHAMIR_SHARE, TAG = 32, 12 + 16, 33, 16  # X25519 key, ChaCha20-Poly1305 nonce + tag, share, BLAKE2b tag
MASKED_PLAINTEXT = 3 * 4 + 2 * SHAMIR_SHARE + KEY  # owner, holder, x (u32), two Shamir shares, s_pk
VIEW_KEY_ENTRY = 4 + 16  # holder id (u32) + a 128-bit view key an owner seals for a holder


def _str(chars: int) -> int:
    return 4 + chars


def _blobs(count: int, size: int) -> int:
    return 4 + count * (4 + size)


def _ids(count: int) -> int:
    """A uint32 vector of party ids (or of ends)."""
    return ARRAY_1D + 4 * count


def _bundle(count: int, size: int) -> int:
    """``count`` blobs of ``size`` bytes as one buffer: ids, ends, u32 length + data."""
    return 2 * _ids(count) + 4 + count * size


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


def _consistency_bytes(engine: str, n: int, k: int, S: int, seed: int) -> tuple[int, int, int, int]:
    """The masked engine's consistency check, summed over the n parties: bytes of the view keys
    owners seal for their holders that are no neighbours (in the shares, each sent and relayed
    once), of the ``SurvivorTags`` (one tag per party of the 2-hop neighbourhood W(v)) and of the
    ``UnmaskRequest`` messages (the distinct views of W(v), their authors, view indices and tags;
    everyone survives here); and the largest of one party's view keys + tags."""
    def tags(targets: int) -> int:
        return HEADER + _str(S) + ARRAY_1D + 4 * targets + 4 + TAG * targets

    def request(views: int, view_cells: int, signers: int) -> int:
        return (HEADER + _str(S) + 2 * ARRAY_1D + 4 * (view_cells + views) + 2 * (ARRAY_1D + 4 * signers)
                + 4 + TAG * signers)

    if engine == "masked" or k >= n - 1:  # complete graph: all adjacent, one shared view of all n
        return 0, n * tags(n - 1), n * request(1, n, n - 1), tags(n - 1)
    nbrs = build_neighbourhoods(range(n), "regular", k, seed=seed)
    near = {v: frozenset(nbrs[v]) for v in range(n)}
    handed = total_tags = total_requests = most = 0
    for v in range(n):
        mine = sum(len(near[v] - near[j]) - 1 for j in near[v]) * VIEW_KEY_ENTRY
        handed += mine
        second = {w for j in near[v] for w in near[j] if w != v and w not in near[v]}
        signers = near[v] | second
        views = {near[w] | {w} for w in signers}
        total_tags += tags(len(signers))
        total_requests += request(len(views), sum(len(x) for x in views), len(signers))
        most = max(most, mine + tags(len(signers)))
    return handed, total_tags, total_requests, most


def masked_by_hand(engine: str, n: int, L: int, degree: int, S: int, seed: int = 0) -> ClosedForm:
    """docs/cost_model.md, section 3: per party 5 messages (masking key, k sealed share pairs
    with the owner's view keys, L masked cells × 4 B, view tags, k + 1 Shamir shares); the
    controller 4 per party, the last with the tagged views of the party's 2-hop neighbourhood."""
    k = n - 1 if engine == "masked" else min(degree, n - 1)
    h = k + 1
    keys = HEADER + _str(S) + _blobs(1, KEY) + 4  # s_pk, unsigned (the channels use the PKI's static keys)
    sealed = HEADER + _str(S) + _bundle(k, MASKED_PLAINTEXT + AEAD)  # + handed view keys
    masked = HEADER + _str(S) + ARRAY_1D + 4 * L
    unmask = HEADER + _str(S) + 2 * _ids(h) + 4 + h + 4 + h * SHAMIR_SHARE  # owners, which, x, shares
    directory = HEADER + _str(S) + _ids(k) + 4 + k * KEY + 4  # the neighbours' s_pk, no signatures
    survivors = HEADER + _str(S) + _ids(h)
    handed, tags, requests, most = _consistency_bytes(engine, n, k, S, seed)
    pb = keys + sealed + masked + unmask
    cb = directory + sealed + survivors
    return ClosedForm(9 * n, n * (pb + cb) + 2 * handed + tags + requests, 5, 5, pb + most, 4 * n,
                      n * cb + handed + requests, "", 3 * n, n * survivors + tags + requests)


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


@pytest.mark.parametrize(("engine", "n", "L", "degree", "S"), [
    ("masked", 2, 1, 8, 16), ("masked", 8, 30, 8, 16), ("masked", 40, 461, 8, 45),
    ("masked-sparse", 12, 59, 4, 16), ("masked-sparse", 33, 59, 4, 16), ("masked-sparse", 64, 461, 8, 45),
    ("masked-sparse", 9, 7, 8, 16),  # k = n - 1: the complete graph
])
def test_masked_formulas_equal_the_count(engine: str, n: int, L: int, degree: int, S: int) -> None:
    """The masked engines' closed forms are counted like the others'; the hand derivation of
    docs/cost_model.md (totals, busiest party, controller and the consistency check) is the
    independent check."""
    got, want = closed_form(engine, n, L, degree=degree, S=S), masked_by_hand(engine, n, L, degree, S)
    assert same(got, want)
    assert (got.consistency_messages, got.consistency_bytes) == (want.consistency_messages, want.consistency_bytes)


def test_the_rr_closed_form_reads_the_matrix_families_from_the_plan() -> None:
    """A request names each unit's family (u32 length + UTF-8): grr (3 characters) instead of
    keep-or-uniform (15) saves 12 B per unit and party; the plan says which one a run applies."""
    from mprr.protocols.plan import PhasePlan, Plan
    from scenarios.cost_model import rr_closed_form

    n, m = 50, 4
    grr = Plan((PhasePlan.release("attributes", [(j,) for j in range(m)], families=("grr",)),))
    by_plan = rr_closed_form("RR-Independent", n, m, plan=grr)
    assert same(by_plan, rr_closed_form("RR-Independent", n, m, matrices="epsilon_per_attribute"))
    assert rr_closed_form("RR-Independent", n, m, matrices="p").bytes - by_plan.bytes == 12 * n * m
    with pytest.raises(ConfigurationError, match=r"the plan of RR-Independent must declare the families of its phases, "
                                        r"got none for \['attributes'\]"):
        rr_closed_form("RR-Independent", n, m, plan=Plan((PhasePlan.release("attributes"),)))
