"""parties.topology: who may send to whom, enforcement on send, relay paths and hops."""

from __future__ import annotations

import networkx as nx
import pytest

from mprr.errors import ConfigurationError, ProtocolError
from parties.wire.messages import Ack
from parties.router import Router
from parties.transport import CONTROLLER
from parties.topology import Topology, actor_name


async def test_star_lets_parties_reach_only_the_controller() -> None:
    net = Router(3)
    await net.endpoint(0).send(CONTROLLER, Ack(1), phase="p")
    await net.endpoint(CONTROLLER).send(2, Ack(2), phase="p")
    with pytest.raises(ProtocolError, match=r"party 0 cannot send to party 1: no link in the topology; relay via \[0, -1, 1\]"):
        await net.endpoint(0).send(1, Ack(1), phase="p")
    with pytest.raises(ProtocolError, match="party 2 cannot send to itself"):
        await net.endpoint(2).send(2, Ack(1), phase="p")
    with pytest.raises(ProtocolError, match=r"dst must be CONTROLLER \(-1\) or a party id in 0\.\.2, got 3"):
        await net.endpoint(0).send(3, Ack(1), phase="p")
    assert net.statistics().messages == 2


async def test_graph_topology_adds_party_links_and_keeps_the_controller_star() -> None:
    net = Router(4, topology=nx.cycle_graph(4))
    await net.endpoint(0).send(1, Ack(1), phase="share")
    await net.endpoint(0).send(3, Ack(1), phase="share")
    await net.endpoint(2).send(CONTROLLER, Ack(1), phase="sum")
    with pytest.raises(ProtocolError, match="party 0 cannot send to party 2"):
        await net.endpoint(0).send(2, Ack(1), phase="share")
    assert len(net.path(0, 1)) - 1 == 1 and len(net.path(0, 2)) - 1 == 2 and net.path(0, CONTROLLER) == [0, CONTROLLER]
    assert net.topology.neighbours(0) == (CONTROLLER, 1, 3)


async def test_controller_links_follow_the_graph_when_it_names_the_controller() -> None:
    g = nx.path_graph([CONTROLLER, 0, 1, 2])  # controller - 0 - 1 - 2
    net = Router(3, topology=g)
    with pytest.raises(ProtocolError, match=r"controller cannot send to party 2: .* relay via \[-1, 0, 1, 2\]"):
        await net.endpoint(CONTROLLER).send(2, Ack(1), phase="p")
    assert net.path(2, CONTROLLER) == [2, 1, 0, CONTROLLER]
    assert len(net.path(CONTROLLER, 2)) - 1 == 3


def test_unreachable_party_and_relay_paths() -> None:
    g = nx.Graph()
    g.add_nodes_from([CONTROLLER, 0, 1])
    g.add_edge(CONTROLLER, 0)
    top = Topology(2, g)
    with pytest.raises(ProtocolError, match="no route from controller to party 1"):
        top.path(CONTROLLER, 1)
    star = Topology(5)
    assert star.path(1, 4) == [1, CONTROLLER, 4] and star.path(3, 3) == [3]
    assert star.neighbours(CONTROLLER) == (0, 1, 2, 3, 4)
    assert star.neighbours(2) == (CONTROLLER,)


@pytest.mark.parametrize(
    ("graph", "pattern"),
    [
        (nx.DiGraph([(0, 1)]), "undirected networkx.Graph"),
        (nx.Graph([(0, 7)]), r"party ids 0\.\.2 or CONTROLLER \(-1\), got \[7\]"),
        (nx.Graph([("a", 0)]), r"got \['a'\]"),
        ([(0, 1)], "undirected networkx.Graph"),
    ],
)
def test_invalid_topologies_are_rejected(graph: object, pattern: str) -> None:
    with pytest.raises(ConfigurationError, match=pattern):
        Router(3, topology=graph)  # type: ignore[arg-type]


async def test_unreachable_destination_is_named_in_the_error() -> None:
    g = nx.Graph()
    g.add_nodes_from([CONTROLLER, 0, 1])
    g.add_edge(CONTROLLER, 0)
    net = Router(2, topology=g)
    with pytest.raises(ProtocolError, match="controller cannot send to party 1: no link in the topology; it is unreachable"):
        await net.endpoint(CONTROLLER).send(1, Ack(1), phase="p")


async def test_a_broadcast_with_one_bad_destination_sends_nothing() -> None:
    net = Router(3)
    with pytest.raises(ProtocolError, match="party 0 cannot send to party 2"):
        await net.endpoint(0).broadcast([CONTROLLER, 2], Ack(1), phase="p")
    with pytest.raises(ProtocolError, match="dst must be CONTROLLER"):
        await net.endpoint(CONTROLLER).broadcast([0, 1, 5], Ack(1), phase="p")
    assert net.statistics().messages == 0


@pytest.mark.parametrize("graph", [None, nx.complete_graph(6), nx.cycle_graph(6),
                                   nx.Graph([(CONTROLLER, 0), (CONTROLLER, 2), (0, 1), (1, 2)])])
def test_reaches_is_every_destination_allowed(graph: nx.Graph | None) -> None:
    top = Topology(6, graph)
    candidates = [CONTROLLER, *range(6), 6, -2, 1.0, True]
    for src in (CONTROLLER, *range(6)):
        for a in candidates:
            for b in candidates:
                dsts = [a, b]
                valid = all(type(d) is int and -1 <= d < 6 and top.allowed(src, d) for d in dsts)
                assert top.reaches(src, dsts) == valid, (src, dsts)
    assert top.reaches(0, [])


def test_actor_names() -> None:
    assert actor_name(CONTROLLER) == "controller" and actor_name(4) == "party 4"
