"""RL606 rebound-shared-container: a release method rebinds `self.x` to an empty container
that another object still holds, full."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.hooks import short
from retainlint.analysis.release import release_methods
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.statement_order import is_attr, self_root
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.names import name_words
from retainlint.project.release_scan import DEFAULTDICT, EMPTY_FACTORIES, KEEPING_VERBS, NON_KEEPING
from retainlint.rules.prefilters.rl606 import ReboundSharedContainerPrefilter

_LOG_METHODS = frozenset({"debug", "info", "warning", "warn", "error", "exception", "critical", "log",
                          "format", "join", "write"})


class ReboundSharedContainer(Rule):
    prefilter = ReboundSharedContainerPrefilter
    name = "rebound-shared-container"
    summary = ("A release method rebinds a container (`self.cache = {}`) that another object still holds: "
               "the old, full one stays")
    severity = Severity.WARNING  # an error when the class is heavy
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a release method that does `self.cache = {}` (or `[]`, `set()`, `dict()`, ...)
when the class handed `self.cache` to another object (`self.runner = Runner(self.cache)`,
`engine.cache = self.cache`, `registry.register(self.cache)`) that the release path does
not drop (nor release: `self.runner.shutdown()`), in the method or the methods it calls on
`self`: that object still holds the old, full container. `self.cache.clear()` was meant.
(Release methods callable with `self` alone; not `free(self, idx)`, which lets go of one
item.)

Severity: an error when the class is heavy (holds a model or tensors), else a warning.

Split from RL603 (ineffective-release), which still selects and silences it.

## Why it leaks
Rebinding one of two references leaves the object reachable through the other: the
holder keeps the old container and everything in it - a KV cache, a dict of tensors -
while the code reads as if it were emptied.

## Example
```python
class Worker:
    def __init__(self, runner_cls):
        self.kv_caches = {}
        self.runner = runner_cls(kv_caches=self.kv_caches)

    def shutdown(self):
        self.kv_caches = {}  # RL606: `self.runner` still holds the old dict
```

## Fix
None automatic: `self.kv_caches.clear()` empties the object both share.
"""

    valid = [
        # rebinding a container only this object holds
        """
class Cache:
    def __init__(self):
        self.entries = {}

    def close(self):
        self.entries = {}
""",
    ]

    invalid = [
        Example(
            """
class Worker:
    def __init__(self, runner_cls):
        self.kv_caches = {}
        self.runner = runner_cls(kv_caches=self.kv_caches)

    def shutdown(self):
        self.kv_caches = {}
""",
            lines=[8],
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        methods = self.ctx.methods(node)
        for release in release_methods(self.ctx, node, finalizer=True):
            for line in iter_nodes(release.body):
                if not isinstance(line, cst.Assign) or len(line.targets) != 1:
                    continue
                target = line.targets[0].target
                if not (isinstance(target, cst.Attribute) and is_self(target.value)):
                    continue
                kind = self._empty_container(line.value)
                if kind is None:
                    continue
                drops = self.ctx.release.drops(node, [release])
                if drops is None:
                    break  # drops what we cannot name: who still holds the old container is unknown
                attr = target.attr.value
                holder = self._shared_with(methods, release, attr, drops.all)
                if holder is None:
                    continue
                who, where = holder
                heavy = self.ctx.heavy.is_heavy_class(node) or self.ctx.index.is_heavy_class(
                    f"{self.ctx.module_name}.{node.name.value}")
                self.report(
                    line,
                    f"`self.{attr} = {short(self.ctx.code(line.value))}` in `{release.name.value}()` only "
                    f"rebinds the attribute: {who} still references the old {kind} and everything "
                    f"in it; `self.{attr}.clear()` empties the object both share",
                    severity=Severity.ERROR if heavy else Severity.WARNING,
                    related=[RelatedNode(f"`self.{attr}` is shared here", where)],
                    statement=_line_of(release, line),
                    consequence=Consequence(
                        f"the old {kind} of `self.{attr}` and everything in it", who,
                        # an attribute of `self` the release path does not drop lives with the instance
                        f"as long as the `{node.name.value}` instance, after `{release.name.value}()`"
                        if who.startswith("`self.") else f"as long as {who} holds it"),
                )

    def _empty_container(self, value: cst.BaseExpression) -> Optional[str]:
        if isinstance(value, cst.Dict) and not value.elements:
            return "dict"
        if isinstance(value, cst.List) and not value.elements:
            return "list"
        if isinstance(value, cst.Call):
            q = self.ctx.qualname(value.func) or ""
            if q in EMPTY_FACTORIES and not value.args:
                return q.rsplit(".", 1)[-1]
            if q in DEFAULTDICT and len(value.args) <= 1:
                return "defaultdict"
        return None

    def _shared_with(self, methods: dict, release: cst.FunctionDef, attr: str,
                     dropped: set[str]) -> Optional[tuple[str, cst.CSTNode]]:
        """(who, where) for an object other than `self` that was handed `self.<attr>`
        and that the release path does not drop (`dropped`)."""
        for method in methods.values():
            if method is release:
                continue
            for node in iter_nodes(method.body):
                if isinstance(node, cst.Assign):
                    if not is_attr(node.value, attr) and not isinstance(node.value, cst.Call):
                        continue
                    for t in node.targets:
                        target = t.target
                        if is_attr(node.value, attr) and isinstance(target, cst.Attribute) \
                                and not is_self(target.value):
                            owner = self_root(target.value)
                            if owner is not None and owner in dropped:
                                continue
                            return f"`{short(self.ctx.code(target.value))}`", node
                        if isinstance(node.value, cst.Call) and self._keeps(node.value, attr) and \
                                isinstance(target, cst.Attribute) and is_self(target.value):
                            if target.attr.value in dropped or target.attr.value == attr:
                                continue
                            return f"`self.{target.attr.value}` (built from it)", node
                elif isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                    verb = node.func.attr.value
                    if not (name_words(verb) & KEEPING_VERBS):
                        continue
                    if not any(is_attr(a.value, attr) for a in node.args):
                        continue
                    owner_expr = node.func.value
                    if is_attr(owner_expr, attr) or is_self(owner_expr):
                        continue
                    owner = self_root(owner_expr)
                    if owner is not None and (owner in dropped or owner == attr):
                        continue
                    return f"`{short(self.ctx.code(owner_expr))}`", node
        return None

    def _keeps(self, call: cst.Call, attr: str) -> bool:
        """Does a call that builds an object get `self.<attr>` itself (not a copy)?"""
        if not any(is_attr(a.value, attr) for a in call.args):
            return False
        q = self.ctx.qualname(call.func) or ""
        if q in NON_KEEPING or q.removeprefix("builtins.") in NON_KEEPING:
            return False
        if isinstance(call.func, cst.Attribute):
            if call.func.attr.value in _LOG_METHODS or is_attr(call.func.value, attr):
                return False
        last = q.rsplit(".", 1)[-1] if q else ""
        return bool(last) and (last[:1].isupper() or "cls" in last or "factory" in last
                               or name_words(last) & KEEPING_VERBS != set())


def _line_of(fn: cst.FunctionDef, small: cst.CSTNode) -> Optional[cst.CSTNode]:
    for node in iter_nodes(fn.body):
        if isinstance(node, cst.SimpleStatementLine) and any(s is small for s in node.body):
            return node
    return None
