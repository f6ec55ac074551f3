"""mprr.privacy.copies: mutable records owned, everything else shared; state keys by content or identity."""

from __future__ import annotations

from dataclasses import dataclass

from mprr.privacy.copies import own, shared, state_key
from mprr.privacy.ledger import Ledger


@dataclass(frozen=True)
class _Frozen:
    x: int


@dataclass
class _Plain:
    x: int


@dataclass
class _Slotted:
    __slots__ = ("x",)
    x: int


def test_mutable_records_are_copied_and_everything_else_shared() -> None:
    frozen, plain, slotted = _Frozen(1), _Plain(2), _Slotted(3)
    assert own(frozen) is frozen and own(5) == 5 and own("s") == "s"
    for record in (plain, slotted):
        copied = own(record)
        assert copied is not record and copied == record and type(copied) is type(record)
        copied.x = 9
        assert record.x != 9
    assert shared([frozen, 1, "a"]) and not shared([frozen, plain]) and not shared([slotted])


def test_state_keys_compare_content_and_identify_other_objects() -> None:
    ledger = Ledger.empty()
    assert state_key([1, "a", (2.0, None)]) == state_key([1, "a", (2.0, None)])
    assert state_key({"p": frozenset({1, 2})}) == state_key({"p": frozenset({2, 1})})
    assert state_key(ledger) == state_key(Ledger.empty())  # (no releases: equal content)
    plain = _Plain(1)
    assert state_key(plain) == state_key(plain) != state_key(_Plain(1))  # (a record: by identity)
    assert state_key([1]) != state_key((1,))
