"""A party's secure sum, driven for its host: the party's program over the party's endpoint.

The party is a pure handler (:mod:`parties.party`): on a
:class:`~parties.wire.requests.SecureSumStart` it hands its host a sans-I/O program
(:meth:`~parties.party.Party.secure_program`), or refuses.  The host owns the time and the I/O:
:func:`run_party_sum` drives that program over the party's endpoint
(:func:`parties.secure.drive.drive`: one ``asyncio.timeout`` per round) as a task of the host's
task group, and tells the party how it ended (:meth:`~parties.party.Party.end_secure_sum`).
"""

from __future__ import annotations

from mprr.errors import ProtocolError
from parties.party import Party
from parties.secure.drive import drive
from parties.transport import Endpoint
from parties.wire.requests import SecureSumStart

__all__ = ["run_party_sum"]


async def run_party_sum(party: Party, endpoint: Endpoint, start: SecureSumStart) -> None:
    """Run ``party``'s side of the secure sum ``start`` over ``endpoint``, to its end.

    A refusal ends here (the party logged it); a :class:`~mprr.errors.ProtocolError` of the
    program (a peer or the controller failed) aborts the party's session and is logged, never
    raised: the controller decides what a failed sum means.  Cancelled (the host stops), the
    party forgets its input and the cancellation propagates.
    """
    program = party.secure_program(start, endpoint.network)
    if program is None:
        return
    try:
        await drive(endpoint, program)
    except ProtocolError as exc:
        party.end_secure_sum(start.session, exc)
    except BaseException:
        party.end_secure_sum(start.session, None, ran=False)
        raise
    else:
        party.end_secure_sum(start.session, None)
