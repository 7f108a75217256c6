"""Hook registrations and their removal handles: the name tables RL501, RL502 and RL701
share, and a per-class analysis of where handles are stored and where they are removed.

Everything here is read-only and walks with `retainlint.analysis.walk` (never libcst's `.visit`).
The machinery lives in sibling modules: `hook_exprs` (small expression helpers),
`handle_facts` (what one method stores and removes), `exit_paths` (undone on every way
out of a function) and `handle_holders` (what holds one registration's handle).
"""

from __future__ import annotations

import ast
import weakref
from typing import Iterable, Optional

import libcst as cst

from retainlint.analysis.context import FileContext
from retainlint.analysis.cstutil import body_functions, decorator_names, is_self
from retainlint.analysis.exit_paths import _ExitPaths, _scope_path
from retainlint.analysis.handle_facts import HandleStore, MethodFacts, method_facts
from retainlint.analysis.handle_holders import _bindings, _Handle, nested_function
from retainlint.analysis.hook_exprs import (
    hook_name,
    iter_nodes,
    self_attrs,
    target_names,
)
from retainlint.analysis.release import FINALIZER, is_release_method


# -- name tables -------------------------------------------------------------------------


CONTEXT_MANAGER_DECORATORS = frozenset(
    {"contextlib.contextmanager", "contextlib.asynccontextmanager", "contextmanager",
     "asynccontextmanager"}
)
PROPERTY_DECORATORS = frozenset(
    {"property", "builtins.property", "functools.cached_property", "cached_property"}
)


# -- on the `ast`, for the rules' prefilter scans ---------------------------------------


# -- small expression helpers -----------------------------------------------------------

def short(code: str, limit: int = 60) -> str:
    """Source for a message: on one line, cut to `limit` characters."""
    flat = " ".join(code.split())
    flat = flat.replace("( ", "(").replace("[ ", "[").replace(", )", ")").replace(", ]", "]")
    return flat if len(flat) <= limit else flat[: limit - 3].rstrip() + "..."


def receiver(call: cst.Call) -> Optional[cst.BaseExpression]:
    return call.func.value if isinstance(call.func, cst.Attribute) else None


