"""Encoded sizes of messages, one encoding per shape (:class:`SizeByShape`), for the counting
driver (:func:`parties.secure.counting.count`)."""

from __future__ import annotations

from typing import Any

import numpy as np

from parties.wire.codec import Message, encode

__all__ = ["SizeByShape"]


class SizeByShape:
    """Encoded sizes, one encoding per *shape*: messages of one kind whose fields have the same
    shapes (an array's dtype and shape, a string's UTF-8 length, a byte string's length, a
    tuple's items' shapes; numbers are fixed-size) have the same encoded size, because the
    codec's layout (:mod:`parties.wire.codec`: fixed-size numbers, length-prefixed strings,
    bytes and tuples, arrays as a fixed head and their data) depends on nothing else.  So a
    count sizes one message per shape and multiplies (``tests/parties/secure/test_program.py``
    checks it against the codec on every message of real sums).
    """

    def __init__(self) -> None:
        self._sizes: dict[tuple[Any, ...], int] = {}

    def __call__(self, message: Message) -> int:
        key = (type(message), *[_shape(getattr(message, name)) for name, _ in message.FIELDS])
        size = self._sizes.get(key)
        if size is None:
            size = self._sizes[key] = len(encode(message))
        return size


def _shape(value: Any) -> Any:
    kind = type(value)
    if kind is np.ndarray:
        return (value.dtype, value.shape)  # (the dtype object: equal dtypes hash alike)
    if kind is str:
        return ("s", len(value) if value.isascii() else len(value.encode()))
    if kind is bytes:
        return ("b", len(value))
    if kind is tuple:
        return ("t", *[_shape(v) for v in value])
    if isinstance(value, np.ndarray):  # (subclasses of the above, rare)
        return (value.dtype, value.shape)
    if isinstance(value, str):
        return ("s", len(value.encode()))
    if isinstance(value, bytes):
        return ("b", len(value))
    if isinstance(value, tuple):
        return ("t", *[_shape(v) for v in value])
    return kind
