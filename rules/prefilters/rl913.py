"""RL913's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl913_registry_keeps_instance.py` (from the file's bytes and the project index; no
libcst here), and the project's registering methods both ask for."""

from __future__ import annotations

from dataclasses import fields

from retainlint.project.prefilter import Prefilter, words
from retainlint.project.retention_facts import DROPS, GROWTH, TEARDOWN_DROPS, Growth

_FIELD = {f.name: n for n, f in enumerate(fields(Growth))}

# Methods of the builtin containers: a project method of the same name says nothing about
# the many lists and sets the code calls them on.
_CONTAINER_METHODS = frozenset({"add", "append", "appendleft", "extend", "insert", "update", "setdefault", "put",
                                "put_nowait", "push"})


def registries(index) -> dict[str, list[tuple[str, str]]]:
    """Method name -> (`Class.method`, holder) for every method of the project that stores
    what it is handed in a container of its instance (`Bus.subscribe`, `mod.Bus()._listeners`)."""
    if index is None:
        return {}
    found: dict[str, list[tuple[str, str]]] = {}
    for verb, function, holder in index.ask(registering_methods, None):
        found.setdefault(verb, []).append((function, holder))
    return found


def registering_methods(index, key: None) -> tuple[tuple[str, str, str], ...]:
    """(method name, `Class.method`, holder) for every method of the project that stores
    what it is handed in a container of its instance. A question for `ProjectIndex.ask`."""
    registers, kind, function, holder = (_FIELD[f] for f in ("registers", "kind", "function", "holder"))
    found = set()
    for summary in dict.values(index.files):
        for g in summary.retention[GROWTH] if summary.retention else ():
            verb = g[function].rpartition(".")[2]
            if g[registers] and g[kind] == "instance" and "." in g[function] and verb not in _CONTAINER_METHODS:
                found.add((verb, g[function], g[holder]))
    return tuple(sorted(found))


def definers(index, verb: str) -> tuple[str, ...]:
    """`Class.verb` for every class of the project that defines a method `verb`. A question
    for `ProjectIndex.ask`."""
    return tuple(sorted(f"{cls.qualname.rpartition('.')[2]}.{verb}" for summary in dict.values(index.files)
                        for cls in summary.classes.values() if verb in cls.methods))


def emptied(index, holder: str) -> bool:
    """Does some code of the project remove from, rebind or hand away `holder`, in a
    teardown (`close()`: `self._callbacks = []`) or anywhere? A question for
    `ProjectIndex.ask`."""
    return any(summary.retention and (holder in summary.retention[DROPS] or holder in summary.retention[TEARDOWN_DROPS])
               for summary in dict.values(index.files))


class RegistryKeepsInstancePrefilter(Prefilter):
    code = "RL913"

    # An instance to hand over; `might_match` also asks for a registering method's name.
    triggers = ("self",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        """A file that names a method of the project that stores what it is handed, and
        has an instance to hand it (`self`)."""
        verbs = registries(index)
        if not verbs or not cls.triggered_by(data):
            return False
        named = words(data)
        # called as a method (`.subscribe(`), not only defined or mentioned
        return any(v.encode() in named and f".{v}(".encode() in data for v in verbs)
