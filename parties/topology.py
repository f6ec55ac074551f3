"""Who may talk to whom: the communication topology of a network.

The default is a star (parties reach only the controller).  A networkx graph adds
party-to-party links (e.g. a random k-regular graph for the graph secure sum); the controller
stays linked to every party unless the graph names it.  Sending over a non-edge is a
:class:`mprr.errors.ProtocolError`; relaying through other actors is the protocol's job, and
:meth:`Topology.path` gives the shortest relay route.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

from mprr.errors import ConfigurationError, ProtocolError

__all__ = ["CONTROLLER", "Topology", "actor_name"]

if TYPE_CHECKING:  # networkx is imported only where a graph is given (party workers never need it)
    import networkx as nx
    import numpy as np

CONTROLLER = -1
"""Actor id of the controller; parties are ``0`` to ``n-1``."""


def actor_name(actor: int) -> str:
    """``"controller"`` or ``"party 7"``, for messages."""
    return "controller" if actor == CONTROLLER else f"party {actor}"


class Topology:
    """Who may send to whom.

    Parameters
    ----------
    n
        Number of parties.
    graph
        ``None``: star, parties reach only the controller.  Otherwise an undirected networkx
        graph whose nodes are party ids ``0..n-1`` (and optionally :data:`CONTROLLER`); its
        edges are the allowed party-to-party links.  If the graph has no CONTROLLER node the
        controller is linked to every party; if it has one, its edges are exactly as given.
    """

    def __init__(self, n: int, graph: nx.Graph[int] | None = None) -> None:
        self.n = n
        self.graph = graph
        self._adj: list[frozenset[int]] | None = None
        self._controller: frozenset[int] | None = None  # None = linked to all parties
        if graph is None:
            return
        import networkx as nx

        if not isinstance(graph, nx.Graph) or graph.is_directed():
            raise ConfigurationError(f"topology must be an undirected networkx.Graph, got {graph!r}")
        bad = [v for v in graph.nodes if not (isinstance(v, int) and (v == CONTROLLER or 0 <= v < n))]
        if bad:
            raise ConfigurationError(
                f"topology nodes must be party ids 0..{n - 1} or CONTROLLER ({CONTROLLER}), got {bad[:5]}"
            )
        adj: list[set[int]] = [set() for _ in range(n)]
        for u, v in graph.edges:
            if u != v and u != CONTROLLER and v != CONTROLLER:
                adj[u].add(v)
                adj[v].add(u)
        self._adj = [frozenset(a) for a in adj]
        if CONTROLLER in graph:
            self._controller = frozenset(v for v in graph[CONTROLLER] if v != CONTROLLER)

    def allowed(self, src: int, dst: int) -> bool:
        """True when ``src`` may send directly to ``dst``."""
        if src == dst:
            return False
        if src == CONTROLLER or dst == CONTROLLER:
            other = dst if src == CONTROLLER else src
            return self._controller is None or other in self._controller
        return self._adj is not None and dst in self._adj[src]

    def reaches(self, src: int, dsts: list[int]) -> bool:
        """True when ``src`` may send directly to every actor of ``dsts``, each a valid actor id
        (all checked at once; False says only that one of them is not)."""
        if any(type(d) is not int for d in dsts):
            return False
        others = set(dsts)
        if CONTROLLER in others:
            if src == CONTROLLER or not self.allowed(src, CONTROLLER):
                return False
            others.discard(CONTROLLER)
        if not others:
            return True
        if src == CONTROLLER:
            if self._controller is None:
                return 0 <= min(others) and max(others) < self.n
            return others <= self._controller
        return self._adj is not None and others <= self._adj[src]

    def controller_links(self, parties: np.ndarray) -> bool:
        """True when the controller is linked with every party of ``parties`` (party ids; all
        checked at once)."""
        return self._controller is None or self._controller.issuperset(parties.tolist())

    def neighbours(self, actor: int) -> tuple[int, ...]:
        """Actors ``actor`` may send to directly, sorted."""
        if actor == CONTROLLER:
            return tuple(range(self.n)) if self._controller is None else tuple(sorted(self._controller))
        out = set() if self._adj is None else set(self._adj[actor])
        if self._controller is None or actor in self._controller:
            out.add(CONTROLLER)
        return tuple(sorted(out))

    def path(self, src: int, dst: int) -> list[int]:
        """Shortest relay path ``[src, ..., dst]`` (ProtocolError if unreachable)."""
        if src == dst:
            return [src]
        if self.allowed(src, dst):
            return [src, dst]
        if self._controller is None and self.allowed(src, CONTROLLER) and self.allowed(CONTROLLER, dst):
            if self._adj is None:
                return [src, CONTROLLER, dst]
        # general case: breadth-first search over the effective graph
        seen = {src: src}
        frontier = deque([src])
        while frontier:
            u = frontier.popleft()
            for v in self.neighbours(u):
                if v not in seen:
                    seen[v] = u
                    if v == dst:
                        out = [v]
                        while out[-1] != src:
                            out.append(seen[out[-1]])
                        return out[::-1]
                    frontier.append(v)
        raise ProtocolError(f"no route from {actor_name(src)} to {actor_name(dst)} in the topology")
