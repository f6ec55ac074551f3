"""A secure sum is one agreed request (parties.secure.agreement): equivocation and poisoned inputs fail.

The attacks run with real party actors (a memory-runtime shard, ``tests/parties/test_secure_attacks._actors``)
and a controller that deviates; every run is on the virtual clock.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from mprr.errors import ProtocolError
from mprr.matrices import RandomizationMatrix
from mprr.protocols.steps import MatrixSpec
from parties.transport import CONTROLLER
from parties.secure.agreement import DIGEST_BYTES, agreed_session, check_unit_totals, request_digest
from parties.secure.graph import GraphEngine
from parties.secure.masked import MaskedEngine
from parties.secure.paper import PaperEngine
from parties.wire.messages import Ack
from parties.wire.requests import SecureRelease, SecureSumStart
from tests.parties.test_secure_attacks import _actors, _serve

ENGINES = {
    "paper": lambda: PaperEngine(round_timeout=0.3),
    "graph": lambda: GraphEngine(round_timeout=0.3),
    "masked": lambda: MaskedEngine(round_timeout=0.3),
    "masked-sparse": lambda: MaskedEngine(topology="regular", degree=2, round_timeout=0.3),
}
CONSTANT = MatrixSpec.dense(RandomizationMatrix(np.eye(4)[[0, 0, 0, 0]]))
"""Every value to cell 0: an input the controller knows in advance (ε = 0 under eq. (4))."""


def _release(exact: bool, spec: MatrixSpec | None = None) -> SecureRelease:
    families, params = ((), ()) if spec is None else ((spec.family,), (spec.params,))
    return SecureRelease(1, "dependence", "s", ((0, 1),), ((0, 1),), exact, families, params)


def test_the_session_id_is_a_digest_of_everything_the_party_was_asked() -> None:
    exact = _release(True)
    start = SecureSumStart(1, "s", "graph", ((0, 5),))
    base = agreed_session(request_digest(exact), start)
    assert base.startswith("s#") and len(base) == len("s#") + 2 * DIGEST_BYTES
    assert agreed_session(request_digest(_release(True)), SecureSumStart(1, "s", "graph", ((0, 5),))) == base
    changed = [
        (_release(False, MatrixSpec.grr(2.0)), start),
        (_release(False, CONSTANT), start),
        (SecureRelease(2, "dependence", "s", ((0, 1),), ((0, 1),), True), start),
        (SecureRelease(1, "other", "s", ((0, 1),), ((0, 1),), True), start),
        (exact, SecureSumStart(1, "s", "masked", ((0, 5),))),
        (exact, SecureSumStart(1, "s", "graph", ((0, 4),))),
        (exact, SecureSumStart(1, "t", "graph", ((0, 5),))),
    ]
    sessions = {agreed_session(request_digest(r), s) for r, s in changed}
    assert len(sessions) == len(changed) and base not in sessions


@pytest.mark.parametrize("dependence", ["4.2", "4.3"])
@pytest.mark.parametrize("target", ["victim", "others"])
@pytest.mark.parametrize("name", list(ENGINES))
async def test_equivocation_isolating_one_party_never_sums_its_input(name: str, target: str,
                                                                     dependence: str) -> None:
    """Issue 25, attack 1.  Before: one session id, the victim asked ``exact=True`` (or a fresh
    ε = 2 draw), the 4 others "randomize through a constant matrix" (every input to cell 0):
    the sum minus 4 e_0 was the victim's record.  Now the victim's session id differs from the
    others': whichever of the two the controller runs, no sum holds the victim's input."""
    engine = ENGINES[name]()
    n, victim = 5, 0
    net, parties, ctl = _actors(n, engine)
    ep = net.endpoint(CONTROLLER)
    asked = _release(True) if dependence == "4.2" else _release(False, MatrixSpec.grr(2.0))
    decoy = _release(False, CONSTANT)
    start = SecureSumStart(1, "s", engine.name, ((0, n),))
    session = agreed_session(request_digest(asked if target == "victim" else decoy), start)

    async def body():
        for p in range(n):
            await ep.send(p, asked if p == victim else decoy, phase="dependence")
        assert len(await ep.gather(range(n), kinds=(Ack,), phase="dependence", timeout=1.0)) == n
        await ep.broadcast(range(n), start, phase="dependence")
        try:
            return await engine.controller(ep, engine.context(range(n), 4, network=net, session=session))
        except ProtocolError:
            return None
        finally:
            await asyncio.sleep(1.0)  # (virtual) the parties' own round timeouts pass

    outcome = await _serve(net, parties, body)
    if outcome is not None:  # masked, the others' session: a sum over the decoys only
        assert target == "others" and name.startswith("masked")
        assert victim not in outcome.contributors
        assert outcome.total.tolist() == [len(outcome.contributors), 0, 0, 0]
    assert parties[victim].errors and all("secure sum 's'" in e for e in parties[victim].errors)
    # the victim waited for peers in its own session and timed out: nothing of it was unmasked
    assert any(w in e for e in parties[victim].errors for w in ("timed out", "got no")), parties[victim].errors
    assert parties[victim].accountant.session_state("s") == "aborted"


def test_a_sum_whose_units_do_not_total_the_contributors_is_refused() -> None:
    total = np.array([3, 2, 1, 0, 6, 0], dtype=np.int64)
    check_unit_totals(total, [4, 2], 6, session="s")  # 6 one-hot records in each unit
    ones = total + 1  # a party that committed an all-ones vector
    with pytest.raises(ProtocolError, match=r"secure sum 's': unit-total check failed: unit 0 of 2 totals 10, "
                                            r"but every one of the 6 contributors .* \(2 units fail\)"):
        check_unit_totals(ones, [4, 2], 6, session="s")
    huge = total.copy()
    huge[1] += 1 << 31  # a party that skipped its own range check
    with pytest.raises(ProtocolError, match=r"unit 0 of 2 totals 2147483654"):
        check_unit_totals(huge, [4, 2], 6, session="s")
    with pytest.raises(ProtocolError, match=r"the sum has 6 cells, the request's units 5"):
        check_unit_totals(total, [4, 1], 6, session="s")
