"""The network model: draws per run, the TOML form."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.netsim.model import ControllerLink, NetworkModel, model_from_toml
from parties.netsim.profiles import PROFILES, mbps


def test_draw_puts_the_controller_first() -> None:
    model = NetworkModel("broadband", ControllerLink(mbps(100), mbps(200), 0.003))
    links = model.draw(4, rng=np.random.default_rng(1))
    assert links.n == 4 and links.uplink[0] == mbps(100) and links.downlink[0] == mbps(200)
    assert links.latency[0] == 0.003 and links.device_speed.tolist() == [1.0] * 5
    again = model.draw(4, rng=np.random.default_rng(1))
    assert np.array_equal(links.uplink, again.uplink)


def test_toml_model(tmp_path: Path) -> None:
    (tmp_path / "away.csv").write_text("party,online_from,online_until\n2,5,10\n")
    (tmp_path / "net.toml").write_text("""
profile = "mobile"
[controller]
uplink_mbps = 1000
latency_ms = 20
relay = true
[availability]
dropout = 0.05
traces = "away.csv"
[framing]
tcp = false
""")
    model = model_from_toml(tmp_path / "net.toml", seed=4)
    assert model.profile == PROFILES["mobile"] and model.controller == ControllerLink(mbps(1000), mbps(10_000), 0.02)
    assert model.availability.dropout == 0.05 and model.availability.traces is not None
    assert not model.availability.online(2, 1.0) and model.framing.tls and not model.framing.tcp and model.seed == 4
    assert model.relay


def test_toml_model_errors(tmp_path: Path) -> None:
    (tmp_path / "bad.toml").write_text('profile = "mobile"\n[links]\nx = 1\n')
    with pytest.raises(ConfigurationError, match=r"unknown tables \['links'\]"):
        model_from_toml(tmp_path / "bad.toml")
    with pytest.raises(ConfigurationError, match=r"does not exist"):
        model_from_toml(tmp_path / "none.toml")
    with pytest.raises(ConfigurationError, match=r"profile must be a LinkProfile or one of"):
        NetworkModel(3)  # type: ignore[arg-type]
