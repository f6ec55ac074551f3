"""One exception hierarchy for the whole project.

Every error raised on purpose by ``mprr``, ``parties`` or ``scenarios`` is a subclass of
:class:`MprrError`.  Messages name the parameter, the bad value and what is allowed, e.g.
``"epsilon must be finite and > 0, got -1.0"``.

Hierarchy::

    MprrError
    ├── ConfigurationError        (also a ValueError)  bad parameter / input value
    │   ├── DataError                                  bad data set (codes, schema, file)
    │   └── DomainTooLargeError                        a dense object would not fit
    ├── EstimationError                                singular matrix, no convergence, ...
    └── ProtocolError                                  the distributed run went wrong
        ├── MessageError                               malformed / unexpected message
        ├── PartyDropped                               a party crashed or stopped answering
        ├── RoundTimeout                               a round did not complete in time
        ├── SecureSumAborted                           too few survivors to recover a sum
        └── RuntimeFailure                             a runtime's workers could not start / were lost
"""

from __future__ import annotations

__all__ = [
    "MprrError",
    "ConfigurationError",
    "DataError",
    "DomainTooLargeError",
    "EstimationError",
    "ProtocolError",
    "MessageError",
    "PartyDropped",
    "RoundTimeout",
    "SecureSumAborted",
    "RuntimeFailure",
]


class MprrError(Exception):
    """Base class of every error raised on purpose by this project."""


class ConfigurationError(MprrError, ValueError):
    """A parameter or input has a value that is not allowed.

    ``parameter`` names the one parameter whose value was refused, where there is one (a value
    type's check, :mod:`mprr.parameters`), so that a caller who knows it under another name
    (a scenario's TOML key) can say so; ``None`` for a rule between parameters.
    """

    def __init__(self, *args: object, parameter: str | None = None) -> None:
        super().__init__(*args)
        self.parameter = parameter


class DataError(ConfigurationError):
    """A data set, schema or data file is invalid (unknown category, missing column, empty)."""


class DomainTooLargeError(ConfigurationError):
    """A dense representation of a domain was requested that would not fit in memory.

    Parameters
    ----------
    cells
        Number of cells the operation would need.
    limit
        Largest number of cells allowed.
    """

    def __init__(self, message: str, *, cells: int, limit: int) -> None:
        super().__init__(message)
        self.cells = int(cells)
        self.limit = int(limit)


class EstimationError(MprrError):
    """An estimate cannot be computed (singular matrix, no convergence, inconsistent input)."""


class ProtocolError(MprrError):
    """The distributed protocol could not complete correctly."""


class MessageError(ProtocolError):
    """A message is malformed, of an unknown kind, or not expected in the current phase.

    Parameters
    ----------
    parties
        The senders held responsible, when known (ascending).
    """

    def __init__(self, message: str, *, parties: tuple[int, ...] = ()) -> None:
        super().__init__(message)
        self.parties = tuple(parties)


class PartyDropped(ProtocolError):
    """One or more parties crashed or stopped answering.

    Parameters
    ----------
    parties
        Identifiers of the parties that dropped.
    """

    def __init__(self, message: str, *, parties: tuple[int | str, ...] = ()) -> None:
        super().__init__(message)
        self.parties = tuple(parties)


class RoundTimeout(ProtocolError):
    """A protocol round did not complete before its deadline.

    Parameters
    ----------
    phase
        Name of the protocol phase / round that timed out.
    timeout
        The deadline in (simulated or wall-clock) seconds.
    missing
        Identifiers of the actors whose answer was still missing.
    """

    def __init__(
        self,
        message: str,
        *,
        phase: str = "",
        timeout: float | None = None,
        missing: tuple[int | str, ...] = (),
    ) -> None:
        super().__init__(message)
        self.phase = phase
        self.timeout = timeout
        self.missing = tuple(missing)


class SecureSumAborted(ProtocolError):
    """A secure sum cannot be recovered (fewer survivors than the threshold).

    Parameters
    ----------
    survivors
        Number of parties still alive.
    threshold
        Minimum number of survivors needed.
    """

    def __init__(self, message: str, *, survivors: int, threshold: int) -> None:
        super().__init__(message)
        self.survivors = int(survivors)
        self.threshold = int(threshold)


class RuntimeFailure(ProtocolError):
    """A runtime could not start or keep its party hosts (worker exited, no connection, no Ray)."""