def hook_argument(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The callable a registration installs (first positional argument or `hook=`)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("hook", "fn", "callback"):
            return arg.value
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            # `register_multi_grad_hook(tensors, fn)`: the callable comes second
            if hook_name(call) == "register_multi_grad_hook":
                continue
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    return positional[1].value if len(positional) > 1 else None


def mentions_self(node: cst.CSTNode) -> bool:
    return any(isinstance(n, cst.Name) and n.value == "self" for n in iter_nodes(node))


# Words of a method name that take something off (`remove_event_handler`, `detach`,
# `unobserve`): a call in `__del__` that schedules or logs (`call_soon(self.close)`) is not one.
_REMOVAL_WORDS = frozenset({"remove", "unregister", "unreg", "unsubscribe", "disconnect", "detach", "unobserve",
                            "unbind", "unwatch", "discard", "off", "delete", "del", "unhook", "unlisten", "clear"})


def removes_by_name(verb: str) -> bool:
    """Does a method of this name take something off (`remove_event_handler`, `detach`)?"""
    return any(word in _REMOVAL_WORDS for word in verb.lower().split("_"))


def handler_keeps_instance(ctx: FileContext, handler: cst.BaseExpression, cls: cst.ClassDef,
                           method: cst.FunctionDef) -> bool:
    """Does a callable handed to a registration keep the instance: a bound method of it, a
    lambda or `partial` over `self`, or a function nested in `method` that uses `self`?"""
    if isinstance(handler, cst.Attribute) and is_self(handler.value):
        bound = ctx.methods(cls).get(handler.attr.value)
        return bound is not None and not is_property(ctx, bound)  # a property hands its value
    if isinstance(handler, cst.Lambda):
        return mentions_self(handler.body)
    if isinstance(handler, cst.Call):  # `partial(self.on_changed, key)`, `partial(update, self)`
        return (ctx.qualname(handler.func) or "").rpartition(".")[2] == "partial" and any(
            mentions_self(a.value) for a in handler.args)
    if isinstance(handler, cst.Name):
        nested = next((n for n in iter_nodes(method.body)
                       if isinstance(n, cst.FunctionDef) and n.name.value == handler.value), None)
        return nested is not None and mentions_self(nested.body)
    return False


def is_accumulate_grad(expr: cst.CSTNode) -> bool:
    """`p.expand_as(p).grad_fn.next_functions[0][0]` and the like: a gradient
    accumulator node, which lives as long as its parameter."""
    saw_next = saw_grad_fn = False
    for node in iter_nodes(expr):
        if isinstance(node, cst.Attribute):
            if node.attr.value == "next_functions":
                saw_next = True
            elif node.attr.value == "grad_fn":
                saw_grad_fn = True
        elif isinstance(node, cst.Call):
            func = node.func
            name = func.attr.value if isinstance(func, cst.Attribute) else (
                func.value if isinstance(func, cst.Name) else "")
            if name == "get_gradient_edge":
                return True
    return saw_next and saw_grad_fn


def is_context_manager(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    return bool(decorator_names(ctx, fn) & CONTEXT_MANAGER_DECORATORS)


def is_property(ctx: FileContext, fn: cst.FunctionDef) -> bool:
    if decorator_names(ctx, fn) & PROPERTY_DECORATORS:
        return True
    # `@x.setter` / `@x.deleter`
    return any(isinstance(d.decorator, cst.Attribute) and d.decorator.attr.value in ("setter", "getter", "deleter")
               for d in fn.decorators)


# -- classes of the file: same-file ancestors and descendants ----------------------------

def local_bases(ctx: FileContext, cls: cst.ClassDef) -> list[cst.ClassDef]:
    """Same-file ancestors of `cls`, nearest first (each once)."""
    out: list[cst.ClassDef] = []
    todo = [cls]
    while todo:
        current = todo.pop(0)
        for base in current.bases:
            if isinstance(base.value, cst.Name):
                found = ctx.classes.get(base.value.value)
                if found is not None and found is not cls and found not in out:
                    out.append(found)
                    todo.append(found)
    return out


def local_subclasses(ctx: FileContext, cls: cst.ClassDef) -> list[cst.ClassDef]:
    """Same-file descendants of `cls`, in the file's order."""
    table = _SUBCLASSES.get(ctx)
    if table is None:  # once per file: asked per class, a file of thousands took minutes
        table = {}
        for c in ctx.classes.values():
            for base in local_bases(ctx, c):
                table.setdefault(id(base), []).append(c)
        _SUBCLASSES[ctx] = table
    return list(table.get(id(cls), ()))


# FileContext -> id of a class of its file -> its same-file descendants (`local_subclasses`)
_SUBCLASSES: "weakref.WeakKeyDictionary[FileContext, dict[int, list[cst.ClassDef]]]" = \
    weakref.WeakKeyDictionary()


def class_methods(ctx: FileContext, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    """Methods as an instance of `cls` sees them: its own over same-file bases'."""
    table: dict[str, cst.FunctionDef] = {}
    for klass in reversed([cls, *local_bases(ctx, cls)]):
        table.update(ctx.methods(klass))
    return table


def external_bases(ctx: FileContext, cls: cst.ClassDef) -> list[str]:
    """Qualified names of bases defined in other files (or unknown)."""
    out = []
    for klass in [cls, *local_bases(ctx, cls)]:
        for base in klass.bases:
            if isinstance(base.value, cst.Name) and base.value.value in ctx.classes:
                continue
            q = ctx.qualname(base.value)
            if q and q not in ("object", "builtins.object"):
                out.append(ctx.absolute(q))
    return out


# -- facts about a class -----------------------------------------------------------------

class ClassHandles:
    """Where a class stores hook handles and which methods remove them."""

    def __init__(self, ctx: FileContext, cls: cst.ClassDef) -> None:
        self.ctx = ctx
        self.cls = cls
        self.methods = class_methods(ctx, cls)
        own = ctx.methods(cls)
        # methods that return a handle (`self._h = self._register_hook()`)
        handle_methods: dict[str, cst.Call] = {}
        self.facts: dict[str, MethodFacts] = {}
        for name, fn in self.methods.items():
            f = self.facts[name] = method_facts(fn)
            if f.returns_handle is not None:
                handle_methods[name] = f.returns_handle
        if handle_methods:  # a second look, now knowing which calls return a handle
            for name, fn in self.methods.items():
                self.facts[name] = method_facts(fn, handle_methods)
        self.own = own
        self._callbacks: Optional[set[str]] = None

    def stores(self) -> dict[str, list[HandleStore]]:
        """attr -> its stores, for stores made in the class's own methods."""
        out: dict[str, list[HandleStore]] = {}
        for name, fn in self.own.items():
            for store in self.facts[name].stores:
                out.setdefault(store.attr, []).append(store)
        return out

    def release_methods(self, finalizer: bool = True, whole: bool = True) -> list[str]:
        """Release methods as `release.is_release_method` defines them (named as one,
        callable with `self` alone, releasing the whole object, not per item), less those
        the class installs as callbacks (a hook method called `stop` is no release
        method); `__del__` only when `finalizer`. With `whole=False`, every method named
        as one (`shutdown(self, force)` too): evidence of what the author treats as tied
        to the instance's life, not a place that surely runs."""
        return [n for n in self.ctx.settings.release_methods
                if n in self.methods and n not in self.callbacks and (finalizer or n != FINALIZER)
                and (not whole or is_release_method(self.ctx, self.methods[n]))]

    @property
    def callbacks(self) -> set[str]:
        """Methods passed as `self.<name>` to a hook registration (or a partial of it)."""
        if self._callbacks is None:
            self._callbacks = set()
            for fn in self.methods.values():
                for node in iter_nodes(fn.body):
                    if isinstance(node, cst.Call) and hook_name(node) is not None:
                        hook = hook_argument(node)
                        if hook is not None:
                            self._callbacks |= self_attrs(hook)[0]
        return self._callbacks

    def context_managers(self) -> list[str]:
        return [n for n, fn in self.methods.items() if is_context_manager(self.ctx, fn)]

    def self_removing(self, attr: str) -> bool:
        """Does a hook remove its own handle when it runs (a one-shot hook)?"""
        return any(attr in f.nested_removes for f in self.facts.values())

    def reachable(self, roots: Iterable[str]) -> set[str]:
        seen: set[str] = set()
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name in seen or name not in self.facts:
                continue
            seen.add(name)
            facts = self.facts[name]
            todo.extend(facts.self_calls)
            todo.extend(facts.super_calls)
        return seen

    def removed_in(self, attr: str, methods: Iterable[str]) -> list[str]:
        return [m for m in methods if m in self.facts and (
            attr in self.facts[m].removes or self.facts[m].removes_any)]

    def removed_by_subclass(self, attr: str) -> bool:
        for sub in local_subclasses(self.ctx, self.cls):
            for fn in body_functions(sub):
                f = method_facts(fn)
                if attr in f.removes or f.removes_any:
                    return True
        return False

    def removed_by_external_base(self, attr: str) -> bool:
        return any(external_removes(self.ctx.index, base, attr)
                   for base in external_bases(self.ctx, self.cls))


# -- removal in project classes of other files (read with `ast`, only when needed) -------

def _class_node(index, summary) -> Optional[ast.ClassDef]:
    """The `ast` of a project class in another file."""
    tree = index.tree(summary.path)
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.lineno == summary.line:
                return node
    return None


def external_attributes(index, qualified: str, depth: int = 0) -> set[str]:
    """Every name a project class in another file (or one of its project bases) uses on
    `self` or defines in its body: attributes an instance of a subclass shares with it."""
    resolved = index.resolve(qualified)
    summary = index.classes.get(resolved) if resolved else None
    if summary is None or depth > 5:
        return set()
    found: set[str] = set()
    node = _class_node(index, summary)
    if node is not None:
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == "self":
                found.add(n.attr)
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                found.add(n.id)  # class attributes (and, harmlessly, method locals)
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found.add(n.name)
    for base in summary.bases:
        found |= external_attributes(index, base, depth + 1)
    return found


def _external_removals(index, qualified: Optional[str], depth: int = 0) -> set[str]:
    """Attributes of `self` that a project class in another file (or its project bases)
    mentions in a method that calls `.remove()`; `{"*"}` when it removes by a computed
    name."""
    resolved = index.resolve(qualified)
    summary = index.classes.get(resolved) if resolved else None
    if summary is None or depth > 5:
        return set()
    found: set[str] = set()
    node = _class_node(index, summary)
    if node is not None:
        for item in node.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            removes = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == "remove" and not n.args for n in ast.walk(item))
            if removes:
                for n in ast.walk(item):
                    if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) \
                            and n.value.id == "self":
                        found.add(n.attr)
                    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) \
                            and n.func.id == "getattr" and n.args:
                        found.add("*")
    for base in summary.bases:
        found |= _external_removals(index, base, depth + 1)
    return found


