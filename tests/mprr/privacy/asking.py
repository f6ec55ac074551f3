"""Test helpers: one release asked of an accountant on its own (``PrivacyAccountant.answer``)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mprr.privacy import Ask, Decision, PrivacyAccountant, Refusal, RefusalReason, Release


def ask(acc: PrivacyAccountant, release: Release, plan: Sequence | None = None) -> Decision | Refusal:
    """The answer to a request for ``release`` alone (announcing ``plan`` for its phase): its
    :class:`Decision`, or the :class:`Refusal`."""
    answer = acc.answer(Ask((release,), release.phase, release.request_id, plan=plan))
    return answer if isinstance(answer, Refusal) else answer[0]


def charge(acc: PrivacyAccountant, release: Release, plan: Sequence | None = None) -> Decision:
    """:func:`ask`, which must grant or replay the release."""
    answer = ask(acc, release, plan)
    assert isinstance(answer, Decision), answer
    return answer


def refused(acc: PrivacyAccountant, release: Release, reason: RefusalReason, match: str = "",
            plan: Sequence | None = None) -> Refusal:
    """:func:`ask`, which must refuse for ``reason`` with a message matching ``match``."""
    answer = ask(acc, release, plan)
    assert isinstance(answer, Refusal) and answer.reason is reason, answer
    assert re.search(match, answer.message), answer.message
    return answer
