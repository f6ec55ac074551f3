"""The shard's side of the frame channel: a :class:`~parties.transport.Transport` whose sends go up.

A party shard (:mod:`parties.shard`) sends for its parties — their replies and their secure-sum
programs' messages (:mod:`parties.party_sum`) — on a :class:`ShardNetwork`: crash set,
counters, topology and admission as on every transport; what a party sends leaves through
``uplink`` towards the router in the controller process (:mod:`parties.router`), which counts it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from parties.transport import Frame, Transport

if TYPE_CHECKING:  # annotations only
    import networkx as nx

__all__ = ["ShardNetwork"]


class ShardNetwork(Transport):
    """The shard's side of the frame channel: every frame goes to ``uplink``.

    Sends are not counted here: the router counts each one once, when it admits it.

    Parameters
    ----------
    n
        Number of parties of the run.
    parties
        Parties hosted here.
    uplink
        Carries a frame towards the controller process (must not block).
    topology
        The run's graph of party links (``None``: the star).
    router
        The router, when it lives in this process (the memory runtime): the shard then shares
        its topology and its traffic counter, so deliveries are counted where sends are.
    """

    counts_sends = False

    def __init__(self, n: int, parties: range, uplink: Callable[[Frame], None], *,
                 topology: nx.Graph[int] | None = None, router: Transport | None = None) -> None:
        super().__init__(n, topology=None if router is not None else topology)
        if router is not None:
            self.topology = router.topology
            self._traffic = router.counter
        self.parties = parties
        self._uplink = uplink

    def _transmit(self, frame: Frame) -> None:
        self._uplink(frame)

    def is_crashed(self, party: int) -> bool:
        """Whether ``party`` has crashed."""
        return party in self._crashed

