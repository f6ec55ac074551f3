"""benchmarks/masked_phases.py: every party's rounds captured, replayed in turn and (round 2) phase by phase."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from parties.secure import masked, masked_party
from tests.benchmark_modules import benchmark_module


@pytest.fixture(scope="module")
def masked_phases() -> Iterator[ModuleType]:
    with benchmark_module("masked_phases") as module:
        yield module


@pytest.fixture(scope="module")
def kept(masked_phases: ModuleType) -> object:
    return masked_phases.capture(24)


def test_every_party_round_is_captured_and_the_round_methods_are_restored(masked_phases: ModuleType,
                                                                         kept: object) -> None:
    for label, name in masked_phases.ROUNDS:
        assert len(kept.rounds[name]) == 24, label  # type: ignore[attr-defined]
        assert kept.in_run[name] > 0  # type: ignore[attr-defined]
        assert getattr(masked_party.MaskedParty, name).__qualname__ == f"MaskedParty.{name}"
    assert kept.programs >= sum(kept.in_run.values())  # type: ignore[attr-defined]
    assert kept.controller > 0 and kept.parties >= sum(kept.in_run.values())  # type: ignore[attr-defined]
    assert kept.programs >= kept.controller + kept.parties  # type: ignore[attr-defined]
    assert masked.MaskedEngine.controller_program.__qualname__ == "MaskedEngine.controller_program"
    assert masked.MaskedEngine.party_program.__qualname__ == "MaskedEngine.party_program"
    assert all(getattr(masked, name) is getattr(masked_party, name) for name in masked_phases._BATCHES)
    first_party, first_message = kept.rounds["advertise"][0]  # type: ignore[attr-defined]
    assert first_message is None and first_party.s_pk == b""  # the state before the round


def test_the_phased_round_gives_the_round_methods_masked_inputs_and_view_keys(masked_phases: ModuleType,
                                                                            kept: object) -> None:
    replays = masked_phases.replay(kept, 1)  # (raises if they differ)
    assert set(replays.per_party) == {name for _, name in masked_phases.ROUNDS}
    assert replays.phased > 0
    captured = kept.rounds["mask_input"]  # type: ignore[attr-defined]
    turn = masked_phases.per_party("mask_input", masked_phases._fresh(captured))
    phased = masked_phases.phased_mask_input(masked_phases._fresh(captured))
    assert [m.values.tobytes() for m in turn] == [m.values.tobytes() for m in phased]
    assert len({m.values.tobytes() for m in phased}) == 24  # (masked: no two alike)


def test_a_replay_starts_from_the_captured_state_not_the_last_replay(masked_phases: ModuleType,
                                                                   kept: object) -> None:
    captured = kept.rounds["mask_input"]  # type: ignore[attr-defined]
    states = masked_phases._fresh(captured)
    masked_phases.per_party("mask_input", states)
    assert all(party.s_keys is None for party, _ in states)
    assert all(party.s_keys is not None for party, _ in captured)  # (the copies took the round's changes)


def test_the_report_adds_the_rounds_floors_to_the_partys_floor(masked_phases: ModuleType, kept: object,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    Item = masked_phases.Item
    rows = [Item(start + " (test)", calls, 1e-6, None, 1e-6)
            for name in masked_phases.FLOOR_ROWS for start, calls in masked_phases.FLOOR_ROWS[name]]
    merged: dict[str, Any] = {}
    for row in rows:  # (the HKDF row is shared by two rounds: one row, 40 calls)
        known = merged.get(row.name)
        merged[row.name] = row if known is None else row._replace(calls=known.calls + row.calls)
    replays = masked_phases.Replays({name: 1e-3 for _, name in masked_phases.ROUNDS}, 0.9e-3)
    out = masked_phases.report(kept, replays, list(merged.values()))
    text = capsys.readouterr().out
    calls = sum(row.calls for row in merged.values())
    assert calls == 238  # 1 key pair, 16 X25519 agreements and a key parsed, 40 HMACs, 16 AEAD, 9 masks, Shamir, 2 draws, 152 hashes
    assert out["floor"] == pytest.approx(238.0)  # 1 µs per call
    assert out["gain"] == pytest.approx(0.1)
    per_round = 1e3 / 24  # 1 ms per round for 24 parties, µs per party; round 2 phased 10 % cheaper
    assert out["measured"] == pytest.approx(5 * per_round - 0.1 * per_round)
    assert out["left"] == pytest.approx(357.0 - out["measured"])
    assert out["best"] == pytest.approx(5 * per_round * 0.9) and out["best_left"] == pytest.approx(357.0 - out["best"])
    assert "(10.0 % saved" in text and "the goal, 1.5 x: 357.0 µs per party" in text
    assert "leaving 169.5 µs" in text and "leaving 152.8 µs of the goal beside them" in text
    assert out["controller"] + out["io"] + out["driver"] == pytest.approx(out["around"])
    assert out["route_left"] == pytest.approx(357.0 - out["measured"] - out["controller"])
    assert f"with the controller's program as in this run: {out['measured'] + out['controller']:.1f} µs" in text
    with pytest.raises(RuntimeError, match="FLOOR_ROWS misses a row"):
        masked_phases.report(kept, replays, [*merged.values(), Item("an extra call", 1, 1e-6, None, 1e-6)])
