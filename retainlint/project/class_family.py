"""A class and the project's classes deriving from it, through every file: the instances
a method of the class runs on, or that a cycle made in its `__init__` is made for."""

from __future__ import annotations

import weakref
from typing import Any, Hashable


def class_family(index: Any, key: Hashable) -> Hashable:
    """`key` (`module.Class`) and the project classes deriving from it, as a frozenset (a
    question for `ProjectIndex.ask`)."""
    qualified = str(key)
    family = {qualified}
    names = {qualified.rpartition(".")[2]}
    by_name = _bases_by_name(index)
    todo = [qualified]
    while todo:
        # a class joins through a base spelled with the last name of a member, or
        # resolving to one: only those are looked at again when a member joins
        for name, base in by_name.get(todo.pop().rpartition(".")[2], ()):
            if name not in family and base.rpartition(".")[2] in names \
                    and member_of(index, base, family):
                family.add(name)
                names.add(name.rpartition(".")[2])
                todo.append(name)
    return frozenset(family)


_BASES_BY_NAME: "weakref.WeakKeyDictionary[Any, dict[str, list[tuple[str, str]]]]" = \
    weakref.WeakKeyDictionary()


def _bases_by_name(index) -> dict[str, list[tuple[str, str]]]:
    """Last name of a base, as spelled or as resolved -> (project class, that base): read
    once per index, not once per class of a file with thousands of them."""
    found = _BASES_BY_NAME.get(index)
    if found is None:
        found = {}
        for name, summary in index.classes.items():
            for base in summary.bases:
                resolved = index.resolve(base) or base
                for last in {base.rpartition(".")[2], resolved.rpartition(".")[2]}:
                    found.setdefault(last, []).append((name, base))
        _BASES_BY_NAME[index] = found
    return found


def member_of(index, name: str, family: "frozenset[str] | set[str]") -> bool:
    """Does `name` (as a file spells it, qualified) denote a class of `family`? Through
    re-exports; and by its trailing components when it is spelled from above a namespace
    package the index does not name modules from (`pkg.runtime.mod.X` for `mod.X`)."""
    resolved = index.resolve(name) or name
    return resolved in family or any(resolved.endswith("." + q) for q in family)
