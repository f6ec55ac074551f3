"""Closed-form communication costs of our protocols, from the message sizes of our codec.

Every number here is *exact* for a fault-free run.  The secure sums of the engines written as
programs (paper, paper-per-combination, graph, graph-direct) are counted: their programs run
by the counting driver (:func:`parties.secure.counting.count`), every message sized by the codec.
The others are derived from the field encodings of :mod:`parties.wire.codec` (header
magic|version|kind = 5 bytes, int = 8, str = 4 + UTF-8 bytes, 1-D array = 10 + data, tuple =
4 + items, bytes = 4 + data) and from each protocol's message pattern.  ``docs/cost_model.md``
derives all of them by hand (``tests/scenarios/test_cost_model.py`` checks its secure-sum
formulas against the counts); ``scenarios.communication`` measures them.

- :func:`closed_form` — one secure sum (engines paper, paper-per-combination, graph,
  graph-direct, masked, masked-sparse) over vectors of L cells (:func:`counted_secure_sum`);
- :func:`release_phase` / :func:`rr_closed_form` — the request/reply phases of the actor
  choreographies (RR-Independent: one phase; RR-Clusters with 4.1: a dependence phase and a
  cluster phase), main paper 4.1: O(nm) at the controller, O(m) per party;
- :func:`pair_cells`, :func:`pair_indicators` — the vectors of main paper 4.2/4.3;
- :func:`measure_secure_sum`, :func:`measure_rr` — run one secure sum (in-memory network) or
  one RR protocol (actor simulator) and set the measured traffic beside the closed form.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import networkx as nx
import numpy as np

from mprr.errors import ConfigurationError
from mprr.protocols.plan import Plan
from mprr.protocols.registry import lookup
from mprr.synthetic import planted_clusters
from parties.network import InMemoryNetwork
from parties.runtime import Runtime
from parties.transport import CONTROLLER
from parties.traffic import TrafficStatistics
from parties.secure.agreement import DIGEST_BYTES
from parties.secure.engine import SecureSumEngine, counted_cost
from parties.secure.run import run_secure_sum
from parties.secure.registry import ENGINES, engine_needs_mesh, sized_engine
from parties.secure.topology import build_neighbourhoods

__all__ = [
    "ACK_BYTES",
    "ENGINE_KEYS",
    "ClosedForm",
    "MATCHED",
    "Measurement",
    "RRMeasurement",
    "RR_PARAMETERS",
    "measure_rr",
    "measure_secure_sum",
    "closed_form",
    "counted_secure_sum",
    "element_bytes",
    "engine_and_topology",
    "pair_cells",
    "pair_indicators",
    "release_phase",
    "release_request_bytes",
    "randomized_values_bytes",
    "rr_closed_form",
    "secure_release_bytes",
    "secure_start_bytes",
    "simulate_options",
]

ENGINE_KEYS = tuple(ENGINES)

# Wire sizes of the codec (parties.wire.codec): header magic|version|kind, str = u32 length +
# UTF-8, int = i64, 1-D array = dtype u8 + ndim u8 + u64 shape + data, tuple = u32 count + items,
# bytes = u32 length + data.
HEADER = 5
INT = 8
ARRAY_1D = 1 + 1 + 8
SESSION_CHARS = 16
KEY = 32
AEAD = 12 + 16  # ChaCha20-Poly1305: random nonce + tag
SHAMIR_SHARE = 33
TAG = 16  # keyed BLAKE2b, 128-bit digest (the consistency round's view tags)
MASKED_PLAINTEXT = 3 * 4 + 2 * SHAMIR_SHARE + KEY  # owner, holder, x (u32), two Shamir shares, s_pk
VIEW_KEY_ENTRY = 4 + 16  # holder id (u32) + a 128-bit view key an owner seals for a holder


def _str(chars: int) -> int:
    return 4 + chars


def _ints(k: int) -> int:
    return 4 + INT * k


def _blobs(count: int, size: int) -> int:
    return 4 + count * (4 + size)


def _ids(count: int) -> int:
    """A uint32 vector of party ids (or of ends)."""
    return ARRAY_1D + 4 * count


def _bundle(count: int, size: int) -> int:
    """``count`` blobs of ``size`` bytes as one buffer: ids, ends, u32 length + data."""
    return 2 * _ids(count) + 4 + count * size


def element_bytes(modulus: int) -> int:
    """Bytes of one element of Z_M stored in the smallest unsigned dtype holding M − 1."""
    top = modulus - 1
    for b in (1, 2, 4, 8):
        if top < 1 << (8 * b):
            return b
    raise ConfigurationError(f"modulus must be <= 2**64, got {modulus}")


# --------------------------------------------------------------------------- closed forms


MATCHED: Mapping[str, tuple[str, ...]] = {
    "consistency": ("consistency_messages", "consistency_bytes"), "messages": ("messages",),
    "bytes": ("bytes",), "rounds": ("rounds",), "party": ("party_messages", "party_bytes"),
    "controller": ("controller_messages", "controller_bytes"),
}
"""The quantities a measurement is checked on against its closed form, by group."""

CONSISTENCY_KINDS = ("SurvivorSet", "SurvivorTags", "UnmaskRequest")
"""Message kinds of the masked engine's consistency check."""


