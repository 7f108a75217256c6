"""Whether the code itself breaks a cycle again: a temporary patch taken out (deleted or
set back in `finally`, on every way out, by the patched function), a registry pruned, a
Qt signal disconnected, a hook's handle removed on every way out or by a sibling method, a
release method dropping the store, a holder of the file that drops the callback itself."""

from __future__ import annotations

import re

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hooks import (
    ClassHandles, hook_argument, hook_removed_on_exit, undone_on_every_exit,
)
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.walk import children
from retainlint.rules.rl701_self_cycle_callback.references import _stored_parameters
from retainlint.rules.rl701_self_cycle_callback.sites import _Sites


def _transient(ctx, cls: cst.ClassDef, method: cst.FunctionDef, sites: "_Sites", site,
               how: str, where: str) -> bool:
    """Is the callback taken out again by the code itself: the same attribute deleted
    or set back in the same method (a temporary patch, undone in `finally` or by the
    patched function), or the container it went into pruned somewhere in the class
    (a registry whose entries are popped when done)? Or is it undone on every way out
    of the function that makes it (a hook's handle removed, the attribute set back)?"""
    if how == "hook":
        return hook_removed_on_exit(ctx, method, site, hook_argument(site))
    if how == "slot":  # the class disconnects that signal (on close, say) - not to re-arm it:
        # a disconnect before the connect in the same method leaves the new slot connected
        rearm = _before(method, site)
        return any(isinstance(n, cst.Call) and id(n) not in rearm and _disconnects(ctx, n, where)
                   for n in iter_nodes(cls))
    if how in ("stored", "cached", "constructed"):
        if undone_on_every_exit(ctx, method, site,
                                lambda statement: _restores(ctx, statement, where, sites)):
            return True  # set back on every way out (`finally`, both `except` and `else`)
        # set back inside a nested function (the patched function unpatches itself)
        # or in a `finally:` block
        guarded: set[int] = set()
        for node in iter_nodes(method.body):
            if isinstance(node, (cst.FunctionDef, cst.Finally)) and id(node) not in guarded:
                guarded |= {id(n) for n in iter_nodes(node)}
        for node in iter_nodes(method.body):
            if isinstance(node, cst.Assign) and node is not site and id(node) in guarded \
                    and not sites.refers(node.value) \
                    and any(ctx.code(t.target) == where for t in node.targets):
                return True
            if isinstance(node, cst.Del) and any(
                    ctx.code(t) == where for t in iter_nodes(node.target)
                    if isinstance(t, (cst.Attribute, cst.Subscript))):
                return True
        target = site.targets[0].target if isinstance(site, cst.Assign) else None
        if not isinstance(target, cst.Subscript):
            return False
        container = ctx.code(target.value)
    elif how == "added":
        container = where
    else:
        return False
    text = ctx.code(cls)
    return any(f"{container}.{verb}(" in text for verb in ("pop", "popitem", "remove", "discard", "clear")) \
        or f"del {container}[" in text


def _holder_drops_callback(ctx, call: cst.Call, sites: "_Sites") -> bool:
    """Is `call` the constructor of a class of the file that stores each callback over
    `self` it is handed on its instance as it is (`self.notify = on_finished`) and
    rebinds or deletes that attribute in another method (`self.notify = lambda: None`
    once its job has run)? The holder breaks the cycle itself, as a thread drops its
    target."""
    holder = ctx.classes.get(ctx.qualname(call.func) or "")
    init = ctx.methods(holder).get("__init__") if holder is not None else None
    if init is None:
        return False
    stored = _stored_parameters(init)
    positional = [p.name.value for p in (*init.params.posonly_params, *init.params.params)][1:]
    attrs = []
    for position, arg in enumerate(call.args):
        if not sites.refers(arg.value):
            continue
        if arg.star:
            return False
        param = arg.keyword.value if arg.keyword is not None else \
            positional[position] if position < len(positional) else None
        if param not in stored:
            return False  # kept some other way
        attrs.append((param, stored[param]))
    others = [m for name, m in ctx.methods(holder).items() if name != "__init__"]
    return bool(attrs) and all(any(_drops_attribute(m, attr, param) for m in others)
                               for param, attr in attrs)


