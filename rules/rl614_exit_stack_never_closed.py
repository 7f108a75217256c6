"""RL614 exit-stack-never-closed: cleanup registered on an `ExitStack` the instance holds
that nothing closes."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.exit_stacks import (
    _closed_by_subclasses_elsewhere, _exit_stacks, _StackClosers, _StackUses,
)
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.walk import visit
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl614 import ExitStackNeverClosedPrefilter


class ExitStackNeverClosed(Rule):
    prefilter = ExitStackNeverClosedPrefilter
    name = "exit-stack-never-closed"
    summary = ("Cleanup registered on an `ExitStack` the instance holds that nothing closes: what its "
               "callbacks free stays allocated while the instance lives")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports `self._exit_stack = ExitStack()` (or `AsyncExitStack()`) with `.callback(...)`,
`.push(...)` or `.enter_context(...)` registered on it, at the first registration, when no
method of the class uses the stack otherwise (closes it, enters it with `with`, hands it
on), nothing in the file closes an attribute of that name (`handler._exit_stack.close()`,
`weakref.finalize(self, self._stack.close)`), and no project subclass in another file
does: the callbacks never run while the instance lives.

Split from RL602 (release-keeps-heavy-attribute), which still selects and silences it.

## Why it leaks
The callbacks run only if someone unwinds the stack, so what they would free - a native
context, a model's handle - stays allocated as long as the instance lives.

## Example
```python
class ChatHandler:
    def load(self, model):
        self.ctx = native.clip_init(self.clip_path, model)
        self._exit_stack.callback(native.clip_free, self.ctx)  # RL614: never closed
```

## Fix
None automatic: close the stack from a release method, or register the cleanup on the
stack of the object whose release it belongs to.
"""

    valid = [
        # the handler's stack is unwound by its release method
        """
from contextlib import ExitStack
import native

class ChatHandler:
    def __init__(self, clip_path):
        self.clip_path = clip_path
        self._exit_stack = ExitStack()

    def load(self, model):
        self.ctx = native.clip_init(self.clip_path, model)
        self._exit_stack.callback(native.clip_free, self.ctx)

    def close(self):
        self._exit_stack.close()
""",
    ]

    invalid = [
        Example(
            """
from contextlib import ExitStack
import native

class ChatHandler:
    def __init__(self, clip_path):
        self.clip_path = clip_path
        self._exit_stack = ExitStack()

    def load(self, model):
        self.ctx = native.clip_init(self.clip_path, model)
        self._exit_stack.callback(native.clip_free, self.ctx)
""",
            lines=[12],
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        stacks = _exit_stacks(self.ctx, node)
        if not stacks:
            return
        uses = _StackUses(set(stacks))
        visit(node, uses)
        closers = _StackClosers(set(stacks))
        visit(self.ctx.module, closers)  # the class, its subclasses here, its owners here
        closed = closers.closed | _closed_by_subclasses_elsewhere(self.ctx, node, set(stacks))
        for attr in stacks:
            registrations = uses.registrations.get(attr)
            if not registrations or attr in uses.other or attr in closed:
                continue
            first, statement = registrations[0]
            assert isinstance(first.func, cst.Attribute)
            message = (
                f"`self.{attr}.{first.func.attr.value}(...)` registers cleanup on an `ExitStack` "
                f"nothing closes: no method of `{node.name.value}` unwinds `self.{attr}`, so what "
                f"its callbacks free stays allocated as long as the `{node.name.value}` lives; "
                f"close it from a release method, or register the cleanup on the stack of the "
                f"object whose release it belongs to"
            )
            self.report(first, message, statement=statement,
                        consequence=Consequence(f"what the cleanup registered on `self.{attr}` frees",
                                                f"`self.{attr}`, never closed",
                                                f"as long as the `{node.name.value}` instance"))
