"""A party host's parties as :class:`~parties.party.Party` objects: :class:`HostedParties`.

A shard (:mod:`parties.shard`) holds most of its parties as cohorts (:mod:`parties.cohort`);
the harness and the tests read them as parties, each built from its cohort's state on first
access, or all at once by iterating.
"""

from __future__ import annotations

import operator
from collections.abc import Iterator
from typing import Protocol, overload

import numpy as np

from mprr.privacy import PrivacyAccountant
from parties.party import AccountedParties, Party
from parties.shard_setup import ShardSetup

__all__ = ["HostedParties", "PartyHost"]


class PartyHost(Protocol):
    """What :class:`HostedParties` reads of its host (:class:`parties.shard.PartyShard`)."""

    @property
    def setup(self) -> ShardSetup: ...

    def materialize(self, rows: np.ndarray) -> None: ...

    def party_at(self, row: int) -> Party: ...

    def accountants(self) -> list[PrivacyAccountant]: ...


class HostedParties(AccountedParties[Party]):
    """A shard's parties as :class:`~parties.party.Party` objects, each built from its cohort's
    state on first access (:mod:`parties.cohort`); :meth:`accountants` builds none but the
    members still running a sum some of their cohort are done with (:mod:`parties.cohort_sum`)."""

    def __init__(self, shard: PartyHost) -> None:
        self._shard = shard

    def __len__(self) -> int:
        return len(self._shard.setup.parties)

    @overload
    def __getitem__(self, index: int) -> Party: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[Party, ...]: ...

    def __getitem__(self, index: int | slice) -> Party | tuple[Party, ...]:
        n = len(self)
        if isinstance(index, slice):
            rows = range(*index.indices(n))
            self._shard.materialize(np.arange(rows.start, rows.stop, rows.step, dtype=np.int64))
            return tuple(self[k] for k in rows)
        k = operator.index(index)
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError(f"party index {index} out of range for {n} hosted parties")
        return self._shard.party_at(k)

    def __iter__(self) -> Iterator[Party]:
        self._shard.materialize(np.arange(len(self), dtype=np.int64))
        for k in range(len(self)):
            yield self._shard.party_at(k)

    def accountants(self) -> list[PrivacyAccountant]:
        """Per party, its accountant (a cohort's members share their cohort's)."""
        return self._shard.accountants()
