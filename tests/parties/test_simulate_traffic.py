"""parties.simulate's traffic: the measured messages and bytes are the closed forms of
``docs/cost_model.md`` (each message's codec size), per party, per kind and per phase.

The oracle reports' closed forms are in ``test_simulate_reports.py``."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.protocols.steps import MatrixSpec
from mprr.synthetic import planted_clusters
from parties.simulate import simulate
from parties.transport import CONTROLLER
from parties.wire.codec import encode
from parties.wire.messages import RandomizedValues
from parties.wire.requests import ReleaseRequest
from tests.parties.simulate_data import SEED, data, small  # noqa: F401  (fixtures)


def reply_size(k: int) -> int:
    """Encoded RandomizedValues with k codes: header 5 + id 8 + array (1+1+8+8k) + ids 4."""
    return 27 + 8 * k


def test_reply_size_formula_matches_the_codec() -> None:
    for k in (1, 3, 8):
        assert len(encode(RandomizedValues(1, np.zeros(k, dtype=np.int64)))) == reply_size(k)


@pytest.mark.parametrize("n", [50, 120])
def test_rr_independent_traffic_matches_the_closed_form(n: int) -> None:
    # Main paper 3.1 / 4.1: controller O(nm), each party O(m): one request in, m codes out.
    ds = planted_clusters(n, rng=np.random.default_rng(n)).dataset
    m = ds.m
    sim = simulate(ds, "RR-Independent", seed=1, timeout=5.0, p=0.6)
    request = ReleaseRequest.build(1, "attributes", [(j,) for j in range(m)], [MatrixSpec.keep_or_uniform(0.6)] * m)
    req, rep = len(encode(request)), reply_size(m)
    t = sim.traffic
    assert (t.messages, t.bytes, t.delivered, t.rounds) == (2 * n, n * (req + rep), 2 * n, 2)
    assert t.sent_by(CONTROLLER) == (n, n * req)
    assert t.received_by(CONTROLLER) == (n, n * rep)
    for i in range(n):
        assert t.sent_by(i) == (1, rep) and t.received_by(i) == (1, req)
    assert dict(t.by_kind) == {"ReleaseRequest": (n, n * req), "RandomizedValues": (n, n * rep)}
    assert sim.view.messages == n and sim.view.bytes == n * rep


def test_rr_clusters_traffic_matches_the_closed_form(data) -> None:
    # Two rounds trips: m codes (4.1) then one code per cluster (l), i.e. O(m) per party.
    n, m = data.n, data.m
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1)
    clusters = sim.result.clusters
    l = len(clusters)
    req1 = ReleaseRequest.build(1, "dependence", [(j,) for j in range(m)], [MatrixSpec.keep_or_uniform(0.7)] * m)
    eps = sim.result.parameters["attribute_epsilons"]
    specs2 = [MatrixSpec.keep_or_uniform(0.7) if len(c) == 1 else MatrixSpec.cluster_optimal(sum(eps[a] for a in c))
              for c in clusters]
    req2 = ReleaseRequest.build(2, "clusters", clusters, specs2)
    s1, s2 = len(encode(req1)), len(encode(req2))
    r1, r2 = reply_size(m), reply_size(l)
    t = sim.traffic
    assert t.sent_by(CONTROLLER) == (2 * n, n * (s1 + s2))
    assert t.received_by(CONTROLLER) == (2 * n, n * (r1 + r2))
    assert all(t.sent_by(i) == (2, r1 + r2) and t.received_by(i) == (2, s1 + s2) for i in range(n))
    assert (t.messages, t.bytes, t.rounds) == (4 * n, n * (s1 + s2 + r1 + r2), 4)
    assert {p: c.messages for p, c in t.by_phase.items()} == {"dependence": 2 * n, "clusters": 2 * n}



def test_secure_dependence_traffic_is_commit_start_plus_the_engine_closed_form(small) -> None:
    # dependence phase: n SecureRelease + n Ack + n SecureSumStart, then the paper engine's
    # own closed form (main paper 4.2: per party (n-1) shares + n broadcasts of L cells)
    from parties.wire.messages import Ack
    from parties.wire.requests import SecureRelease, SecureSumStart
    from parties.secure.agreement import agreed_session, request_digest
    from parties.secure.paper import PaperEngine

    n, m = small.n, small.m
    sim = simulate(small, "RR-Clusters", seed=SEED, timeout=5.0, p=0.7, Tv=60, Td=0.1, dependence="4.2")
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    cells = sum(small.sizes[i] * small.sizes[j] for i, j in pairs)
    commit = SecureRelease(1, "dependence", "dependence/1", tuple(pairs), tuple(pairs), True)
    start = SecureSumStart(1, "dependence/1", "paper", ((0, n),))
    expected = n * (len(encode(commit)) + len(encode(Ack(1))) + len(encode(start)))
    assert sim.traffic.by_phase["dependence"][:2] == (3 * n, expected)
    # the engine runs under the agreed session id: a digest of the commitment and the start
    session = agreed_session(request_digest(commit), start)
    cost = PaperEngine(round_timeout=5.0).cost(PaperEngine().context(range(n), cells, session=session))
    engine = [c for p, c in sim.traffic.by_phase.items() if p.startswith("paper/")]
    assert (sum(c.messages for c in engine), sum(c.bytes for c in engine)) == (cost.messages, cost.bytes)
