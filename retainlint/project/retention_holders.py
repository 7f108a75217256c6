"""The holders one module declares (module-level, class-level and per-instance
containers), and where in the source a fact was found."""

from __future__ import annotations

import ast
from typing import Optional

from retainlint.project.nodes import dotted
from retainlint.project.retention_facts import Site
from retainlint.project.retention_shapes import (
    FUNCTIONS, last_name, container_kind, bindings, field_container_kind, runs_once, statements)


class Lines:
    """Turns `ast`'s byte offsets into 1-based character columns."""

    def __init__(self, source: bytes) -> None:
        self.lines = source.splitlines()

    def column(self, line: int, offset: int) -> int:
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else b""
        return len(text[:offset].decode("utf-8", "replace")) + 1

    def site(self, node: ast.AST, statement: ast.AST) -> Site:
        end_line = getattr(node, "end_lineno", None) or node.lineno  # type: ignore[attr-defined]
        end_col = getattr(node, "end_col_offset", None) or node.col_offset  # type: ignore[attr-defined]
        return Site(node.lineno, self.column(node.lineno, node.col_offset),  # type: ignore[attr-defined]
                    end_line, self.column(end_line, end_col),
                    statement.lineno, statement.end_lineno or statement.lineno)  # type: ignore[attr-defined]

# Decorators after which `self.name` is no method bound to the instance.
_NOT_BOUND = frozenset({"setter", "getter", "staticmethod"})


