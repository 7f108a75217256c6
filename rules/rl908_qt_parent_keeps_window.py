"""RL908 qt-parent-keeps-window: a Qt dialog or window made on every call with a parent
that outlives the call: the parent owns it as a child, so each closed one stays until the
parent goes, unless something deletes it."""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from typing import Optional, Union

import libcst as cst

from retainlint.analysis.cstutil import body_functions, call_args, is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.once import runs_once_per_instance
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl908 import QtParentKeepsWindowPrefilter

# Top-level windows a user opens and closes; a child widget made per call is usually
# placed in a layout that replaces (and deletes) the old one.
_WINDOWS = frozenset({"QDialog", "QMainWindow", "QMessageBox", "QFileDialog", "QInputDialog",
                      "QProgressDialog", "QColorDialog", "QFontDialog", "QWizard", "QErrorMessage"})
# Calls that start using a window made in the same expression.
_SHOW = frozenset({"show", "exec", "exec_", "open", "raise_", "activateWindow"})
_DELETE_NAMES = frozenset({"deleteLater", "WA_DeleteOnClose"})


def _is_qt_path(qualified: Optional[str]) -> bool:
    """`PySide6.QtWidgets.QDialog`, `aqt.qt.QDialog`, `<pkg>.qt_compat.QtWidgets.QDialog`."""
    if not qualified:
        return False
    *modules, name = qualified.split(".")
    return name in _WINDOWS and any("qt" in m.lower() or m.startswith("PySide") for m in modules)


@dataclass
class _Window:
    """A project class that is a Qt window: where its `__init__` hands a parent to Qt."""
    cls: cst.ClassDef
    parent_param: Optional[int] = None  # index (after self) of the `__init__` parameter forwarded
    parent_keyword: Optional[str] = None
    fixed_parent: bool = False  # `super().__init__(mw)`: always made with a parent
    passes_args: bool = True  # no `__init__` of its own: arguments go straight to Qt
    site: Optional[cst.Call] = None  # the `super().__init__(...)` call
    statement: Optional[cst.CSTNode] = None
    owner: str = ""  # the class whose `__init__` holds `site`
    deletes_itself: bool = False


@dataclass
class _Made:
    """One construction made per call with a parent."""
    where: str  # "`MainWindow.show_report()`", "a lambda in `MainWindow.__init__()`"
    parent: str
    optional_parent: bool


def _mentions_delete(nodes) -> bool:
    """`deleteLater`, `WA_DeleteOnClose`, `setParent(None)`, `sip.delete(x)` among `nodes`."""
    for node in nodes:
        if isinstance(node, cst.Attribute) and node.attr.value in _DELETE_NAMES:
            return True
        if isinstance(node, cst.Name) and node.value in _DELETE_NAMES:
            return True
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            attr = node.func.attr.value
            if attr == "setParent" and node.args and isinstance(node.args[0].value, cst.Name) \
                    and node.args[0].value.value == "None":
                return True
            if attr == "delete" or "garbage_collect" in attr:
                return True
    return False


def _function_deletes(index, qualified: str) -> bool:
    """Does the project function `qualified` delete or detach a widget (a helper such as
    `cleanup_on_close(widget)`)? A question for `ProjectIndex.ask`."""
    function = index.functions.get(qualified)
    tree = index.tree(function.path) if function is not None else None
    if tree is None:
        return False
    name = qualified.rpartition(".")[2]
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name == name \
                and fn.lineno == function.line:
            return any((isinstance(n, ast.Attribute) and n.attr in _DELETE_NAMES)
                       or (isinstance(n, ast.Name) and n.id in _DELETE_NAMES)
                       or (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                           and n.func.attr == "setParent" and n.args
                           and isinstance(n.args[0], ast.Constant) and n.args[0].value is None)
                       for n in ast.walk(fn))
    return False


class QtParentKeepsWindow(Rule):
    prefilter = QtParentKeepsWindowPrefilter
    name = "qt-parent-keeps-window"
    summary = ("A Qt dialog or window is made with a parent on every call and never deleted: the parent "
               "keeps each closed one as its child")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a Qt dialog or main window (`QDialog`, `QMainWindow`, `QMessageBox`, `QFileDialog`,
the other standard dialogs, or a project class deriving from one) made with a parent on
every call - in a method other than `__init__` (and the methods only `__init__` calls), a
function, or a lambda connected to a signal - when nothing deletes it: no
`WA_DeleteOnClose`, `deleteLater()`, `setParent(None)` or `sip.delete()` on it or in its
class, and it is not made once (`if self._dialog is None:`), returned or handed on.

