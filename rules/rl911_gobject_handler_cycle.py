"""RL911 gobject-handler-cycle: a GObject made on every call connects a handler over itself
to its own signal or to one of a widget it made: the handler lives in C, where the
collector cannot see the cycle, so each one made stays until something disconnects it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, is_self
from retainlint.analysis.gobject import (disconnected, gobject_name, method_of, reaches_self, signal_connection, stored_as,
                                         uses_pygobject)
from retainlint.analysis.once import instantiations, made_in_another_file, runs_once_per_instance
from retainlint.analysis.hooks import short
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl911 import GObjectHandlerCyclePrefilter


@dataclass
class _Connection:
    cls: cst.ClassDef
    call: cst.Call
    statement: Optional[cst.CSTNode]
    emitter: str
    handler: str
    stored_as: Optional[str]


class GObjectHandlerCycle(Rule):
    prefilter = GObjectHandlerCyclePrefilter
    name = "gobject-handler-cycle"
    summary = ("A GObject made on every call connects a handler over itself to its own signal or a child's: "
               "the cycle runs through C, where the collector cannot see it")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
In a file that uses PyGObject (`from gi.repository import ...`, or PyGTK 2's `import
gobject`), reports `x.connect("signal", handler)` (or `connect_after`) in a method of a
GObject class (one deriving from a `gi.repository` class, or a `gtk`/`gobject` one) when:
- the handler reaches the instance (a bound method of it, a lambda, `partial` or nested
  function over `self`, or `self` as user data);
- `x` is the instance itself or a widget it made (`self.button = Gtk.Button()`, a local
  `button = Gtk.Button()`);
- nothing in the class disconnects it;
- the file makes instances of the class on every call: in a function, in a method other
  than `__init__` (and the methods only `__init__` calls), in a lambda or in a loop.

## Why it leaks
The handler lives in a GClosure in C, and holds the instance; the instance holds the
widget whose signal keeps the closure. Python's collector sees only the Python half of
this cycle, and GTK 4 keeps a widget's wrapper alive while C holds a reference, so
dropping the object frees nothing. Made once, that costs nothing; made per list-item
bind, per refresh or per alert, every one made stays, with its widgets and what its
attributes hold.

## Example
```python
from gi.repository import Gtk


class SongMenu(Gtk.PopoverMenu):
    def __init__(self, song):
        super().__init__()
        self.song = song
        self.remove_button = Gtk.Button()
        self.remove_button.connect("clicked", self.on_remove)  # RL911

    def on_remove(self, button):
        ...


class SongsView(Gtk.ListView):
    def bind_item(self, factory, item):
        item.get_child().props.popover = SongMenu(item.get_item())
```

## Fix
None automatic: keep the handler ids and disconnect them when the object is done
(`do_unroot`, `do_dispose`, or where it is replaced), or make the object once and update
it.
"""

    valid = [
        """
from gi.repository import Gtk

class SongMenu(Gtk.PopoverMenu):
    def __init__(self):
        super().__init__()
        self.remove_button = Gtk.Button()
        self.remove_button.connect("clicked", self.on_remove)

    def on_remove(self, button):
        pass

class SongsView(Gtk.ListView):
    def __init__(self):
        super().__init__()
        self.menu = SongMenu()
""",
    ]
    invalid = [
        Example(
            """
from gi.repository import Gtk

class SongMenu(Gtk.PopoverMenu):
    def __init__(self):
        super().__init__()
        self.remove_button = Gtk.Button()
        self.remove_button.connect("clicked", self.on_remove)

    def on_remove(self, button):
        pass

class SongsView(Gtk.ListView):
    def bind_item(self, factory, item):
        item.get_child().props.popover = SongMenu()
""",
            lines=[8],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._connections: list[_Connection] = []

    def visit_Call(self, node: cst.Call) -> None:
        if not signal_connection(node) or not uses_pygobject(self.ctx):
            return
        cls, method = method_of(self.ctx)
        if cls is None or method is None or not self._gobject(cls, 0):
            return
        assert isinstance(node.func, cst.Attribute)
        if not self._own(node.func.value, cls, method) or not reaches_self(self.ctx, node, cls, method):
            return
        self._connections.append(_Connection(cls, node, self.ctx.scope.statement, self.ctx.code(node.func.value),
                                             self.ctx.code(node.args[1].value), stored_as(self.ctx, node)))

    def _gobject(self, cls: cst.ClassDef, depth: int) -> bool:
        """Does the class derive from a PyGObject class, directly or through this file's?"""
        for base in cls.bases:
            if gobject_name(self.ctx.qualname(base.value) or ""):
                return True
            local = self.ctx.classes.get(self.ctx.code(base.value))
            if local is not None and local is not cls and depth < 4 and self._gobject(local, depth + 1):
                return True
        return False

    def _own(self, emitter: cst.BaseExpression, cls: cst.ClassDef, method: cst.FunctionDef) -> bool:
        """The instance itself, or a widget it made: `self.x` or a local bound to a call of
        a class (`Gtk.Button()`), in the class's methods."""
        if is_self(emitter):
            return True
        if isinstance(emitter, cst.Attribute) and is_self(emitter.value):
            values = [v for fn in body_functions(cls)
                      for v, _ in self.ctx.heavy.local_assignments(fn).get(f"self.{emitter.attr.value}", ())]
            return bool(values) and all(self._made(v) for v in values)
        if isinstance(emitter, cst.Name):
            values = [v for v, _ in self.ctx.heavy.local_assignments(method).get(emitter.value, ())]
            return bool(values) and all(self._made(v) for v in values)
        return False

    def _made(self, value: Optional[cst.BaseExpression]) -> bool:
        """`Gtk.Button()`, `Gtk.Button.new_with_label(...)`, `Gtk.GestureClick()`: a new object."""
        if not isinstance(value, cst.Call):
            return False
        qualified = self.ctx.qualname(value.func) or ""
        parts = qualified.split(".")
        if gobject_name(qualified):
            return parts[-1][:1].isupper() or parts[-1].startswith("new")
        return qualified in self.ctx.classes

    # -- reports --------------------------------------------------------------------------
    def leave_Module(self, original_node: cst.Module) -> None:
        for connection in self._connections:
            cls = connection.cls
            if disconnected(self.ctx, cls, connection.emitter, connection.handler, connection.stored_as):
                continue
            where = self._made_per_call(cls)
            if where is None:
                continue
            owner = cls.name.value
            what = "its own signal" if connection.emitter == "self" else f"a signal of `{connection.emitter}`, which it made"
            self.report(
                connection.call,
                f"`{short(self.ctx.code(connection.call))}` connects a handler over the `{owner}` instance to "
                f"{what}, and nothing disconnects it: the handler lives in C, where the collector cannot see "
                f"the cycle, and a new `{owner}` is made on every call of {where}, so each one made stays; "
                f"disconnect it when the `{owner}` is done, or make it once",
                statement=connection.statement,
                consequence=Consequence(f"every `{owner}` made, with its widgets and all it holds",
                                        f"a reference cycle through the signal handlers of `{connection.emitter}`",
                                        "the process: the collector cannot free it",
                                        f"one `{owner}` per call of {where}"),
            )

    def _made_per_call(self, cls: cst.ClassDef) -> Optional[str]:
        """Where the project makes the class, or a class of this file deriving from it, on
        every call (as the message names it): a function, a method other than `__init__`
        and what only it calls, a lambda or a loop; None when it is made only once (module
        level, constructors) or nowhere the index shows."""
        for made in self._lineage_down(cls):
            where = self._made_where(made)
            if where is not None:
                return where if made is cls else f"{where} (a `{made.name.value}`)"
        return None

    def _lineage_down(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """The class and this file's classes deriving from it, at any depth."""
        found = [cls]
        for current in found:
            found.extend(c for c in self.ctx.classes.values() if c not in found and any(
                isinstance(b.value, cst.Name) and b.value.value == current.name.value for b in c.bases))
        return found

    def _made_where(self, cls: cst.ClassDef) -> Optional[str]:
        name = cls.name.value
        places, in_loop = instantiations(self.ctx, name)
        if in_loop:
            return "a loop or a lambda"
        for fn in places:
            if fn is None:
                continue
            owner = next((c for c in self.ctx.classes.values() if any(f is fn for f in body_functions(c))), None)
            if owner is not None and runs_once_per_instance(self.ctx, owner, fn):
                continue
            return f"`{owner.name.value}.{fn.name.value}()`" if owner is not None else f"`{fn.name.value}()`"
        if self.ctx.classes.get(name) is cls and made_in_another_file(self.ctx, f"{self.ctx.module_name}.{name}"):
            return "a function of another module"
        return None
