"""A malicious controller against the secure-sum phases (main paper 4.2 / 4.3): every attack fails.

Each test runs the attack with real party actors and asserts what the controller got: nothing
beyond the aggregate of an allowed roster, and a ledger that charges the matrix's own ε.
Every run is on the virtual clock (``tests/virtual_clock.py``): the round timeouts pass in
virtual time, so no outcome depends on the machine's speed or load.
"""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest

from mprr.data import Attribute, Dataset, Schema
from mprr.errors import ConfigurationError, MessageError, PartyDropped, SecureSumAborted
from mprr.privacy import Release
from mprr.streams import PartyStreams
from mprr.synthetic import planted_clusters
from parties.controller import Controller
from parties.wire.messages import Ack, Refusal
from parties.transport import CONTROLLER
from parties.runtime import HostingPlan, MemoryHosting
from parties.simulate import PARTY_KINDS
from mprr.privacy import DEFAULT_MIN_ROSTER, RefusalReason
from parties.party import Party
from parties.wire.requests import SecureRelease, SecureSumStart, roster_runs
from parties.public_state import ReleaseBook
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine
from parties.simulate import SimulationResult, simulate_async
from tests.virtual_clock import run_virtual

N = 8
SEED = 3


def simulate(data: Dataset, protocol: str, **options: object) -> SimulationResult:
    """:func:`parties.simulate.simulate` on the virtual clock."""
    return run_virtual(simulate_async(data, protocol, **options))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def data():
    return planted_clusters(N, rng=np.random.default_rng(8), strength=0.8).dataset


# ---------------------------------------------------------------------- differencing (item 1)
@pytest.mark.parametrize("engine", ["paper", "graph", "masked"])
def test_differencing_two_exact_sums_is_refused_by_every_party(data, engine) -> None:
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=3.0, p=0.7, Tv=60, Td=0.1, dependence="4.2",
                   engine=engine, attacks=["difference-secure-sum"])
    (report,) = sim.attacks
    # before: full.counts - part.counts was the victim's exact pairs; now nobody takes part
    assert report.difference is None and report.answered == 0
    assert report.refused == report.asked == N - 1 and report.reasons == {RefusalReason.SESSION_REFUSED: N - 1}
    units = sim.result.releases[0].units
    for ledger in sim.ledgers:  # the exact pairs entered one session only
        assert sum(1 for r in ledger if r.exact) == len(units)


@pytest.mark.parametrize("engine", ["paper", "graph", "masked"])
def test_differencing_two_randomized_sums_needs_fresh_draws_charged_again(data, engine) -> None:
    sim = simulate(data, "RR-Clusters", seed=SEED, timeout=3.0, p=0.7, Tv=60, Td=0.1, dependence="4.3",
                   engine=engine, attacks=["difference-secure-sum"])
    (report,) = sim.attacks
    units = sim.result.releases[0].units
    v = report.victim
    assert report.answered == N - 1 and v is not None and report.difference is not None
    victim = sim.parties[v]
    sizes = data.sizes
    # v's first-session input: its randomized pair codes, one-hot (the ledger's first entries)
    first = [np.eye(sizes[i] * sizes[j])[code] for (i, j), code in zip(units, victim.released_values[:len(units)])]
    assert not all(np.array_equal(d.ravel(), f) for d, f in zip(report.difference, first))
    for p, ledger in enumerate(sim.ledgers):  # every other party drew again and paid again
        pairs = [r for r in ledger if r.phase == "dependence"]
        assert len(pairs) == (1 if p == v else 2) * len(units)
        if p != v:
            assert sim.parties[p].draws == sim.parties[v].draws + len(units)
            assert sim.ledgers[p].by_phase("sequential")["dependence"] == pytest.approx(
                2 * sim.ledgers[v].by_phase("sequential")["dependence"])


