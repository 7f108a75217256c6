"""The `ast` twin of `analysis/release.py`'s release-method judgement, for prefilters
(no libcst here): a method that might release the whole object."""

from __future__ import annotations

import ast
from typing import Optional

from retainlint.project.names import OFFLOADS, releases
from retainlint.project.nodes import self_attr


def release_shaped(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Might `analysis.release.is_release_method` accept this method (its name, decorators
    and stub body aside)? An instance method callable with `self` alone (`close(self)`,
    `shutdown(self, timeout=None)`), or `__exit__` / `__aexit__`: not `free(self, idx)`."""
    args = fn.args
    first = (args.posonlyargs or args.args)[:1]
    if not first or first[0].arg != "self":
        return False
    if fn.name in ("__exit__", "__aexit__"):
        return True
    positional = [*args.posonlyargs, *args.args]
    return len(args.defaults) >= len(positional) - 1 and all(d is not None for d in args.kw_defaults)


# -- what an owner releases in place (its parts' own release methods) -------------------


def _held(node: ast.AST, aliases: dict[str, str]) -> Optional[str]:
    """`a` for `self.a`, `getattr(self, "a"[, default])` or a local bound to one."""
    attr = self_attr(node)
    if attr is not None:
        return attr
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" \
            and len(node.args) >= 2 and isinstance(node.args[0], ast.Name) and node.args[0].id == "self" \
            and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
        return node.args[1].value
    if isinstance(node, ast.Name):
        return aliases.get(node.id)
    return None


def released_in_place(cls: ast.ClassDef, method: str) -> tuple[frozenset[str], frozenset[str]]:
    """(released, unbound) attributes of the release method `method` of `cls` and the
    methods of `cls` it calls on `self`: released by their own release method or an
    offload (`self.a.shutdown()`, `if a := getattr(self, "a", None): a.close()`,
    `self.a.to("cpu")`); unbound (`del self.a`, `self.a = ...`, `self.a.clear()`). The `ast`
    twin of `analysis.release.ReleasePaths.drops`, for one class's own methods."""
    methods = {m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
    released: set[str] = set()
    unbound: set[str] = set()
    todo, seen = [method], set()
    while todo:
        name = todo.pop()
        fn = methods.get(name)
        if fn is None or name in seen:
            continue
        seen.add(name)
        aliases: dict[str, str] = {}
        for node in ast.walk(fn):
            if isinstance(node, (ast.Assign, ast.AnnAssign, ast.NamedExpr)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    attr = self_attr(target)
                    if attr is not None:
                        unbound.add(attr)
                    elif isinstance(target, ast.Name) and node.value is not None:
                        held = _held(node.value, aliases)
                        if held is not None:
                            aliases[target.id] = held
            elif isinstance(node, ast.Delete):
                unbound.update(a for a in map(self_attr, node.targets) if a)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
                word = node.func.attr
                receiver = node.func.value
                if isinstance(receiver, ast.Name) and receiver.id == "self":
                    todo.append(word)
                    continue
                held = _held(receiver, aliases)
                if held is None:
                    continue
                if word == "clear" and not node.args:
                    unbound.add(held)
                elif releases(word) or word in OFFLOADS:
                    released.add(held)
    return frozenset(released), frozenset(unbound)


def releasing_owners(index, key: tuple[str, tuple[str, ...]]) -> tuple:
    """Project classes holding an instance of the class `qualified` in an attribute
    (`self.x = C(...)`) whose own release method (one of `names`, not `__del__`) releases
    other attributes in place (`self.profiler.shutdown()`) but neither releases nor drops
    that one: ((owner, path, line and column of the release method, attr, method,
    (released others)), ...). A question for `ProjectIndex.ask`."""
    qualified, names = key
    found = []
    holders = index.memo("release_shape holders", lambda: _holders(index)).get(qualified, {})
    for owner, held in holders.items():
        summary = index.classes[owner]
        releasing = [n for n in names if n in summary.methods and n != "__del__"]
        if not releasing:
            continue
        cls = _class_node(index, summary)
        if cls is None:
            continue
        for name in releasing:
            fn = next((m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and m.name == name), None)
            if fn is None or not release_shaped(fn):
                continue
            released, unbound = released_in_place(cls, name)
            for attr in held:
                others = released - {attr}
                if others and attr not in released and attr not in unbound:
                    found.append((summary.qualname, summary.path, fn.lineno, fn.col_offset + 1, attr, name,
                                  tuple(sorted(others))))
    return tuple(sorted(found))


def may_release_parts(index, key: tuple[str, tuple[str, ...]]) -> bool:
    """Might `releasing_owners` find an owner of the class `qualified`: a project class
    holding an instance whose release method (or a method of its own it calls) calls a
    releasing method on another attribute (`self.profiler.shutdown()`)? Told from the
    index's call lists, reading no file: for prefilters. A question for
    `ProjectIndex.ask`."""
    qualified, names = key
    holders = index.memo("release_shape holders", lambda: _holders(index)).get(qualified, {})
    for owner, held in holders.items():
        summary = index.classes[owner]
        todo = [n for n in names if n in summary.methods and n != "__del__"]
        seen: set[str] = set()
        while todo:
            name = todo.pop()
            method = summary.methods.get(name)
            if method is None or name in seen:
                continue
            seen.add(name)
            for call in method.calls:
                parts = call.split(".")
                if len(parts) == 2 and parts[0] == "self":
                    todo.append(parts[1])
                elif len(parts) > 1 and (releases(parts[-1]) or parts[-1] in OFFLOADS) and not (
                        len(parts) == 3 and parts[0] == "self" and parts[1] in held):
                    return True  # `self.profiler.shutdown()`, or through a local: `r.close()`
    return False


def _holders(index) -> dict:
    """Class built -> {holder class: [attributes assigned an instance]}."""
    table: dict = {}
    for summary in index.classes.values():
        for attr, makers in summary.attributes.items():
            for maker in makers:
                built = index.resolve(maker) or maker
                table.setdefault(built, {}).setdefault(summary.qualname, []).append(attr)
    return table


def _class_node(index, summary) -> Optional[ast.ClassDef]:
    parsed = index.source(summary.path)
    if parsed is None:
        return None
    return next((n for n in parsed[0].body if isinstance(n, ast.ClassDef) and n.lineno == summary.line), None)


# -- exceptions a class stores ---------------------------------------------------------
# An exception handed to a method and kept on `self` (`def set_exception(self, exc):
# self._exception = exc`) holds its traceback, and the traceback every frame it went
# through with their locals: the request, the connection, often the holder itself.
_EXCEPTION_PARAMS = frozenset({"exc", "exception", "exc_val", "exc_value"})
_MAX_BASES = 8


def _names_exception(ann: Optional[ast.AST]) -> bool:
    """`BaseException`, `Exception`, `XError`, `XException`, also in `Optional[...]`,
    `Union[...]` or `X | None` (not a class of one: `type[Exception]`)."""
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _names_exception(ann.left) or _names_exception(ann.right)
    if isinstance(ann, ast.Subscript):
        wrapper = ann.value.attr if isinstance(ann.value, ast.Attribute) else getattr(ann.value, "id", "")
        items = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        return wrapper in ("Optional", "Union") and any(_names_exception(i) for i in items)
    name = ann.attr if isinstance(ann, ast.Attribute) else ann.id if isinstance(ann, ast.Name) else None
    return bool(name) and (name in ("BaseException", "Exception") or name.endswith(("Error", "Exception")))


def exception_params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """Parameters of a method (after `self`) that are exceptions by their annotation, or
    by their name when not annotated."""
    args = fn.args
    return {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)[1:]
            if _names_exception(a.annotation) or (a.annotation is None and a.arg in _EXCEPTION_PARAMS)}


def stored_exceptions(cls: ast.ClassDef) -> tuple[list[tuple[str, int, str]], set[str]]:
    """(attr, line, method) for `self.attr = p` where `p` is a parameter of the method
    that is an exception by its annotation or its name; and the attributes a method other
    than `__init__` empties (`self.attr = None`: a reader taking it out, a release)."""
    found = []
    emptied = set()
    for fn in cls.body:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and fn.name != "__init__":
            for node in ast.walk(fn):
                if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and node.value.value is None:
                    emptied.update(a for a in map(self_attr, node.targets) if a)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = exception_params(fn)
        if not params:
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name) and node.value.id in params:
                for target in node.targets:
                    attr = self_attr(target)
                    if attr is not None:
                        found.append((attr, node.lineno, fn.name))
    return found, emptied


def exception_slots(index, qualified: str) -> tuple:
    """Attributes the class `qualified` or a project base of it assigns an exception handed
    to a method, and no method of theirs but `__init__` empties (a slot a reader takes the
    exception out of is a hand-off): ((attr, path, line, class, method), ...). A question
    for `ProjectIndex.ask`."""
    found = []
    emptied: set[str] = set()
    seen: set[str] = set()
    todo = [qualified]
    while todo and len(seen) < _MAX_BASES:
        name = todo.pop()
        summary = index.classes.get(name)
        if summary is None or name in seen:
            continue
        seen.add(name)
        cls = _class_node(index, summary)
        if cls is not None:
            stored, cleared = stored_exceptions(cls)
            found += [(attr, summary.path, line, name, method) for attr, line, method in stored]
            emptied |= cleared
        todo += [index.resolve(b) or b for b in summary.bases]
    return tuple(slot for slot in found if slot[0] not in emptied)
