"""The constructor of a message kind, generated from its fields (:func:`constructor`).

:func:`parties.wire.codec.message` makes a kind a frozen dataclass; the dataclass's ``__init__``
sets each field with ``object.__setattr__`` and then :meth:`~parties.wire.codec.Message.__post_init__`
converts every value in a second pass.  The ``__init__`` generated here does the same work in
one pass: it converts each argument (not at all when the value already is what the field holds)
and puts it straight into the instance's ``__dict__``, then validates.  The class stays frozen
(the dataclass's ``__setattr__`` and ``__delattr__`` refuse), keeps its signature, equality and
hashing, and every conversion and validation error is the one the dataclass path raises.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from mprr.errors import MessageError

__all__ = ["constructor"]


class Field(Protocol):
    """What the constructor needs of a field's :class:`parties.wire.codec.Wire`."""

    @property
    def coerce(self) -> Callable[[Any], Any]:
        """Check and convert an argument."""

    @property
    def exact(self) -> str:
        """A condition on ``{v}`` true when ``coerce`` would return the value itself ("": none)."""

_RESERVED = frozenset({"self", "type", "int", "float", "bool", "str", "bytes"})
"""Names the generated code uses (a field named so keeps the dataclass's ``__init__``)."""


class _Factory:
    """The default, in a generated signature, of a field with a default factory."""

    def __repr__(self) -> str:
        return "<factory>"  # (as the dataclass's signature shows it)


_FACTORY = _Factory()


def constructor(cls: type, fields: Sequence[tuple[str, Field]],
                invalid: Callable[[Any, Exception], MessageError]) -> Callable[..., None] | None:
    """Generate the ``__init__`` of the message dataclass ``cls`` whose wire fields are ``fields``.

    Each argument is converted by its field's ``coerce`` unless the field's ``exact`` test says
    it already is what the field holds; the values go into the instance's ``__dict__``; then
    ``validate`` runs, a ``TypeError``, ``ValueError`` or ``ArithmeticError`` from it becoming
    ``invalid(message, error)`` (as :meth:`~parties.wire.codec.Message._validated` does).  For
    ``Ack`` (``request_id: int, ids: tuple[int, ...] = ()``)::

        def __init__(self, request_id, ids=__w_d1):
            if not (type(request_id) is int and -9223372036854775808 <= request_id <= ...):
                request_id = __w_c0(request_id)
            ids = __w_c1(ids)
            __w_dict = self.__dict__
            __w_dict['request_id'] = request_id
            __w_dict['ids'] = ids
            try:
                self.validate()
            except __w_error:
                raise
            except (TypeError, ValueError, ArithmeticError) as __w_exc:
                raise __w_invalid(self, __w_exc) from __w_exc

    A field with a default factory defaults to a sentinel that the factory's value replaces.

    Returns
    -------
    The function, or ``None`` (keep the dataclass's ``__init__``, which calls ``__post_init__``)
    when a field is not a positional init argument (``init=False``, keyword-only) or its name
    is one the generated code uses.
    """
    declared = dataclasses.fields(cls)
    if any(not f.init or f.kw_only is True or f.name in _RESERVED or f.name.startswith("__w_") for f in declared):
        return None
    env: dict[str, Any] = {"__w_error": MessageError, "__w_invalid": invalid, "__w_none": _FACTORY}
    params, body = ["self"], []
    for i, (f, (name, wire)) in enumerate(zip(declared, fields, strict=True)):
        if f.default_factory is not dataclasses.MISSING:
            env[f"__w_f{i}"] = f.default_factory
            params.append(f"{name}=__w_none")
            body.append(f"    if {name} is __w_none: {name} = __w_f{i}()")
        elif f.default is dataclasses.MISSING:
            params.append(name)
        else:
            env[f"__w_d{i}"] = f.default
            params.append(f"{name}=__w_d{i}")
        env[f"__w_c{i}"] = wire.coerce
        convert = f"{name} = __w_c{i}({name})"
        body.append(f"    if not ({wire.exact.format(v=name)}): {convert}" if wire.exact else f"    {convert}")
    body.append("    __w_dict = self.__dict__")
    body += [f"    __w_dict[{name!r}] = {name}" for name, _ in fields]
    body += ["    try:", "        self.validate()", "    except __w_error:", "        raise",
             "    except (TypeError, ValueError, ArithmeticError) as __w_exc:",
             "        raise __w_invalid(self, __w_exc) from __w_exc"]
    exec("\n".join([f"def __init__({', '.join(params)}):", *body]), env)  # noqa: S102 - from the class's fields
    init: Callable[..., None] = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(getattr(vars(cls).get("__init__"), "__annotations__", {}))  # (inspect, Sphinx)
    return init