@dataclass(frozen=True)
class ClosedForm:
    """Traffic of one run, totals over the run: exact for a fault-free run (:func:`closed_form`,
    :func:`rr_closed_form`), or as a network counted it (:meth:`counted`)."""

    messages: int
    bytes: int
    rounds: int
    party_messages: int
    party_bytes: int
    controller_messages: int
    controller_bytes: int
    formula: str
    consistency_messages: int = 0
    consistency_bytes: int = 0
    """The masked engine's consistency check (Bonawitz et al. 2017, active adversary): the
    ``SurvivorSet`` and ``SurvivorTags`` messages and the tagged views of ``UnmaskRequest``
    (0 for the other engines); included in the totals above."""

    @classmethod
    def counted(cls, stats: TrafficStatistics) -> ClosedForm:
        """What a network counted: totals, the busiest party, the controller and the masked
        engine's consistency messages (formula ``"measured"``)."""
        party = [c for a, c in stats.by_sender.items() if a != CONTROLLER]
        ctrl = stats.sent_by(CONTROLLER)
        check = [stats.by_kind[k] for k in CONSISTENCY_KINDS if k in stats.by_kind]
        return cls(stats.messages, stats.bytes, stats.rounds, max(c.messages for c in party),
                   max(c.bytes for c in party), ctrl.messages, ctrl.bytes, "measured",
                   sum(c.messages for c in check), sum(c.bytes for c in check))

    def headline(self) -> dict[str, Any]:
        """Messages, bytes, rounds and the formula, as ``results.json`` records a closed form."""
        return {"messages": self.messages, "bytes": self.bytes, "rounds": self.rounds, "formula": self.formula}

    def matches(self, other: ClosedForm, groups: Sequence[str] = tuple(MATCHED)) -> dict[str, bool]:
        """Per group of :data:`MATCHED` (``consistency``, ``messages``, ``bytes``, ``rounds``,
        ``party``, ``controller``), whether ``other`` has the same numbers."""
        return {g: all(getattr(self, f) == getattr(other, f) for f in MATCHED[g]) for g in groups}


@functools.lru_cache(maxsize=256)
def counted_secure_sum(engine: str, n: int, L: int, *, degree: int = 8, S: int = SESSION_CHARS,
                       seed: int = 0) -> ClosedForm:
    """Traffic of a fault-free secure sum of ``engine`` (``paper``, ``graph``, ``graph-direct``)
    for n parties and vectors of L cells: every role's program run by the counting driver
    (:func:`parties.secure.engine.counted_cost`), every message sized by the codec.

    ``paper-per-combination`` is L runs of the one-combination sum, each the traffic of
    ``paper`` with L = 1 (a message's combination index is a fixed-size int64): it is counted
    once and multiplied by L (``tests/scenarios/test_cost_model.py`` checks this against a
    full count).  Paper and graph-direct are role-symmetric (one party's program is counted
    for all, :meth:`parties.secure.engine.SecureSumEngine.symmetric`): O(n) messages routed; the
    relayed graph routes all its O(n k) messages.
    """
    if engine == "paper-per-combination":
        one = counted_secure_sum("paper", n, 1, degree=degree, S=S, seed=seed)
        return ClosedForm(L * one.messages, L * one.bytes, L * one.rounds, L * one.party_messages,
                          L * one.party_bytes, 0, 0, f"L = {L} runs of one combination, each {one.formula}")
    eng = sized_engine(engine, degree=degree, round_timeout=60.0, seed=seed)
    cost = counted_cost(eng, eng.context(range(n), L, session="s" * S))
    party = cost.party_max()
    ctrl = cost.sent[CONTROLLER]
    return ClosedForm(cost.messages, cost.bytes, cost.rounds, party.messages, party.bytes, ctrl.messages,
                      ctrl.bytes, cost.formula)


