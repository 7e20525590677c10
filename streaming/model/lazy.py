"""Objects restored from a checkpoint on first use, and saved as they were read when nothing used them.

Every micro-batch restores its shard's whole state and saves it again, but a batch touches only the groups that
wrote records and, every ``snapshot_interval_ms``, the rest. Building each group (and its rebalance judgement) from
its named fields and turning it back into them was most of a shard's restore and save at 10,000 groups
(``benchmarks/bench_state.py``). A lazily restored object keeps the fields it was saved as and becomes the plain
object the first time anything reads or writes an attribute it does not hold yet; one that nothing used is saved as
those same fields, without building it at all.

How: :func:`lazy_variant` makes a subclass of a slotted dataclass whose attribute slots start empty. Reading an
empty slot calls ``__getattr__``, which builds the object from its saved fields, fills every slot and turns the
instance into the plain class (same slots, so Python allows the switch): from then on it is an ordinary object at
ordinary speed. Writing any attribute first does the same, so a write can never be lost under a stale saved state.
A few fields the shard reads of every object every batch (a group's id; what the heartbeat tick checks) are
filled at restore (``eager``), so those reads do not build anything. They must be immutable values (numbers,
strings, None): a mutable one could be changed in place without a write to the object, and the change would be
lost to the saved fields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from typing import Any, ClassVar

__all__ = ["Restorable", "lazy_variant"]


class Restorable:
    """A base for the model's slotted classes that can be restored lazily: the slot that holds the saved fields,
    and :meth:`saved_state`, which a plain object answers with its ``to_state``."""

    __slots__ = ("_saved",)

    def to_state(self) -> Mapping[str, Any]:
        raise NotImplementedError

    def saved_state(self) -> Mapping[str, Any]:
        """What to checkpoint: ``to_state()``, or, for an object restored lazily and never used, the fields it was
        restored from."""
        return self.to_state()


class _Lazy:
    """The lazily restored variant's behaviour (see the module docstring); mixed in before the plain class."""

    __slots__ = ()
    _plain: ClassVar[type]
    _field_names: ClassVar[tuple[str, ...]]
    _eager: ClassVar[Callable[[Mapping[str, Any]], Iterable[tuple[str, Any]]]]

    @classmethod
    def restore(cls, state: Mapping[str, Any]):
        """An object that holds ``state`` (the plain class's ``to_state``) until first used."""
        self = object.__new__(cls)
        object.__setattr__(self, "_saved", state)
        for name, value in cls._eager(state):
            object.__setattr__(self, name, value)
        return self

    def __getattr__(self, name: str) -> Any:
        # Only called for an empty slot: the first read of a field not restored yet.
        self._build()
        return getattr(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        self._build()
        setattr(self, name, value)

    def saved_state(self) -> Mapping[str, Any]:
        return object.__getattribute__(self, "_saved")

    def __reduce_ex__(self, protocol):
        # pickle and copy name an object's class; the variant is made at run time and cannot be named, so a copy
        # is of the plain object
        self._build()
        return self.__reduce_ex__(protocol)

    def _build(self) -> None:
        plain = type(self)._plain
        built = plain.from_state(object.__getattribute__(self, "_saved"))
        for name in type(self)._field_names:
            object.__setattr__(self, name, object.__getattribute__(built, name))
        object.__setattr__(self, "_saved", None)
        object.__setattr__(self, "__class__", plain)


def _no_eager_fields(state: Mapping[str, Any]) -> Iterable[tuple[str, Any]]:
    return ()


def lazy_variant(plain: type, eager: Callable[[Mapping[str, Any]], Iterable[tuple[str, Any]]] = _no_eager_fields,
                 ) -> type:
    """The lazily restored variant of ``plain``: a slotted dataclass deriving from :class:`Restorable`, with
    ``to_state`` and a ``from_state`` classmethod. Its ``restore(state)`` makes an instance; ``eager(state)`` gives
    the ``(field, value)`` pairs filled at once (values as the built object would hold them)."""
    if not issubclass(plain, Restorable):
        raise TypeError(f"{plain.__name__} does not derive from Restorable")
    return type(f"Lazy{plain.__name__}", (_Lazy, plain), {
        "__slots__": (), "__module__": plain.__module__, "_plain": plain,
        "_field_names": tuple(f.name for f in fields(plain)), "_eager": staticmethod(eager)})
