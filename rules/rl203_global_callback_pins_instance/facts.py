"""What RL203's traversal of one file collects: the registrations it found, what undoes
them, the module-level containers and dicts and what happens to them, how each class is
instantiated - and the tables of names the parts of the rule share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.heavy import find_param
from retainlint.rules.prefilters.rl203 import LIST_CTORS

ATEXIT_UNREGISTER = "atexit.unregister"
# methods that take elements out
REMOVERS = frozenset({"remove", "discard", "pop", "popleft", "popitem", "clear", "__delitem__"})


@dataclass
class Registration:
    kind: str  # "atexit" | "signal" | "append" | "fork" | a method of `LOOP_TRIGGERS` | a runner's kind
    call: cst.Call
    callback: cst.BaseExpression
    what: str  # what the callback is, for the message
    pins_self: bool  # True: pins the instance; False: pins another heavy object
    cls: cst.ClassDef
    function: cst.FunctionDef
    statement: Optional[cst.CSTNode]
    container: Optional[str] = None  # the module global appended to
    through: Optional[str] = None  # the module function that appends it (`on_shutdown`)
    # the attribute or name the call's result is kept in: the old handler of
    # `self._old = signal.signal(...)`, the handle of a runner (`self._timer = ...`)
    saved_as: Optional[str] = None
    slot_of: Optional[str] = None  # the dict of the instance whose slot keeps the runner


class FileFacts:
    """The facts one traversal of a file collects, read by the decision at its end."""

    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.registrations: list[Registration] = []
        # per class name: texts of `atexit.unregister(...)` arguments, `signal.signal`
        # calls (the call nodes) outside `__del__`
        self.unregistered: dict[str, list[cst.BaseExpression]] = {}
        self.signals: dict[str, list[tuple[cst.Call, cst.FunctionDef]]] = {}
        self.handlers_reinstalled: list[cst.BaseExpression] = []  # any signal.signal handler
        # per class name: the loop-trigger removers it calls outside `__del__`, with their
        # receivers (`("reactor", "removeSystemEventTrigger")`, `("self.hub", "remove")`)
        self.triggers_removed: dict[str, set[tuple[str, str]]] = {}
        self.containers: dict[str, cst.CSTNode] = {}  # module-level list/set/deque -> name node
        self.emptied: set[str] = set()  # names removed from / rebound / handed away
        self.cleared: set[str] = set()  # containers emptied all at once (`.clear()`)
        # module functions that add a parameter, as given, to a module container:
        # name -> (position, parameter, container)
        self.registry_functions: dict[str, tuple[int, str, str]] = {}
        # class -> how it is instantiated: "module", "singleton", "other", "entry:<function>"
        # (in a function that may be a process entry point), "registry:<dict>" (kept in a
        # module dict by the function that makes it)
        self.instantiated: dict[str, set[str]] = {}
        self.registries: set[str] = set()  # module-level dicts
        self.entry_points: set[str] = set()  # functions `__main__` runs, `Process` targets
        self.called_by_functions: set[str] = set()  # names called by bare name in a function
        self.global_names: dict[int, set[str]] = {}
        # module containers: every mention, and the mentions that do not read them (the
        # definition, `global` declarations, receivers of append/add): the difference says
        # whether the file ever reads the container
        self.uses: dict[str, int] = {}
        self.not_reads: dict[str, int] = {}

    def local(self, name: str, fn: cst.FunctionDef) -> bool:
        """Is `name` a local of `fn` (a parameter or assigned without `global`)?"""
        if name in self.global_names.get(id(fn), set()):
            return False
        return find_param(fn, name) is not None or name in self.ctx.heavy.local_assignments(fn)


def strong_container(ctx, value: cst.BaseExpression) -> bool:
    """A list, set or deque (a literal or a constructor call)."""
    if isinstance(value, (cst.List, cst.Set)):
        return True
    if isinstance(value, cst.Call):
        func = value.func.value if isinstance(value.func, cst.Subscript) else value.func
        return ctx.qualname(func) in LIST_CTORS
    return False
