"""benchmarks/send_order.py: the two send orders alternated, the controller's own order restored."""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType
from typing import Any

import pytest

from parties.secure import masked_server
from tests.benchmark_modules import benchmark_module


@pytest.fixture()
def send_order() -> Iterator[ModuleType]:
    with benchmark_module("send_order") as module:
        yield module


def test_stride_is_the_previous_order(send_order: ModuleType) -> None:
    assert send_order.stride(list(range(9))) == [0, 3, 6, 1, 4, 7, 2, 5, 8]
    assert sorted(send_order.stride(list(range(101)))) == list(range(101))
    assert send_order.ORDERS["blocks"] is masked_server.spread


def test_the_orders_alternate_and_the_controllers_order_is_restored(send_order: ModuleType,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    made: list[tuple[str, str]] = []
    Run = send_order.Run

    def one_run(data: Any, name: str, timed: bool, params: dict[str, Any], label: str, *, first: bool) -> Any:
        order = "stride" if masked_server.spread is send_order.stride else "blocks"
        assert not timed and params["secure_sum"] == "masked-sparse"
        made.append((name, order))
        cpu = {"blocks": 1.0, "stride": 1.25}[order]
        return Run(name, 10, 2.0, cpu * 2, 0.5, 3.0, 1.0, None, cpu if name == "memory" else None)

    monkeypatch.setattr(send_order, "one_run", one_run)
    own = masked_server.spread
    runs = send_order.measure(object(), 2, ("memory", "tcp"))
    assert masked_server.spread is own
    assert made == [("memory", "blocks"), ("memory", "stride"), ("tcp", "blocks"), ("tcp", "stride"),
                    ("memory", "stride"), ("memory", "blocks"), ("tcp", "stride"), ("tcp", "blocks")]
    figures = send_order.report(runs)
    assert figures[("memory", "blocks")] == 1.0 and figures[("tcp", "stride")] == 2.5  # sum CPU; sum wall
    out = capsys.readouterr().out
    assert "memory: blocks against stride -20.0 %" in out and "tcp: blocks against stride -20.0 %" in out


def test_a_failed_run_leaves_the_controllers_order_as_it_was(send_order: ModuleType,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    def one_run(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the run failed")

    monkeypatch.setattr(send_order, "one_run", one_run)
    own = masked_server.spread
    with pytest.raises(RuntimeError, match="the run failed"):
        send_order.measure(object(), 1, ("memory",))
    assert masked_server.spread is own
