"""parties.dropout: the error the "fail" policy raises for a round, and what "exclude" leaves out."""

from __future__ import annotations

import pytest

from mprr.errors import MessageError, RoundTimeout
from parties.dropout import ReleaseRefused, describe_actors, dropout_error, exclusions
from parties.wire.messages import Refusal


def test_silent_parties_come_first_then_refusals_then_faulty_parties() -> None:
    refusals = {4: Refusal(1, "budget", 2.0, 0.5)}
    malformed = {6: "malformed reply [9]"}
    silent = dropout_error("p", 1, range(8), (2, 3), refusals, malformed, timeout=0.5, retries=2)
    assert isinstance(silent, RoundTimeout) and silent.missing == (2, 3) and silent.phase == "p"
    with pytest.raises(RoundTimeout, match=r"2 of 8 parties did not answer request 1 within 0.5 s \(after 2 retries\): "
                                           r"party 2, party 3"):
        raise silent
    refused = dropout_error("p", 1, range(8), (), refusals, malformed, timeout=0.5, retries=0)
    assert isinstance(refused, ReleaseRefused) and dict(refused.refusals) == refusals
    with pytest.raises(ReleaseRefused, match=r"1 of 8 parties refused request 1; party 4: budget"):
        raise refused
    faulty = dropout_error("p", 1, range(8), (), {}, malformed, timeout=0.5, retries=0)
    assert isinstance(faulty, MessageError) and faulty.parties == (6,)
    with pytest.raises(MessageError, match=r"1 of 8 parties are faulty .*: party 6; party 6: malformed reply \[9\]"):
        raise faulty
    assert dropout_error("p", 1, range(8), (), {}, {}, timeout=0.5, retries=0) is None


def test_exclusions_say_why_each_party_was_left_out() -> None:
    out = exclusions("p", (1,), {2: Refusal(1, "budget", 2.0, 0.5)}, {3: "sent garbage"}, timeout=0.5)
    assert out == {1: "p: silent (no answer within 0.5 s)", 2: "p: refused (budget)", 3: "p: sent garbage"}


def test_long_lists_of_actors_are_cut() -> None:
    assert describe_actors(list(range(12)), limit=2) == "party 0, party 1 and 10 more"
