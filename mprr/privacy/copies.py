"""Copies of a party's privacy state, one per party, and the key that says when two states are
equal (:meth:`~mprr.privacy.accountant.PrivacyAccountant.copies`,
:meth:`~mprr.privacy.accountant.PrivacyAccountant.state_key`): a host stepping many parties
keeps one accountant for all those whose states are equal, and gives each its own copy once
their states part.

A copy shares what cannot change (numbers, strings, frozen records, the immutable
:class:`~mprr.privacy.ledger.Ledger`) and owns its containers and every mutable record in them
(a secure-sum session's state, say), so that what one party does never shows in another's.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
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
    """Whether no value of ``values`` is a mutable record (:func:`own` would return each as it is)."""
    for kind in set(map(type, values)):
        if _record_kind(kind):
            return False
    return True


def own(value: Any) -> Any:
    """``value``, or a copy of it when it is a mutable dataclass record (one per owner)."""
    kind = type(value)
    how = _record_kind(kind)
    if not how:
        return value
    if how == 1:  # (copy.copy's result, without its protocol lookups)
        out = object.__new__(kind)
        out.__dict__.update(value.__dict__)
        return out
    return copy.copy(value)


_RECORD: dict[type, int] = {}  # type -> 0: shared as it is, 1: a plain mutable record, 2: any other mutable one


def _record_kind(kind: type) -> int:
    """How :func:`own` treats instances of ``kind`` (found once per type): 0 (not a mutable
    dataclass record: shared), 1 (a plain one: no ``__slots__``, no copy or pickle hook of its
    own, so :func:`copy.copy` makes a new instance with the same ``__dict__``) or 2 (copied by
    :func:`copy.copy`)."""
    how = _RECORD.get(kind)
    if how is not None:
        return how
    if not is_dataclass(kind) or getattr(kind, "__dataclass_params__").frozen:
        how = 0
    else:
        plain = (all("__slots__" not in vars(c) for c in kind.__mro__ if c is not object)
                 and not hasattr(kind, "__copy__") and not hasattr(kind, "__setstate__")
                 and all(getattr(kind, hook, None) is getattr(object, hook, None)
                         for hook in ("__reduce_ex__", "__reduce__", "__getstate__", "__new__")))
        how = 1 if plain else 2
    _RECORD[kind] = how
    return how