def external_removes(index, qualified: str, attr: str) -> bool:
    found = _external_removals(index, qualified)
    return attr in found or "*" in found


def undone_on_every_exit(ctx: FileContext, root: cst.CSTNode, node: cst.CSTNode, undoes,
                         truth=lambda test: None) -> bool:
    """Is what `node` (a statement's part, inside a function in `root`) sets up taken out
    again - a statement for which `undoes(statement)` holds - on every way out of the
    innermost function around it? `truth(test)`: how an `if` on that test must go
    (True/False), or None."""
    path = _scope_path(root, node)
    if path is None:
        return False
    paths = _ExitPaths(ctx, undoes, truth, resumes=is_context_manager(ctx, path[0]))
    return paths.undone_after(path)


def hook_removed_on_exit(ctx: FileContext, root: cst.CSTNode, call: cst.Call,
                         hook: Optional[cst.CSTNode]) -> bool:
    """Is the handle of the registration `call` (inside a function in `root`) removed on
    every way out of that function (see `undone_on_every_exit`), or by the hook itself,
    a nested function of it that removes its own handle when it runs (a one-shot hook)?"""
    path = _scope_path(root, call)
    if path is None:
        return False
    scope = path[0]
    handle = _Handle(ctx, scope, call)
    if isinstance(hook, cst.Name):
        fn = nested_function(scope, hook.value)
        if fn is not None and handle.removed_in(fn.body):
            return True
    # a registration used as a context manager (`with m.register_forward_hook(fn):`)
    if any(isinstance(n, cst.With) and any(handle.held(item.item) for item in n.items) for n in path):
        return True
    paths = _ExitPaths(ctx, handle.undoes, handle.truth, resumes=is_context_manager(ctx, scope))
    return paths.undone_after(path)


