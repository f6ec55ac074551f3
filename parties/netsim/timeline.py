"""The timeline of a virtual-time run, and what it says: rounds, misses, bytes per link, where
the time went.

:class:`Timeline` records every frame the router timed (:mod:`parties.netsim.network`), as
compact columns: sender, receiver, round, kind, payload and wire bytes, the time it was sent,
the time its cryptography was done (``ready``), its arrival, its transmission time (size over
the bottleneck of the two links), its latency and the runtime processing charged after it left
its sender (the controller's routing and the receiver's decoding, :mod:`parties.netsim.processing`;
0 when the model does not charge it); lost frames (a party away) are flagged.  A
*round* is a protocol phase, numbered in the order phases first appear.

:meth:`Timeline.report` computes (numpy, no I/O):

- **completion**: the virtual time at which the controller finished;
- **rounds**: per round its start (first send), end (last arrival), and over the parties that
  took part the median and 95th percentile of the time from the round's start to the party's
  last message of the round (sent or received);
- **missed**: who missed which round (a frame of theirs lost because they were away);
- **cpu**: the CPU seconds the model charged (cryptography and processing): the controller's,
  the parties' in all, and the busiest party CPU's (a host's, with shared hosts);
- **links**: wire bytes on every uplink and downlink (the controller's, and the parties'
  median, 95th percentile and maximum);
- **breakdown**: where the time went, along the run's critical path.  From the last arrival
  back to time 0: a frame's journey splits into compute (``ready - sent``, plus the processing
  charged after it left its sender), queueing, bandwidth
  (transmission) and latency; the frame's sender had sent it at ``sent`` because of the last
  frame delivered to it before (its predecessor on the path), and the gap between that
  arrival and ``sent`` is *waiting* (a timeout for stragglers or parties away, or the start of
  the run); the time from the last arrival to completion is waiting too.  The four parts and
  the waiting add up to the completion time exactly.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LOST_RECEIVER", "LOST_SENDER", "UNDELIVERED", "Timeline"]

LOST_SENDER = 1
"""``lost`` flag: the sender was away (nothing was transmitted)."""
LOST_RECEIVER = 2
"""``lost`` flag: the receiver was away when the frame arrived."""
UNDELIVERED = 3
"""``lost`` flag: still on its way when the run ended (the controller no longer waited for it)."""


def _quantile(values: np.ndarray, q: float) -> float:
    return float(np.quantile(values, q)) if values.size else 0.0


@dataclass
class Timeline:
    """Every timed frame of one run of ``n`` parties (module docstring)."""

    n: int

    def __post_init__(self) -> None:
        self.src, self.dst, self.round, self.kind = array("i"), array("i"), array("i"), array("i")
        self.payload, self.wire, self.lost = array("q"), array("q"), array("b")
        self.sent, self.ready, self.arrival = array("d"), array("d"), array("d")
        self.transmission, self.latency, self.processing = array("d"), array("d"), array("d")
        self.rounds: list[str] = []
        self.finished = 0.0
        self.cpu_busy: list[float] = [0.0]
        """CPU seconds charged per CPU (the controller's first; set by the timed router)."""

    def __len__(self) -> int:
        return len(self.src)

    def add(self, src: int, dst: int, round_: int, kind: int, payload: int, wire: int, lost: int,
            sent: float, ready: float, arrival: float, transmission: float, latency: float,
            processing: float = 0.0) -> int:
        """Record one frame; returns its index."""
        self.src.append(src)
        self.dst.append(dst)
        self.round.append(round_)
        self.kind.append(kind)
        self.payload.append(payload)
        self.wire.append(wire)
        self.lost.append(lost)
        self.sent.append(sent)
        self.ready.append(ready)
        self.arrival.append(arrival)
        self.transmission.append(transmission)
        self.latency.append(latency)
        self.processing.append(processing)
        return len(self.src) - 1

    def columns(self) -> dict[str, np.ndarray]:
        """The columns as numpy arrays (views of the recorded buffers)."""
        return {name: np.frombuffer(getattr(self, name), dtype=dtype) if len(getattr(self, name)) else
                np.zeros(0, dtype=dtype)
                for name, dtype in (("src", np.int32), ("dst", np.int32), ("round", np.int32), ("kind", np.int32),
                                    ("payload", np.int64), ("wire", np.int64), ("lost", np.int8),
                                    ("sent", np.float64), ("ready", np.float64), ("arrival", np.float64),
                                    ("transmission", np.float64), ("latency", np.float64),
                                    ("processing", np.float64))}

    # ------------------------------------------------------------------ report
    def report(self) -> dict[str, Any]:
        """Completion, rounds, misses, bytes per link and the critical-path breakdown
        (module docstring), JSON-friendly."""
        c = self.columns()
        return {"completion": self.finished, "frames": len(self), "rounds": self._rounds(c),
                "cpu": {"controller": self.cpu_busy[0], "parties": float(sum(self.cpu_busy[1:])),
                        "busiest_party_cpu": max(self.cpu_busy[1:], default=0.0)},
                "missed": self.missed(), "links": self._links(c), "breakdown": self.breakdown()}

    def missed(self) -> dict[str, list[int]]:
        """Round name -> the parties that missed it (sorted)."""
        c = self.columns()
        out: dict[str, list[int]] = {}
        for flag, who in ((LOST_SENDER, c["src"]), (LOST_RECEIVER, c["dst"])):
            hit = c["lost"] == flag
            for r in np.unique(c["round"][hit]).tolist():
                parties = who[hit & (c["round"] == r)]
                out.setdefault(self.rounds[r], []).extend(parties[parties >= 0].tolist())
        return {name: sorted(set(p)) for name, p in out.items()}

    def _rounds(self, c: dict[str, np.ndarray]) -> list[dict[str, Any]]:
        rounds = []
        ok = c["lost"] == 0
        for r, name in enumerate(self.rounds):
            mine = c["round"] == r
            if not mine.any():
                continue
            start = float(c["sent"][mine].min())
            got = mine & ok
            end = float(c["arrival"][got].max()) if got.any() else start
            # each party's last message of the round, sent or received (delivered frames)
            actors = np.concatenate((c["src"][got], c["dst"][got]))
            times = np.concatenate((c["arrival"][got], c["arrival"][got]))
            party = actors >= 0
            done = np.full(self.n, -np.inf)
            np.maximum.at(done, actors[party], times[party])
            took = done[np.isfinite(done)] - start
            rounds.append({"round": name, "start": start, "end": end, "duration": end - start,
                           "parties": int(took.size), "median": _quantile(took, 0.5), "p95": _quantile(took, 0.95),
                           "messages": int(mine.sum()), "wire_bytes": int(c["wire"][mine].sum())})
        return rounds

    def _links(self, c: dict[str, np.ndarray]) -> dict[str, Any]:
        sent = c["lost"] != LOST_SENDER
        got = c["lost"] == 0
        up = np.bincount(c["src"][sent] + 1, weights=c["wire"][sent], minlength=self.n + 1)
        down = np.bincount(c["dst"][got] + 1, weights=c["wire"][got], minlength=self.n + 1)

        def summary(v: np.ndarray) -> dict[str, float]:
            return {"median": _quantile(v, 0.5), "p95": _quantile(v, 0.95), "max": float(v.max()) if v.size else 0.0,
                    "total": float(v.sum())}

        return {"controller_uplink": float(up[0]), "controller_downlink": float(down[0]),
                "party_uplink": summary(up[1:]), "party_downlink": summary(down[1:])}

    def breakdown(self) -> dict[str, Any]:
        """Critical-path breakdown (module docstring): seconds of compute, queueing, bandwidth,
        latency and waiting, in all and per round, and the path's length in frames."""
        c = self.columns()
        parts = ("compute", "queueing", "bandwidth", "latency", "waiting")
        total = dict.fromkeys(parts, 0.0)
        per_round: dict[str, dict[str, float]] = {}

        def add(r: int | None, part: str, seconds: float) -> None:
            total[part] += seconds
            if r is not None:
                slot = per_round.setdefault(self.rounds[r], dict.fromkeys(parts, 0.0))
                slot[part] += seconds

        delivered = np.flatnonzero(c["lost"] == 0)
        if delivered.size == 0:
            add(None, "waiting", self.finished)
            return {**total, "per_round": per_round, "path": 0}
        # delivered frames by receiver, then arrival (then index): the predecessor search
        order = delivered[np.lexsort((delivered, c["arrival"][delivered], c["dst"][delivered]))]
        dsts, arrivals = c["dst"][order], c["arrival"][order]
        last = int(delivered[np.argmax(c["arrival"][delivered])])
        add(int(c["round"][last]), "waiting", max(0.0, self.finished - float(c["arrival"][last])))
        f, steps = last, 0
        while True:
            steps += 1
            r = int(c["round"][f])
            sent, ready, arrival = float(c["sent"][f]), float(c["ready"][f]), float(c["arrival"][f])
            tx, lat, cpu = float(c["transmission"][f]), float(c["latency"][f]), float(c["processing"][f])
            add(r, "compute", ready - sent + cpu)
            add(r, "bandwidth", tx)
            add(r, "latency", lat)
            add(r, "queueing", max(0.0, arrival - ready - tx - lat - cpu))
            src = int(c["src"][f])
            lo, hi = np.searchsorted(dsts, src, "left"), np.searchsorted(dsts, src, "right")
            k = lo + int(np.searchsorted(arrivals[lo:hi], sent, "right")) - 1
            while k >= lo and order[k] >= f:  # (a predecessor was sent, so recorded, before f)
                k -= 1
            if k < lo:
                add(r, "waiting", sent)
                break
            p = int(order[k])
            add(r, "waiting", sent - float(c["arrival"][p]))
            f = p
        return {**total, "per_round": per_round, "path": steps}
