"""Fuzz: thousands of malformed frames beside honest traffic, for every protocol and engine.

A :class:`GarbageNetwork` delivers, beside each honest frame, a few malformed frames from the
same sender to the same receiver (random bytes, truncated, bit-flipped or padded copies of the
honest bytes; each one checked to be rejected by the receiver's decoder, so none is a forged
valid message).  Two threat cases:

- garbage *to the parties* (from the controller and from peers): the parties reject it and
  carry on, so the run ends with exactly the fault-free result, under ``on_dropout="fail"``;
- garbage *from two faulty parties*: under ``"exclude"`` they are excluded and the run ends
  with the documented degraded result (every other party's release unchanged); under
  ``"fail"`` the run ends with a MessageError naming a faulty party.

Every run is on the virtual clock (``tests/virtual_clock.py``) and bounded by pytest-timeout:
none may hang.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from mprr.data import Dataset
from mprr.errors import MessageError
from mprr.synthetic import planted_clusters
from parties import runtime as runtime_module
from parties.secure.messages import SurvivorSet, id_vector
from parties.wire.codec import decode, encode
from parties.router import Router
from parties.transport import CONTROLLER, Frame
from parties.simulate import SimulationResult, simulate_async
from tests.parties.equivalence import same_estimate
from tests.virtual_clock import run_virtual

pytestmark = [pytest.mark.timeout(120), pytest.mark.slow]  # 28 tests, about 15-25 s in all

N = 10
SEED = 3
LIARS = frozenset({1, 4})
PER_FRAME = 12  # malformed frames delivered beside each honest frame

PROTOCOLS: list[tuple[str, dict[str, Any]]] = [
    ("RR-Independent", dict(p=0.6)),
    ("RR-Joint", dict(p=0.8)),
    ("RR-Clusters", dict(p=0.7, Tv=60, Td=0.1)),
    ("RR-Independent+Adjustment", dict(p=0.6)),
    ("RR-Clusters+Adjustment", dict(p=0.7, Tv=60, Td=0.1, tol=1e-8)),
    ("RR-Ind-Joint", dict(p=0.6, groups=[(0, 1), (2,)])),
    ("lambda-randomization", dict(lambdas=[0.5, 0.5, 0.5])),
    *[("RR-Clusters", dict(p=0.7, Tv=60, Td=0.1, dependence=d, secure_sum=e))
      for d in ("4.2", "4.3") for e in ("paper", "graph", "masked")],
]
IDS = [f"{name}-{params.get('dependence', '')}{params.get('secure_sum', '')}" for name, params in PROTOCOLS]


class GarbageNetwork(Router):
    """A router that delivers malformed frames beside honest ones.

    ``from_senders``: only frames sent by these actors get malformed companions (None = all);
    ``to_parties``: only frames addressed to a party do (the controller receives none).
    """

    def __init__(self, *args: Any, from_senders: frozenset[int] | None = None,
                 to_parties: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.from_senders = from_senders
        self.to_parties = to_parties
        self.garbage_rng = np.random.default_rng(2026)
        self.injected = 0

    def _malformed(self, frame: Frame) -> bytes | None:
        """A payload the receiver's decoder rejects (None if 8 tries all decoded)."""
        ep = self._endpoints.get(frame.dst)
        accept = None if ep is None else ep.accept
        rng, honest = self.garbage_rng, frame.payload
        for _ in range(8):
            how = int(rng.integers(4))
            if how == 0:
                payload = rng.bytes(int(rng.integers(0, 48)))
            elif how == 1:
                payload = honest[: int(rng.integers(0, max(1, len(honest))))]
            elif how == 2:
                buf = bytearray(honest)
                for _ in range(int(rng.integers(1, 4))):
                    if buf:
                        buf[int(rng.integers(len(buf)))] ^= 1 << int(rng.integers(8))
                payload = bytes(buf)
            else:
                payload = honest + rng.bytes(int(rng.integers(1, 16)))
            try:
                decode(payload, expected=accept)
            except MessageError:
                return payload
        return None

    def _route(self, frame: Frame) -> None:
        eligible = (self.from_senders is None or frame.src in self.from_senders) and (
            not self.to_parties or frame.dst != CONTROLLER)
        if eligible and frame.src not in self._crashed:
            before = int(self.garbage_rng.integers(PER_FRAME + 1))
            for k in range(PER_FRAME):
                if k == before:
                    super()._route(frame)
                payload = self._malformed(frame)
                if payload is not None:
                    self.injected += 1
                    self._deliver(Frame(frame.src, frame.dst, frame.phase, frame.kind, payload))
            if before == PER_FRAME:
                super()._route(frame)
            return
        super()._route(frame)


@pytest.fixture(scope="module")
def data() -> Dataset:
    return planted_clusters(N, rng=np.random.default_rng(8), strength=0.8).dataset.select([0, 1, 2])


def run(data: Dataset, name: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch | None = None,
        **network: Any) -> tuple[SimulationResult, GarbageNetwork | None]:
    """One simulation on the virtual clock; with ``network`` options through a GarbageNetwork."""
    made: list[GarbageNetwork] = []
    if monkeypatch is not None:
        def factory(*args: Any, **kwargs: Any) -> GarbageNetwork:
            made.append(GarbageNetwork(*args, **network, **kwargs))
            return made[-1]
        monkeypatch.setattr(runtime_module, "Router", factory)
    options = {k: v for k, v in params.items()}
    on_dropout = options.pop("on_dropout", "fail")
    sim = run_virtual(simulate_async(data, name, seed=SEED, timeout=5.0, on_dropout=on_dropout, **options))
    return sim, (made[0] if made else None)


