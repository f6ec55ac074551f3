"""FIFO links: the closed form on idle links, a sender's own queue, the controller's shared link."""

from __future__ import annotations

import numpy as np
import pytest

from mprr.errors import ConfigurationError
from parties.netsim.links import LinkScheduler


def scheduler(n: int, up: float, down: float, lat: float, c_up: float, c_down: float, c_lat: float) -> LinkScheduler:
    return LinkScheduler(np.array([c_up] + [up] * n), np.array([c_down] + [down] * n), np.array([c_lat] + [lat] * n))


def test_one_message_on_idle_links_is_latency_plus_size_over_the_bottleneck() -> None:
    s = scheduler(2, up=1000.0, down=4000.0, lat=0.01, c_up=1e6, c_down=500.0, c_lat=0.002)
    t = s.transfer(0, -1, 2000, ready=1.0)  # bottleneck: the controller's downlink, 500 B/s
    assert t.arrival == pytest.approx(1.0 + 0.012 + 2000 / 500)
    assert (t.transmission, t.queueing) == (pytest.approx(4.0), pytest.approx(0.0))
    t = s.transfer(0, 1, 2000, ready=10.0)  # party to party: 1000 B/s uplink
    assert t.arrival == pytest.approx(10.0 + 0.02 + 2.0)


def test_the_controllers_downlink_serializes_what_crosses_it() -> None:
    n, size = 10, 1000
    s = scheduler(n, up=1e9, down=1e9, lat=0.0, c_up=1e9, c_down=1000.0, c_lat=0.0)
    arrivals = [s.transfer(i, -1, size, ready=0.0).arrival for i in range(n)]
    assert arrivals == pytest.approx([k + 1.0 for k in range(n)])  # one second each, queued


def test_a_slow_sender_does_not_hold_the_shared_link() -> None:
    s = LinkScheduler(np.array([1e9, 100.0, 1e9]), np.array([1000.0, 1e9, 1e9]), np.zeros(3))
    slow = s.transfer(0, -1, 1000, ready=0.0)  # 10 s on its own uplink
    fast = s.transfer(1, -1, 1000, ready=0.0)  # 1 s on the controller's downlink, after the slow one's 1 s
    assert slow.arrival == pytest.approx(10.0) and fast.arrival == pytest.approx(2.0)


def test_a_senders_messages_queue_on_its_uplink_and_its_cpu() -> None:
    s = scheduler(2, up=100.0, down=1e9, lat=0.5, c_up=1e9, c_down=1e9, c_lat=0.0)
    first, second = s.transfer(0, -1, 100, ready=0.0), s.transfer(0, -1, 100, ready=0.0)
    assert (first.arrival, second.arrival) == (pytest.approx(1.5), pytest.approx(2.5))
    assert second.queueing == pytest.approx(1.0)
    assert s.compute(0, 0.0, 2.0) == 2.0 and s.compute(0, 1.0, 2.0) == 4.0


def test_links_are_checked() -> None:
    with pytest.raises(ConfigurationError, match=r"every uplink and downlink bandwidth must be > 0"):
        LinkScheduler(np.array([1.0, 0.0]), np.ones(2), np.zeros(2))
    with pytest.raises(ConfigurationError, match=r"one entry per actor \(n \+ 1 >= 2\)"):
        LinkScheduler(np.ones(1), np.ones(1), np.zeros(1))


def test_a_relayed_message_crosses_the_controllers_link() -> None:
    s = LinkScheduler(np.array([50.0, 1000.0, 1000.0]), np.array([100.0, 1000.0, 1000.0]), np.array([0.1, 0.01, 0.02]))
    t = s.transfer(0, 1, 200, ready=0.0, relay=True)  # bottleneck: the controller's uplink, 50 B/s
    assert t.arrival == pytest.approx(0.01 + 0.2 + 0.02 + 200 / 50) and t.latency == pytest.approx(0.23)
    direct = s.transfer(0, 1, 200, ready=10.0)
    assert direct.arrival == pytest.approx(10.0 + 0.03 + 0.2)
