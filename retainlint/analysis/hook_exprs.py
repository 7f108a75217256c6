"""Small read-only helpers on libcst expressions that the hook analyses share: every node
below a node, the hook registration a call makes, the attributes of `self` and the names an
expression reads, the names a target binds, the parts of a display or a conditional.
(`retainlint.analysis.hooks` offers the ones other modules use.)"""

from __future__ import annotations

from typing import Iterator, Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.project.hook_names import HANDLE_HOOKS
from retainlint.analysis.walk import children


def iter_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and everything below it (whitespace left out), depth first."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def hook_name(call: cst.Call) -> Optional[str]:
    """The hook registration a call makes (`register_forward_hook`), if it is one."""
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else (
        func.value if isinstance(func, cst.Name) else None)
    return name if name in HANDLE_HOOKS else None


def const_str(node: cst.CSTNode) -> Optional[str]:
    if isinstance(node, cst.SimpleString):
        value = node.evaluated_value
        return value if isinstance(value, str) else None
    return None


def getattr_self(node: cst.CSTNode) -> tuple[bool, Optional[str]]:
    """(is `getattr(self, ...)` / `hasattr`-style access, constant attribute name)."""
    if (isinstance(node, cst.Call) and isinstance(node.func, cst.Name)
            and node.func.value == "getattr" and len(node.args) >= 2 and is_self(node.args[0].value)):
        return True, const_str(node.args[1].value)
    return False, None


def self_attrs(expr: cst.CSTNode) -> tuple[set[str], bool]:
    """Attributes of `self` an expression reads (`self.a`, `getattr(self, "a")`), and
    whether it reads one by a computed name (`getattr(self, name)`)."""
    found: set[str] = set()
    dynamic = False
    for node in iter_nodes(expr):
        if isinstance(node, cst.Attribute) and is_self(node.value):
            found.add(node.attr.value)
        else:
            is_get, name = getattr_self(node)
            if is_get:
                if name is None:
                    dynamic = True
                else:
                    found.add(name)
    return found, dynamic


def names_in(expr: cst.CSTNode) -> set[str]:
    """Names an expression uses (not attribute names: `b` in `a.b` is no name)."""
    attrs = {id(n.attr) for n in iter_nodes(expr) if isinstance(n, cst.Attribute)}
    return {n.value for n in iter_nodes(expr) if isinstance(n, cst.Name) and id(n) not in attrs}


def target_names(target: cst.CSTNode) -> set[str]:
    """Names bound by an assignment / loop target (`a`, `a, (b, c)`, `*rest`)."""
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        out: set[str] = set()
        for element in target.elements:
            out |= target_names(element.value)
        return out
    if isinstance(target, cst.StarredElement):
        return target_names(target.value)
    return set()


def _value_parts(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The expressions whose values `node` evaluates to or holds: the elements of a
    display, a comprehension's element, both arms of a conditional or `or`, ..."""
    if isinstance(node, (cst.List, cst.Tuple, cst.Set)):
        return [e.value for e in node.elements]
    if isinstance(node, cst.Dict):
        return [e.value for e in node.elements]
    if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp)):
        return [node.elt]
    if isinstance(node, cst.DictComp):
        return [node.value]
    if isinstance(node, cst.IfExp):
        return [node.body, node.orelse]
    if isinstance(node, cst.BooleanOperation):
        return [node.left, node.right]
    if isinstance(node, cst.NamedExpr):
        return [node.value]
    if isinstance(node, cst.Await):
        return [node.expression]
    if isinstance(node, (cst.Element, cst.StarredElement)):
        return [node.value]
    return []
