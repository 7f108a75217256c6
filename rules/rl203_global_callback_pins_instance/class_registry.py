"""Class-level lists keeping what each instance was given: `cls._params.append((target,
name, func))` in a helper `__init__` calls with its own arguments, or in `__init__`
itself - the class keeps every object an instance was given, for as long as it lives."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_statements, call_args, name_bindings
from retainlint.analysis.heavy import find_param
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.release import FINALIZER
from retainlint.core.finding import Consequence, Severity
from retainlint.rules.prefilters.rl203 import ADDERS
from retainlint.rules.rl203_global_callback_pins_instance.classes import ClassLookup
from retainlint.rules.rl203_global_callback_pins_instance.facts import REMOVERS, strong_container
from retainlint.rules.rl203_global_callback_pins_instance.lifetime import Lifetime


class ClassRegistryPins:
    """Reports a class-level list, set or deque that keeps the arguments of `__init__`."""

    def __init__(self, rule, classes: ClassLookup, lifetime: Lifetime) -> None:
        self.rule = rule
        self.ctx = rule.ctx
        self.classes = classes
        self.lifetime = lifetime

    def class_registry_pins(self, cls: cst.ClassDef) -> None:
        """`cls._params.append((target, name, func))` in a method that `__init__` calls with
        one of its own arguments (`self._register(engine, "connect", ...)`), or the append in
        `__init__` itself: a list, set or deque of the class body keeps every object an
        instance was given, for as long as the class lives. Entries taken out one by one
        (`remove`, `pop`, `del`) undo it; a `clear()` resets every instance at once and
        does not. Bound methods and `self` are left to the rules for registries of
        instances (a class-level `_instances` list is a singleton's)."""
        registries = self._class_containers(cls)
        if not registries:
            return
        methods = self.classes.class_chain_methods(cls)
        registries -= self._pruned_one_by_one(methods, registries, cls)
        init = self.classes.method(cls, "__init__")
        if not registries or init is None or self.lifetime.lives_as_long_as_process(cls):
            return
        given = {p.name.value for p in (*init.params.params, *init.params.kwonly_params)[1:]}
        for method in methods:
            for call, registry, params in self._class_appends(method, registries, cls):
                pinned = [p for p in params if p in given] if method is init else [
                    a for p in params for a in self._init_arguments(init, method, p, cls) if a in given]
                if pinned:
                    self._report_class_registry(cls, init, method, call, registry, pinned[0])
                    break

    def _class_containers(self, cls: cst.ClassDef) -> set[str]:
        """Names the class body binds to a list, set or deque."""
        return {target.value for target, value in name_bindings(body_statements(cls))
                if strong_container(self.ctx, value)}

    def _class_ref(self, expr: cst.BaseExpression, registries: set[str], cls: cst.ClassDef,
                   fn: cst.FunctionDef) -> Optional[str]:
        """`cls.X`, `Klass.X`, `type(self).X`, `self.__class__.X` for a class container X."""
        if not (isinstance(expr, cst.Attribute) and expr.attr.value in registries):
            return None
        owner = expr.value
        params = fn.params.posonly_params or fn.params.params
        first = params[0].name.value if params else None
        if isinstance(owner, cst.Name) and (
                owner.value == cls.name.value or owner.value == first == "cls"):
            return expr.attr.value
        if isinstance(owner, cst.Call) and self.ctx.code(owner) == "type(self)":
            return expr.attr.value
        if isinstance(owner, cst.Attribute) and self.ctx.code(owner) == "self.__class__":
            return expr.attr.value
        return None

    def _class_appends(self, fn, registries, cls):
        """(call, container, parameters of `fn` stored by it) for each element added to a
        class container in `fn` - the value itself or an item of a tuple/list literal."""
        own = {p.name.value for p in (*fn.params.posonly_params, *fn.params.params, *fn.params.kwonly_params)}
        for node in iter_nodes(fn.body):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value in ADDERS):
                continue
            registry = self._class_ref(node.func.value, registries, cls, fn)
            positional, _ = call_args(node)
            position = ADDERS[node.func.attr.value]
            if registry is None or len(positional) <= position:
                continue
            value = positional[position].value
            items = [e.value for e in value.elements] if isinstance(value, (cst.Tuple, cst.List)) else [value]
            stored = [i.value for i in items if isinstance(i, cst.Name) and i.value in own
                      and i.value not in ("self", "cls")]
            if stored:
                yield node, registry, stored

    def _pruned_one_by_one(self, methods, registries: set[str], cls: cst.ClassDef) -> set[str]:
        pruned = set()
        for fn in methods:
            if fn.name.value == FINALIZER:
                continue
            for node in iter_nodes(fn.body):
                if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and \
                        node.func.attr.value in REMOVERS - {"clear"}:
                    name = self._class_ref(node.func.value, registries, cls, fn)
                elif isinstance(node, cst.Del):
                    target = node.target
                    name = self._class_ref(target.value, registries, cls, fn) if isinstance(
                        target, cst.Subscript) else None
                else:
                    continue
                if name is not None:
                    pruned.add(name)
        return pruned

    def _init_arguments(self, init: cst.FunctionDef, helper: cst.FunctionDef, param: str,
                        cls: cst.ClassDef) -> list[str]:
        """The names `__init__` passes as `param` of `helper` (`self._register(engine, ...)`,
        `cls`/`Klass._register(...)`)."""
        params = [p.name.value for p in (*helper.params.posonly_params, *helper.params.params)]
        bound = bool(params) and params[0] in ("self", "cls")
        positional_names = params[1:] if bound else params
        found = []
        for node in iter_nodes(init.body):
            if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)
                    and node.func.attr.value == helper.name.value
                    and isinstance(node.func.value, cst.Name)
                    and node.func.value.value in ("self", cls.name.value)):
                continue
            positional, keywords = call_args(node)
            arg = keywords.get(param)
            if arg is None and param in positional_names and positional_names.index(param) < len(positional):
                arg = positional[positional_names.index(param)]
            if arg is not None and isinstance(arg.value, cst.Name):
                found.append(arg.value.value)
        return found

    def _report_class_registry(self, cls, init, method, call, registry, given: str) -> None:
        param = find_param(init, given)
        heavy = param is not None and param.annotation is not None and \
            self.ctx.heavy.is_heavy_annotation(param.annotation.annotation)
        via = "" if method is init else f" through `{method.name.value}`"
        self.rule.report(
            call,
            f"class-level `{cls.name.value}.{registry}` keeps `{given}`, passed to "
            f"`{cls.name.value}.__init__`, for every instance{via}: each object an instance was "
            f"given stays alive as long as the class (the process), after the instance is "
            f"gone; nothing takes single entries out (a `clear()` resets every instance at "
            f"once). Keep a `weakref.ref` to it, or remove the entry when the instance is released",
            severity=Severity.ERROR if heavy else Severity.WARNING,
            consequence=Consequence(
                f"each `{given}` passed to `{cls.name.value}.__init__`" + (" (heavy)" if heavy else ""),
                f"class-level `{cls.name.value}.{registry}`", "the process",
                f"one entry per `{cls.name.value}` made"),
        )