# ---------------------------------------------------------------------- ε claims (item 2)
def test_release_rejects_shares_that_are_negative_or_do_not_sum_to_epsilon() -> None:
    with pytest.raises(ConfigurationError, match=r"attribute_epsilons must add up to epsilon = 2.0"):
        Release(("A", "B"), 2.0, attribute_epsilons=(0.0, 0.0))
    with pytest.raises(ConfigurationError, match=r"attribute_epsilons entry must be a number >= 0"):
        Release(("A", "B"), 2.0, attribute_epsilons=(3.0, -1.0))
    with pytest.raises(ConfigurationError, match=r"attribute_epsilons must add up to epsilon = inf"):
        Release(("A", "B"), math.inf, attribute_epsilons=(1.0, 1.0))
    assert Release(("A", "B"), 2.0, attribute_epsilons=(0.5, 1.5)).shares == (0.5, 1.5)


def test_a_secure_release_claims_no_epsilon_and_the_party_charges_the_matrix() -> None:
    """Before: five releases of ε 16-20 with shares (0, 0) under a budget of 1 were charged 0."""
    assert "shares" not in SecureRelease.__dataclass_fields__
    schema = Schema(tuple(Attribute(f"a{j}", ("x", "y", "z"), "nominal") for j in range(3)))
    party = Party(0, (0, 1, 2), schema, seed=PartyStreams(1, 1).seed_sequence(0), budget=1.0,
                  policy="unlinkable-pairs", engine=GraphEngine())
    from mprr.protocols.steps import MatrixSpec

    for k, eps in enumerate((16.0, 17.0, 18.0, 19.0, 20.0)):
        spec = MatrixSpec.cluster_optimal(eps)
        reply = party.handle(SecureRelease(k, "dependence", f"s{k}", ((0, 1),), ((0, 1),), False,
                                           (spec.family,), (spec.params,)))
        assert isinstance(reply, Refusal) and reply.reason.startswith("budget-exceeded")
        assert reply.requested == pytest.approx(spec.build((3, 3)).epsilon)  # eq. (4): ε/2 on a0 + ε/2 on a1
    assert len(party.ledger) == 0 and party.accountant.spent() == 0.0


