"""The group types are one interface the shard calls: every group class implements all of :class:`GroupBase`, and
the model never asks which group class it holds.

A new group type then needs no new branch in the shard, describe or the what-if, only the interface's members; a
class that misses one fails here, not in the first snapshot of a group of that type.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from streaming.model._base import GroupBase
from streaming.model.shard import _GROUP_CLASSES
from streaming.model.states import GroupType

MODEL = Path(__file__).resolve().parents[2] / "streaming" / "model"
GROUP_CLASS_NAMES = frozenset({"Group", *(cls.__name__ for cls in _GROUP_CLASSES.values())})


def _leaf_subclasses(cls: type) -> set[type]:
    """The classes below ``cls`` with none below them, as their modules name them (``dataclass(slots=True)``
    replaces the class it decorates; the replaced one lingers in ``__subclasses__`` until collected)."""
    subs = [s for s in cls.__subclasses__() if getattr(sys.modules[s.__module__], s.__qualname__, None) is s]
    return {cls} if not subs else {leaf for sub in subs for leaf in _leaf_subclasses(sub)}


# Collected at import, before any test defines a class of its own.
GROUP_CLASSES = sorted({*_GROUP_CLASSES.values(), *_leaf_subclasses(GroupBase)}, key=lambda c: c.__name__)


def missing_members(cls: type) -> set[str]:
    """The abstract members of :class:`GroupBase` that ``cls`` leaves abstract or only inherits from it."""
    missing = set()
    for name in GroupBase.__abstractmethods__:
        owner = next((k for k in cls.__mro__ if name in vars(k)), GroupBase)
        if owner is GroupBase or getattr(vars(owner)[name], "__isabstractmethod__", False):
            missing.add(name)
    return missing


def group_class_checks(source: str, filename: str = "<source>") -> list[str]:
    """``isinstance``/``issubclass`` calls in ``source`` whose class argument names a group class, as
    ``file:line``."""
    found = []
    for node in ast.walk(ast.parse(source, filename)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in ("isinstance", "issubclass") and len(node.args) == 2):
            continue
        names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} | \
                {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
        if names & GROUP_CLASS_NAMES:
            found.append(f"{filename}:{node.lineno}")
    return found


def test_the_interface_has_abstract_members():
    assert {"member_snapshots", "header", "subscriptions", "state_name", "to_state", "from_state"} <= \
        GroupBase.__abstractmethods__


def test_every_group_type_has_a_group_class():
    assert set(_GROUP_CLASSES) == set(GroupType)
    for gtype, cls in _GROUP_CLASSES.items():
        assert issubclass(cls, GroupBase), cls
        assert cls.group_type is gtype, cls


@pytest.mark.parametrize("cls", GROUP_CLASSES, ids=lambda c: c.__name__)
def test_group_class_implements_the_interface(cls):
    assert missing_members(cls) == set()
    g = cls("g")  # an abstract member left would refuse this too
    assert g.group_id == "g" and isinstance(g.group_type, GroupType)
    assert not hasattr(g, "__dict__"), "group classes are slotted"


def test_a_class_missing_a_member_is_caught():
    class Incomplete(GroupBase):
        __slots__ = ()
        group_type = GroupType.CLASSIC

        @property
        def state_name(self) -> str:
            return "EMPTY"

    assert missing_members(Incomplete) == GroupBase.__abstractmethods__ - {"state_name"}
    with pytest.raises(TypeError):
        Incomplete()


def test_a_group_class_check_is_caught():
    source = "if isinstance(g, ClassicGroup) and not isinstance(g, (m.ShareGroup, int)):\n    pass\n" \
             "ok = isinstance(s, EndOffsetSample)\n"
    assert group_class_checks(source) == ["<source>:1", "<source>:1"]


@pytest.mark.parametrize("path", sorted(MODEL.glob("*.py")), ids=lambda p: p.name)
def test_model_does_not_ask_which_group_class_it_holds(path):
    assert group_class_checks(path.read_text(), path.name) == []
