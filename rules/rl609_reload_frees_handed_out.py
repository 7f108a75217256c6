"""RL609 reload-frees-handed-out: a method that returns an object built around `self.x`
lets go of the previous `self.x` before reclaiming memory, while the object it returned
last time still holds it."""

from __future__ import annotations

from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import self_attribute
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.hooks import short
from retainlint.analysis.reclaims import reclaims
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.analysis.statement_order import moves_off_device, ordered
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.names import name_words
from retainlint.project.release_scan import KEEPING_VERBS, NON_KEEPING
from retainlint.rules.prefilters.rl609 import ReloadFreesHandedOutPrefilter

class ReloadFreesHandedOut(Rule):
    prefilter = ReloadFreesHandedOutPrefilter
    name = "reload-frees-handed-out"
    summary = ("A reload lets go of `self.x` and reclaims memory, while the object it returned last time, "
               "built around `self.x`, still holds the old value")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a method that returns an object built around `self.x` (`return Pipeline(self.x)`,
through locals too) and, when called again, lets go of the previous `self.x` (`self.x =
None`, `del`) before `gc.collect()` / `empty_cache()`: the object it returned last time
(kept by the caller, a framework's model list) still holds the old value, so nothing is
freed. Not reported when the old object is moved off the device in place first
(`old.to("cpu")`, `.cpu()`), which empties its storage whoever holds it.

Severity: a warning - what is kept depends on the caller.

Split from RL603 (ineffective-release), which still selects and silences it.

## Why it leaks
Memory is freed when the last reference goes. Rebinding `self.x` drops one reference;
the object handed out last time keeps the other, so the old model stays loaded while the
new one is built.

## Example
```python
class Loader:
    def load(self, path):
        self.model = None
        torch.cuda.empty_cache()  # RL609: the Pipeline returned last time holds the old model
        self.model = build(path)
        return Pipeline(self.model)
```

## Fix
None automatic: move the old object off the device in place first (`.to("cpu")`), or
have the holder of the returned object drop it.
"""

    valid = [
        # the old model moved off the device in place first
        """
import torch

class Loader:
    def load(self, path):
        old = self.model
        self.model = None
        old.to("cpu")
        torch.cuda.empty_cache()
        self.model = build(path)
        return Pipeline(self.model)
""",
    ]

    invalid = [
        Example(
            """
import torch

class Loader:
    def load(self, path):
        self.model = None
        torch.cuda.empty_cache()
        self.model = build(path)
        return Pipeline(self.model)
""",
            lines=[7],
        ),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if self.ctx.scope.method_class is not None:
            self._released_but_handed_out(node)

    def _released_but_handed_out(self, fn: cst.FunctionDef) -> None:
        """Releasing the previous `self.x` before a reclaim call frees nothing when the
        object this method returned on an earlier call still holds it - unless the old
        object is moved off the device in place first (`old.to("cpu")`)."""
        handed = self._handed_out(fn)
        if not handed:
            return
        released: dict[str, cst.CSTNode] = {}
        aliases: dict[str, str] = {}
        moved: set[str] = set()
        for node in ordered(fn.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1:
                target, value = node.targets[0].target, node.value
                if isinstance(target, cst.Name) and self_attribute(value) in handed:
                    aliases[target.value] = self_attribute(value) or ""
                elif self_attribute(target) in handed and isinstance(value, cst.Name) and value.value == "None":
                    released[self_attribute(target) or ""] = node
            elif isinstance(node, cst.Del):
                for t in iter_nodes(node.target):
                    if self_attribute(t) in handed:
                        released[self_attribute(t) or ""] = node
            elif isinstance(node, cst.Call) and moves_off_device(node):
                owner = node.func.value if isinstance(node.func, cst.Attribute) else None
                attr = self_attribute(owner) if owner is not None else None
                if attr is None and isinstance(owner, cst.Name):
                    attr = aliases.get(owner.value)
                if attr:
                    moved.add(attr)
            elif isinstance(node, cst.Call) and reclaims(self.ctx, node):
                pending = [a for a in released if a not in moved]
                if not pending:
                    continue
                attr = pending[0]
                self.report(
                    node,
                    f"`{self.ctx.code(node)}` after releasing `self.{attr}` frees nothing of it: "
                    f"`{fn.name.value}()` returns an object built around `self.{attr}`, and the one it "
                    "returned on an earlier call still holds the old value; move it off the device in "
                    f"place first (`.to(\"cpu\")`) or have the holder of the returned object drop it",
                    severity=Severity.WARNING,
                    related=[RelatedNode(f"`self.{attr}` released here", released[attr]),
                             RelatedNode("built into what is returned here", handed[attr])],
                    consequence=Consequence(
                        f"the previous `self.{attr}`",
                        f"the {self._built(handed[attr])} `{fn.name.value}()` returned on an earlier call",
                        "as long as the caller keeps that object"),
                )
                return

    def _built(self, call: cst.CSTNode) -> str:
        """The object a call built, by its callee (`Pipeline(...)`)."""
        return f"`{short(self.ctx.code(call.func))}(...)`" if isinstance(call, cst.Call) else "object"

    def _handed_out(self, fn: cst.FunctionDef) -> dict[str, cst.CSTNode]:
        """`self` attributes that go into an object the method returns: {attr: the call}."""
        built: dict[str, tuple[str, cst.CSTNode]] = {}  # local -> (attr, call)
        found: dict[str, cst.CSTNode] = {}

        def held(expr: cst.CSTNode) -> Optional[tuple[str, cst.CSTNode]]:
            for call in iter_nodes(expr):
                if not isinstance(call, cst.Call) or not self._wraps(call):
                    continue
                for arg in call.args:
                    attr = self_attribute(arg.value)
                    if attr is not None:
                        return attr, call
                    if isinstance(arg.value, cst.Name) and arg.value.value in built:
                        return built[arg.value.value]
            return None

        for node in ordered(fn.body):
            if isinstance(node, cst.Assign) and len(node.targets) == 1 \
                    and isinstance(node.targets[0].target, cst.Name):
                kept = held(node.value)
                if kept is not None:
                    built[node.targets[0].target.value] = kept
            elif isinstance(node, cst.Return) and node.value is not None:
                kept = held(node.value)
                if kept is not None:
                    found.setdefault(*kept)
        return found

    def _wraps(self, call: cst.Call) -> bool:
        """Does the call build an object that keeps its arguments (a class, a factory,
        `ModelPatcher(model)`), rather than read them (`len(x)`, `logger.info(x)`)?"""
        q = self.ctx.qualname(call.func) or ""
        last = q.rsplit(".", 1)[-1]
        if not last or q in NON_KEEPING or q.removeprefix("builtins.") in NON_KEEPING:
            return False
        return last[:1].isupper() or "factory" in last or bool(name_words(last) & KEEPING_VERBS)