# ---------------------------------------------------------------------- roster and retries (item 1)
def _actors(n: int, engine, *, min_roster: int = DEFAULT_MIN_ROSTER):
    """The parties of a memory-runtime shard (records (i % 2, i // 2 % 2), seed 7) and a controller."""
    schema = Schema(tuple(Attribute(f"a{j}", ("x", "y"), "nominal") for j in range(2)))
    records = np.array([(i % 2, (i // 2) % 2) for i in range(n)])
    plan = HostingPlan(n=n, schema=schema, records=records, seed=7, budgets=(math.inf,) * n,
                       policy="sequential", accept=tuple(k.KIND for k in PARTY_KINDS),
                       engine=engine, min_roster=min_roster, mesh=engine.name == "paper",
                       timeout=0.5)
    hosting = MemoryHosting(plan)
    ctl = Controller(hosting.router.endpoint(CONTROLLER), schema, range(n), timeout=0.5)
    return hosting.router, hosting.links[0].shard.parties, ctl


async def _serve(net, parties, body):
    """Serve the parties of ``net``'s shard while ``body`` runs."""
    shard = net.owner(0).shard
    async with asyncio.TaskGroup() as tg:
        tg.create_task(shard.serve())
        await asyncio.sleep(0)
        try:
            return await body()
        finally:
            shard.stop()


@pytest.mark.parametrize("make", [lambda: PaperEngine(round_timeout=0.3), lambda: GraphEngine(round_timeout=0.3),
                                  lambda: MaskedEngine(round_timeout=0.3)])
async def test_a_second_start_of_a_session_over_another_roster_is_refused(make) -> None:
    engine = make()
    net, parties, ctl = _actors(5, engine)

    async def body():
        tally = await ctl.secure_release("dependence", [(0, 1)], engine=engine)
        assert tally.contributors == (0, 1, 2, 3, 4)
        # the attack: start the same session again without party 0, and difference the sums
        smaller = (1, 2, 3, 4)
        ctx = engine.context(smaller, 4, network=net, session=tally.session)
        await ctl.endpoint.broadcast(smaller, SecureSumStart(tally.request_id, tally.session, engine.name,
                                                             roster_runs(smaller)), phase="dependence")
        with pytest.raises((PartyDropped, SecureSumAborted)):  # nobody takes part: no second sum
            await engine.controller(ctl.endpoint, ctx)

    await _serve(net, parties, body)
    for p in parties[1:]:
        assert any("refused: its input already entered session" in e for e in p.errors)


async def test_a_roster_below_the_party_minimum_is_refused() -> None:
    engine = GraphEngine(round_timeout=0.3)
    net, parties, ctl = _actors(4, engine, min_roster=5)

    async def body():
        with pytest.raises(PartyDropped):
            await ctl.secure_release("dependence", [(0, 1)], engine=engine)

    await _serve(net, parties, body)
    assert all(any("below the party's minimum min_roster = 5" in e for e in p.errors) for p in parties)


async def test_a_start_for_another_engine_or_without_the_party_is_refused() -> None:
    engine = GraphEngine(round_timeout=0.3)
    net, parties, ctl = _actors(4, engine)
    ctl_ep = net.endpoint(CONTROLLER)

    async def body():
        for p in range(4):
            await ctl_ep.send(p, SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), True), phase="dependence")
        got = await ctl_ep.gather(range(4), kinds=(Ack,), phase="dependence", timeout=1.0)
        assert len(got) == 4
        await ctl_ep.send(0, SecureSumStart(1, "s", "masked", ((0, 4),)), phase="dependence")
        await ctl_ep.send(1, SecureSumStart(1, "s", "graph", ((2, 5),)), phase="dependence")
        await asyncio.sleep(0.05)

    await _serve(net, parties, body)
    assert any("engine 'masked' asked, but the party agreed to 'graph'" in e for e in parties[0].errors)
    assert any("party 1 is not in the roster" in e for e in parties[1].errors)


def test_min_roster_is_validated() -> None:
    schema = Schema((Attribute("a", ("x", "y"), "nominal"),))
    with pytest.raises(ConfigurationError, match="min_roster must be an integer >= 2, got 1"):
        Party(0, (0,), schema, seed=PartyStreams(1, 1).seed_sequence(0), min_roster=1)
    with pytest.raises(MessageError, match="roster must be sorted"):
        SecureSumStart(1, "s", "graph", ((3, 2),))


# ---------------------------------------------------------------------- masked engine, active adversary (item 3)
class _Tamper:
    """The controller's endpoint with a hook that rewrites what the controller sends."""

    def __init__(self, ep, rewrite) -> None:  # noqa: ANN001
        self._ep, self._rewrite = ep, rewrite

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._ep, name)

    async def send(self, dst: int, msg, **kw) -> None:  # noqa: ANN001
        await self._ep.send(dst, self._rewrite(dst, msg), **kw)

    async def send_each(self, dsts, msgs, **kw) -> None:  # noqa: ANN001
        dsts = list(dsts)
        await self._ep.send_each(dsts, [self._rewrite(d, m) for d, m in zip(dsts, msgs)], **kw)


class _Malicious(MaskedEngine):
    """A masked-engine controller whose outgoing messages pass through ``rewrite``."""

    def __init__(self, rewrite, **kw) -> None:  # noqa: ANN001
        super().__init__(**kw)
        self.rewrite = rewrite

    async def controller(self, ep, ctx):  # noqa: ANN001, ANN201
        return await super().controller(_Tamper(ep, self.rewrite), ctx)


def _shares_of(net, owner: int) -> dict[int, int]:
    """How many Shamir shares of each secret of ``owner`` reached the controller."""
    from parties.wire.codec import decode
    from parties.secure.messages import UnmaskShares

    got = {0: 0, 1: 0}
    for frame in net.controller_view:
        msg = decode(frame.payload)
        if isinstance(msg, UnmaskShares):
            for o, which in zip(msg.owners, msg.which):
                if o == owner:
                    got[which] += 1
    return got


def _tell_dropped(dst: int, msg, split: set[int], v: int, told: dict[int, tuple[int, ...]]):  # noqa: ANN001, ANN202
    """The controller's survivor set for ``dst``: without ``v`` when ``dst`` is in ``split``;
    what each holder was told is kept in ``told``."""
    from parties.secure.messages import SurvivorSet

    view = tuple(p for p in msg.survivors.tolist() if not (dst in split and p == v))
    told[dst] = view
    return SurvivorSet(msg.session, np.array(view, dtype=np.uint32))


def _with_views(msg, views: list[tuple[int, ...]], index: list[int]):  # noqa: ANN001, ANN202
    """``msg`` (an UnmaskRequest) showing ``views``, signer i's statement being ``views[index[i]]``
    (tags unchanged)."""
    from parties.secure.messages import UnmaskRequest

    cells = np.array([p for view in views for p in view], dtype=np.uint32)
    ends = np.cumsum([len(view) for view in views]).astype(np.uint32)
    return UnmaskRequest(msg.session, cells, ends, msg.signers, np.array(index, dtype=np.uint32), msg.tags)


def test_the_threshold_is_the_party_policy_never_below_a_majority() -> None:
    """Before: any t >= 1 was accepted, e.g. t = 2 of 10."""
    with pytest.raises(ConfigurationError, match=r"strict majority .* \(t > 10 / 2, i.e. t >= 6\), got 2"):
        MaskedEngine(threshold=2).context(range(10), 4)
    # a party builds its context from its own engine: the controller's choice does not enter it
    book = ReleaseBook(Schema((Attribute("a", ("x", "y"), "nominal"),)))
    ctx = book.secure_context(MaskedEngine(), SecureSumStart(1, "s", "masked", ((0, 10),)), 4, digest=bytes(32))
    assert ctx.threshold == 6


@pytest.mark.parametrize("dropped_told", [5, 4])
def test_inconsistent_survivor_sets_never_reveal_both_secrets_of_a_party(dropped_told: int) -> None:
    """Before (t = 2 of 10, no consistency round): holders told "v survived" revealed b_v, the
    others told "v dropped" revealed s_sk_v: both secrets of v, hence v's input."""
    from parties.secure.run import run_secure_sum
    from parties.secure.messages import SurvivorSet, UnmaskRequest
    from tests.parties.secure.helpers import RecordingNetwork

    n, v = 10, 0
    split = set(range(n - dropped_told, n))  # these holders are told "v dropped"
    told: dict[int, tuple[int, ...]] = {}

    def rewrite(dst: int, msg):  # noqa: ANN001, ANN202
        if isinstance(msg, SurvivorSet):
            return _tell_dropped(dst, msg, split, v, told)
        if isinstance(msg, UnmaskRequest):  # forward what each holder really stated
            signers = msg.signers.tolist()
            views = sorted({told[w] for w in signers})
            return _with_views(msg, views, [views.index(told[w]) for w in signers])
        return msg

    x = np.random.default_rng(0).integers(0, 2, size=(n, 6))
    net = RecordingNetwork(n)
    outcome = None
    try:
        outcome = run_virtual(run_secure_sum(_Malicious(rewrite, round_timeout=0.3), net, x, timeout=20))
    except SecureSumAborted:
        pass
    got = _shares_of(net, v)
    t = 6
    assert got[1] == 0  # never a share of v's mask key: v is not "dropped" for a majority
    if dropped_told == 5:  # 5 of 10 is no strict majority either way: nobody reveals anything
        assert outcome is None and got == {0: 0, 1: 0}
    else:  # 6 holders agree v survived: they reveal b_v; the others reveal nothing
        assert got[0] == t
        assert outcome is not None and outcome.total.tolist() == x.sum(axis=0).tolist()  # the full roster's sum



def test_survivor_views_forged_by_the_controller_fail_their_macs() -> None:
    """Without authenticated views: the controller tells half the holders "v dropped" and shows
    them the other half's views rewritten to say the same; they count a majority and reveal
    their shares of s_sk_v.  Each view is MAC'd by its author for its reader, so the rewritten
    ones fail and nobody reveals anything about v."""
    from parties.secure.run import run_secure_sum
    from parties.secure.messages import SurvivorSet, UnmaskRequest
    from tests.parties.secure.helpers import RecordingNetwork

    n, v = 10, 0
    split = set(range(5, n))  # told "v dropped"
    told: dict[int, tuple[int, ...]] = {}

    def rewrite(dst: int, msg):  # noqa: ANN001, ANN202
        if isinstance(msg, SurvivorSet):
            return _tell_dropped(dst, msg, split, v, told)
        if isinstance(msg, UnmaskRequest) and dst in split:  # everybody "agrees" v dropped
            forged = tuple(p for p in range(n) if p != v)
            return _with_views(msg, [forged], [0] * len(msg.signers))
        return msg

    x = np.random.default_rng(1).integers(0, 2, size=(n, 4))
    net = RecordingNetwork(n)
    with pytest.raises(SecureSumAborted):
        run_virtual(run_secure_sum(_Malicious(rewrite, round_timeout=0.3), net, x, timeout=20))
    assert _shares_of(net, v) == {0: 0, 1: 0}


def test_key_substitution_is_detected_against_the_pki() -> None:
    """Before (no PKI): the controller could relay its own keys as party 1's and read the
    shares party 0 sealed for it (a man in the middle on the pairwise channel)."""
    from parties.secure.crypto import KeyPair
    from parties.secure.run import run_secure_sum
    from parties.secure.messages import KeyDirectory
    from tests.parties.secure.helpers import RecordingNetwork

    mine = KeyPair.generate().public

    def rewrite(dst: int, msg):  # noqa: ANN001, ANN202
        if isinstance(msg, KeyDirectory) and dst == 0:
            keys = b"".join(mine if p == 1 else msg.key(k) for k, p in enumerate(msg.parties.tolist()))
            return KeyDirectory(msg.session, msg.parties, keys, msg.signatures)
        return msg

    n = 5
    net = RecordingNetwork(n)
    x = np.ones((n, 3), dtype=np.int64)
    result = run_virtual(run_secure_sum(_Malicious(rewrite, round_timeout=0.3), net, x, timeout=20))
    assert isinstance(result.failures[0], MessageError)
    assert "key substitution detected" in str(result.failures[0])
    # party 0 sealed its shares under keys agreed with the registered static keys (nothing the
    # controller relays) and stops before masking with the substituted key: it is left out
    assert result.dropped == (0,)
    assert result.total.tolist() == x[1:].sum(axis=0).tolist()


def test_key_substitution_on_relayed_graph_shares_is_detected() -> None:
    """Before: the graph engine's relayed keys were unsigned: a substituted key let the
    controller open the share party 0 sealed for party 1."""
    from parties.wire.codec import decode
    from parties.secure.crypto import KeyPair
    from parties.secure.run import run_secure_sum
    from parties.secure.messages import KeyDirectory, SealedShares
    from tests.parties.secure.helpers import RecordingNetwork

    mine = KeyPair.generate().public

    class Substituting(GraphEngine):
        async def controller(self, ep, ctx):  # noqa: ANN001, ANN201
            def rewrite(dst: int, msg):  # noqa: ANN001, ANN202
                if isinstance(msg, KeyDirectory) and dst == 0:
                    return KeyDirectory(msg.session, msg.parties,
                                        b"".join(mine if p == 1 else msg.key(k)
                                                 for k, p in enumerate(msg.parties.tolist())),
                                        msg.signatures)
                return msg
            return await super().controller(_Tamper(ep, rewrite), ctx)

    n = 5
    net = RecordingNetwork(n)
    with pytest.raises(PartyDropped, match="sealed shares missing from 1 party"):
        run_virtual(run_secure_sum(Substituting(degree=2, relay=True, round_timeout=0.3), net,
                                    np.ones((n, 3), dtype=np.int64), timeout=20))
    sent_by_0 = [decode(f.payload) for f in net.controller_view if f.src == 0]
    assert not any(isinstance(m, SealedShares) for m in sent_by_0)  # party 0 sealed nothing


async def test_a_session_that_aborted_is_never_run_again() -> None:
    """No retry: a re-run could mix buffered messages of the aborted run (paper, graph) or be
    made to sum over another survivor set (masked)."""
    engine = PaperEngine(round_timeout=0.2)
    net, parties, ctl = _actors(4, engine)
    ctl_ep = net.endpoint(CONTROLLER)
    start = SecureSumStart(1, "s", "paper", ((0, 4),))

    async def body() -> None:
        for p in range(4):
            await ctl_ep.send(p, SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), True), phase="dependence")
        assert len(await ctl_ep.gather(range(4), kinds=(Ack,), phase="dependence", timeout=1.0)) == 4
        for p in range(3):  # party 3 never hears of it: the others time out waiting for its shares
            await ctl_ep.send(p, start, phase="dependence")
        await asyncio.sleep(0.8)
        for p in range(4):  # the same session and roster again
            await ctl_ep.send(p, start, phase="dependence")
        await asyncio.sleep(0.6)

    await _serve(net, parties, body)
    for p in parties[:3]:
        assert any("refused: its input already entered session 's' (aborted" in e for e in p.errors), p.errors


