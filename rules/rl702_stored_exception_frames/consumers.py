"""Readers of a stored exception elsewhere in the file: the slots read and raised,
returned by a getter or taken out of a container (`_Consumers`, from each function's body,
`_FunctionBody`), and a class clearing an attribute after reading it (`_Clearing`, a
hand-off)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import libcst as cst

from retainlint.analysis.cstutil import OwnScopeVisitor, is_self
from retainlint.analysis.walk import visit
from retainlint.rules.rl702_stored_exception_frames.names import _target_names

if TYPE_CHECKING:
    from retainlint.rules.rl702_stored_exception_frames import StoredExceptionFrames

# Calls that take an entry out of a container (a hand-off when another function does it).
_TAKERS = frozenset({"pop", "popleft", "popitem"})
# Builtins whose result is (an element of) their first argument.
_PASS_THROUGH = frozenset({"next", "iter", "list", "tuple", "reversed", "sorted"})


class _Consumers:
    """The slots (`_slot`) this file hands to a consumer: read and raised somewhere
    (`raise self._error`, `raise RuntimeError(...) from _init_error`, `err =
    self._result.get("exception"); raise err`, `for item in self.thread.results(): raise
    item` through a getter), returned (`def error(self): return self.error_`), or taken
    out (`self._results.pop(k)`, `del self._jobs[k]`).
    Such an exception is a result kept for its reader, as `future.set_exception(e)` is.
    A read is ("a", attr, class) - the class for `self.attr` read in one of its methods,
    None for `other.attr` - or ("g", name) for a module global."""

    def __init__(self, rule: "StoredExceptionFrames", module: cst.Module) -> None:
        self.rule = rule
        self.raised: set = set()
        self.taken: list[tuple] = []  # (read, the function taking from it)
        functions = _AllFunctions()
        visit(module, functions)
        bodies = []
        for fn, cls in functions.found:
            body = _FunctionBody()
            visit(fn.body, body)
            bodies.append((fn, cls, body))
        # getters first: `def results(self): return self._results`
        self.getters: dict[str, set] = {}
        self.returned: set = set()  # slots a function returns: handed to its caller
        for fn, cls, body in bodies:
            if not body.returns:
                continue
            aliases = self._aliases(fn, cls, body)
            for ret in body.returns:
                read = self.reads(ret, aliases, fn, cls)
                self.returned |= read
                read = {r for r in read if r[0] == "a"}
                if read:
                    self.getters.setdefault(fn.name.value, set()).update(read)
        for fn, cls, body in bodies:
            if not body.raised and not body.taken:
                continue
            aliases = self._aliases(fn, cls, body)
            for exc in body.raised:
                self.raised |= self.reads(exc, aliases, fn, cls)
            for container in body.taken:
                self.taken.extend((r, fn) for r in self.reads(container, aliases, fn, cls))

    def raises(self, slot: tuple, cls: Optional[cst.ClassDef]) -> bool:
        """Is the slot of a store (on `self` of `cls`, if any) read and raised?"""
        return any(self._same(read, slot, cls) for read in self.raised)

    def returns(self, slot: tuple, cls: Optional[cst.ClassDef]) -> bool:
        """Is the slot of a store returned by a getter (`def error(self): return
        self.error_`, as `Future.exception()` hands the exception to its reader)?"""
        return any(self._same(read, slot, cls) for read in self.returned)

    def takes(self, slot: tuple, cls: Optional[cst.ClassDef], storing: cst.FunctionDef) -> bool:
        """Does a function other than the storing one take entries out of the slot? (The
        storing one trimming a history, `errors.pop(0)`, still keeps the rest.)"""
        return any(fn is not storing and self._same(read, slot, cls) for read, fn in self.taken)

    def _same(self, read: tuple, slot: tuple, cls: Optional[cst.ClassDef]) -> bool:
        if read[:2] != slot:
            return False
        if read[0] == "g" or read[2] is None or cls is None:
            return True
        # `self.attr` read in the storing class, a base or a subclass of it
        return self.rule.related(read[2], cls)

    def _aliases(self, fn, cls, body: "_FunctionBody") -> dict[str, set]:
        """Locals of `fn` assigned from a slot (flow-insensitive: `err = self._error`,
        `for batch in self.results(): for item in batch`)."""
        aliases: dict[str, set] = {}
        for _ in range(3):  # chains of aliases are short
            changed = False
            for target, value in body.assigned:
                read = self.reads(value, aliases, fn, cls)
                if not read:
                    continue
                for name in _target_names(target):
                    if not read <= aliases.get(name, set()):
                        aliases.setdefault(name, set()).update(read)
                        changed = True
            if not changed:
                break
        return aliases

    def reads(self, expr: Optional[cst.BaseExpression], aliases: dict, fn, cls) -> set:
        """The slots whose content `expr`, evaluated in `fn` (a method of `cls` or a
        function nested in one), evaluates to (or to an element of)."""
        if isinstance(expr, cst.Name):
            if expr.value in aliases:
                return aliases[expr.value]
            return {("g", expr.value)} if self.rule.module_global(expr.value, fn) else set()
        if isinstance(expr, cst.Attribute):
            owner = expr.value
            mine = isinstance(owner, cst.Name) and owner.value in ("self", "cls") and cls is not None
            return {("a", expr.attr.value, cls if mine else None)}
        if isinstance(expr, cst.Subscript):
            return self.reads(expr.value, aliases, fn, cls)
        if isinstance(expr, (cst.Await, cst.NamedExpr)):
            inner = expr.expression if isinstance(expr, cst.Await) else expr.value
            return self.reads(inner, aliases, fn, cls)
        if isinstance(expr, cst.IfExp):
            return self.reads(expr.body, aliases, fn, cls) | self.reads(expr.orelse, aliases, fn, cls)
        if isinstance(expr, cst.BooleanOperation):
            return self.reads(expr.left, aliases, fn, cls) | self.reads(expr.right, aliases, fn, cls)
        if isinstance(expr, cst.Call):
            func = expr.func
            if isinstance(func, cst.Attribute):
                # `.get(k)`, `.pop(k)`, `.values()` of the slot's container, or a getter
                return self.reads(func.value, aliases, fn, cls) | self.getters.get(func.attr.value, set())
            if isinstance(func, cst.Name) and func.value in _PASS_THROUGH and expr.args:
                return self.reads(expr.args[0].value, aliases, fn, cls)
        return set()


class _AllFunctions(cst.CSTVisitor):
    """Every function of a module, nested ones included, with the innermost class it is
    in (a closure in a method sees the method's `self`)."""

    def __init__(self) -> None:
        self.found: list[tuple[cst.FunctionDef, Optional[cst.ClassDef]]] = []
        self._classes: list[cst.ClassDef] = []

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.append(node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._classes.pop()

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self.found.append((node, self._classes[-1] if self._classes else None))


class _FunctionBody(OwnScopeVisitor):
    """What one function assigns to locals, raises, returns and takes entries out of,
    not entering nested scopes."""

    def __init__(self) -> None:
        self.assigned: list[tuple] = []  # (target, value)
        self.raised: list[cst.BaseExpression] = []
        self.returns: list[cst.BaseExpression] = []
        self.taken: list[cst.BaseExpression] = []  # containers popped or deleted from

    def visit_Assign(self, node: cst.Assign) -> None:
        for t in node.targets:
            target = t.target
            if isinstance(target, (cst.Tuple, cst.List)) and isinstance(node.value, (cst.Tuple, cst.List)) \
                    and len(target.elements) == len(node.value.elements):
                self.assigned.extend((a.value, b.value) for a, b in zip(target.elements, node.value.elements))
            else:
                self.assigned.append((target, node.value))

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self.assigned.append((node.target, node.value))

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self.assigned.append((node.target, node.value))

    def visit_For(self, node: cst.For) -> None:
        self.assigned.append((node.target, node.iter))

    def visit_Raise(self, node: cst.Raise) -> None:
        if node.exc is not None:
            self.raised.append(node.exc)
        if node.cause is not None:
            self.raised.append(node.cause.item)

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self.returns.append(node.value)

    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TAKERS:
            self.taken.append(func.value)

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            if isinstance(t, cst.Subscript):
                self.taken.append(t.value)


class _Clearing(cst.CSTVisitor):
    """Does a method set `self.<attr>` to None (or delete it), and read it before?"""

    def __init__(self, attr: str) -> None:
        self.attr = attr
        self.cleared = False
        self.read_before = False
        self._reads = 0

    def _is_attr(self, node) -> bool:
        return (
            isinstance(node, cst.Attribute)
            and is_self(node.value)
            and node.attr.value == self.attr
        )

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if self._is_attr(node):
            self._reads += 1

    def visit_Assign(self, node: cst.Assign) -> None:
        values = node.value.elements if isinstance(node.value, cst.Tuple) else [node.value]
        for t in node.targets:
            targets = t.target.elements if isinstance(t.target, cst.Tuple) else [t.target]
            for i, target in enumerate(targets):
                target = target.value if isinstance(target, cst.Element) else target
                if not self._is_attr(target):
                    continue
                v = values[i] if len(values) == len(targets) else None
                v = v.value if isinstance(v, cst.Element) else v
                if isinstance(v, cst.Name) and v.value == "None":
                    self.cleared = True
                    # a read in the same statement (`err, self.e = self.e, None`) or earlier
                    if self._reads > 0 or any(
                        self._is_attr(x.value if isinstance(x, cst.Element) else x) for x in values
                    ):
                        self.read_before = True

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
        for t in targets:
            t = t.value if isinstance(t, cst.Element) else t
            if self._is_attr(t):
                self.cleared = True
                if self._reads > 1:
                    self.read_before = True
