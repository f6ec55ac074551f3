"""``--set KEY=VALUE`` parsing: TOML values, bare words, and advice that fits a malformed list."""

from __future__ import annotations

import pytest

from mprr.errors import ConfigurationError
from scenarios.overrides import parse_override


def test_parse_override() -> None:
    assert parse_override("n=500") == {"n": 500}
    assert parse_override("sub.tv = 3") == {"sub": {"tv": 3}}
    assert parse_override("sizes=[2, 3]") == {"sizes": [2, 3]}
    assert parse_override("method=4.2") == {"method": 4.2}
    assert parse_override('method="4.2"') == {"method": "4.2"}
    assert parse_override("label=hello") == {"label": "hello"}
    assert parse_override("adjust=true") == {"adjust": True}
    for bad in ("n", "=3", "a..b=1", "x=[1,"):
        with pytest.raises(ConfigurationError, match=r"--set"):
            parse_override(bad)
    with pytest.raises(ConfigurationError, match=r"--set x: value '\[a, 2' is not a valid TOML list; a list ends "
                                                 r"with '\]', .*--set 'x=\[\"a\", 2\]'"):
        parse_override("x=[a, 2")
    with pytest.raises(ConfigurationError, match=r"items are separated by single commas, .*--set 'x=\[1, 2\]'"):
        parse_override("x=[1,,2]")
    with pytest.raises(ConfigurationError, match=r"a list ends with '\]', .*--set 'x=\[\[0,1\],\[2\]\]'"):
        parse_override("x=[[0,1],[2]")
    with pytest.raises(ConfigurationError, match=r"write it as in a TOML file \(e\.g\. \[\[0, 1\], \[2, 3\]\] or "
                                                 r"\[\"a\", \"b\"\]\), with the whole argument single-quoted"):
        parse_override("x=[[0,1],[a]")
