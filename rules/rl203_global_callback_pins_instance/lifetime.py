"""How long an instance lives: the classes whose instances live as long as the process
anyway (singletons, module-level instances, loggers, one made by an entry point, one per
key in a module dict, a server component), whose registrations cost nothing."""

from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import call_args, is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.module_caches import removed_in_project
from retainlint.analysis.release import release_names
from retainlint.project.index import instantiated_in_functions
from retainlint.rules.rl203_global_callback_pins_instance.classes import ClassLookup
from retainlint.rules.rl203_global_callback_pins_instance.facts import FileFacts

_LOGGERS = frozenset({"logging.Logger", "logging.LoggerAdapter"})
_THREADS = frozenset({"threading.Thread"})


class Lifetime:
    """Does a class of the file make instances that live until the process exits?"""

    def __init__(self, ctx, classes: ClassLookup, facts: FileFacts) -> None:
        self.ctx = ctx
        self.classes = classes
        self.facts = facts

    def lives_as_long_as_process(self, cls: cst.ClassDef) -> bool:
        """Process-lifetime objects: singletons, module-level instances, loggers."""
        for base in cls.bases:
            if self.ctx.qualname(base.value) in _LOGGERS:
                return True
        for keyword in cls.keywords:
            if keyword.keyword is not None and keyword.keyword.value == "metaclass":
                if "singleton" in self.ctx.code(keyword.value).lower():
                    return True
        if any("singleton" in name.lower() for name in self.classes.decorators(cls)):
            return True
        methods = self.ctx.methods(cls)
        if "__new__" in methods or self.classes.class_level(cls, "_instance") \
                or self.classes.class_level(cls, "_instances"):
            return True
        if self._server_component(cls):
            return True
        kinds = self.facts.instantiated.get(cls.name.value, set())
        if not kinds or not all(self._process_lifetime_kind(k) for k in kinds):
            return False
        # created only at import time or by a singleton getter in this file: and by no
        # function of another file
        return not self.ctx.index.ask(_instantiated_elsewhere, (
            f"{self.ctx.module_name}.{cls.name.value}", os.path.abspath(self.ctx.path)))

    def _process_lifetime_kind(self, kind: str) -> bool:
        """Does this way of making an instance make one that lives until exit?"""
        how, _, name = kind.partition(":")
        if how in ("module", "singleton"):
            return True
        if how == "entry":  # made once by the process's entry point, which nothing else calls
            return name in self.facts.entry_points and name not in self.facts.called_by_functions and not (
                self.ctx.index.ask(instantiated_in_functions, f"{self.ctx.module_name}.{name}"))
        if how == "registry":  # one per key, in a module dict nothing takes them out of
            return name not in self.facts.emptied and name not in self.facts.cleared and not removed_in_project(
                self.ctx.index, f"{self.ctx.module_name}.{name}")
        return False

    def _server_component(self, cls: cst.ClassDef) -> bool:
        """A component that runs until the process exits by design: it starts a daemon
        thread on a method of its own that nothing joins (the thread alone keeps it alive
        for good), and has no release method an owner could call before dropping it - its
        registered exit callback is its only teardown."""
        methods = self.classes.class_chain_methods(cls)
        names = {m.name.value for m in methods}
        if any(n in names for n in release_names(self.ctx)):
            return False
        threads = [t for m in methods for t in self._daemon_threads(m, cls)]
        if not threads:
            return False
        joined = {n.func.value.attr.value for m in methods for n in iter_nodes(m.body)
                  if isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute)
                  and n.func.attr.value == "join" and isinstance(n.func.value, cst.Attribute)
                  and is_self(n.func.value.value)}
        return any(t is None or t not in joined for t in threads)

    def _daemon_threads(self, method: cst.FunctionDef, cls: cst.ClassDef) -> list[Optional[str]]:
        """`threading.Thread(target=self.<method>, daemon=True)` calls in `method`: the
        attribute of `self` each is stored in (None: not stored on `self`)."""
        found: list[Optional[str]] = []
        for node in iter_nodes(method.body):
            if not isinstance(node, (cst.Assign, cst.Expr)):
                continue
            call = node.value
            if not (isinstance(call, cst.Call) and self.ctx.qualname(call.func) in _THREADS):
                continue
            _, keywords = call_args(call)
            target, daemon = keywords.get("target"), keywords.get("daemon")
            if not (
                target is not None and isinstance(target.value, cst.Attribute) and is_self(target.value.value)
                and self.classes.method(cls, target.value.attr.value) is not None
                and daemon is not None and isinstance(daemon.value, cst.Name) and daemon.value.value == "True"
            ):
                continue
            stored = None
            if isinstance(node, cst.Assign):
                t = node.targets[0].target
                stored = t.attr.value if isinstance(t, cst.Attribute) and is_self(t.value) else None
            found.append(stored)
        return found


def _instantiated_elsewhere(index, key: tuple[str, str]) -> bool:
    qualified, here = key
    return instantiated_in_functions(index, qualified, outside=here)
