"""Copies of a party's privacy state, one per party, and the key that says when two states are
equal (:meth:`~mprr.privacy.accountant.PrivacyAccountant.copies`,
:meth:`~mprr.privacy.accountant.PrivacyAccountant.state_key`): a host stepping many parties
keeps one accountant for all those whose states are equal, and gives each its own copy once
their states part.

A copy shares what cannot change (numbers, strings, tuples, frozensets, frozen records, the
immutable :class:`~mprr.privacy.ledger.Ledger`) and owns every list, dict, set and mutable
dataclass record (a secure-sum session's state, say), at any depth of lists, dicts and sets, so
that what one party does never shows in another's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Sequence
from dataclasses import is_dataclass
from enum import Enum
from typing import Any

from mprr.privacy.ledger import Ledger

__all__ = ["own", "shared", "state_key"]


def state_key(value: Any) -> Any:
    """What identifies a field of a state for sharing: its content for containers and ledgers (a
    ledger's releases compared by identity: the parties of a host share their release objects),
    the value for scalars, the identity of any other object (never merges two states that could
    differ)."""
    if value is None or isinstance(value, (bool, int, float, str, Enum)):
        return value
    if isinstance(value, Ledger):
        return (Ledger, tuple(map(id, value.releases)))
    if isinstance(value, (list, tuple)):
        return (type(value), tuple(state_key(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((state_key(k), state_key(v)) for k, v in value.items()))
    if isinstance(value, (frozenset, set)) and all(isinstance(v, (bool, int, float, str)) for v in value):
        return (type(value), frozenset(value))
    return (object, id(value))


def shared(values: Iterable[Any]) -> bool:
    """Whether every value of ``values`` is shared as it is by a copy (:func:`own` would return each
    as it is): decided once per type of value, and per value for tuples (by their items)."""
    items: Sequence[Any] = values if isinstance(values, (list, tuple)) else list(values)
    for kind in set(map(type, items)):
        how = _kind(kind)
        if how == _TUPLE:
            tuples = [v for v in items if isinstance(v, tuple) and type(v) is kind]
            if not all(map(shared, tuples)):
                return False
        elif how:
            return False
    return True


def own(value: Any) -> Any:
    """``value`` as a copy of the state holding it owns it: the value itself when it cannot change,
    else a copy (a list, dict or set with its own copies of its values, a mutable dataclass record)."""
    kind = type(value)
    how = _kind(kind)
    if not how:
        return value
    if how == _PLAIN:  # (copy.copy's result, without its protocol lookups)
        out = object.__new__(kind)
        out.__dict__.update(value.__dict__)
        return out
    if how == _CONTAINER:
        if isinstance(value, dict):
            return type(value)((k, own(v)) for k, v in value.items())
        return type(value)(map(own, value))
    if how == _TUPLE:
        if shared(value):
            return value
        items = map(own, value)
        return tuple(items) if kind is tuple else kind._make(items) if hasattr(kind, "_make") else kind(items)
    return copy.copy(value)


_SHARED, _PLAIN, _RECORD, _CONTAINER, _TUPLE = 0, 1, 2, 3, 4
_KINDS: dict[type, int] = {}  # type -> how own() treats its instances


def _kind(kind: type) -> int:
    """How :func:`own` treats instances of ``kind`` (found once per type): shared as they are
    (anything but a list, dict, set, tuple or mutable dataclass record), a list, dict or set
    (copied with its values owned), a tuple (shared unless an item is not), a plain mutable
    dataclass record (no ``__slots__``, no copy or pickle hook of its own, so :func:`copy.copy`
    makes a new instance with the same ``__dict__``) or another one (copied by :func:`copy.copy`)."""
    how = _KINDS.get(kind)
    if how is not None:
        return how
    if issubclass(kind, (list, dict, set)):
        how = _CONTAINER
    elif issubclass(kind, tuple):
        how = _TUPLE
    elif not is_dataclass(kind) or getattr(kind, "__dataclass_params__").frozen:
        how = _SHARED
    else:
        plain = (all("__slots__" not in vars(c) for c in kind.__mro__ if c is not object)
                 and not hasattr(kind, "__copy__") and not hasattr(kind, "__setstate__")
                 and all(getattr(kind, hook, None) is getattr(object, hook, None)
                         for hook in ("__reduce_ex__", "__reduce__", "__getstate__", "__new__")))
        how = _PLAIN if plain else _RECORD
    _KINDS[kind] = how
    return how