def same_release(a: SimulationResult, b: SimulationResult) -> None:
    assert a.result.clusters == b.result.clusters
    for x, y in zip(a.result.releases, b.result.releases):
        if x.codes is None:
            for cx, cy in zip(x.counts, y.counts):
                assert np.array_equal(cx, cy)
        else:
            assert np.array_equal(x.codes, y.codes)
    same_estimate(a.result.estimate, b.result.estimate)


@pytest.mark.parametrize(("name", "params"), PROTOCOLS, ids=IDS)
def test_garbage_to_the_parties_changes_nothing(data: Dataset, name: str, params: dict[str, Any],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    clean, _ = run(data, name, params)
    fuzzed, net = run(data, name, params, monkeypatch, to_parties=True)
    assert net is not None and net.injected >= 100
    same_release(fuzzed, clean)
    assert not fuzzed.degraded and not fuzzed.excluded
    stats = fuzzed.traffic
    assert stats.rejected == net.injected  # every malformed frame rejected, none delivered
    assert sum(stats.rejected_by_sender.values()) == net.injected and CONTROLLER in stats.rejected_by_sender
    assert all(not p.errors for p in fuzzed.parties)


@pytest.mark.parametrize(("name", "params"), PROTOCOLS, ids=IDS)
def test_garbage_from_faulty_parties_excludes_them_and_only_them(
        data: Dataset, name: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    clean, _ = run(data, name, params)
    fuzzed, net = run(data, name, {**params, "on_dropout": "exclude"}, monkeypatch, from_senders=LIARS)
    assert net is not None and net.injected >= 10
    assert set(fuzzed.excluded) == LIARS and fuzzed.degraded
    assert all("rejected" in why for why in fuzzed.excluded.values())
    assert set(fuzzed.traffic.rejected_by_sender) == LIARS
    assert fuzzed.result.n == N - len(LIARS)
    # the first phase holds exactly the honest parties' fault-free releases
    honest = [i for i in range(N) if i not in LIARS]
    first, reference = fuzzed.result.releases[0], clean.result.releases[0]
    if first.codes is not None:
        assert np.array_equal(first.codes, reference.codes[honest])


@pytest.mark.parametrize(("name", "params"), PROTOCOLS[:1] + PROTOCOLS[-1:], ids=IDS[:1] + IDS[-1:])
def test_garbage_from_a_faulty_party_is_an_error_naming_it_under_fail(
        data: Dataset, name: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(MessageError, match=r"parties are faulty .*: party 1, party 4; party 1: sent a frame the controller rejected") as info:
        run(data, name, params, monkeypatch, from_senders=LIARS)
    assert info.value.parties == tuple(sorted(LIARS))


class ForgedKindNetwork(Router):
    """A router on which the parties ``LIARS`` send the controller, beside each of
    their frames, a well-formed :class:`~parties.secure.messages.SurvivorSet` (a kind only the
    controller sends)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.forged = 0

    def _route(self, frame: Frame) -> None:
        if frame.src in LIARS and frame.dst == CONTROLLER and frame.src not in self._crashed:
            self.forged += 1
            self._deliver(Frame(frame.src, CONTROLLER, frame.phase, SurvivorSet.KIND,
                                encode(SurvivorSet("forged", id_vector((0, 1))))))
        super()._route(frame)


def run_forged(data: Dataset, name: str, params: dict[str, Any], on_dropout: str,
               monkeypatch: pytest.MonkeyPatch) -> tuple[SimulationResult, ForgedKindNetwork]:
    made: list[ForgedKindNetwork] = []

    def factory(*args: Any, **kwargs: Any) -> ForgedKindNetwork:
        made.append(ForgedKindNetwork(*args, **kwargs))
        return made[-1]
    monkeypatch.setattr(runtime_module, "Router", factory)
    sim = run_virtual(simulate_async(data, name, seed=SEED, timeout=5.0, on_dropout=on_dropout, **params))
    return sim, made[0]


FORGED = [PROTOCOLS[0], PROTOCOLS[-1]]  # RR-Independent; RR-Clusters 4.3 on the masked engine


@pytest.mark.parametrize(("name", "params"), FORGED, ids=[IDS[0], IDS[-1]])
def test_a_controller_only_kind_from_parties_excludes_them_in_simulate(
        data: Dataset, name: str, params: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: simulate()'s controller endpoint accepted every kind; the forged messages were
    # buffered and the liars' releases used.
    sim, net = run_forged(data, name, params, "exclude", monkeypatch)
    assert net.forged >= len(LIARS)
    assert set(sim.excluded) == LIARS and sim.degraded and sim.result.n == N - len(LIARS)
    assert all("unexpected message kind SurvivorSet" in why for why in sim.excluded.values())
    assert set(sim.traffic.rejected_by_sender) == LIARS


def test_a_controller_only_kind_from_parties_is_an_error_naming_them_in_simulate(
        data: Dataset, monkeypatch: pytest.MonkeyPatch) -> None:
    name, params = PROTOCOLS[0]
    with pytest.raises(MessageError, match=(
            r"parties are faulty .*: party 1, party 4; party 1: sent a frame the controller rejected in phase "
            r"'\w+' \(unexpected message kind SurvivorSet \(73\)")) as info:
        run_forged(data, name, params, "fail", monkeypatch)
    assert info.value.parties == tuple(sorted(LIARS))
