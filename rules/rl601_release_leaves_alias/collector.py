"""RL601's facts about one method body: the attributes it assigns and what from, what
it hands to other objects, the attributes it releases (`del self.a`, `self.a = None`,
`self.a.clear()`) and in what order, the objects it ends (`.close()`, `ray.kill(...)`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, is_self, self_attribute

_CLOSE_METHODS = frozenset({"close", "shutdown", "release", "cleanup", "stop", "terminate", "destroy"})
# Words of a module function that ends the object it is handed first (`ray.kill(actor)`,
# `os.close(fd)`, `terminate_process(proc)`): what still refers to it holds a dead handle.
_ENDING_WORDS = frozenset({"close", "shutdown", "terminate", "destroy", "kill", "dispose", "stop"})


def _ends_argument(func: cst.BaseExpression, modules: frozenset) -> bool:
    """A function (not a method of an object: `self.pool.release(x)` gives `x` back to a
    pool that keeps it) named to end what it is handed."""
    root = func
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name) or (root is not func and root.value not in modules):
        return False
    last = func.attr.value if isinstance(func, cst.Attribute) else func.value
    return not _ENDING_WORDS.isdisjoint(last.lower().split("_"))



@dataclass
class Source:
    attr: str  # the alias attribute (`b`)
    node: cst.CSTNode  # where it was made
    method: str  # the method it was made in
    how: str  # "alias" | "bound" | "built" | "container" | "handed"
    via: str  # `self.model` or the local's name


@dataclass
class Release:
    attr: str
    kind: str  # "del" | "none" | "clear"
    small: cst.BaseSmallStatement
    line: cst.CSTNode  # SimpleStatementLine or SimpleStatementSuite
    order: int
    # inside a loop: the order the outermost enclosing loop starts at (what the loop
    # runs after the release, on its next pass, comes before it in the source)
    loop_start: Optional[int] = None


@dataclass
class MethodFacts:
    # self.X = value (X -> [(value, statement node)])
    assigns: list = field(default_factory=list)  # (attr, value, node)
    # self.X...m(args) / self.X.y = value / self.X[k] = value
    handed: list = field(default_factory=list)  # (attr, [exprs], node, method name)
    # name = value, self.X = name
    name_from_attr: list = field(default_factory=list)  # (name, attr)
    # ordered events for fix safety: ("ref", attr, order) / ("call", method, order)
    events: list = field(default_factory=list)
    releases: list = field(default_factory=list)
    calls_self: set = field(default_factory=set)
    closed: set = field(default_factory=set)  # attrs whose object is ended here: `.close()`, `ray.kill(...)`
    closing_names: set = field(default_factory=set)  # locals `.close()`d here
    called_attrs: dict = field(default_factory=dict)  # self.X.y(...) -> {X: {y}}
    self_called: set = field(default_factory=set)  # self.X(...)
    unpacked: set = field(default_factory=set)  # attrs assigned by unpacking (`self.X, y = ...`)


def _self_root(expr: cst.BaseExpression) -> Optional[str]:
    """`b` for `self.b.x.y`, `self.b[0].z` (but not for `self.b` itself)."""
    node = expr
    while True:
        if isinstance(node, cst.Attribute):
            if is_self(node.value):
                return None if node is expr else node.attr.value
            node = node.value
        elif isinstance(node, cst.Subscript):
            node = node.value
        else:
            return None


def _const_str(expr: cst.BaseExpression) -> Optional[str]:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _del_targets(target: cst.BaseExpression):
    if isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            yield from _del_targets(element.value)
    else:
        yield target


class Collector(OwnScopeVisitor):
    """Facts about one method body, nested functions and lambdas left out."""

    def __init__(self, modules: frozenset = frozenset()) -> None:
        self.modules = modules  # names the file's imports bind
        self.facts = MethodFacts()
        self.order = 0
        self.line: Optional[cst.CSTNode] = None
        self.loops: list[int] = []  # orders the enclosing for/while loops start at

    def _tick(self) -> int:
        self.order += 1
        return self.order

    def visit_For(self, node) -> None:
        self.loops.append(self.order)

    def leave_For(self, node) -> None:
        self.loops.pop()

    visit_While = visit_For
    leave_While = leave_For

    def visit_SimpleStatementLine(self, node) -> None:
        self.line = node

    def visit_SimpleStatementSuite(self, node) -> None:
        self.line = node

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if is_self(node.value):
            self.facts.events.append(("ref", node.attr.value, self._tick()))

    def _release(self, attr: str, kind: str, small) -> None:
        loop_start = self.loops[0] if self.loops else None
        self.facts.releases.append(Release(attr, kind, small, self.line, self._tick(), loop_start))

    def visit_Del(self, node: cst.Del) -> None:
        for target in _del_targets(node.target):
            attr = self_attribute(target)
            if attr is not None:
                self._release(attr, "del", node)

    def visit_Assign(self, node: cst.Assign) -> None:
        names = [t.target.value for t in node.targets if isinstance(t.target, cst.Name)]
        for t in node.targets:
            self._assign(t.target, node.value, node, names)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._assign(node.target, node.value, node, [])

    def _assign(self, target, value, node, names) -> None:
        attr = self_attribute(target)
        if attr is not None:
            is_none = isinstance(value, cst.Name) and value.value == "None"
            if is_none:
                self._release(attr, "none", node)
            else:
                self.facts.assigns.append((attr, value, node))
                for n in names:
                    self.facts.name_from_attr.append((n, attr))
                if isinstance(value, cst.Name):
                    self.facts.name_from_attr.append((value.value, attr))
            return
        if isinstance(target, cst.Name):
            source = self_attribute(value)
            if (
                source is None and isinstance(value, cst.Call) and isinstance(value.func, cst.Name)
                and value.func.value == "getattr" and len(value.args) >= 2
                and is_self(value.args[0].value)
            ):
                source = _const_str(value.args[1].value)
            if source is not None:
                self.facts.name_from_attr.append((target.value, source))
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            if isinstance(value, (cst.Tuple, cst.List)) and len(target.elements) == len(value.elements):
                for t, v in zip(target.elements, value.elements):
                    self._assign(t.value, v.value, node, [])
            else:
                for t in target.elements:
                    for inner in _del_targets(t.value):
                        attr = self_attribute(inner)
                        if attr is not None:
                            self.facts.unpacked.add(attr)
            return
        root = _self_root(target)
        if root is not None:
            self.facts.handed.append((root, [value], node, None))

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Name) and func.value == "delattr" and node.args:
            if is_self(node.args[0].value):
                name = _const_str(node.args[1].value) if len(node.args) > 1 else None
                if name is not None:
                    self._release(name, "del", node)
            return
        if node.args and not node.args[0].keyword and _ends_argument(func, self.modules):
            first = node.args[0].value
            if self_attribute(first) is not None:
                self.facts.closed.add(self_attribute(first))
            elif isinstance(first, cst.Name):
                self.facts.closing_names.add(first.value)
        if not isinstance(func, cst.Attribute):
            return
        receiver = func.value
        method = func.attr.value
        if is_self(receiver):
            self.facts.calls_self.add(method)
            self.facts.self_called.add(method)
            self.facts.events.append(("call", method, self._tick()))
            return
        attr = self_attribute(receiver)
        if method in _CLOSE_METHODS:
            if attr is not None:
                self.facts.closed.add(attr)
            elif isinstance(receiver, cst.Name):
                self.facts.closing_names.add(receiver.value)
        if attr is not None:
            self.facts.called_attrs.setdefault(attr, set()).add(method)
        root = attr or _self_root(receiver)
        if root is not None and node.args:
            self.facts.handed.append((root, [a.value for a in node.args], node, method))

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "clear"
            and not call.args
        ):
            attr = self_attribute(call.func.value)
            if attr is not None:
                self._release(attr, "clear", node)