def closed_form(engine: str, n: int, L: int, *, degree: int = 8, S: int = SESSION_CHARS, seed: int = 0) -> ClosedForm:
    """Closed-form traffic of ``engine`` for n parties and vectors of L cells (fault-free).

    ``paper``, ``paper-per-combination``, ``graph``, ``graph-direct``: the engines' programs
    counted by the counting driver (:func:`counted_secure_sum`); ``masked``, ``masked-sparse``:
    derived from the codec's field encodings (module constants) and the engine's message
    pattern.  ``docs/cost_model.md`` derives all of them by hand, and
    ``tests/scenarios/test_cost_model.py`` checks its formulas against these.

    Parameters
    ----------
    engine
        One of :data:`ENGINE_KEYS`.
    n, L
        Number of parties and vector length (value combinations).
    degree
        k of the sparse graph (graph, masked-sparse); capped at n − 1 (complete graph).
    S
        Characters of the session id.
    seed
        Public seed of the random regular graph (``masked-sparse``: the consistency round's
        last message carries the tagged views of each party's 2-hop neighbourhood, whose size
        depends on the graph).
    """
    if engine.startswith("paper") or engine in ("graph", "graph-direct"):
        if engine not in ENGINE_KEYS:
            raise ConfigurationError(f"engine must be one of {ENGINE_KEYS}, got {engine!r}")
        return counted_secure_sum(engine, n, L, degree=degree, S=S, seed=seed)
    k = min(degree, n - 1)
    if engine in ("masked", "masked-sparse"):
        k = n - 1 if engine == "masked" else k
        h = k + 1
        keys = HEADER + _str(S) + _blobs(1, KEY) + 4  # s_pk, unsigned (the channels use the PKI's static keys)
        sealed = HEADER + _str(S) + _bundle(k, MASKED_PLAINTEXT + AEAD)  # + handed view keys
        masked = HEADER + _str(S) + ARRAY_1D + 4 * L
        unmask = HEADER + _str(S) + 2 * _ids(h) + 4 + h + 4 + h * SHAMIR_SHARE  # owners, which, x, shares
        directory = HEADER + _str(S) + _ids(k) + 4 + k * KEY + 4  # the neighbours' s_pk, no signatures
        relayed = sealed
        survivors = HEADER + _str(S) + _ids(h)
        handed, tags, requests, most = _consistency_bytes(engine, n, k, S, seed)
        pb = keys + sealed + masked + unmask
        cb = directory + relayed + survivors
        consistency = n * survivors + tags + requests
        return ClosedForm(9 * n, n * (pb + cb) + 2 * handed + tags + requests, 5, 5, pb + most, 4 * n,
                          n * cb + handed + requests,
                          f"per party 5 messages (1 masking key, {k} sealed share pairs with the owner's "
                          f"view keys, L masked cells × 4 B, view tags of {TAG} B, {h} Shamir shares); "
                          f"controller 4 per party, the last with the tagged views of the party's 2-hop "
                          f"neighbourhood; consistency check {3 * n} messages, {consistency} B "
                          f"(+ {2 * handed} B of view keys sealed with the shares)", 3 * n, consistency)
    if ENGINES.accepts(engine):  # a registered engine of one's own: its own cost()
        return _own_cost(engine, n, L, degree=degree, S=S)
    raise ConfigurationError(f"engine must be one of {list(ENGINES)}, got {engine!r}")


