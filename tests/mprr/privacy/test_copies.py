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


def test_nested_containers_and_records_in_tuples_are_owned_at_any_depth() -> None:
    plain = _Plain(1)
    nested = {"a": [plain, {"b": [plain]}], "t": (1, plain), "f": (1, "x")}
    copied = own(nested)
    assert copied == nested and copied is not nested
    assert copied["a"] is not nested["a"] and copied["a"][1]["b"] is not nested["a"][1]["b"]
    assert copied["a"][0] is not plain and copied["a"][1]["b"][0] is not plain and copied["t"][1] is not plain
    assert copied["f"] is nested["f"]  # (a tuple of shared items: shared)
    copied["t"][1].x = 5
    assert plain.x == 1
    assert not shared([(1, plain)]) and shared([(1, "x"), (2, "y")]) and not shared([[1]])


def test_an_accountant_with_slots_is_refused() -> None:
    import pytest

    from mprr.errors import ConfigurationError
    from mprr.privacy.accountant import PrivacyAccountant

    with pytest.raises(ConfigurationError, match="Tagged declares __slots__: a PrivacyAccountant keeps its state"):
        class Tagged(PrivacyAccountant):
            __slots__ = ("tag",)
