"""What a method of a class frees, closes or hands on, for RL613's "a part another method
frees" and the callbacks an object registers for itself: attributes freed in place
(`native.free(self.x)`, `self.x.release()`), closed as a whole (`self.x.close()`), called
a method of, and methods handed on as callbacks (`self._stack.callback(self._free)`)."""

from __future__ import annotations


import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, is_self, self_attribute
from retainlint.analysis.walk import visit
from retainlint.project.names import CLOSE_WORDS, frees



def _freed_in_place(fn: cst.FunctionDef) -> set[str]:
    """Attributes `fn` frees with a call on them or handing them to a freeing function."""
    found: set[str] = set()

    class _Frees(OwnScopeVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            word = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else None)
            if not frees(word):
                return
            if isinstance(func, cst.Attribute):
                attr = self_attribute(func.value)
                if attr is not None:
                    found.add(attr)
                    return
                if is_self(func.value):
                    return  # `self.close()`: the release path itself
            for arg in node.args:
                attr = self_attribute(arg.value)
                if attr is not None:
                    found.add(attr)

    visit(fn.body, _Frees())
    return found


def _closed_whole(fn: cst.FunctionDef) -> set[str]:
    """Attributes `fn` closes as a whole: `self.x.close()`, `self.x.shutdown()`."""
    found: set[str] = set()

    class _Closes(OwnScopeVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            func = node.func
            if isinstance(func, cst.Attribute) and not node.args and func.attr.value in CLOSE_WORDS:
                attr = self_attribute(func.value)
                if attr is not None:
                    found.add(attr)

    visit(fn.body, _Closes())
    return found


def _attributes_called(fn: cst.FunctionDef) -> set[str]:
    """Attributes `fn` calls a method of: `self.x.m(...)`."""
    found: set[str] = set()

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            if isinstance(node.func, cst.Attribute):
                attr = self_attribute(node.func.value)
                if attr is not None:
                    found.add(attr)

    visit(fn.body, _Calls())
    return found


def _handed_methods(cls: cst.CSTNode) -> set[str]:
    """Methods of `cls` referenced as `self.m` without being called: handed on as
    callbacks (`self._stack.callback(self._free)`, `atexit.register(self.close)`)."""
    found: set[str] = set()

    class _Handed(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            for arg in node.args:
                attr = self_attribute(arg.value)
                if attr is not None:
                    found.add(attr)

    visit(cls, _Handed())
    return found