A project class is reported where its `__init__` hands the parent to Qt
(`super().__init__(parent)`: where `WA_DeleteOnClose` goes); a Qt class where it is made.
Severity: a warning; info when the parent is a parameter that defaults to `None` (only a
caller that passes one keeps the windows).

## Why it leaks
A Qt object with a parent is owned by it: the parent deletes its children when it is
deleted itself, and not before. Closing a dialog hides it; `exec()` returning does not
delete it either. The binding keeps the Python object alive for as long as the C++ one,
so each dialog made per action stays - its widgets, timers, web views and everything its
attributes hold - as long as the main window, one more every time the user opens it.

## Example
```python
class AboutDialog(QDialog):
    def __init__(self, parent):
        super().__init__(parent)  # RL908
        self.credits = load_credits()


class MainWindow(QMainWindow):
    def __init__(self):
        super().__init__()
        self.about_action.triggered.connect(lambda: AboutDialog(self).show())
```

## Fix
None automatic: set `self.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)` after
`super().__init__(parent)` (or on the window where it is made), call `deleteLater()` when
it is done, or make it once and show it again.
"""

    valid = [
        """
from PyQt5.QtCore import Qt
from PyQt5.QtWidgets import QDialog

class Settings(QDialog):
    def __init__(self, parent):
        super().__init__(parent)
        self.setAttribute(Qt.WA_DeleteOnClose)

class Window:
    def open_settings(self):
        Settings(self).show()
""",
        """
from PyQt5.QtWidgets import QDialog

class Window:
    def ask(self):
        dialog = QDialog(self)
        dialog.exec_()
        dialog.deleteLater()
""",
    ]
    invalid = [
        Example(
            """
from PyQt5.QtWidgets import QDialog

class About(QDialog):
    def __init__(self, parent):
        super().__init__(parent)

class Window:
    def open_about(self):
        About(self).show()
""",
            lines=[6],
        ),
        Example(
            """
from PyQt5.QtWidgets import QDialog

class Window:
    def preview(self):
        self.preview = QDialog(self)
        self.preview.show()