def _before(method: cst.FunctionDef, site: cst.CSTNode) -> set[int]:
    """The nodes of `method`, nested functions included, that come before `site` in the
    source."""
    seen: set[int] = set()
    stack: list[cst.CSTNode] = [method.body]
    while stack:
        node = stack.pop()
        if node is site:
            break
        seen.add(id(node))
        stack.extend(reversed(children(node)))
    return seen


def _disconnects(ctx, call: cst.Call, signal: str) -> bool:
    """`signal.disconnect()`, or a helper named for it given the signal
    (`_disconnect(self.box.valueChanged)`)."""
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "disconnect":
        return ctx.code(func.value) == signal
    return "disconnect" in ctx.code(func) and any(ctx.code(a.value) == signal for a in call.args)


def _restores(ctx, statement: cst.CSTNode, where: str, sites: "_Sites") -> bool:
    """Does `statement` set `where` back to something that is no callback over
    `self` (the original), or delete it?"""
    if not isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
        return False
    for small in statement.body:
        if isinstance(small, cst.Assign) and not sites.refers(small.value) and any(
                ctx.code(t.target) == where for t in small.targets):
            return True
        if isinstance(small, cst.Del) and any(
                ctx.code(t) == where for t in iter_nodes(small.target)
                if isinstance(t, (cst.Attribute, cst.Subscript))):
            return True
    return False


def _undone(ctx, handles: ClassHandles, site, how: str, where: str) -> bool:
    """Does a release method (or what it calls) break the cycle again?"""
    if how == "hook" and _removed_by_sibling(handles, site):
        return True
    releases = handles.release_methods(finalizer=False)
    if not releases:
        return False
    reach = handles.reachable(releases + handles.context_managers())
    if how in ("setter", "callback") and isinstance(site.func, cst.Attribute):
        where = ctx.code(site.func.value)  # dropping the holder breaks the cycle
    if how in ("stored", "added", "cached", "constructed", "setter", "callback", "passed") and \
            where.startswith("self."):
        attr = re.split(r"[.\[]", where[5:], maxsplit=1)[0]
        return any(attr in handles.facts[m].drops for m in reach)
    if how == "hook":
        for facts in handles.facts.values():
            for store in facts.stores:
                if store.call is site and handles.removed_in(store.attr, reach):
                    return True
    return False


def _removed_by_sibling(handles: ClassHandles, site) -> bool:
    """Are the handles of this registration kept on `self` and removed by another
    method of the class that the class itself calls (`backward()` calls
    `_post_backward()`, which removes what `_pre_forward()` registered), where neither
    method runs the other? Hooks registered at a step's start and removed at its end
    keep the instance in a cycle for one step only. Not when the registering method
    removes the previous hooks itself before registering new ones: a set is then
    always installed. A call from `__del__` does not count: the cycle keeps the
    finalizer from running."""
    called = {name for method, facts in handles.facts.items() if method != "__del__"
              for name in facts.self_calls}
    for registering, facts in handles.facts.items():
        for store in facts.stores:
            if store.call is not site:
                continue
            before = handles.reachable([registering])
            for remover in handles.removed_in(store.attr, handles.facts):
                if remover in called and remover not in before and \
                        registering not in handles.reachable([remover]):
                    return True
    return False


def _drops_attribute(method: cst.FunctionDef, attr: str, param: str) -> bool:
    """Does `method` rebind `self.<attr>` to something other than the parameter it was
    stored from, or delete it?"""
    for node in iter_nodes(method.body):
        if isinstance(node, cst.Assign) and not (isinstance(node.value, cst.Name) and node.value.value == param) \
                and any(isinstance(t.target, cst.Attribute) and is_self(t.target.value)
                        and t.target.attr.value == attr for t in node.targets):
            return True
        if isinstance(node, cst.Del) and any(isinstance(t, cst.Attribute) and is_self(t.value)
                                             and t.attr.value == attr for t in iter_nodes(node.target)):
            return True
    return False