def test_survivor_views_forged_on_a_sparse_graph_fail_their_two_hop_macs() -> None:
    """The sparse-graph case of the test above: two holders of v that are not neighbours MAC
    their statements under a key v sealed for them (views.combined_key), not under an X25519
    agreement.  The controller tells two of v's four neighbours "v dropped" and shows them
    every other holder's statement rewritten to say the same (tags unchanged): were the
    two-hop statements unchecked, they would count five of five and reveal their shares of
    s_sk_v.  Only the two genuine "dropped" statements verify (2 < 3), so nobody reveals a
    share of s_sk_v."""
    from parties.secure.run import run_secure_sum
    from parties.secure.messages import SurvivorSet, UnmaskRequest
    from tests.parties.secure.helpers import RecordingNetwork

    n, v = 12, 0
    make = lambda rewrite: _Malicious(rewrite, topology="regular", degree=4, round_timeout=0.3)  # noqa: E731
    nbrs = make(None).context(range(n), 4).neighbours
    holders = sorted(nbrs[v])
    assert len(holders) == 4 and any(b not in nbrs[a] for a in holders for b in holders if a != b)  # 2-hop pairs
    split = set(holders[:2])  # told "v dropped"
    told: dict[int, tuple[int, ...]] = {}

    def rewrite(dst: int, msg):  # noqa: ANN001, ANN202
        if isinstance(msg, SurvivorSet):
            return _tell_dropped(dst, msg, split, v, told)
        if isinstance(msg, UnmaskRequest) and dst in split:  # every statement "says" v dropped
            signers = msg.signers.tolist()
            forged = [tuple(p for p in told[w] if p != v) for w in signers]
            return _with_views(msg, forged, list(range(len(signers))))
        return msg

    x = np.random.default_rng(2).integers(0, 2, size=(n, 4))
    net = RecordingNetwork(n, topology=None)
    result = run_virtual(run_secure_sum(make(rewrite), net, x, timeout=20))
    assert _shares_of(net, v)[1] == 0  # never a share of v's mask key
    assert set(result.failures) == split  # the two told "v dropped" refused; v's other holders unmask it
    for h in split:
        with pytest.raises(SecureSumAborted, match=rf"party {h}: only 2 of the 5 Shamir holders of party 0 stated"):
            raise result.failures[h]
    assert result.total.tolist() == x.sum(axis=0).tolist()
