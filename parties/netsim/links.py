"""When a message arrives: FIFO links, the bottleneck of the two access links, latency.

Every actor has an uplink and a downlink (bytes per second) and a one-way latency (seconds);
index 0 is the controller, ``1 + i`` party ``i``.  The controller's links are shared by every
message that crosses them: everything it sends queues on its uplink, everything it receives on
its downlink.  A message of ``size`` bytes from ``a`` to ``b``, ready at time ``t`` (after its
sender's compute), crosses ``a``'s uplink then ``b``'s downlink, each a FIFO server that holds
one message at a time for ``size / rate``, the second starting no earlier than the first
(cut-through)::

    s1 = max(t, free_up[a]);     free_up[a]   = s1 + size / up[a]
    s2 = max(s1, free_down[b]);  free_down[b] = s2 + size / down[b]
    end = max(s1 + size / up[a], s2 + size / down[b])
    arrival = end + latency[a] + latency[b]

On idle links this is the closed form ``latency[a] + latency[b] + size / min(up[a], down[b])``
(the bottleneck of the two links); ``m`` messages of one size sent at once to the controller
arrive over ``max(m * size / down[0], size / up[a]) + latencies``: the controller's downlink
serializes them.  A link is occupied only for its own transmission time, so a slow sender does
not hold up the controller's link for others (a fluid approximation of TCP flows sharing it).

With ``relay`` a party-to-party message also crosses the controller's downlink and uplink (and
twice its latency), as between the workers of the tcp and ray runtimes.

The compute of each actor is a FIFO too (:meth:`LinkScheduler.compute`): a message's
cryptography starts when the sender's earlier work is done.  With ``cpus`` several actors share
one CPU (the parties of one host; :class:`parties.netsim.model.NetworkModel` ``hosts``): their
work queues on it in the order it is charged.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mprr.errors import ConfigurationError

__all__ = ["LinkScheduler", "Transfer"]


class Transfer(NamedTuple):
    """Times of one message: transmission ``start`` on the sender's uplink, ``end`` of the last
    byte on the receiver's downlink, ``arrival`` (end + latency), and the parts of its journey:
    pure ``transmission`` time (size over the bottleneck), ``latency``, and ``queueing`` (the rest:
    waiting for the links behind earlier messages)."""

    start: float
    end: float
    arrival: float
    transmission: float
    latency: float
    queueing: float


class LinkScheduler:
    """FIFO links of ``n`` parties and the controller (module docstring).

    Parameters
    ----------
    uplink, downlink, latency
        Per actor (``n + 1`` entries, the controller first): bytes/s (> 0) and seconds (>= 0).
    cpus
        Per actor, the CPU it computes on (``n + 1`` entries in ``0..n``; default: a CPU each).
    """

    def __init__(self, uplink: np.ndarray, downlink: np.ndarray, latency: np.ndarray,
                 cpus: np.ndarray | None = None) -> None:
        up, down, lat = (np.asarray(v, dtype=float) for v in (uplink, downlink, latency))
        if not (up.shape == down.shape == lat.shape and up.ndim == 1 and up.size >= 2):
            raise ConfigurationError(f"uplink, downlink and latency need one entry per actor (n + 1 >= 2), "
                                     f"got shapes {up.shape}, {down.shape}, {lat.shape}")
        if not (np.all(up > 0) and np.all(down > 0)):
            raise ConfigurationError("every uplink and downlink bandwidth must be > 0 bytes/s")
        if not (np.all(np.isfinite(lat)) and np.all(lat >= 0)):
            raise ConfigurationError("every latency must be finite and >= 0 seconds")
        self.inv_up = (1.0 / up).tolist()
        self.inv_down = (1.0 / down).tolist()
        self.latency = lat.tolist()
        size = up.size
        self.free_up = [0.0] * size
        self.free_down = [0.0] * size
        self.free_cpu = [0.0] * size
        self.busy = [0.0] * size
        """CPU seconds charged on each CPU so far."""
        if cpus is None:
            self.cpu = list(range(size))
        else:
            slots = np.asarray(cpus)
            if not (slots.shape == (size,) and np.issubdtype(slots.dtype, np.integer)
                    and np.all((slots >= 0) & (slots < size))):
                raise ConfigurationError(f"cpus needs one integer in 0..{size - 1} per actor ({size}), got "
                                         f"shape {slots.shape}, dtype {slots.dtype}")
            self.cpu = slots.tolist()

    def compute(self, actor: int, now: float, seconds: float) -> float:
        """When ``seconds`` of ``actor``'s compute started at ``now`` finish (its CPU is FIFO,
        shared with the actors of the same ``cpus`` slot)."""
        i = self.cpu[actor + 1]
        start = now if now > self.free_cpu[i] else self.free_cpu[i]
        done = start + seconds
        self.free_cpu[i] = done
        self.busy[i] += seconds
        return done

    def transfer(self, src: int, dst: int, size: int, ready: float, *, relay: bool = False) -> Transfer:
        """Reserve the links for a ``size``-byte message from ``src`` to ``dst`` ready at ``ready``.

        ``relay``: a party-to-party message crosses the controller (its downlink, then its
        uplink, and twice its latency) on the way, as frames do between the workers of the tcp
        and ray runtimes; ignored when either end is the controller.
        """
        a, b = src + 1, dst + 1
        hops = [(self.free_up, a, self.inv_up[a]), (self.free_down, b, self.inv_down[b])]
        latency = self.latency[a] + self.latency[b]
        if relay and a and b:
            hops[1:1] = [(self.free_down, 0, self.inv_down[0]), (self.free_up, 0, self.inv_up[0])]
            latency += 2 * self.latency[0]
        start = end = ready
        first = -1.0
        transmission = 0.0
        for free, i, inv in hops:  # cut-through: each link starts no earlier than the one before
            t = size * inv
            if free[i] > start:
                start = free[i]
            if first < 0:
                first = start
            done = start + t
            free[i] = done
            if done > end:
                end = done
            if t > transmission:
                transmission = t
        return Transfer(first, end, end + latency, transmission, latency, end - ready - transmission)
