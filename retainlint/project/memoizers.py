"""Hand-written memoizing decorators, recognised from the `ast` like `functools.lru_cache`.

Projects often write their own cache decorator instead of using `functools`: a function
whose inner wrapper keeps every result in a dict of its closure (`cache[args] =
func(*args)`), or a class whose `__call__` keeps what the function its `__init__` was
given returns in a dict attribute (`self.memo[key] = self.func(*args)`). Either keeps every argument tuple it saw - `self`
included, when it decorates a method - exactly like `lru_cache(maxsize=None)`. A decorator
factory (`@ttl_cache(ttl=15)`) counts too, its dict made at either level; so does an entry
that stores the result with something else (`(future, time.time())`): the key is what
keeps the arguments, and a TTL checked on read evicts nothing.

What does not count: a wrapper that stores results somewhere else (`self._cache[func] =
...` on the decorated method's instance), keys made of `id()`s (they keep nothing alive),
keys that do not come from the call's arguments (one slot per function), and a `__call__`
that stores what another attribute makes (`self.timers[name] = self.Timer(name)`: a
factory keeping one object per name, not a decorator).
"""

from __future__ import annotations

import ast
from typing import Optional

from retainlint.project.nodes import self_attr

_FUNCTION_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def memoizes(fn: ast.AST, nested: list[ast.AST], owner: Optional[ast.AST] = None) -> bool:
    """Is `fn` a memoizing decorator (a module-level function whose nested wrapper caches
    the wrapped function's results in a closure dict), or the `__call__` of a class
    (`owner`) that caches the results of the function its `__init__` was given in a dict
    attribute?"""
    if not isinstance(fn, _FUNCTION_DEFS):
        return False
    if owner is not None:
        if fn.name != "__call__" or not isinstance(owner, ast.ClassDef):
            return False
        given = _attributes_from_init_params(owner)

        def calls_given(node: ast.AST) -> bool:
            return isinstance(node, ast.Call) and self_attr(node.func) in given

        return bool(given) and _stores_results(fn, self_attr, calls_given)
    if _decorates(fn, nested, _dicts_made(fn)):
        return True
    # a decorator factory (`@ttl_cache(ttl=15)`): the decorator is a function nested in it,
    # and the dict may be made at either level
    return any(_decorates(outer, _nested(outer), _dicts_made(fn) | _dicts_made(outer))
               for outer in nested if isinstance(outer, _FUNCTION_DEFS))


def _decorates(fn: ast.AST, nested: list[ast.AST], closure: set[str]) -> bool:
    """Does a wrapper nested in `fn` keep the results of `fn`'s first parameter (the
    wrapped function) in one of the `closure` dicts?"""
    params = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]  # type: ignore[attr-defined]
    if not params or not nested or not closure:
        return False
    wrapped = params[0]

    def container(node: ast.AST) -> Optional[str]:
        return node.id if isinstance(node, ast.Name) and node.id in closure else None

    def calls_wrapped(node: ast.AST) -> bool:
        return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == wrapped

    return any(_stores_results(inner, container, calls_wrapped)
               for inner in nested if isinstance(inner, _FUNCTION_DEFS))


def _nested(fn: ast.AST) -> list[ast.AST]:
    """The functions defined directly in `fn`'s body."""
    return [s for s in fn.body if isinstance(s, _FUNCTION_DEFS)]  # type: ignore[attr-defined]


def _dicts_made(fn: ast.AST) -> set[str]:
    """Names the function's own body binds to a new dict (`cache = {}`, `dict()`)."""
    made = set()
    for statement in fn.body:  # type: ignore[attr-defined]
        if isinstance(statement, ast.Assign) and _new_dict(statement.value):
            made.update(t.id for t in statement.targets if isinstance(t, ast.Name))
        elif isinstance(statement, ast.AnnAssign) and statement.value is not None \
                and _new_dict(statement.value) and isinstance(statement.target, ast.Name):
            made.add(statement.target.id)  # `_cache: Dict = {}`
    return made


