"""One registry pattern for everything chosen by name: protocols, matrix families, secure-sum engines.

A :class:`Registry` maps names (and aliases) to objects that carry their own ``name`` and
``aliases``; it is a read-only :class:`~collections.abc.Mapping` by canonical name, and
:meth:`Registry.register` is the one public way in, for the shipped objects and a user's own
alike::

    MATRIX_FAMILIES.register(MatrixFamily("my-family", ...))      # mprr.matrix_families
    PROTOCOLS.register(ProtocolEntry("my-protocol", ...))         # mprr.protocols.registry
    ENGINES.register(EngineEntry("my-engine", ...))               # parties.secure.registry

Lookup ignores case, surrounding spaces, and ``_`` versus ``-`` versus a space; an unknown
name raises :class:`~mprr.errors.ConfigurationError` naming the kind, the bad name and the
registered names.  Registering a second object under a name already taken is refused unless
``replace=True``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from mprr.errors import ConfigurationError

__all__ = ["Named", "Registry", "name_key"]


class Named(Protocol):
    """What a registry holds: an object with a canonical ``name`` and other accepted ``aliases``."""

    @property
    def name(self) -> str: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...


T = TypeVar("T", bound=Named)


def name_key(name: str) -> str:
    """The lookup key of a name: lower case, stripped, ``_`` and spaces read as ``-``."""
    return name.strip().lower().replace("_", "-").replace(" ", "-")


class Registry(Mapping[str, T], Generic[T]):
    """Objects of one kind by name (module docstring).

    Parameters
    ----------
    kind
        What the objects are, for error messages (``"protocol"``, ``"matrix family"``, ...).
    """

    def __init__(self, kind: str) -> None:
        self._kind = kind
        self._items: dict[str, T] = {}
        self._index: dict[str, str] = {}

    @property
    def kind(self) -> str:
        """What the registered objects are."""
        return self._kind

    def register(self, item: T, *, replace: bool = False) -> T:
        """Add ``item`` under its ``name`` and ``aliases``; returns it (usable as a decorator's tail).

        Raises
        ------
        ConfigurationError
            If the name is not a non-empty string, or a name or alias is taken by another
            object and ``replace`` is false.
        """
        name = getattr(item, "name", None)
        if not isinstance(name, str) or not name.strip():
            raise ConfigurationError(f"a {self._kind} needs a non-empty string name, got {name!r}")
        keys = [name_key(a) for a in (name, *item.aliases)]
        for key in keys:
            owner = self._index.get(key)
            if owner is not None and owner != name and not replace:
                raise ConfigurationError(
                    f"{self._kind} name {key!r} is already registered (by {owner!r}); pass replace=True "
                    "to replace it, or choose another name"
                )
        if name in self._items and not replace and self._items[name] is not item:
            raise ConfigurationError(
                f"{self._kind} {name!r} is already registered; pass replace=True to replace it, or choose another name"
            )
        old = self._items.get(name)
        if old is not None:
            for alias in (old.name, *old.aliases):
                self._index.pop(name_key(alias), None)
        self._items[name] = item
        for key in keys:
            self._index[key] = name
        return item

    def unregister(self, name: str) -> T:
        """Remove the object registered as ``name`` (canonical name or alias) and return it."""
        item = self.lookup(name)
        del self._items[item.name]
        self._index = {k: v for k, v in self._index.items() if v != item.name}
        return item

    def lookup(self, name: str) -> T:
        """The object registered as ``name`` (canonical name or alias).

        Raises
        ------
        ConfigurationError
            If the name is not a string or is not registered (the message lists the names).
        """
        if isinstance(name, str):
            canonical = self._index.get(name_key(name))
            if canonical is not None:
                return self._items[canonical]
        raise ConfigurationError(f"{self._kind} must be one of {list(self._items)}, got {name!r}")

    def names(self) -> tuple[str, ...]:
        """Canonical names, in registration order."""
        return tuple(self._items)

    def accepts(self, name: object) -> bool:
        """Whether ``name`` is a string that :meth:`lookup` resolves."""
        return isinstance(name, str) and name_key(name) in self._index

    # Mapping by canonical name
    def __getitem__(self, name: str) -> T:
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Registry({self._kind!r}: {', '.join(self._items)})"