class Holders:
    """The holders a module declares, and how an expression inside a function names one."""

    def __init__(self, module: str, tree: ast.Module) -> None:
        self.module = module
        self.module_level: dict[str, str] = {}  # name -> container kind
        self.class_level: dict[str, dict[str, str]] = {}  # class -> attr -> kind
        self.instance: dict[str, dict[str, str]] = {}  # class -> attr -> kind
        self.methods: dict[str, set[str]] = {}  # class -> method names
        self.classes: dict[str, ast.ClassDef] = {}
        self.made_when_missing: set[int] = set()  # ids of `if not hasattr(C, "x"): C.x = {}` stores
        self.made_in_setup: set[int] = set()  # ids of `self.x = {}` in `start()`, no `__init__` making it
        # (property, attribute): `@property def tasks(self): return self._tasks` - code reaching
        # the container through the property (`executor.tasks.pop(k)`) reaches the attribute
        self.aliases: set[tuple[str, str]] = set()
        self._chains: dict[str, list[str]] = {}  # see `_chain`
        for node in statements(tree.body):  # also under a module-level `try:`/`if:` (a fallback)
            for target, value in bindings(node):
                if isinstance(target, ast.Name) and not target.id.startswith("__"):  # `__all__`
                    kind = container_kind(value)
                    if kind is not None:
                        self.module_level[target.id] = kind
                    else:
                        self.module_level.pop(target.id, None)  # rebound to something else
            if isinstance(node, ast.ClassDef):
                self._class(node)

    def _class(self, node: ast.ClassDef) -> None:
        self.classes[node.name] = node
        self.aliases |= {(f.name, attr) for f in node.body if isinstance(f, FUNCTIONS)
                         for attr in [property_attribute(f)] if attr is not None}
        own = self.class_level.setdefault(node.name, {})
        # Methods, not properties (`self.size` reads a value) nor staticmethods (`self.f` is
        # the plain function): neither is a bound method.
        self.methods[node.name] = {f.name for f in node.body if isinstance(f, FUNCTIONS)
                                   and not any("property" in (dotted(d) or "") or last_name(d) in _NOT_BOUND
                                               for d in f.decorator_list)}
        kept = self.instance.setdefault(node.name, {})
        for item in node.body:
            for target, value in bindings(item):
                kind = container_kind(value)
                if isinstance(target, ast.Name) and kind is not None:
                    own[target.id] = kind
                field = field_container_kind(value)
                if isinstance(target, ast.Name) and field is not None:
                    kept[target.id] = field  # made anew for each instance
        for method in node.body:
            if isinstance(method, FUNCTIONS) and method.args.args:
                self._made_when_missing(node.name, method, own, kept)
        # `__init__` first: a container it makes, a set-up method making again empties it
        for method in sorted((m for m in node.body if isinstance(m, FUNCTIONS) and m.args.args and (
                m.name == "__init__" or runs_once(m.name))), key=lambda m: m.name != "__init__"):
            me = method.args.args[0].arg
            for sub in statements(method.body):
                for target, value in bindings(sub):
                    if (isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                            and target.value.id == me):
                        kind = container_kind(value)
                        if kind is not None and target.attr not in kept:
                            kept[target.attr] = kind
                            if method.name != "__init__":
                                # made by the set-up that runs once per object (`start()`):
                                # the object's own, and making it there empties nothing
                                self.made_in_setup.add(id(sub))
        for attr in kept:
            own.pop(attr, None)  # assigned per instance: not the class's shared one

    def _made_when_missing(self, cls: str, method: ast.FunctionDef | ast.AsyncFunctionDef,
                           own: dict[str, str], kept: dict[str, str]) -> None:
        """A class container made on first use, `if not hasattr(type(self), "x"): type(self).x
        = {}` (or through `cls` or the class's name): one for the class, as if its body bound
        it, and the store only makes it where it is missing - it empties nothing."""
        me = method.args.args[0].arg
        classmethod_ = any(dotted(d) == "classmethod" for d in method.decorator_list)
        for stmt in statements(method.body):
            if not isinstance(stmt, ast.If):
                continue
            test = stmt.test
            if not (isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
                    and isinstance(test.operand, ast.Call) and dotted(test.operand.func) == "hasattr"
                    and len(test.operand.args) == 2):
                continue
            owner, attr = test.operand.args
            if not isinstance(attr, ast.Constant) or not (_own_type(owner, me) or isinstance(owner, ast.Name) and (
                    owner.id == cls or owner.id == me and classmethod_)):
                continue
            for inner in stmt.body:
                for target, value in bindings(inner):
                    kind = container_kind(value)
                    if (kind is not None and isinstance(target, ast.Attribute) and target.attr == attr.value
                            and ast.dump(target.value) == ast.dump(owner) and attr.value not in kept):
                        own.setdefault(target.attr, kind)
                        self.made_when_missing.add(id(inner))

    def named(self, expr: ast.AST, cls: Optional[str], me: Optional[str],
              local: set[str]) -> Optional[tuple[str, str, str]]:
        """(holder, kind, container) for an expression naming a holder, else None."""
        if isinstance(expr, ast.Name):
            if expr.id in self.module_level and expr.id not in local:
                return f"{self.module}.{expr.id}", "module", self.module_level[expr.id]
            return None
        if not isinstance(expr, ast.Attribute):
            return None
        if cls is not None and _own_type(expr.value, me):
            # `type(self).X`, `self.__class__.X`: the class attribute, never the instance's
            owner = self._declaring(cls, expr.attr, per_instance=False)
            return None if owner is None else (
                f"{self.module}.{owner}.{expr.attr}", "class", self.class_level[owner][expr.attr])
        if not isinstance(expr.value, ast.Name):
            return None
        base, attr = expr.value.id, expr.attr
        if cls is not None and base == me:
            attr = self._property_of(cls, attr) or attr  # `self.tasks` returning `self._tasks`
            if attr in self.instance.get(cls, {}):
                return f"{self.module}.{cls}().{attr}", "instance", self.instance[cls][attr]
            owner = self._declaring(cls, attr)
            if owner is not None:
                return f"{self.module}.{owner}.{attr}", "class", self.class_level[owner][attr]
            # made by a base's `__init__` (`super().__init__()`): this instance's own too
            inherited = next((self.instance[b][attr] for b in self._chain(cls)[1:] if attr in self.instance.get(b, {})), None)
            if inherited is not None:
                return f"{self.module}.{cls}().{attr}", "instance", inherited
            return None
        owner = cls if (base == "cls" and cls is not None) else base
        if attr in self.class_level.get(owner, {}):
            return f"{self.module}.{owner}.{attr}", "class", self.class_level[owner][attr]
        return None

    def _chain(self, cls: str) -> list[str]:
        """`cls`, then its bases defined in this module, nearest first (read once per class)."""
        chain = self._chains.get(cls)
        if chain is None:
            chain = [cls]
            for name in chain:  # grows as it goes: breadth first
                node = self.classes.get(name)
                chain += [b.id for b in node.bases if isinstance(b, ast.Name) and b.id in self.classes
                          and b.id not in chain] if node is not None else []
            self._chains[cls] = chain
        return chain

    def _property_of(self, cls: str, attr: str) -> Optional[str]:
        """The attribute a read-only property of `cls` or a base returns as it is
        (`@property def tasks(self): return self._tasks`), else None."""
        for name in self._chain(cls):
            node = self.classes.get(name)
            found = next((f for f in node.body if isinstance(f, FUNCTIONS) and f.name == attr), None) if node else None
            if found is not None:
                return property_attribute(found)  # a method of that name that is no such property: None
        return None

    def _declaring(self, cls: str, attr: str, per_instance: bool = True) -> Optional[str]:
        """The class of this module whose body binds `attr` as a container that `self.attr`
        in `cls` reaches: `cls` itself, else the nearest base defined in this module (a
        subclass appending to a list its base declared shares that one list), unless a
        class on the way assigns it per instance (and `per_instance`: `self.attr` would
        read the instance's own)."""
        for name in self._chain(cls):
            if per_instance and attr in self.instance.get(name, {}):
                return None
            if attr in self.class_level.get(name, {}):
                return name
        return None


def property_attribute(f: ast.FunctionDef | ast.AsyncFunctionDef) -> Optional[str]:
    """`_tasks` for a read-only property whose body is `return self._tasks`, else None."""
    if not (f.args.args and any(dotted(d) == "property" for d in f.decorator_list)):
        return None
    body = [b for b in f.body if not (isinstance(b, ast.Expr) and isinstance(b.value, ast.Constant))]
    returned = body[0].value if len(body) == 1 and isinstance(body[0], ast.Return) else None
    if isinstance(returned, ast.Attribute) and isinstance(returned.value, ast.Name) \
            and returned.value.id == f.args.args[0].arg:
        return returned.attr
    return None


def _own_type(expr: ast.AST, me: Optional[str]) -> bool:
    """Is `expr` the class of the method's instance: `type(self)` or `self.__class__`?"""
    if me is None:
        return False
    if isinstance(expr, ast.Attribute):
        return expr.attr == "__class__" and isinstance(expr.value, ast.Name) and expr.value.id == me
    return (isinstance(expr, ast.Call) and isinstance(expr.func, ast.Name) and expr.func.id == "type"
            and len(expr.args) == 1 and not expr.keywords
            and isinstance(expr.args[0], ast.Name) and expr.args[0].id == me)
