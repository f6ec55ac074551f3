"""What a party shard host is given: its parties' range of the run (:func:`split`) and the
:class:`ShardSetup` it builds them from (records, stream rows, budgets, policy, the secure-sum
engine they agreed to), sent once before the protocol (:mod:`parties.shard`); and what the
shards give back before it: their parties' public keys, joined into the run's key directory
(:func:`directory`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from mprr.data import Schema
from mprr.domain import check_int
from mprr.errors import ConfigurationError
from mprr.privacy import DEFAULT_MIN_ROSTER
from mprr.streams import StreamTable
from parties.secure.pki import PUBLIC_KEY_BYTES

if TYPE_CHECKING:  # annotations only: a worker imports networkx and the engines only when a run needs them
    import networkx as nx

    from parties.secure.engine import SecureSumEngine

__all__ = ["ShardSetup", "directory", "split"]


def split(n: int, shards: int) -> list[range]:
    """``shards`` contiguous, near-equal ranges covering parties ``0..n-1`` (none empty)."""
    check_int("the number of workers/shards", shards, 1)
    if shards > n:
        raise ConfigurationError(f"{shards} workers/shards for {n} parties: at most one per party (n = {n})")
    bounds = [round(k * n / shards) for k in range(shards + 1)]
    return [range(bounds[k], bounds[k + 1]) for k in range(shards)]


@dataclass(frozen=True)
class ShardSetup:
    """What a shard host needs to build its parties (sent once, before the protocol).

    Attributes
    ----------
    parties
        The party ids it hosts (contiguous).
    n
        Number of parties of the run.
    schema
        Attributes every party holds.
    records
        ``(len(parties), m)`` true codes, row ``k`` = party ``parties[k]`` (harness data: in a
        deployment each worker reads its own parties' records).
    streams
        The stream keys of the hosted parties only (:class:`~mprr.streams.StreamTable` rows of
        ``parties``), computed by the runner from the run seed: a shard never holds the seed,
        from which every other shard's parties' noise derives.
    budgets
        ε budget of each hosted party.
    policy
        Composition policy of every party's accountant.
    accept
        Message kinds a party endpoint accepts.
    engine
        The secure-sum engine every party agreed to (``None``: no secure sum in this run).
    min_roster
        Fewest parties each party accepts in a secure-sum roster.
    mesh
        The run's topology links every party to every other (engines that send shares over
        direct party links); otherwise the star.
    topology
        A user-given graph of party links (the memory runtime's shard only); it overrides
        ``mesh``.
    """

    parties: range
    n: int
    schema: Schema
    records: np.ndarray
    streams: StreamTable
    budgets: tuple[float, ...]
    policy: str
    accept: tuple[int, ...]
    engine: SecureSumEngine | None = None
    min_roster: int = DEFAULT_MIN_ROSTER
    mesh: bool = False
    topology: nx.Graph[int] | None = None

    def graph(self) -> nx.Graph[int] | None:
        """The run's graph of party links: ``topology``, else the full mesh when ``mesh``, else
        ``None`` (the star)."""
        if self.topology is None and self.mesh:
            import networkx as nx  # only for the engines that need direct party links

            mesh: nx.Graph[int] = nx.complete_graph(self.n)
            return mesh
        return self.topology

    def checked_records(self) -> np.ndarray:
        """The hosted parties' records as an int64 ``(len(parties), m)`` table, once this setup is
        checked: the records' shape and codes, one stream row and one budget per hosted party.

        Raises
        ------
        ConfigurationError
            Naming the field, the bad value and what is allowed.
        """
        rows = np.asarray(self.records)
        if rows.shape != (len(self.parties), self.schema.m):
            raise ConfigurationError(
                f"shard setup: records must have shape ({len(self.parties)}, {self.schema.m}), got {rows.shape}"
            )
        if not isinstance(self.streams, StreamTable) or self.streams.parties != self.parties:
            raise ConfigurationError(
                f"shard setup: streams must be the StreamTable of the hosted parties {self.parties}, "
                f"got {getattr(self.streams, 'parties', self.streams)!r}")
        if len(self.budgets) != len(self.parties):
            raise ConfigurationError(f"shard setup: {len(self.budgets)} budgets for {len(self.parties)} parties")
        sizes = np.asarray(self.schema.sizes, dtype=np.int64)
        if rows.size and (rows.dtype.kind not in "iu" or rows.min() < 0 or np.any(rows.max(axis=0) >= sizes)):
            bad = np.argwhere((rows < 0) | (rows >= sizes))  # (or a non-integer table)
            k, a = (int(v) for v in bad[0]) if bad.size else (0, 0)
            raise ConfigurationError(
                f"record of party {self.parties.start + k}: attribute {self.schema.names[a]!r} code must be an "
                f"integer in [0, {int(sizes[a])}), got {rows[k, a]!r}")
        return rows.astype(np.int64, copy=False)

    @property
    def signs(self) -> bool:
        """Whether the parties need PKI signing keys (the engine signs)."""
        return self.engine is not None and self.engine.signs


def directory(keys: Sequence[tuple[range, bytes]], n: int) -> bytes:
    """The run's key directory: every shard's :meth:`PartyShard.public_keys <parties.shard.PartyShard.public_keys>`, in party order.

    Raises
    ------
    ConfigurationError
        If the shards do not cover ``0..n-1`` exactly once, or a shard registered a wrong
        number of key bytes.
    """
    out: list[bytes] = []
    expected = 0
    for parties, blob in sorted(keys, key=lambda kv: kv[0].start):
        if parties.start != expected:
            raise ConfigurationError(f"key directory: no keys registered for parties {expected}-{parties.start - 1}")
        if not isinstance(blob, bytes) or len(blob) != PUBLIC_KEY_BYTES * len(parties):
            raise ConfigurationError(
                f"key directory: the shard of parties {parties.start}-{parties.stop - 1} registered "
                f"{len(blob) if isinstance(blob, bytes) else type(blob).__name__} bytes, expected "
                f"{PUBLIC_KEY_BYTES} per party ({PUBLIC_KEY_BYTES * len(parties)})"
            )
        out.append(blob)
        expected = parties.stop
    if expected != n:
        raise ConfigurationError(f"key directory: no keys registered for parties {expected}-{n - 1}")
    return b"".join(out)
