"""``--set KEY=VALUE``: one command-line override of a scenario parameter, read as TOML.

The value is TOML (``n=500``, ``'dependence="4.2"'``, ``'sizes=[4, 3]'``); a bare word is a
string.  A value TOML cannot read gets advice that fits the mistake (an unclosed list, unquoted
strings in a list, doubled commas), never a guess that changes its meaning.
"""

from __future__ import annotations

import tomllib
from typing import Any

from mprr.errors import ConfigurationError

__all__ = ["parse_override"]


def _is_toml_value(text: str) -> bool:
    """Whether ``text`` alone is a TOML value (``4``, ``"a"``; not a bare word)."""
    try:
        tomllib.loads(f"v = {text}")
    except tomllib.TOMLDecodeError:
        return False
    return True


def _bad_list(key: str, value: str) -> str:
    """What is wrong with ``--set key=value``, a list TOML cannot read, and the fix if one is clear."""
    head = f"--set {key}: value {value!r} is not a valid TOML list; "
    shell = "the whole argument single-quoted for the shell"
    missing = value.count("[") - value.count("]")
    if missing > 0 and _is_toml_value(value + "]" * missing):
        return head + f"a list ends with ']', and {shell}: --set '{key}={value + ']' * missing}'"
    if value.count("[") == 1 and value.count("]") <= 1 and "{" not in value:  # a flat list
        closed = value.endswith("]")
        items = [i.strip().strip("\"'") for i in value[1:-1 if closed else None].split(",") if i.strip()]
        fixed = [i if _is_toml_value(i) else f'"{i}"' for i in items]
        what = [*([] if closed else ["a list ends with ']'"]),
                *(["strings inside a list must be quoted"] if fixed != items else []),
                *([] if fixed != items or not closed else ["items are separated by single commas"])]
        return head + f"{', '.join(what)}, and {shell}: --set '{key}=[{', '.join(fixed)}]'"
    return head + f"write it as in a TOML file (e.g. [[0, 1], [2, 3]] or [\"a\", \"b\"]), with {shell}"


def parse_override(text: str) -> dict[str, Any]:
    """Parse one ``--set KEY=VALUE`` (VALUE in TOML syntax; bare words are strings).

    ``"n=500"`` → ``{"n": 500}``; ``"sweep.epsilons=[0.5, 1]"`` → ``{"sweep": {"epsilons": [0.5, 1.0]}}``.
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part.strip() for part in key.split(".")):
        raise ConfigurationError(f"--set expects KEY=VALUE (e.g. n=500), got {text!r}")
    value = value.strip()
    try:
        parsed = tomllib.loads(f"v = {value}")["v"]
    except tomllib.TOMLDecodeError:
        if value.startswith("["):
            raise ConfigurationError(_bad_list(key, value)) from None
        if not value or any(c in value for c in "[]{}\"'="):
            raise ConfigurationError(
                f"--set {key}: value {value!r} is not valid TOML (a single string may be a bare "
                f"word; otherwise write it quoted: --set '{key}=\"...\"')"
            ) from None
        parsed = value
    out: dict[str, Any] = {}
    node = out
    parts = [p.strip() for p in key.split(".")]
    for part in parts[:-1]:
        node = node.setdefault(part, {})
    node[parts[-1]] = parsed
    return out
