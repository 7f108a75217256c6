"""Small CST helpers shared by rules and their fixes."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Iterable, Iterator, Optional, Sequence

import libcst as cst

from retainlint.analysis.imports import compound_blocks, dotted_name
from retainlint.analysis.walk import visit
from retainlint.project.index import CACHE_DECORATORS

if TYPE_CHECKING:
    from retainlint.analysis.context import FileContext



class OwnScopeVisitor(cst.CSTVisitor):
    """Visits the statements of one scope: nested functions, classes and lambdas are
    scopes of their own and are not entered."""

    def visit_FunctionDef(self, node) -> bool:
        return False

    def visit_ClassDef(self, node) -> bool:
        return False

    def visit_Lambda(self, node) -> bool:
        return False


class FinallyWrites(cst.CSTVisitor):
    """What the `finally:` blocks of a tree assign or delete: (target, value) pairs, the
    value None for `del` (a reset that runs on every way out of the `try`). With
    `own_scope`, nested functions, classes and lambdas are not entered."""

    def __init__(self, own_scope: bool = False) -> None:
        self.writes: list[tuple[cst.BaseExpression, Optional[cst.BaseExpression]]] = []
        self._own_scope = own_scope
        self._depth = 0

    def visit_FunctionDef(self, node) -> bool:
        return not self._own_scope

    def visit_ClassDef(self, node) -> bool:
        return not self._own_scope

    def visit_Lambda(self, node) -> bool:
        return not self._own_scope

    def visit_Finally(self, node) -> None:
        self._depth += 1

    def leave_Finally(self, node) -> None:
        self._depth -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        if self._depth:
            self.writes.extend((t.target, node.value) for t in node.targets)

    def visit_Del(self, node: cst.Del) -> None:
        if self._depth:
            targets = node.target.elements if isinstance(node.target, (cst.Tuple, cst.List)) else [node.target]
            self.writes.extend((t.value if isinstance(t, cst.Element) else t, None) for t in targets)


def annotation_expression(ann: Optional[cst.CSTNode]) -> Optional[cst.BaseExpression]:
    """The expression an annotation writes: unwrapped from `cst.Annotation`, and parsed when
    it is written as a string (`"torch.Tensor"`); None when there is none or the string does
    not parse."""
    if isinstance(ann, cst.Annotation):
        ann = ann.annotation
    if isinstance(ann, cst.SimpleString):
        try:
            return annotation_expression(cst.parse_expression(str(ann.evaluated_value)))
        except Exception:
            return None
    return ann if isinstance(ann, cst.BaseExpression) else None


def body_statements(block) -> list:
    body = getattr(block, "body", block)
    return list(body.body) if isinstance(body, cst.IndentedBlock) else []


def name_bindings(statements: Iterable[cst.CSTNode]) -> Iterator[tuple[cst.Name, cst.BaseExpression]]:
    """`name = value` and `name: T = value` among these statements (a module's or a class
    body's): the bound name and its value."""
    for stmt in statements:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1:
                target, value = small.targets[0].target, small.value
            elif isinstance(small, cst.AnnAssign) and small.value is not None:
                target, value = small.target, small.value
            else:
                continue
            if isinstance(target, cst.Name):
                yield target, value


# A module-level string or number (`SEP = "."`) is a constant, not an object with a life.
_CONSTANTS = (cst.SimpleString, cst.ConcatenatedString, cst.FormattedString, cst.Integer, cst.Float)


def module_objects(ctx: "FileContext") -> set[str]:
    """Names the module binds at its top level to something other than a constant."""
    def compute() -> set[str]:
        found: set[str] = set()
        for stmt in ctx.module.body:
            for small in stmt.body if isinstance(stmt, cst.SimpleStatementLine) else ():
                if isinstance(small, (cst.Assign, cst.AnnAssign)) and not isinstance(small.value, _CONSTANTS):
                    targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else [small.target]
                    found |= {t.value for t in targets if isinstance(t, cst.Name)}
        return found
    return ctx.memo("module objects", compute)


def body_functions(cls: cst.ClassDef) -> list[cst.FunctionDef]:
    """The methods of a class body, those defined under an `if` or a `try` of it too
    (`if PY_341: def __del__(self): ...`)."""
    def walk(statements) -> Iterator[cst.FunctionDef]:
        for stmt in statements:
            if isinstance(stmt, cst.FunctionDef):
                yield stmt
            elif isinstance(stmt, (cst.If, cst.Try)):
                for block in compound_blocks(stmt):
                    yield from walk(block)
    return list(walk(body_statements(cls)))


def cache_maxsize(ctx: "FileContext", decorator: cst.BaseExpression, qualified: str) -> Optional[str]:
    """The `maxsize` of a cache decorator (`qualified`: what it resolves to) as written:
    `"None"` when unbounded (`functools.cache`, `maxsize=None`), `"128"` for `lru_cache`'s
    default; None when unknown (a project's own wrapper given none)."""
    if qualified == "functools.cache":
        return "None"
    if isinstance(decorator, cst.Call):
        positional, keywords = call_args(decorator)
        given = keywords["maxsize"] if "maxsize" in keywords else positional[0] if positional else None
        if given is not None and (qualified in CACHE_DECORATORS or "maxsize" in keywords):
            return " ".join(ctx.code(given.value).split())
    return "128" if qualified in CACHE_DECORATORS else None


def call_args(call: cst.Call) -> tuple[list[cst.Arg], dict[str, cst.Arg]]:
    """Positional and keyword arguments (starred ones count as neither)."""
    positional, keywords = [], {}
    for arg in call.args:
        if arg.star:
            continue
        if arg.keyword is not None:
            keywords[arg.keyword.value] = arg
        else:
            positional.append(arg)
    return positional, keywords


def is_self(node: cst.CSTNode) -> bool:
    return isinstance(node, cst.Name) and node.value == "self"


def self_attribute(node: cst.CSTNode) -> Optional[str]:
    """`x` for `self.x`."""
    if isinstance(node, cst.Attribute) and is_self(node.value):
        return node.attr.value
    return None


def decorator_names(ctx: FileContext, fn: cst.FunctionDef) -> set[str]:
    names = set()
    for d in fn.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        q = ctx.qualname(target)
        if q:
            names.add(q)
    return names


def is_instance_method(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    names = decorator_names(ctx, fn)
    if names & {"staticmethod", "classmethod", "builtins.staticmethod", "builtins.classmethod"}:
        return False
    params = fn.params.posonly_params or fn.params.params
    return bool(params) and params[0].name.value == "self"


def releases_whole_object(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    """Can `fn` be where a fix puts cleanup of the whole object? An instance method callable
    with `self` alone (`close(self)`, `shutdown(self, timeout=None)`), or `__exit__` /
    `__aexit__`. A "release" method that needs an argument (`free(self, block_id)`,
    `release(self, request_id)`) lets go of one item, and runs once per item; so does one
    whose optional argument is the item (`free(self, free_index: Tensor | None = None)`)."""
    if not is_instance_method(ctx, fn):
        return False
    if fn.name.value in ("__exit__", "__aexit__"):
        return True
    params = fn.params
    optional = (*(*params.posonly_params, *params.params)[1:], *params.kwonly_params)
    if any(p.default is None for p in optional):
        return False
    return not any(_released_item(ctx, fn, p) for p in optional)


def _released_item(ctx: FileContext, fn: cst.FunctionDef, param: cst.Param) -> bool:
    """Is an optional parameter the item a per-item release lets go of, rather than an
    option of releasing the whole object (`timeout`, `wait`, `force`)? Memory handed in
    (annotated as a tensor or model: `free_index: Optional[torch.Tensor] = None`), or a
    parameter without which the method does nothing (`slot=None`, and first of all
    `if slot is None: return`)."""
    if ctx.heavy.is_heavy_annotation(param.annotation):
        return True
    if not (isinstance(param.default, cst.Name) and param.default.value == "None"):
        return False
    first = next((s for s in body_statements(fn) if not _is_docstring(s)), None)
    return isinstance(first, cst.If) and first.orelse is None and _returns_only(first.body) \
        and _tests_missing(first.test, param.name.value)


def _returns_only(block: cst.BaseSuite) -> bool:
    """A block that is a bare `return` (or `return None`), indented or on the `if` line."""
    if isinstance(block, cst.IndentedBlock):
        if len(block.body) != 1 or not isinstance(block.body[0], cst.SimpleStatementLine):
            return False
        block = block.body[0]
    small = block.body
    return len(small) == 1 and isinstance(small[0], cst.Return) and (
        small[0].value is None or (isinstance(small[0].value, cst.Name) and small[0].value.value == "None"))


def _tests_missing(test: cst.BaseExpression, name: str) -> bool:
    """`name is None`, or that `or`-ed with other conditions."""
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.Or):
        return _tests_missing(test.left, name) or _tests_missing(test.right, name)
    return (isinstance(test, cst.Comparison) and isinstance(test.left, cst.Name) and test.left.value == name
            and len(test.comparisons) == 1 and isinstance(test.comparisons[0].operator, cst.Is)
            and isinstance(test.comparisons[0].comparator, cst.Name)
            and test.comparisons[0].comparator.value == "None")


def _with_body(fn: cst.FunctionDef, body: Sequence[cst.BaseStatement]) -> cst.FunctionDef:
    if isinstance(fn.body, cst.IndentedBlock):
        return fn.with_changes(body=fn.body.with_changes(body=body))
    return fn.with_changes(body=cst.IndentedBlock(body=body))


def _statements(fn: cst.FunctionDef) -> list[cst.BaseStatement]:
    if isinstance(fn.body, cst.IndentedBlock):
        return list(fn.body.body)
    # `def f(): pass` on one line
    return [cst.SimpleStatementLine(body=list(fn.body.body))]


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _is_pass(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, cst.Pass) for s in stmt.body
    )


def append_to_function(fn: cst.FunctionDef, new: Iterable[cst.BaseStatement]) -> cst.FunctionDef:
    """Add statements at the end of a function body (before a final bare `return`);
    a body that is only `pass` (or `...`) is replaced."""
    body = _statements(fn)
    body = [s for s in body if not _is_pass(s)] or []
    tail: list[cst.BaseStatement] = []
    if body and isinstance(body[-1], cst.SimpleStatementLine) and isinstance(
        body[-1].body[-1], cst.Return
    ) and body[-1].body[-1].value is None:
        tail = [body.pop()]
    return _with_body(fn, [*body, *new, *tail])


def prepend_to_function(fn: cst.FunctionDef, new: Iterable[cst.BaseStatement]) -> cst.FunctionDef:
    """Add statements at the start of a function body, after its docstring."""
    body = _statements(fn)
    head = [body.pop(0)] if body and _is_docstring(body[0]) else []
    return _with_body(fn, [*head, *new, *body])


def unique_self_attribute(ctx: FileContext, cls: cst.ClassDef, wanted: str,
                          sharing: Sequence[cst.ClassDef] = (), taken: Iterable[str] = ()) -> str:
    """`wanted`, else `wanted_2`, ...: a name that neither `cls` nor the classes `sharing`
    its instances (its bases and subclasses: a base's `self._h` is the same slot) mention,
    and not in `taken` (names known from classes of other files)."""
    texts = [ctx.code(c) for c in (cls, *sharing)]
    taken = set(taken)
    name, n = wanted, 2
    while name in taken or any(f"self.{name}" in t or f"{name} =" in t for t in texts):
        name = f"{wanted}_{n}"
        n += 1
    return name


def in_body_of(stmt: Optional[cst.CSTNode], fn: cst.FunctionDef) -> bool:
    """Is `stmt` a statement directly in `fn`'s body (not nested in if/for/try)?"""
    return stmt is not None and any(s is stmt for s in body_statements(fn))


class _Bindings(cst.CSTVisitor):
    """Where a module binds one name, in any scope: the modules its imports bind it to
    (`import weakref`, `import weakref as name`), and how many other bindings there are
    (assignments, loop/with/except targets, parameters, functions, classes, `del`,
    `from x import name`, match captures)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.imported: list[str] = []
        self.other = 0

    def _target(self, target: Optional[cst.CSTNode]) -> None:
        if isinstance(target, cst.Name):
            self.other += target.value == self.name
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._target(element.value)
        elif isinstance(target, (cst.StarredElement, cst.AsName)):
            self._target(target.value if isinstance(target, cst.StarredElement) else target.name)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            local = dotted_name(alias.asname.name) if alias.asname is not None else full.split(".")[0]
            if local == self.name:
                self.imported.append(full if alias.asname is not None else local)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if not isinstance(node.names, cst.ImportStar):
            for alias in node.names:
                self._target(alias.asname.name if alias.asname is not None else alias.name)

    def visit_Param(self, node: cst.Param) -> None:
        self._target(node.name)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._target(node.name)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._target(node.name)

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        self._target(node.asname)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self._target(node.name)

    def visit_Del(self, node: cst.Del) -> None:
        self._target(node.target)

    def visit_MatchAs(self, node: cst.MatchAs) -> None:
        self._target(node.name)

    def visit_MatchStar(self, node: cst.MatchStar) -> None:
        self._target(node.name)

    def visit_MatchMapping(self, node: cst.MatchMapping) -> None:
        self._target(node.rest)


def _top_level_imports(module: cst.Module, name: str) -> list[str]:
    """Local names that plain `import name` / `import name as x` statements at the top
    level of the module (not under `if`, `try`, `with`...) bind to the module `name`."""
    found = []
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.Import):
                    for alias in small.names:
                        if dotted_name(alias.name) != name:
                            continue
                        if alias.asname is not None:
                            found.append(dotted_name(alias.asname.name))
                        elif "." not in name:
                            found.append(name)
    return [f for f in found if f]


def proven_module_ref(ctx: FileContext, module: str) -> Optional[tuple[str, tuple[str, ...]]]:
    """How to spell `module` in a fix, and the imports the fix must add for it (its
    top-level alias, or its own name plus `import module`); None when a fix cannot be
    sure the name it writes will be the module when the code runs: the module is
    imported only under a condition
    (`if TYPE_CHECKING:`, `if __name__ == "__main__":`, inside a function...), which the
    fixer takes for imported and would not import again; or the name it would use also
    stands for something else somewhere in the file (`weakref = ...`, a parameter,
    `from x import weakref`)."""
    asked = _PROVEN.setdefault(ctx, {})
    if module not in asked:  # a walk of the whole file: once per file, not per finding
        asked[module] = _proven_module_ref(ctx, module)
    return asked[module]


# FileContext -> module -> `proven_module_ref`'s answer, for as long as the file is linted.
_PROVEN: "weakref.WeakKeyDictionary[FileContext, dict[str, Optional[tuple[str, tuple[str, ...]]]]]" = \
    weakref.WeakKeyDictionary()


def _proven_module_ref(ctx: FileContext, module: str) -> Optional[tuple[str, tuple[str, ...]]]:
    for local in _top_level_imports(ctx.module, module):
        found = _Bindings(local)
        visit(ctx.module, found)
        if not found.other and all(target == module for target in found.imported):
            return local, ()
    if "." in module:
        return None
    found = _Bindings(module)
    visit(ctx.module, found)
    if found.other or found.imported:
        return None
    return module, (module,)