# -- hooks on objects the instance was handed (not its own) ------------------------------

# Calls that reach objects inside their receiver (a submodule, a parameter): what they
# return belongs to whoever owns the receiver.
_INSIDE = frozenset({"get_submodule", "get_parameter", "modules", "named_modules", "children",
                     "named_children", "parameters", "named_parameters", "values", "items"})
_ITERATION = frozenset({"enumerate", "zip", "list", "tuple", "reversed", "iter", "sorted"})


def parameter_names(fn: cst.FunctionDef) -> set[str]:
    """The names a function is handed, `self` left out."""
    p = fn.params
    return {x.name.value for x in (*p.posonly_params, *p.params, *p.kwonly_params)} - {"self"}


def passed_in_attrs(ctx: FileContext, cls: cst.ClassDef) -> set[str]:
    """Attributes `__init__` sets to one of its own arguments (`self._encoder = encoder`):
    objects the caller made and keeps, not the instance's own."""
    init = ctx.methods(cls).get("__init__")
    if init is None:
        return set()
    params = parameter_names(init)
    out: set[str] = set()
    for node in iter_nodes(init.body):
        if isinstance(node, (cst.Assign, cst.AnnAssign)) and isinstance(node.value, cst.Name) \
                and node.value.value in params:
            targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            out |= {t.attr.value for t in targets if isinstance(t, cst.Attribute) and is_self(t.value)}
    return out


