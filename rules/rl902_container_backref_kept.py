"""RL902 container-backref-kept."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hook_exprs import const_str, iter_nodes, target_names
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl902 import ContainerBackrefKeptPrefilter


def _self_attr_call(node: cst.CSTNode, names: tuple[str, ...]) -> Optional[str]:
    """The attribute name of `object.__setattr__(self, "a", ...)`-style calls (`names`
    are the callee spellings), else None."""
    if not isinstance(node, cst.Call) or len(node.args) < 2 or not is_self(node.args[0].value):
        return None
    func = node.func
    spelled = (func.value if isinstance(func, cst.Name) else
               f"{func.value.value}.{func.attr.value}"
               if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) else None)
    return const_str(node.args[1].value) if spelled in names else None


_SETS = ("setattr", "object.__setattr__")
_GETS = ("getattr", "object.__getattribute__")
_DELS = ("delattr", "object.__delattr__")


def _read_attr(node: cst.CSTNode) -> Optional[str]:
    """`self.a`, `getattr(self, "a")`, `object.__getattribute__(self, "a")` -> "a"."""
    if isinstance(node, cst.Attribute) and is_self(node.value):
        return node.attr.value
    return _self_attr_call(node, _GETS)


def _params(fn: cst.FunctionDef) -> tuple[set[str], Optional[str]]:
    p = fn.params
    named = {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)} - {"self"}
    star = p.star_kwarg.name.value if p.star_kwarg is not None else None
    return named, star


def _handed_in(value: cst.CSTNode, named: set[str], star: Optional[str]) -> bool:
    """An argument of `__init__`: `parent`, or `kwargs.pop("parent", None)`."""
    if isinstance(value, cst.Name):
        return value.value in named
    return (star is not None and isinstance(value, cst.Call) and isinstance(value.func, cst.Attribute)
            and isinstance(value.func.value, cst.Name) and value.func.value.value == star
            and value.func.attr.value in ("pop", "get"))


class ContainerBackrefKept(Rule):
    prefilter = ContainerBackrefKeptPrefilter
    name = "container-backref-kept"
    summary = "An object keeps the reference to the container it attached itself to"
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports, in a class, an attribute that `__init__` sets from an argument (`self._parent =
parent`, `object.__setattr__(self, "__parent", kwargs.pop("__parent", None))`) when the
only use of it is to attach the instance to that object - a method stores `self` into it
(`parent[key] = self`, `setattr(parent, name, self)`) - and no method ever drops it
(`del`, `= None`, `object.__delattr__`). This is the lazy child of an auto-vivifying
container: created on a missing key or attribute, it attaches itself to its parent on
the first write.

Not reported: a back-reference that is dropped once attached; a parent link the class
reads anywhere else (a tree that walks up to its root needs it); a `weakref.ref` to
the parent.

## Why it leaks
Once attached, the parent holds the child and the child still holds the parent: a
reference cycle. Every tree built through the container is freed only when the cyclic
collector runs, not when its last reference goes - and each nested level adds one more
cycle. The back-reference was only needed until the child was attached.

## Example
```python
class AutoDict(dict):
    def __init__(self, *args, **kwargs):
        object.__setattr__(self, "_parent", kwargs.pop("_parent", None))  # RL902
        object.__setattr__(self, "_key", kwargs.pop("_key", None))
        super().__init__(*args, **kwargs)

    def __setitem__(self, name, value):
        super().__setitem__(name, value)
        parent = object.__getattribute__(self, "_parent")
        if parent is not None:
            parent[object.__getattribute__(self, "_key")] = self

    def __missing__(self, name):
        return AutoDict(_parent=self, _key=name)
```

## Suggestion
Drop the back-reference once the child is attached (`object.__delattr__(self,
"_parent")` right after `parent[key] = self`), or keep only a `weakref.ref` to the parent.
"""

    valid = [
        # dropped once attached
        """
class Child:
    def __init__(self, parent, key):
        self._parent = parent
        self._key = key

    def set(self, value):
        self.value = value
        if self._parent is not None:
            self._parent[self._key] = self
            self._parent = None
""",
        # a parent link the class keeps using
        """
class Node:
    def __init__(self, parent=None):
        self.parent = parent

    def attach(self):
        self.parent.children[id(self)] = self

    def depth(self):
        return 0 if self.parent is None else 1 + self.parent.depth()
""",
    ]
    invalid = [
        Example(
            """
class Child:
    def __init__(self, parent, key):
        self._parent = parent
        self._key = key

    def set(self, value):
        self.value = value
        if self._parent is not None:
            self._parent[self._key] = self
""",
            lines=[4],
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        methods = self.ctx.methods(node)
        init = methods.get("__init__")
        if init is None:
            return
        named, star = _params(init)
        stores: dict[str, cst.CSTNode] = {}
        for sub in iter_nodes(init.body):
            if isinstance(sub, cst.Assign) and _handed_in(sub.value, named, star):
                for t in sub.targets:
                    if isinstance(t.target, cst.Attribute) and is_self(t.target.value):
                        stores.setdefault(t.target.attr.value, sub)
            attr = _self_attr_call(sub, _SETS)
            if attr is not None and isinstance(sub, cst.Call) and len(sub.args) == 3 \
                    and _handed_in(sub.args[2].value, named, star):
                stores.setdefault(attr, sub)
        for attr, store in stores.items():
            attach = self._attached_only(methods, attr)
            if attach is not None and not self._dropped(methods, attr):
                self.report(
                    store,
                    f"`{attr}` keeps the object this `{node.name.value}` attaches itself to and is never "
                    "dropped: once attached, that object holds the instance and the instance holds it, a "
                    "reference cycle freed only by the cyclic collector (one per nested level); drop the "
                    "back-reference once attached, or keep a `weakref.ref`",
                    related=[RelatedNode("attached here", attach)],
                    statement=next(
                        (line for line in iter_nodes(init.body) if isinstance(line, cst.SimpleStatementLine)
                         and any(n is store for n in iter_nodes(line))), None),
                    consequence=Consequence(f"each `{node.name.value}` and its parent", f"their cycle through `self.{attr}`",
                                            "the next cyclic collection", "one cycle per nested level"),
                )

    def _attached_only(self, methods: dict[str, cst.FunctionDef], attr: str) -> Optional[cst.CSTNode]:
        """The statement storing `self` into the object `attr` holds, when every method
        reading `attr` (other than `__init__`) makes such a store: the link serves only
        to attach the instance."""
        attach: Optional[cst.CSTNode] = None
        for name, method in methods.items():
            if name == "__init__":
                continue
            refs = self._references(method, attr)
            if refs is None:
                continue  # does not read it
            here = self._attach_in(method, attr, refs)
            if here is None:
                return None  # read for something else: a link the class needs
            attach = attach or here
        return attach

    @staticmethod
    def _references(method: cst.FunctionDef, attr: str) -> Optional[set[str]]:
        """Locals bound to a read of `attr`, or None when the method does not read it."""
        reads = [n for n in iter_nodes(method.body) if _read_attr(n) == attr]
        if not reads:
            return None
        names: set[str] = set()
        for n in iter_nodes(method.body):
            if isinstance(n, cst.Assign) and _read_attr(n.value) == attr:
                for t in n.targets:
                    names |= target_names(t.target)
        return names

    @staticmethod
    def _attach_in(method: cst.FunctionDef, attr: str, refs: set[str]) -> Optional[cst.CSTNode]:
        def is_ref(expr: cst.CSTNode) -> bool:
            return (isinstance(expr, cst.Name) and expr.value in refs) or _read_attr(expr) == attr

        for n in iter_nodes(method.body):
            if isinstance(n, cst.Assign) and is_self(n.value):
                for t in n.targets:
                    target = t.target
                    if isinstance(target, (cst.Subscript, cst.Attribute)) and is_ref(target.value):
                        return n
            if isinstance(n, cst.Call) and isinstance(n.func, cst.Name) and n.func.value == "setattr" \
                    and len(n.args) == 3 and is_ref(n.args[0].value) and is_self(n.args[2].value):
                return n
        return None

    @staticmethod
    def _dropped(methods: dict[str, cst.FunctionDef], attr: str) -> bool:
        for name, method in methods.items():
            for n in iter_nodes(method.body):
                if isinstance(n, cst.Del) and any(_read_attr(t) == attr for t in iter_nodes(n.target)):
                    return True
                if _self_attr_call(n, _DELS) == attr:
                    return True
                if name != "__init__" and isinstance(n, cst.Assign) and \
                        isinstance(n.value, cst.Name) and n.value.value == "None" and any(
                            _read_attr(t.target) == attr for t in n.targets):
                    return True
                if name != "__init__" and _self_attr_call(n, _SETS) == attr and len(n.args) == 3 \
                        and isinstance(n.args[2].value, cst.Name) and n.args[2].value.value == "None":
                    return True
        return False