def _own_cost(engine: str, n: int, L: int, *, degree: int, S: int) -> ClosedForm:
    """The closed form of a registered engine without a formula here: its own
    :meth:`~parties.secure.engine.SecureSumEngine.cost` on a session id of ``S`` characters."""
    instance = sized_engine(engine, degree=degree, round_timeout=30.0)
    cost = instance.cost(instance.context(range(n), L, session="s" * S))
    party = cost.party_max()
    ctrl = cost.sent.get(CONTROLLER)
    return ClosedForm(cost.messages, cost.bytes, cost.rounds, party.messages, party.bytes,
                      0 if ctrl is None else ctrl.messages, 0 if ctrl is None else ctrl.bytes,
                      f"the {engine} engine's own cost(): {cost.formula}")


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


# --------------------------------------------------------------------------- inputs


def pair_cells(sizes: Sequence[int]) -> int:
    """L = Σ_{i<j} |A_i||A_j| — value combinations of all attribute pairs (main paper 4.2)."""
    s = np.asarray(sizes, dtype=np.int64)
    return int((s.sum() ** 2 - (s ** 2).sum()) // 2)


def pair_indicators(codes: np.ndarray, sizes: Sequence[int]) -> np.ndarray:
    """``(n, L)`` uint8 one-hot of every party's value pair for every attribute pair ``i < j``.

    Pairs in lexicographic order, pair code ``x_i·|A_j| + x_j`` (C order), as in
    :func:`mprr.protocols.dependence_phase`.  Column sums are the bivariate tables.
    """
    codes = np.asarray(codes, dtype=np.int64)
    n, m = codes.shape
    out = np.zeros((n, pair_cells(sizes)), dtype=np.uint8)
    offset = 0
    rows = np.arange(n)
    for i in range(m):
        for j in range(i + 1, m):
            out[rows, offset + codes[:, i] * sizes[j] + codes[:, j]] = 1
            offset += sizes[i] * sizes[j]
    return out


# --------------------------------------------------------------------------- RR phases (4.1)


def release_request_bytes(phase: str, units: Sequence[Sequence[int]], families: Sequence[str],
                          params_per_unit: Sequence[int], plan: Sequence[Sequence[int]] | None = None) -> int:
    """Encoded size of one ``ReleaseRequest`` (kind 100, :mod:`parties.wire.requests`).

    Fields: request_id (int), phase (str), plan and units (tuples of int tuples), families
    (tuple of str), params (tuple of float tuples; ``params_per_unit[j]`` floats for unit j).
    """
    plan = units if plan is None else plan

    def groups(gs: Sequence[Sequence[int]]) -> int:
        return 4 + sum(4 + INT * len(g) for g in gs)

    return (HEADER + INT + _str(len(phase.encode("utf-8"))) + groups(plan) + groups(units)
            + 4 + sum(4 + len(f) for f in families) + 4 + sum(4 + 8 * q for q in params_per_unit))


def randomized_values_bytes(k: int) -> int:
    """Encoded size of one ``RandomizedValues`` reply with k codes (request_id, int64 codes, ids = ())."""
    return HEADER + INT + ARRAY_1D + 8 * k + _ints(0)


@dataclass(frozen=True)
class PhaseCost:
    """One request/reply phase: the controller sends one request per party, each party one reply."""

    phase: str
    request_bytes: int
    reply_bytes: int

    def totals(self, n: int) -> tuple[int, int]:
        """(messages, bytes) of the phase for n parties."""
        return 2 * n, n * (self.request_bytes + self.reply_bytes)


def release_phase(phase: str, units: Sequence[Sequence[int]], families: Sequence[str]) -> PhaseCost:
    """Closed form of one phase where every unit's matrix has one parameter (p, ε)."""
    return PhaseCost(phase, release_request_bytes(phase, units, families, [1] * len(units)),
                     randomized_values_bytes(len(units)))


FAMILY_OF = {"p": "keep-or-uniform", "epsilon_per_attribute": "grr", "epsilon": "keep-or-uniform"}
CLUSTER_FAMILY = "cluster-optimal"


def secure_release_bytes(phase: str, session: str, units: Sequence[Sequence[int]], *, exact: bool) -> int:
    """Encoded size of one ``SecureRelease`` (kind 101): the 4.2 / 4.3 commitment request.

    Fields: request_id, phase, session, plan = units, exact (bool), then for 4.3 one
    ``cluster-optimal`` family and one parameter per unit; empty tuples for 4.2.  (No ε
    travels: the party computes it from the matrix.)
    """
    groups = 4 + sum(4 + INT * len(u) for u in units)
    k = len(units)
    tail = 2 * 4 if exact else (4 + k * (4 + len(CLUSTER_FAMILY))) + (4 + k * 12)
    return HEADER + INT + _str(len(phase)) + _str(len(session)) + 2 * groups + 1 + tail


ACK_BYTES = HEADER + INT + 4  # Ack(request_id, ids = ())


def secure_start_bytes(session: str, engine: str = "paper", runs: int = 1) -> int:
    """Encoded size of one ``SecureSumStart`` (kind 102): request_id, session, engine name and
    the roster as ``runs`` half-open ranges of party ids (one when nobody was excluded)."""
    return HEADER + INT + _str(len(session)) + _str(len(engine)) + 4 + runs * (4 + 2 * INT)


def rr_closed_form(protocol: str, n: int, m: int, *, matrices: str = "p",
                   clusters: Sequence[Sequence[int]] | None = None, dependence: str = "4.1",
                   sizes: Sequence[int] | None = None, engine: str = "paper", degree: int = 8,
                   session: str = "dependence/1", replays: bool | None = None) -> ClosedForm:
    """Exact fault-free traffic of RR-Independent or RR-Clusters in the actor simulator.

    Parameters
    ----------
    protocol
        ``"RR-Independent"`` (one phase ``"attributes"``) or ``"RR-Clusters"``: phase
        ``"dependence"``, then phase ``"clusters"`` with the announced clusters
        (``cluster-optimal`` matrices; with 4.1 the singletons keep their phase-1 family and
        are replayed).
    n, m
        Parties and attributes.
    matrices
        ``"p"`` or ``"epsilon"`` (keep-or-uniform, main paper 6.3.1; a budget per respondent gives one p) or ``"epsilon_per_attribute"`` (grr).
    clusters
        RR-Clusters: the clusters Algorithm 1 announced (they fix the second request).
    dependence
        RR-Clusters: ``"4.1"`` (one request/reply round trip with the m singletons) or
        ``"4.2"`` / ``"4.3"``: a ``SecureRelease`` to every party, an ``Ack`` from each, a
        ``SecureSumStart`` to each, then the secure sum of the L-cell pair vectors
        (:func:`closed_form` of ``engine``, under the agreed session id: ``session``, ``"#"``
        and 32 hex digits of the request's digest, :mod:`parties.secure.agreement`).
    sizes, engine, degree, session
        4.2 / 4.3 only: attribute sizes (for L), the engine key and its graph degree.
    replays
        RR-Clusters: whether singleton clusters replay phase 1 (default: with 4.1; a budget per
        respondent whose discovery share is not one half releases them afresh).
    """
    family = FAMILY_OF[matrices]
    singles = [(j,) for j in range(m)]
    extra = ClosedForm(0, 0, 0, 0, 0, 0, 0, "")
    if protocol == "RR-Independent":
        phases = [release_phase("attributes", singles, [family] * m)]
    elif protocol == "RR-Clusters":
        if clusters is None:
            raise ConfigurationError("rr_closed_form('RR-Clusters') needs the announced clusters")
        replay = dependence == "4.1" if replays is None else replays
        fams = [family if (len(c) == 1 and replay) else CLUSTER_FAMILY for c in clusters]
        phases = [release_phase("clusters", clusters, fams)]
        if dependence == "4.1":
            phases.insert(0, release_phase("dependence", singles, [family] * m))
        elif dependence in ("4.2", "4.3"):
            if sizes is None:
                raise ConfigurationError("rr_closed_form with dependence 4.2 / 4.3 needs the attribute sizes")
            pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
            request = secure_release_bytes("dependence", session, pairs, exact=dependence == "4.2")
            start = secure_start_bytes(session, sized_engine(engine, degree=degree, round_timeout=30.0).name)
            # the engine runs under the agreed session id: session + "#" + the request digest
            ss = closed_form(engine, n, pair_cells(sizes), degree=degree, S=len(session) + 1 + 2 * DIGEST_BYTES)
            extra = ClosedForm(
                messages=3 * n + ss.messages, bytes=n * (request + ACK_BYTES + start) + ss.bytes,
                rounds=3 + ss.rounds, party_messages=1 + ss.party_messages,
                party_bytes=ACK_BYTES + ss.party_bytes, controller_messages=2 * n + ss.controller_messages,
                controller_bytes=n * (request + start) + ss.controller_bytes,
                formula=f"dependence: n × ({request} B SecureRelease + {ACK_BYTES} B Ack + {start} B "
                        f"SecureSumStart) + {engine} secure sum of L = {pair_cells(sizes)} cells ({ss.formula})")
        else:
            raise ConfigurationError(f"dependence must be '4.1', '4.2' or '4.3', got {dependence!r}")
    else:
        raise ConfigurationError(f"protocol must be 'RR-Independent' or 'RR-Clusters', got {protocol!r}")
    return ClosedForm(
        messages=extra.messages + sum(ph.totals(n)[0] for ph in phases),
        bytes=extra.bytes + sum(ph.totals(n)[1] for ph in phases),
        rounds=extra.rounds + 2 * len(phases),
        party_messages=extra.party_messages + len(phases),
        party_bytes=extra.party_bytes + sum(ph.reply_bytes for ph in phases),
        controller_messages=extra.controller_messages + n * len(phases),
        controller_bytes=extra.controller_bytes + n * sum(ph.request_bytes for ph in phases),
        formula=" + ".join([*([extra.formula] if extra.formula else []),
                            *(f"{ph.phase}: n × ({ph.request_bytes} B request + {ph.reply_bytes} B reply)"
                              for ph in phases)]),
    )


# --------------------------------------------------------------------------- measuring


def engine_and_topology(key: str, n: int, *, degree: int, round_timeout: float, threshold: int | None = None
                        ) -> tuple[SecureSumEngine, nx.Graph[int] | None]:
    """The engine ``key`` (:func:`parties.secure.registry.sized_engine`) and the network
    topology it needs for n parties (a full mesh for direct party links, else ``None``: the star)."""
    engine = sized_engine(key, degree=degree, round_timeout=round_timeout, threshold=threshold)
    return engine, (nx.complete_graph(n) if engine_needs_mesh(key) else None)


@dataclass(frozen=True)
class Measurement:
    """One measured secure sum (``measured``) beside its closed form, and the engine's own
    ``cost()`` (messages, bytes, rounds)."""

    engine: str
    sweep: str
    n: int
    m: int
    d: int | None
    L: int
    measured: ClosedForm
    engine_cost: tuple[int, int, int]
    seconds: float
    exact_sum: bool
    closed: ClosedForm

    def matches(self) -> dict[str, bool]:
        """Which measured quantities equal the closed form."""
        return self.measured.matches(self.closed)


def measure_secure_sum(key: str, vectors: np.ndarray, expected: np.ndarray, *, sweep: str, m: int,
                       d: int | None, degree: int, round_timeout: float, index: int) -> Measurement:
    """Run one secure sum in the in-memory network and compare with the closed form."""
    n, L = vectors.shape
    engine, topology = engine_and_topology(key, n, degree=degree, round_timeout=round_timeout)
    net = InMemoryNetwork(n, topology=topology)
    start = time.perf_counter()
    result = asyncio.run(run_secure_sum(engine, net, vectors, session=f"{index:0{SESSION_CHARS}x}",
                                        timeout=max(60.0, 10 * round_timeout)))
    return Measurement(key, sweep, n, m, d, L, ClosedForm.counted(result.statistics),
                       (result.cost.messages, result.cost.bytes, result.cost.rounds), time.perf_counter() - start,
                       bool(np.array_equal(result.total, expected)), closed_form(key, n, L, degree=degree))


@dataclass(frozen=True)
class RRMeasurement:
    """One actor-simulator run of an RR protocol beside its closed form."""

    protocol: str
    sweep: str
    n: int
    m: int
    d: int | None
    clusters: tuple[tuple[int, ...], ...]
    stats: TrafficStatistics
    closed: ClosedForm
    seconds: float
    dependence: str = "4.1"
    engine: str = ""

    def measured(self) -> dict[str, int]:
        """Messages, bytes and rounds in total, of the busiest party and of the controller."""
        counted = ClosedForm.counted(self.stats)
        return {f: getattr(counted, f) for g in RR_MATCHED for f in MATCHED[g]}

    def matches(self) -> bool:
        """Whether :meth:`measured` equals the closed form (the consistency messages of a masked
        secure sum are in the totals; :func:`rr_closed_form` does not single them out)."""
        return all(ClosedForm.counted(self.stats).matches(self.closed, RR_MATCHED).values())


RR_MATCHED = ("messages", "bytes", "rounds", "party", "controller")


def simulate_options(plan: Plan, engine: str, n: int, degree: int, round_timeout: float) -> dict[str, Any]:
    """Keyword arguments of :func:`parties.simulate.simulate` for a program with ``plan``
    (:mod:`mprr.protocols.plan`): nothing when it has no secure sum; otherwise the configured
    secure-sum ``engine`` (:func:`engine_and_topology`) and, when it needs direct party links
    (paper, graph-direct), the full-mesh topology."""
    if not plan.needs.engine:
        return {}
    instance, topology = engine_and_topology(engine, n, degree=degree, round_timeout=round_timeout)
    return {"secure_sum": instance, **({"topology": topology} if topology is not None else {})}


RR_PARAMETERS: Mapping[str, tuple[str, ...]] = {
    "RR-Independent": ("p",),
    "RR-Clusters": ("p", "Tv", "Td", "dependence"),
}
"""The parameters :func:`measure_rr` gives each protocol, from the scenario's (and ``dependence``)."""


def measure_rr(protocol: str, sizes: Sequence[int], n: int, *, sweep: str, d: int | None,
               params: Mapping[str, Any], seed: int, dependence: str = "4.1",
               engine: str = "", runtime: Runtime | None = None) -> RRMeasurement:
    """Run ``protocol`` in the actor simulator on planted-cluster data and measure its traffic.

    RR-Clusters runs with ``dependence`` (its plan's secure sum under 4.2 / 4.3 through the
    secure-sum ``engine``); the parties live on ``runtime`` (``None``: memory).
    """
    from parties.simulate import simulate

    if protocol not in RR_PARAMETERS:
        raise ConfigurationError(f"protocol must be one of {list(RR_PARAMETERS)}, got {protocol!r}")
    sizes = tuple(sizes)
    data = planted_clusters(n, rng=np.random.default_rng(seed), sizes=sizes,
                            clusters=((0, 1),) if len(sizes) >= 2 else ()).dataset
    given = {**params, "dependence": dependence}
    kwargs: dict[str, Any] = {k: given[k] for k in RR_PARAMETERS[protocol]}
    plan = lookup(protocol).plan(data.schema, kwargs)
    kwargs.update(simulate_options(plan, engine, n, params["degree"], float(params["round_timeout"])))
    sim = simulate(data, protocol, seed=seed, timeout=float(params["round_timeout"]), runtime=runtime, **kwargs)
    if sim.result.clusters is None:
        raise ConfigurationError(f"protocol must report its clusters (RR-Independent or RR-Clusters), got {protocol!r}")
    clusters = tuple(tuple(c) for c in sim.result.clusters)
    session = sim.result.details.get("secure_sum", {}).get("session", "dependence/1")
    closed = rr_closed_form(protocol, n, len(sizes), matrices="p",
                            clusters=clusters if protocol == "RR-Clusters" else None,
                            dependence=dependence, sizes=sizes, engine=engine or "paper",
                            degree=params["degree"], session=session)
    return RRMeasurement(protocol, sweep, n, len(sizes), d, clusters, sim.traffic, closed, sim.wall_time,
                         dependence, engine)
