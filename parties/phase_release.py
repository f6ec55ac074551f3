"""What one phase brought back to the controller: :class:`PhaseRelease`.

A release round (:meth:`parties.controller.Controller.release`) brings back the contributors'
released codes, one row per contributor; a secure sum
(:meth:`parties.controller.Controller.secure_release`) the tallies of their values only.
Either becomes the phase's :class:`mprr.protocols.release.ReleasedData`, the form both
drivers report.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from mprr.data import Schema
from mprr.protocols.release import ReleasedData
from mprr.protocols.steps import Matrix, MatrixSpec
from parties.wire.messages import Refusal

__all__ = ["PhaseRelease"]


@dataclass(frozen=True, eq=False)
class PhaseRelease:
    """What one phase brought back to the controller: the parties' released codes (a release
    round, :meth:`Controller.release`), or the tallies of their values (a secure sum,
    :meth:`Controller.secure_release`).

    Attributes
    ----------
    phase, request_id
        The phase and the request id.
    units
        Attribute indices of each released unit, in draw order.
    specs, matrices
        The matrix specification of each unit and the matrix the controller rebuilt from it
        (no specs and ``None`` matrices: an exact secure sum, main paper 4.2).
    contributors
        Parties whose values are in :attr:`codes` / :attr:`counts`, ascending (row ``k`` of
        :attr:`codes` = ``contributors[k]``).
    codes
        A release round's ``(len(contributors), len(units))`` int64 codes (read-only);
        ``None`` after a secure sum.
    counts
        A secure sum's per-unit tallies of the contributors' values; empty after a release
        round.
    session, engine
        A secure sum's session and engine name (``""`` for a release round).
    refusals
        ``{party: Refusal}`` of the parties that refused.
    silent
        Parties that never answered.
    """

    phase: str
    request_id: int
    units: tuple[tuple[int, ...], ...]
    specs: tuple[MatrixSpec, ...]
    matrices: tuple[Matrix | None, ...]
    contributors: tuple[int, ...]
    codes: np.ndarray | None = None
    counts: tuple[np.ndarray, ...] = ()
    session: str = ""
    engine: str = ""
    refusals: Mapping[int, Refusal] = field(default_factory=dict)
    silent: tuple[int, ...] = ()

    def released_data(self, schema: Schema, *, replayed: Sequence[bool] | None = None) -> ReleasedData:
        """The phase as a :class:`mprr.protocols.release.ReleasedData`: tallies as the fast path's
        from a release round's codes; a secure sum's tallies only, unlinkable.

        ``replayed`` flags the units the parties answered by replaying an earlier release
        (same attributes and matrix): they add no ledger entry.  After a secure sum there are
        no per-attribute ε shares: like the parties, the controller books each pair matrix's
        own ε (split equally among its attributes unless the matrix is a Kronecker product).
        """
        sizes = schema.sizes
        usizes = tuple(tuple(sizes[a] for a in u) for u in self.units)
        if self.codes is not None:
            return ReleasedData.randomized(self.phase, self.units, usizes, self.matrices, self.codes,
                                           replayed=None if replayed is None else tuple(bool(r) for r in replayed))
        return ReleasedData(phase=self.phase, units=self.units, unit_sizes=usizes, matrices=self.matrices, codes=None,
                            counts=self.counts, linkable=False, exact=not self.specs)
