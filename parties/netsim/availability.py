"""Availability: which parties are away, per round (a dropout probability) or per time (traces).

A party that is *away* loses every message it would send and every message that would reach
it (the virtual-time runtime drops them at the router, :mod:`parties.netsim.network`); the
controller's round then ends by its timeout without that party (it *missed* the round).

- **Dropout per round**: with probability ``dropout`` a party is away for a whole round,
  independently per party and round.  Round ``r`` (0-based, in the order the run's phases first
  appear) draws one uniform per party from the run's ``rng`` when it starts (:meth:`Availability.away`),
  so the same seed gives the same parties away in the same rounds.
- **On/off traces** (:class:`Traces`): for each listed party, the intervals of virtual time
  (seconds from the run's start) when it is online; a listed party is away outside them,
  a party not listed is always online.  CSV form (:meth:`Traces.from_csv`), one interval a row::

      party,online_from,online_until
      0,0,12.5
      0,30,1e9
      7,2.0,4.0

Both apply together: a party is away when either says so.
"""

from __future__ import annotations

import csv
import io
import math
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mprr.domain import check_int, check_real, check_unit
from mprr.errors import ConfigurationError

__all__ = ["Availability", "Traces", "expected_missing"]

_COLUMNS = ("party", "online_from", "online_until")


@dataclass(frozen=True, eq=False)
class Traces:
    """Online intervals per party (module docstring).

    Parameters
    ----------
    intervals
        ``{party: [(online_from, online_until), ...]}`` in seconds; intervals of a party must
        not overlap (they are sorted here).
    """

    intervals: Mapping[int, tuple[tuple[float, float], ...]]
    _starts: dict[int, list[float]] = field(init=False, repr=False)
    _ends: dict[int, list[float]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        starts: dict[int, list[float]] = {}
        ends: dict[int, list[float]] = {}
        for party, spans in self.intervals.items():
            check_int("trace party", party, 0)
            ordered = sorted((check_real("online_from", a), check_real("online_until", b, allow_inf=True))
                             for a, b in spans)
            for a, b in ordered:
                if not a < b:
                    raise ConfigurationError(f"party {party}: online_from must be < online_until, got {a!r}, {b!r}")
            for (_, b), (a, _) in zip(ordered, ordered[1:]):
                if a < b:
                    raise ConfigurationError(f"party {party}: online intervals overlap at {a!r} (< {b!r})")
            starts[party] = [a for a, _ in ordered]
            ends[party] = [b for _, b in ordered]
        object.__setattr__(self, "_starts", starts)
        object.__setattr__(self, "_ends", ends)

    def online(self, party: int, t: float) -> bool:
        """Whether ``party`` is online at time ``t`` (unlisted parties always are)."""
        starts = self._starts.get(party)
        if starts is None:
            return True
        k = bisect_right(starts, t) - 1
        return k >= 0 and t < self._ends[party][k]

    @property
    def parties(self) -> frozenset[int]:
        """The parties the traces list."""
        return frozenset(self._starts)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping[str, str]]) -> Traces:
        """Traces from CSV rows with the columns ``party, online_from, online_until``."""
        spans: dict[int, list[tuple[float, float]]] = {}
        for line, row in enumerate(rows, start=2):
            missing = [c for c in _COLUMNS if c not in row or row[c] in (None, "")]
            if missing:
                raise ConfigurationError(f"trace row {line}: missing {missing}; columns are {', '.join(_COLUMNS)}")
            try:
                party, a, b = int(row["party"]), float(row["online_from"]), float(row["online_until"])
            except ValueError:
                raise ConfigurationError(f"trace row {line}: party must be an integer and the times numbers, "
                                         f"got {dict(row)!r}") from None
            spans.setdefault(party, []).append((a, b))
        return cls({p: tuple(s) for p, s in spans.items()})

    @classmethod
    def from_csv(cls, source: str | Path) -> Traces:
        """Traces from a CSV file (or CSV text containing a newline) with a header row."""
        text = str(source) if isinstance(source, str) and "\n" in source else Path(source).read_text()
        reader = csv.DictReader(io.StringIO(text))
        if reader.fieldnames is None or not set(_COLUMNS) <= {f.strip() for f in reader.fieldnames}:
            raise ConfigurationError(f"trace CSV must have the header {','.join(_COLUMNS)}, got {reader.fieldnames!r}")
        return cls.from_rows({k.strip(): v.strip() for k, v in row.items() if k is not None} for row in reader)


@dataclass(frozen=True)
class Availability:
    """Who is away (module docstring).

    Parameters
    ----------
    dropout
        Probability that a party is away for a round, in [0, 1).
    traces
        Online intervals (:class:`Traces`), or ``None``.
    """

    dropout: float = 0.0
    traces: Traces | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dropout", check_unit("Availability.dropout", self.dropout, high_open=True,
                                                       why=" (a probability; 1 would leave no party)"))

    def away(self, n: int, *, rng: np.random.Generator) -> np.ndarray:
        """One round's dropouts: a boolean vector of ``n`` parties (draws ``n`` uniforms from
        ``rng`` when ``dropout`` > 0, none otherwise)."""
        if self.dropout == 0:
            return np.zeros(n, dtype=bool)
        return rng.random(n) < self.dropout

    def online(self, party: int, t: float) -> bool:
        """Whether the traces have ``party`` online at time ``t``."""
        return self.traces is None or self.traces.online(party, t)


def expected_missing(n: int, dropout: float) -> tuple[float, float]:
    """Mean and standard deviation of the number of parties away in one round (binomial)."""
    return n * dropout, math.sqrt(n * dropout * (1 - dropout))
