"""RL909 gobject-signal-keeps-subscriber: an instance connects its own handler to a signal
of a GObject it did not make (one handed to it, the application's, a process-wide default)
and never disconnects it: the emitter keeps the handler, and the instance, as long as it
lives."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, is_self, module_objects
from retainlint.analysis.gobject import (CONNECT, disconnected, method_of, reaches_self, signal_connection, stored_as,
                                         uses_pygobject)
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.hooks import parameter_names, short
from retainlint.analysis.once import one_instance_per_process, runs_once_per_instance
from retainlint.analysis.release import release_methods
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl909 import GObjectSignalKeepsSubscriberPrefilter

# GTK's own teardown: virtual methods and the signals a widget emits when it goes.
_TEARDOWN_METHODS = frozenset({"do_unroot", "do_dispose", "do_destroy", "do_unrealize", "destroy"})
_TEARDOWN_SIGNALS = frozenset({"destroy", "unroot", "unrealize", "close-request", "delete-event", "response"})
# Getters of objects that live for the process: `Gtk.Settings.get_default()`,
# `Gdk.Display.get_default()`, `widget.get_application()`, a singleton's `get_instance()`.
_PROCESS_GETTERS = frozenset({"get_default", "get_application", "get_default_root_window", "get_instance"})
_MAX_DEPTH = 4


@dataclass
class _Connection:
    cls: cst.ClassDef
    method: cst.FunctionDef
    call: cst.Call
    statement: Optional[cst.CSTNode]
    emitter: str  # the receiver as the code spells it
    emitter_is: str  # why it outlives the instance, for the message
    handler: str
    stored_as: Optional[str]  # `self._changed_id` when the handler id is kept


class GObjectSignalKeepsSubscriber(Rule):
    prefilter = GObjectSignalKeepsSubscriberPrefilter
    name = "gobject-signal-keeps-subscriber"
    summary = ("An instance connects its own handler to a signal of a GObject it did not make and never "
               "disconnects it: the emitter keeps the instance as long as it lives")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
In a file that uses PyGObject (`from gi.repository import ...`, or PyGTK 2's `import
gobject`), reports `emitter.connect("signal", handler)` (or `connect_after`) in a method
of a class when:
- the handler reaches the instance: a bound method of it (`self.on_changed`), a lambda,
  `partial` or nested function over `self`, or `self` passed as user data;
- the emitter is not the instance's own: it was handed in (a parameter, or `self.x`
  set from one), it is the application's or a process-wide default
  (`Gtk.Settings.get_default()`, `self.get_application()`, a singleton's
  `get_instance()`), a module-level object, or an attribute of one of these;
- nothing in the class disconnects it: no `disconnect(...)`, `disconnect_by_func(...)` or
  `handler_disconnect(...)` on that emitter, with its handler id or handler, and no
  teardown loop or `*disconnect*` helper of the class.

Silent for a class whose one instance is made at start-up (module level or the entry
point) and for a `Gtk.Application` subclass: they live for the process anyway. A
parameter counts as handed in only in the constructor (and what only it calls): an
object handed to a later call may well be the shorter-lived of the two.
Severity: info for an `ApplicationWindow` subclass (most applications open one main
window and keep it); an error when the class has a teardown that leaves the handler connected
(`close()`, `shutdown()`, `destroy()`, `do_unroot()`, a handler of its own `destroy`
signal): the project releases the instance and the emitter defeats it; a warning
otherwise.

## Why it leaks
A GObject signal keeps its handlers in C: PyGObject holds a strong reference to the
callable (and to any user data) until the handler is disconnected or the emitter is
finalized. A bound method holds its instance, so the emitter keeps the instance - with its
widgets, models and everything they reference - for as long as the emitter lives. When the
emitter is the player, the application, the settings or the clipboard, that is the whole
process: every closed page, dialog or row stays, one more each time one is made.

## Example
```python
from gi.repository import Gtk


class SongInfo(Gtk.Box):
    def __init__(self, player):
        super().__init__()
        player.connect("song-started", self.on_song_started)  # RL909

    def on_song_started(self, player, song):
        ...
```

## Fix
None automatic: keep the handler id (`self._started_id = player.connect(...)`) and call
`player.disconnect(self._started_id)` when the instance is done (`do_unroot`, `destroy`,
`close`).
"""

    valid = [
        """
from gi.repository import Gtk

class SongInfo(Gtk.Box):
    def __init__(self, player):
        super().__init__()
        self._player = player
        self._started_id = player.connect("song-started", self.on_song_started)

    def on_song_started(self, player, song):
        pass

    def do_unroot(self):
        self._player.disconnect(self._started_id)
""",
        """
from gi.repository import Gtk

class Page(Gtk.Box):
    def __init__(self):
        super().__init__()
        self.button = Gtk.Button()
        self.button.connect("clicked", self.on_clicked)

    def on_clicked(self, button):
        pass
""",
    ]
    invalid = [
        Example(
            """
from gi.repository import Gtk

class SongInfo(Gtk.Box):
    def __init__(self, player):
        super().__init__()
        player.connect("song-started", self.on_song_started)

    def on_song_started(self, player, song):
        pass
""",
            lines=[7],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._connections: list[_Connection] = []

    # -- connections ----------------------------------------------------------------------
    def visit_Call(self, node: cst.Call) -> None:
        if not signal_connection(node) or not uses_pygobject(self.ctx):
            return
        cls, method = method_of(self.ctx)
        if cls is None or method is None or not reaches_self(self.ctx, node, cls, method):
            return
        assert isinstance(node.func, cst.Attribute)
        emitter_is = self._outside(node.func.value, cls, method, 0)
        if emitter_is is None:
            return
        self._connections.append(_Connection(cls, method, node, self.ctx.scope.statement,
                                             self.ctx.code(node.func.value), emitter_is,
                                             self.ctx.code(node.args[1].value), stored_as(self.ctx, node)))

    def _outside(self, expr: cst.BaseExpression, cls: cst.ClassDef, method: cst.FunctionDef,
                 depth: int) -> Optional[str]:
        """Why `expr` is an object the instance did not make and that outlives it, or None
        when it is the instance's own (or unknown)."""
        if depth > _MAX_DEPTH or is_self(expr):
            return None
        code = self.ctx.code(expr)
        if isinstance(expr, cst.Name):
            if expr.value in parameter_names(method):
                # handed to the constructor: it was there before the instance; handed to a
                # later call, it may well be the shorter-lived of the two
                if not runs_once_per_instance(self.ctx, cls, method):
                    return None
                return f"`{code}`, handed to `{cls.name.value}.{method.name.value}()`"
            values = self.ctx.heavy.local_assignments(method).get(expr.value)
            if values:
                found = [self._outside(v, cls, method, depth + 1) for v, _ in values if v is not None]
                return found[0] if found and all(found) else None
            if expr.value in module_objects(self.ctx) or "." in (self.ctx.qualname(expr) or ""):
                return f"the module-level `{code}`"
            return None
        if isinstance(expr, cst.Attribute):
            if is_self(expr.value):
                return self._self_attribute(expr.attr.value, cls, depth)
            inner = self._outside(expr.value, cls, method, depth + 1)
            return f"`{code}`, part of {inner.partition(', part of ')[2] or inner}" if inner else None
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in _PROCESS_GETTERS:
                return f"the process-wide `{short(code)}`"
            if "." in (self.ctx.qualname(expr.func) or ""):
                return None  # a class or function of a module (`Gtk.Button()`): made here
            inner = self._outside(expr.func.value, cls, method, depth + 1)
            return f"`{short(code)}`, from {inner}" if inner else None
        if isinstance(expr, cst.Subscript):
            inner = self._outside(expr.value, cls, method, depth + 1)
            return f"`{short(code)}`, in {inner}" if inner else None
        return None

    def _self_attribute(self, attr: str, cls: cst.ClassDef, depth: int) -> Optional[str]:
        """`self.x`: outside when every method that sets it sets it to something outside."""
        reasons = []
        for fn in body_functions(cls):
            for value, _ in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                if value is None:
                    return None
                reason = self._outside(value, cls, fn, depth + 1)
                if reason is None:
                    return None
                reasons.append(reason)
        return f"`self.{attr}` ({reasons[0]})" if reasons else None

    # -- what undoes it ---------------------------------------------------------------------
    def _teardown(self, cls: cst.ClassDef) -> Optional[str]:
        """The class's teardown that leaves the handler connected, as the message names it."""
        found = release_methods(self.ctx, cls)
        if found:
            return f"`{found[0].name.value}()`"
        methods = self.ctx.methods(cls)
        named = next((m for m in methods if m in _TEARDOWN_METHODS), None)
        if named is not None:
            return f"`{named}()`"
        for node in iter_nodes(cls.body):  # `self.connect("destroy", self.on_destroy)`
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and node.func.attr.value in CONNECT and is_self(node.func.value) and len(node.args) >= 2:
                signal = node.args[0].value
                if isinstance(signal, cst.SimpleString) and signal.evaluated_value in _TEARDOWN_SIGNALS:
                    return f"its `{signal.evaluated_value}` handler"
        return None

    def _base_named(self, cls: cst.ClassDef, name: str) -> bool:
        return any((self.ctx.qualname(b.value) or "").rpartition(".")[2] == name for b in cls.bases)

    def _lives_for_the_process(self, cls: cst.ClassDef) -> bool:
        if self._base_named(cls, "Application"):
            return True
        init = self.ctx.methods(cls).get("__init__")
        return init is not None and one_instance_per_process(self.ctx, cls)

    # -- reports --------------------------------------------------------------------------
    def leave_Module(self, original_node: cst.Module) -> None:
        for connection in self._connections:
            cls = connection.cls
            if disconnected(self.ctx, cls, connection.emitter, connection.handler, connection.stored_as) \
                    or self._lives_for_the_process(cls):
                continue
            owner = cls.name.value
            teardown = self._teardown(cls)
            per_instance = runs_once_per_instance(self.ctx, cls, connection.method)
            growth = (f"one handler per `{owner}` made" if per_instance
                      else f"one handler per call of `{owner}.{connection.method.name.value}()`")
            released = f"; {teardown} releases it but leaves the handler connected" if teardown else ""
            # the application's main window: most applications open one and keep it
            main_window = self._base_named(cls, "ApplicationWindow")
            self.report(
                connection.call,
                f"`{short(self.ctx.code(connection.call))}` connects a handler over the `{owner}` instance to a "
                f"signal of {connection.emitter_is}, which it did not make, and nothing disconnects it{released}: "
                f"PyGObject keeps the handler, and with it every `{owner}`, as long as the emitter lives; keep "
                f"the handler id and disconnect it when the `{owner}` is done",
                severity=Severity.INFO if main_window else Severity.ERROR if teardown else Severity.WARNING,
                statement=connection.statement,
                consequence=Consequence(f"every `{owner}` instance, with all it holds",
                                        f"the signal handlers of `{short(connection.emitter, 40)}`",
                                        "as long as the emitter", growth),
            )
