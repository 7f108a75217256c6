"""What the release checks' fixes (RL610, RL611) need: where statements go at the end of a release method (`_append`:
before a final `return` and a final run of `gc.collect()` / `empty_cache()` / logging), and
for each part kept, the release method of its own a fix may call, and whether `__init__`
always sets it (`_set_in_init`) or the class has `__slots__` (`_has_slots`)."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import append_to_function, body_functions, body_statements, self_attribute
from retainlint.analysis.fix_preconditions import end_reachable
from retainlint.analysis.walk import visit
from retainlint.analysis.owned_parts import _DUNDER_RELEASE
from retainlint.analysis.owned_parts import _annotation_names, _callee_word, _Heavy


def _has_slots(cls: cst.ClassDef) -> bool:
    for stmt in body_statements(cls):
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                targets = []
                if isinstance(small, cst.Assign):
                    targets = [t.target for t in small.targets]
                elif isinstance(small, cst.AnnAssign):
                    targets = [small.target]
                if any(isinstance(t, cst.Name) and t.value == "__slots__" for t in targets):
                    return True
    return False


def _release_method_of(ctx, h: _Heavy) -> Optional[str]:
    """A release method of the attribute's class callable without arguments."""
    qualified = _constructor_of(ctx, h)
    if qualified is None:
        return None
    index = ctx.index
    summary = index.classes.get(qualified)
    if summary is None:
        return None
    local = ctx.classes.get(summary.qualname.rsplit(".", 1)[1]) \
        if summary.qualname == f"{ctx.module_name}.{summary.qualname.rsplit('.', 1)[1]}" else None
    owner = local if local is not None else summary
    for name in ctx.settings.release_methods:
        if name in _DUNDER_RELEASE:
            continue
        found = ctx.release.lookup(owner, name)
        if found is None:
            continue
        fn = found[1]
        if fn is None or fn.asynchronous is not None:
            return None
        if _decorator_words(fn) & {"staticmethod", "classmethod", "property", "abstractmethod"}:
            return None
        params = fn.params
        positional = [*params.posonly_params, *params.params][1:]
        if any(p.default is None for p in (*positional, *params.kwonly_params)):
            return None
        return name
    return None


def _constructor_of(ctx, h: _Heavy) -> Optional[str]:
    """The project class the attribute's value is built from (qualified)."""
    candidates = [h.origin.func]
    if h.annotation is not None:
        candidates += _annotation_names(h.annotation)
    index = ctx.index
    for expr in candidates:
        q = index.resolve(ctx.absolute(ctx.qualname(expr)))
        if q and index.classes.get(q) is not None:
            return q
    return None


def _set_in_init(ctx, cls: cst.ClassDef, attr: str) -> tuple[bool, bool]:
    """(always set by `__init__`, may be None)."""
    init = ctx.methods(cls).get("__init__")
    always = False
    if init is not None:
        for stmt in body_statements(init):
            if isinstance(stmt, cst.SimpleStatementLine):
                for small in stmt.body:
                    targets = []
                    if isinstance(small, cst.Assign):
                        targets = [t.target for t in small.targets]
                    elif isinstance(small, cst.AnnAssign) and small.value is not None:
                        targets = [small.target]
                    if any(self_attribute(t) == attr for t in targets):
                        always = True
    maybe_none = False
    for fn in body_functions(cls):
        for value, ann in ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
            if value is None or not isinstance(value, cst.Call):
                maybe_none = True
    return always, maybe_none


def _decorator_words(fn: cst.FunctionDef) -> set[str]:
    words = set()
    for d in fn.decorators:
        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
        if isinstance(target, cst.Attribute):
            words.add(target.attr.value)
        elif isinstance(target, cst.Name):
            words.add(target.value)
    return words


# Calls that only tidy up after releasing (`gc.collect()`, `torch.cuda.empty_cache()`,
# logging): a fix goes before a final run of them, so that they see the memory freed.
_FLUSH_WORDS = frozenset(
    {"collect", "empty_cache", "synchronize", "debug", "info", "warning", "log", "print",
     "info_once", "debug_once"}
)


def _is_flush(stmt) -> bool:
    if isinstance(stmt, cst.SimpleStatementLine):
        return all(
            isinstance(s, cst.Expr) and isinstance(s.value, cst.Call)
            and _callee_word(s.value) in _FLUSH_WORDS
            for s in stmt.body
        )
    if isinstance(stmt, cst.If):
        blocks = [stmt.body]
        orelse = stmt.orelse
        while orelse is not None:
            if isinstance(orelse, cst.If):
                blocks.append(orelse.body)
                orelse = orelse.orelse
            else:
                blocks.append(orelse.body)
                orelse = None
        return all(
            isinstance(b, cst.IndentedBlock) and b.body and all(_is_flush(s) for s in b.body)
            for b in blocks
        )
    return False


def _frees(stmt) -> bool:
    """Does a flush statement collect garbage or empty a cache?"""
    found = False

    class _Finder(cst.CSTVisitor):
        def visit_Call(self, node: cst.Call) -> None:
            nonlocal found
            if _callee_word(node) in ("collect", "empty_cache"):
                found = True

    visit(stmt, _Finder())
    return found


def _append(fn: cst.FunctionDef, statements: list) -> Optional[cst.FunctionDef]:
    """Statements at the end of `fn`: before a final `return` (a bare one, or one whose
    value does not involve `self`) and before a final run of `gc.collect()` /
    `empty_cache()` / logging calls; None when the end is not reachable that way."""
    if not end_reachable(fn):
        return None  # after a `try` that returns, an `if` whose branches all return or raise
    body = fn.body
    if not isinstance(body, cst.IndentedBlock) or not body.body:
        return append_to_function(fn, statements)
    stmts = list(body.body)
    k = len(stmts)
    last = stmts[-1]
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Raise):
        return None
    if isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return):
        value = last.body[-1].value
        if len(last.body) > 1 or (value is not None and _mentions_self(value)):
            return None
        k -= 1
    end = k
    while k > 0 and _is_flush(stmts[k - 1]):
        k -= 1
    if not any(_frees(stmt) for stmt in stmts[k:end]):
        k = end  # only logging or synchronising: the end stays the end
    if k == len(stmts):
        return append_to_function(fn, statements)
    return fn.with_changes(body=body.with_changes(body=[*stmts[:k], *statements, *stmts[k:]]))


def _mentions_self(expr) -> bool:
    class _Finder(cst.CSTVisitor):
        found = False

        def visit_Name(self, node: cst.Name) -> None:
            if node.value == "self":
                self.found = True

    finder = _Finder()
    visit(expr, finder)
