"""Tests of ``parties.plugins``: loading a plugin, and the trust it gives its classes on the channel."""

from __future__ import annotations

import pytest

from mprr.errors import ConfigurationError, MessageError
from parties import plugins
from parties.channel import dumps, loads
from parties.plugins import load_plugins, loaded_plugins, trusted


class Shipped:
    """A class of this test module: a plugin's class, once the module is loaded as a plugin."""

    def __init__(self, value: int) -> None:
        self.value = value


def function() -> None:
    """A function of this test module (never rebuilt from a record)."""


@pytest.fixture(autouse=True)
def no_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no plugin loaded, and leaves none behind."""
    monkeypatch.setattr(plugins, "_LOADED", {})


def test_a_loaded_plugins_classes_cross_the_channel_and_no_others() -> None:
    record = dumps("setup", Shipped(7))
    with pytest.raises(MessageError, match=r"control record names tests\.parties\.test_plugins\.Shipped; only "
                                           r"classes of mprr, parties and the plugins this process loaded"):
        loads(record)
    load_plugins([__name__])
    assert loaded_plugins() == (__name__,) and trusted(__name__) and not trusted("tests.parties")
    tag, body = loads(record)
    assert tag == "setup" and isinstance(body, Shipped) and body.value == 7
    with pytest.raises(MessageError, match=r"names tests\.parties\.test_plugins\.function"):
        loads(dumps("setup", function))  # a plugin's functions stay refused: only its classes are rebuilt


def test_loading_is_idempotent_and_ordered() -> None:
    load_plugins(["tests.virtual_clock", __name__, "tests.virtual_clock"])
    assert loaded_plugins() == ("tests.virtual_clock", __name__)


@pytest.mark.parametrize(("modules", "message"), [
    (["tests/own_plugin.py"], r"--plugin must be a dotted module name \(e\.g\. my_package\.protocols\), "
                              r"got 'tests/own_plugin\.py'"),
    ([""], r"--plugin must be a dotted module name .*got ''"),
    (["no_such_plugin"], r"--plugin no_such_plugin: no module named 'no_such_plugin' \(is it on PYTHONPATH, "
                         r"or installed\?\)"),
    (["tests.no_such_module"], r"--plugin tests\.no_such_module: no module named 'tests\.no_such_module'"),
])
def test_a_bad_plugin_name_is_refused_naming_it(modules: list[str], message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        load_plugins(modules)
    assert loaded_plugins() == ()
