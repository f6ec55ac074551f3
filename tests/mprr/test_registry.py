"""The one registry pattern (mprr.registry): names, aliases, refusals, replacement."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from mprr.errors import ConfigurationError
from mprr.registry import Registry, name_key


@dataclass(frozen=True)
class Thing:
    name: str
    aliases: tuple[str, ...] = ()
    value: int = 0


def test_lookup_by_name_or_alias_ignores_case_spaces_and_underscores() -> None:
    things: Registry[Thing] = Registry("thing")
    a = things.register(Thing("Big-Thing", ("large",), 1))
    assert things.lookup("big_thing") is a and things.lookup(" BIG thing ") is a and things.lookup("Large") is a
    assert name_key(" A_b c ") == "a-b-c"
    assert list(things) == ["Big-Thing"] and things["Big-Thing"] is a and len(things) == 1
    assert things.names() == ("Big-Thing",) and things.accepts("LARGE") and not things.accepts(3)
    assert "large" not in things  # the mapping is by canonical name; lookup() takes aliases


def test_unknown_names_and_taken_names_are_refused_naming_them() -> None:
    things: Registry[Thing] = Registry("thing")
    things.register(Thing("one", ("uno",)))
    with pytest.raises(ConfigurationError, match=r"thing must be one of \['one'\], got 'two'"):
        things.lookup("two")
    with pytest.raises(ConfigurationError, match=r"thing must be one of \['one'\], got 7"):
        things.lookup(7)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=r"thing name 'uno' is already registered \(by 'one'\); pass "
                                                 r"replace=True"):
        things.register(Thing("two", ("UNO",)))
    with pytest.raises(ConfigurationError, match=r"thing 'one' is already registered"):
        things.register(Thing("one"))
    with pytest.raises(ConfigurationError, match=r"a thing needs a non-empty string name, got ''"):
        things.register(Thing(""))
    assert things.names() == ("one",)  # nothing half-registered


def test_replace_and_unregister() -> None:
    things: Registry[Thing] = Registry("thing")
    things.register(Thing("one", ("uno",), 1))
    new = things.register(Thing("one", ("eins",), 2), replace=True)
    assert things.lookup("eins") is new and not things.accepts("uno")
    assert things.unregister("eins") is new and len(things) == 0 and not things.accepts("one")