def reaches_passed_in(ctx: FileContext, cls: cst.ClassDef, method: cst.FunctionDef,
                      expr: cst.CSTNode) -> bool:
    """Is `expr` an object the caller handed in, or one inside it: an argument of the
    method (`model`, `model.encoder`, a layer of `model.modules()`), an attribute
    `__init__` set from an argument (`self._encoder.get_submodule(name)`), or a local
    bound to one of those? Not the instance's own objects, nor values computed now."""
    bindings: dict[str, list[cst.CSTNode]] = {}
    for targets, value in _bindings(method.body):
        for target in targets:
            for name in target_names(target):
                bindings.setdefault(name, []).append(value)
    params = parameter_names(method)
    passed = passed_in_attrs(ctx, cls)

    def reaches(node: cst.CSTNode, depth: int) -> bool:
        while depth < 8:
            if isinstance(node, cst.Name):
                if node.value in params:
                    return True
                values = bindings.get(node.value, [])
                return bool(values) and all(reaches(v, depth + 1) for v in values)
            if isinstance(node, cst.Attribute):
                if is_self(node.value):
                    return node.attr.value in passed
                node = node.value
            elif isinstance(node, cst.Subscript):
                node = node.value
            elif isinstance(node, cst.Call):
                func = node.func
                if isinstance(func, cst.Attribute) and func.attr.value in _INSIDE:
                    node = func.value
                elif isinstance(func, cst.Name) and func.value in _ITERATION and node.args:
                    node = node.args[0].value
                else:
                    return False
            else:
                return False
            depth += 1
        return False

    return reaches(expr, 0)


def removes_hooks_by_identity(ctx: FileContext, cls: cst.ClassDef) -> set[str]:
    """The methods of the class that take hooks out of a module's hook dict themselves
    (`del layer._forward_hooks[key]`, `hooks = m._forward_pre_hooks; hooks.pop(k)`) - the
    way to undo a hook whose handle was not kept."""
    def hook_dict(node: cst.CSTNode, aliases: set[str]) -> bool:
        if isinstance(node, cst.Name):
            return node.value in aliases
        return isinstance(node, cst.Attribute) and node.attr.value.startswith("_") \
            and node.attr.value.endswith("hooks")

    found: set[str] = set()
    for name, method in ctx.methods(cls).items():
        aliases = {n for targets, value in _bindings(method.body) if hook_dict(value, set())
                   for t in targets for n in target_names(t)}
        for node in iter_nodes(method.body):
            if isinstance(node, cst.Del):
                removed = any(isinstance(t, cst.Subscript) and hook_dict(t.value, aliases)
                              for t in iter_nodes(node.target))
            elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                removed = node.func.attr.value in ("pop", "clear", "popitem") and hook_dict(node.func.value, aliases)
            else:
                continue
            if removed:
                found.add(name)
                break
    return found


def hook_holds_self(method: cst.FunctionDef, hook: cst.CSTNode) -> bool:
    """Does the installed callable keep the instance (or an object kept on it) alive: a
    bound method or attribute of `self`, a lambda using `self`, a function nested in the
    method that uses `self`, what a method of `self` makes (`self._make_hook(fn)`), a
    partial over one of those? A plain function called with `self.group` makes a hook
    that holds the group, not the instance."""
    if isinstance(hook, cst.Name):
        nested = nested_function(method.body, hook.value)
        return nested is not None and mentions_self(nested.body)
    if isinstance(hook, cst.Attribute):
        return is_self(hook.value)
    if isinstance(hook, cst.Lambda):
        return mentions_self(hook.body)
    if isinstance(hook, cst.Call):
        func = hook.func
        if isinstance(func, cst.Attribute) and is_self(func.value):
            return True
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        if name in ("partial", "MethodType"):
            return any(is_self(a.value) or hook_holds_self(method, a.value) for a in hook.args)
    return False