""",
            lines=[6],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._windows: dict[str, _Window] = {}
        self._made: dict[str, list[_Made]] = {}
        self._lambdas: list[cst.Lambda] = []

    # -- the file's window classes ---------------------------------------------------
    def visit_Module(self, node: cst.Module) -> None:
        classes = self.ctx.classes
        changed = True
        while changed:  # a class deriving from a window class of the file is one too
            changed = False
            for name, cls in classes.items():
                if name not in self._windows and any(self._window_base(b.value) for b in cls.bases):
                    self._windows[name] = self._describe(cls)
                    changed = True
        for window in self._windows.values():
            window.deletes_itself = any(_mentions_delete(iter_nodes(c.body)) or self._helper_deletes(c)
                                        for c in self._lineage(window.cls))

    def _helper_deletes(self, cls: cst.ClassDef) -> bool:
        """Does the class hand itself to a function that deletes or detaches it
        (`cleanup_on_close(self)`)?"""
        for node in iter_nodes(cls.body):
            if not isinstance(node, cst.Call) or not any(is_self(a.value) for a in node.args):
                continue
            name = node.func.attr.value if isinstance(node.func, cst.Attribute) else (
                node.func.value if isinstance(node.func, cst.Name) else None)
            local = self.ctx.functions.get(name) if name else None
            if local is not None and _mentions_delete(iter_nodes(local.body)):
                return True
            qualified = self.ctx.absolute(self.ctx.qualname(node.func))
            if qualified and self.ctx.index is not None \
                    and self.ctx.index.ask(_function_deletes, self.ctx.index.resolve(qualified)):
                return True
        return False

    def _window_base(self, base: cst.BaseExpression) -> bool:
        if isinstance(base, cst.Name) and base.value in self._windows:
            return True
        return _is_qt_path(self.ctx.qualname(base))

    def _lineage(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """The class and its window bases defined in the file."""
        found, todo = [cls], [cls]
        while todo:
            for base in todo.pop().bases:
                window = self._windows.get(base.value.value) if isinstance(base.value, cst.Name) else None
                if window is not None and not any(c is window.cls for c in found):
                    found.append(window.cls)
                    todo.append(window.cls)
        return found

    def _describe(self, cls: cst.ClassDef) -> _Window:
        init = next((f for f in body_functions(cls) if f.name.value == "__init__"), None)
        if init is None:
            inherited = next((self._windows[b.value.value] for b in cls.bases
                              if isinstance(b.value, cst.Name) and b.value.value in self._windows), None)
            # its parent goes through the base's `__init__`: described, and reported, there
            return replace(inherited, cls=cls) if inherited is not None else _Window(cls)
        window = _Window(cls, passes_args=False)
        params = [p for p in init.params.params][1:]
        body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
        for stmt in body:
            if not isinstance(stmt, cst.SimpleStatementLine):
                continue
            for small in stmt.body:
                call = small.value if isinstance(small, cst.Expr) else None
                if not self._is_base_init(call):
                    continue
                assert isinstance(call, cst.Call)
                positional, keywords = call_args(call)
                if not (isinstance(call.func, cst.Attribute) and isinstance(call.func.value, cst.Call)):
                    positional = positional[1:]  # `Base.__init__(self, parent)`
                given = keywords["parent"].value if "parent" in keywords else (
                    positional[0].value if positional else None)
                if given is None or (isinstance(given, cst.Name) and given.value == "None"):
                    return window
                window.site, window.statement, window.owner = call, stmt, cls.name.value
                names = [p.name.value for p in params]
                if isinstance(given, cst.Name) and given.value in names:
                    window.parent_param = names.index(given.value)
                    window.parent_keyword = given.value
                elif not isinstance(given, (cst.SimpleString, cst.Integer)):
                    window.fixed_parent = True
                return window
        return window

    @staticmethod
    def _is_base_init(call: Optional[cst.BaseExpression]) -> bool:
        """`super().__init__(...)` or `Base.__init__(self, ...)`."""
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute) \
                or call.func.attr.value != "__init__":
            return False
        owner = call.func.value
        if isinstance(owner, cst.Call):
            return isinstance(owner.func, cst.Name) and owner.func.value == "super"
        return bool(call.args) and is_self(call.args[0].value)

    # -- constructions ----------------------------------------------------------------
    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._lambdas.append(node)

    def leave_Lambda(self, original_node: cst.Lambda) -> None:
        self._lambdas.pop()

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        window = self._windows.get(func.value) if isinstance(func, cst.Name) else None
        if window is None and not _is_qt_path(self.ctx.qualname(func)):
            return
        parent = self._parent(node, window)
        if parent is None:
            return
        target = self._bound_to(node)
        if target is None:
            return  # returned, handed on, or part of a larger expression
        if window is not None and window.deletes_itself:
            return
        where = self._per_call()
        if where is None or self._made_once(target) or self._released_at(target):
            return
        shown = self.ctx.code(parent) if not isinstance(parent, bool) else "the one its class gives"
        made = _Made(where, shown, self._optional(parent))
        if window is not None and window.site is not None:
            self._made.setdefault(window.owner, []).append(made)
            return
        name = window.cls.name.value if window is not None else self.ctx.code(func).rpartition(".")[2]
        self._report(node, None, name, [made])

    def _parent(self, call: cst.Call, window: Optional[_Window]) -> Union[cst.BaseExpression, bool, None]:
        """The parent the construction gives (True: a parent fixed by the class)."""
        positional, keywords = call_args(call)
        if window is not None and not window.passes_args:
            if window.fixed_parent:
                return True
            if window.parent_param is None:
                return None
            given = keywords[window.parent_keyword].value if window.parent_keyword in keywords else (
                positional[window.parent_param].value if window.parent_param < len(positional) else None)
        else:
            given = keywords["parent"].value if "parent" in keywords else (
                positional[0].value if positional else None)
        if given is None or isinstance(given, (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString,
                                               cst.Integer, cst.Float, cst.List, cst.Tuple, cst.Dict)):
            return None
        if isinstance(given, cst.Name) and given.value in ("None", "False", "True"):
            return None
        return given

    def _bound_to(self, call: cst.Call) -> Optional[str]:
        """What the new window is bound to: a name or `self.x` (its code), "" when it is used
        unbound (`Dialog(self).show()`, or a lambda's whole body); None otherwise."""
        if self._lambdas and self._is_whole(self._lambdas[-1].body, call):
            return ""
        if self._lambdas:
            return None
        stmt = self.ctx.scope.statement
        if not isinstance(stmt, cst.SimpleStatementLine) or len(stmt.body) != 1:
            return None
        small = stmt.body[0]
        if isinstance(small, cst.Expr) and self._is_whole(small.value, call):
            return ""
        if isinstance(small, (cst.Assign, cst.AnnAssign)) and small.value is call:
            targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
            if len(targets) == 1 and (isinstance(targets[0], cst.Name) or (
                    isinstance(targets[0], cst.Attribute) and is_self(targets[0].value))):
                return self.ctx.code(targets[0])
        return None

    @staticmethod
    def _is_whole(expr: cst.BaseExpression, call: cst.Call) -> bool:
        """`call` itself, or `call.show()` and the like."""
        if expr is call:
            return True
        return isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) \
            and expr.func.value is call and expr.func.attr.value in _SHOW

    def _per_call(self) -> Optional[str]:
        """Where the construction runs per call, as the message names it; None when it runs
        once (module level, `__init__` and the methods only `__init__` calls)."""
        fn = self.ctx.scope.function
        if fn is None:
            return None
        cls = self.ctx.scope.method_class
        name = f"{cls.name.value}.{fn.name.value}()" if cls is not None else f"{fn.name.value}()"
        if self._lambdas:
            return f"a lambda in `{name}`"
        if cls is not None and runs_once_per_instance(self.ctx, cls, fn):
            return None
        return f"`{name}`"

    def _made_once(self, target: str) -> bool:
        """`if self._dialog is None: self._dialog = Dialog(self)`: made on the first call only."""
        if not target:
            return False
        fn = self.ctx.scope.function
        statements = self.ctx.scope.statements
        if fn is not None and fn in statements:
            statements = statements[statements.index(fn) + 1:]
        for stmt in statements:
            if not isinstance(stmt, cst.If):
                continue
            tested = {self.ctx.code(n) for n in iter_nodes(stmt.test) if isinstance(n, (cst.Name, cst.Attribute))}
            names = {n.raw_value for n in iter_nodes(stmt.test) if isinstance(n, cst.SimpleString)}
            if target in tested or target.rpartition(".")[2] in names:  # `hasattr(self, "_dialog")`
                return True
        return False

    def _released_at(self, target: str) -> bool:
        """Is the window bound to `target` deleted, detached, returned or handed on where it
        is kept (the function for a local, the class for `self.x`)?"""
        if not target:
            return False
        scope: Optional[cst.CSTNode] = self.ctx.scope.function
        if target.startswith("self.") and self.ctx.scope.method_class is not None:
            scope = self.ctx.scope.method_class
        if scope is None:
            return False
        code = self.ctx.code
        for node in iter_nodes(scope):
            if isinstance(node, cst.Attribute) and code(node.value) == target and _mentions_delete([node]):
                return True
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) \
                    and code(node.func.value) == target and _mentions_delete(iter_nodes(node)):
                return True
            if isinstance(node, cst.Call) and not (isinstance(node.func, cst.Attribute)
                                                   and code(node.func.value) == target) \
                    and any(code(a.value) == target for a in node.args):
                return True  # deleted by a helper, or handed on to something that keeps it
            if isinstance(node, cst.Return) and node.value is not None and code(node.value) == target:
                return True
        return False

    def _optional(self, parent: Union[cst.BaseExpression, bool]) -> bool:
        """Is the parent a parameter of the function that defaults to None?"""
        fn = self.ctx.scope.function
        if fn is None or not isinstance(parent, cst.Name):
            return False
        params = [*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params]
        return any(p.name.value == parent.value and p.default is not None
                   and isinstance(p.default, cst.Name) and p.default.value == "None" for p in params)

    # -- reports ------------------------------------------------------------------------
    def leave_Module(self, original_node: cst.Module) -> None:
        for owner, made in self._made.items():
            window = self._windows[owner]  # the class whose `__init__` gives the parent
            assert window.site is not None
            self._report(window.site, window.statement, owner, made)

    def _report(self, node: cst.CSTNode, statement: Optional[cst.CSTNode], name: str,
                made: list[_Made]) -> None:
        first = next((m for m in made if not m.optional_parent), made[0])
        places = sorted({m.where for m in made})
        shown = ", ".join(places[:3]) + (f" and {len(places) - 3} more" if len(places) > 3 else "")
        optional = all(m.optional_parent for m in made)
        caveat = " (when a caller passes one: it defaults to None)" if optional else ""
        self.report(node,
                    f"a new `{name}` is made with a Qt parent (`{first.parent}`){caveat} on every call of {shown}, "
                    f"and nothing deletes it: the parent owns each one as its child, so every closed `{name}` "
                    f"stays, with all it holds, until the parent is deleted; set `WA_DeleteOnClose` on it or "
                    f"call `deleteLater()` when it is done",
                    severity=Severity.INFO if optional else Severity.WARNING,
                    statement=statement,
                    consequence=Consequence(f"every `{name}` made and closed",
                                            f"its Qt parent `{first.parent}`", "the parent's life",
                                            f"one `{name}` per call"))