def _new_dict(value: ast.AST) -> bool:
    if isinstance(value, ast.Dict):
        return True
    return (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)
            and value.func.id in ("dict", "OrderedDict") and not value.args)


def _attributes_from_init_params(cls: ast.ClassDef) -> set[str]:
    """`self.func = func` in `__init__`: the attributes holding what the instance was given
    (for a decorator class, the wrapped function)."""
    for fn in cls.body:
        if isinstance(fn, _FUNCTION_DEFS) and fn.name == "__init__":
            params = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args)} - {"self"}
            return {target.attr for node in ast.walk(fn) if isinstance(node, ast.Assign)
                    and isinstance(node.value, ast.Name) and node.value.id in params
                    for target in node.targets if self_attr(target) is not None}
    return set()


def _stores_results(wrapper: ast.AST, container, calls_wrapped) -> bool:
    """Does `wrapper` write `<container>[key] = <call of the wrapped function>` (directly
    or through a local), with a key made from its own parameters and not from `id()`?"""
    args = wrapper.args  # type: ignore[attr-defined]
    params = {a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)}
    params.update(a.arg for a in (args.vararg, args.kwarg) if a is not None)
    params.discard("self")
    if not params:
        return False
    locals_: dict[str, ast.AST] = {}
    writes: list[ast.Assign] = []
    for node in ast.walk(wrapper):
        if not isinstance(node, ast.Assign):
            continue
        for target in node.targets:
            if isinstance(target, ast.Name):
                locals_[target.id] = node.value
            elif isinstance(target, ast.Subscript) and container(target.value) is not None:
                writes.append(node)
    for write in writes:
        if not _holds_result(write.value, calls_wrapped, locals_):
            continue
        key = next(t.slice for t in write.targets if isinstance(t, ast.Subscript))
        if _key_from(key, params, locals_):
            return True
    return False


def _holds_result(value: ast.AST, calls_wrapped, locals_: dict[str, ast.AST]) -> bool:
    """Is a call of the wrapped function in the stored value, directly or through locals
    (`(future, time.time())` with `future = ensure_future(wrapped(*args))`)?"""
    seen: set[str] = set()
    todo = [value]
    while todo:
        for sub in ast.walk(todo.pop()):
            if calls_wrapped(sub):
                return True
            if isinstance(sub, ast.Name) and sub.id in locals_ and sub.id not in seen:
                seen.add(sub.id)
                todo.append(locals_[sub.id])
    return False


def _key_from(key: ast.AST, params: set[str], locals_: dict[str, ast.AST]) -> bool:
    """A key built from the call's arguments that holds them (not their `id()`s)."""
    seen: set[str] = set()
    todo = [key]
    found = False
    while todo:
        node = todo.pop()
        for sub in ast.walk(node):
            if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Name) and sub.func.id == "id":
                return False
            if isinstance(sub, ast.Name):
                if sub.id in params:
                    found = True
                elif sub.id in locals_ and sub.id not in seen:
                    seen.add(sub.id)
                    todo.append(locals_[sub.id])
    return found


def caches_per_instance(nested: list[ast.AST]) -> bool:
    """Does a nested wrapper store what it builds on the instance it is called with
    (`setattr(self, func.__name__, cached_method)`, `self.__dict__[name] = cached`)? A
    decorator that makes a cached function per call and keeps it there has one cache per
    instance, dying with it - not a class-wide cache keyed by `self`."""
    for wrapper in nested:
        if not isinstance(wrapper, _FUNCTION_DEFS):
            continue
        params = [a.arg for a in (*wrapper.args.posonlyargs, *wrapper.args.args)]
        if not params:
            continue
        first = params[0]
        for node in ast.walk(wrapper):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "setattr" and node.args
                    and isinstance(node.args[0], ast.Name) and node.args[0].id == first):
                return True
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)
                            and target.value.attr == "__dict__"
                            and isinstance(target.value.value, ast.Name)
                            and target.value.value.id == first):
                        return True
    return False
