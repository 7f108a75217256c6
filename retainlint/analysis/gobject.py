"""PyGObject signals as the rules see them: `emitter.connect("signal", handler)` keeps the
handler (and any user data) in C until it is disconnected or the emitter goes. Shared by
the rules about handlers that keep their instance (RL909, RL911)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions, is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.hooks import handler_keeps_instance

CONNECT = frozenset({"connect", "connect_after"})
_DISCONNECT = frozenset({"disconnect", "disconnect_by_func", "handler_disconnect", "signal_handler_disconnect",
                         "signal_handlers_disconnect_by_func", "signal_handlers_disconnect_by_data",
                         "signal_handlers_destroy", "disconnect_object"})


# PyGObject (`gi`, `pgi`) and the static PyGTK 2 bindings it replaced (`import gobject`,
# `import gtk`): the same GObject signals, held in C the same way.
GOBJECT_MODULES = frozenset({"gi", "pgi", "gobject", "gtk", "pygtk"})


def uses_pygobject(ctx) -> bool:
    """Does the file import PyGObject (`from gi.repository import Gtk`) or PyGTK 2
    (`import gobject`)?"""
    return ctx.imports.uses(GOBJECT_MODULES)


def gobject_name(qualified: str) -> bool:
    """Is `qualified` a name from PyGObject's or PyGTK 2's modules (`gi.repository.Gtk.Box`,
    `gtk.Window`, `gobject.GObject`)?"""
    return qualified.startswith(("gi.repository.", "pgi.repository.")) or \
        qualified.partition(".")[0] in ("gobject", "gtk") and "." in qualified


def signal_connection(call: cst.Call) -> bool:
    """`x.connect("signal", handler, ...)`: a signal name and a handler."""
    return isinstance(call.func, cst.Attribute) and call.func.attr.value in CONNECT and len(call.args) >= 2 \
        and isinstance(call.args[0].value, (cst.SimpleString, cst.ConcatenatedString))


def method_of(ctx) -> tuple[Optional[cst.ClassDef], Optional[cst.FunctionDef]]:
    """The class and its instance method the traversal is in (directly, or in a function
    nested in the method)."""
    scope = ctx.scope
    if not scope.classes:
        return None, None
    cls = scope.classes[-1]
    methods = body_functions(cls)
    method = next((f for f in scope.functions if any(m is f for m in methods)), None)
    if method is None or any(isinstance(d.decorator, cst.Name) and d.decorator.value in ("staticmethod", "classmethod")
                             for d in method.decorators):
        return None, None
    return cls, method


def reaches_self(ctx, call: cst.Call, cls: cst.ClassDef, method: cst.FunctionDef) -> bool:
    """Does the connected handler keep the instance (see `handler_keeps_instance`), or is
    `self` handed as user data?"""
    return any(is_self(a.value) for a in call.args[2:]) or handler_keeps_instance(ctx, call.args[1].value, cls, method)


def disconnected(ctx, cls: cst.ClassDef, emitter: str, handler: str, stored_as: Optional[str]) -> bool:
    """Does the class disconnect the handler: a disconnect call on the emitter, with its
    handler id, or with its handler; a disconnect on a loop's item (a teardown over the
    handler ids it kept); or a helper of its own named for disconnecting?"""
    code = ctx.code
    wanted = {emitter, handler} | ({stored_as} if stored_as else set())
    for node in iter_nodes(cls.body):
        if not isinstance(node, cst.Call):
            continue
        name = node.func.attr.value if isinstance(node.func, cst.Attribute) else (
            node.func.value if isinstance(node.func, cst.Name) else "")
        if name in _DISCONNECT:
            receiver = node.func.value if isinstance(node.func, cst.Attribute) else None
            if receiver is not None and (code(receiver) in wanted or isinstance(receiver, cst.Name)
                                         and receiver.value != "self"):
                return True
            if any(code(a.value) in wanted for a in node.args):
                return True
        elif "disconnect" in name and isinstance(node.func, cst.Attribute) and is_self(node.func.value):
            return True  # the class's own `self._disconnect_all()`
    return False


def stored_as(ctx, call: cst.Call) -> Optional[str]:
    """The name the handler id is bound to (`self._id = x.connect(...)`)."""
    stmt = ctx.scope.statement
    if isinstance(stmt, cst.SimpleStatementLine):
        for small in stmt.body:
            if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1:
                return ctx.code(small.targets[0].target)
    return None
