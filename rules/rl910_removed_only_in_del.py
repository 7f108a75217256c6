"""RL910 removed-only-in-del: an instance registers its own method on an object it keeps
but did not make, and only its `__del__` removes it: `__del__` runs when the instance is
freed, which the registration prevents, so the instance stays as long as that object."""

from __future__ import annotations

from dataclasses import dataclass
import libcst as cst

from retainlint.analysis.cstutil import body_functions, is_self
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.hooks import removes_by_name, short
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl910 import RemovedOnlyInDelPrefilter


@dataclass
class _Call:
    method: cst.FunctionDef
    node: cst.Call
    receiver: str  # `self._plot_area.renderer`
    verb: str  # `add_event_handler`
    handler: str  # `_move`, the method of the instance handed over


class RemovedOnlyInDel(Rule):
    prefilter = RemovedOnlyInDelPrefilter
    name = "removed-only-in-del"
    summary = ("An instance registers its own method on an object it keeps but did not make, and only "
               "`__del__` removes it: the registration keeps the instance, so `__del__` never runs")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a call that hands a method of the instance (`self.on_move`) to an object the
instance keeps but did not make (`self.target`, `self._plot_area.renderer`: set from a
parameter, not built by the class) when the class's `__del__` is the only place that
hands the same method to that object again, through a call whose name says it takes
something off (`remove_event_handler`, `detach`, `unobserve`, ...). Also reported: the
other methods of the instance registered on that same object that nothing removes at all.

## Why it leaks
`__del__` runs when the instance's last reference goes. The registration is such a
reference: the object keeps the bound method, and the bound method keeps the instance.
So while the object lives, the instance cannot be freed and `__del__` cannot run - the
cleanup it holds is dead code. Every instance made and dropped stays, with all it
references, as long as the object it registered on (a renderer, a plot, a sensor set),
and its handlers keep running.

## Example
```python
class Selector:
    def __init__(self, renderer):
        self.renderer = renderer
        self.renderer.add_event_handler(self._move, "pointer_move")  # RL910

    def _move(self, event):
        ...

    def __del__(self):
        self.renderer.remove_event_handler(self._move, "pointer_move")
```

## Fix
None automatic: move the removal into an explicit release (`close()`, `cleanup()`) that
the owner calls when it drops the instance, or register a `weakref.WeakMethod` wrapper
and remove it from a `weakref.finalize` callback.
"""

    valid = [
        """
class Selector:
    def __init__(self, renderer):
        self.renderer = renderer
        self.renderer.add_event_handler(self._move, "pointer_move")

    def _move(self, event):
        pass

    def cleanup(self):
        self.renderer.remove_event_handler(self._move, "pointer_move")

    def __del__(self):
        self.renderer.remove_event_handler(self._move, "pointer_move")
""",
    ]
    invalid = [
        Example(
            """
class Selector:
    def __init__(self, renderer):
        self.renderer = renderer
        self.renderer.add_event_handler(self._move, "pointer_move")

    def _move(self, event):
        pass

    def __del__(self):
        self.renderer.remove_event_handler(self._move, "pointer_move")
""",
            lines=[5],
        ),
    ]

    def leave_Module(self, original_node: cst.Module) -> None:
        for cls in self.ctx.classes.values():
            methods = self.ctx.methods(cls)
            finalizer = methods.get("__del__")
            if finalizer is not None:
                self._judge(cls, finalizer, methods)

    def _judge(self, cls: cst.ClassDef, finalizer: cst.FunctionDef, methods: dict[str, cst.FunctionDef]) -> None:
        calls = [c for fn in body_functions(cls) for c in self._calls(fn, methods)]
        in_del = [c for c in calls if c.method is finalizer and removes_by_name(c.verb)]
        receivers = {c.receiver for c in in_del if not self._owned(cls, c.receiver)}
        removing = {(c.receiver, c.verb) for c in in_del}
        for call in calls:
            if call.method is finalizer or call.receiver not in receivers or (call.receiver, call.verb) in removing:
                continue  # `__del__` itself, or a removal made elsewhere too
            again = [o for o in calls if o is not call and (o.receiver, o.handler) == (call.receiver, call.handler)]
            if any(o.method is not finalizer and o.verb != call.verb for o in again):
                continue  # another method takes it off: a release the owner can call
            self._report(cls, call, only_in_del=any(o.method is finalizer for o in again))

    def _calls(self, fn: cst.FunctionDef, methods: dict[str, cst.FunctionDef]) -> list[_Call]:
        """Calls in `fn` that hand a method of the instance to an object the instance
        keeps: `self.x.verb(self.method, ...)`."""
        found = []
        for node in iter_nodes(fn.body):
            if not isinstance(node, cst.Call) or not isinstance(node.func, cst.Attribute):
                continue
            receiver = node.func.value
            if is_self(receiver) or not _rooted_at_self(receiver):
                continue
            handler = next((a.value.attr.value for a in node.args
                            if isinstance(a.value, cst.Attribute) and is_self(a.value.value)
                            and a.value.attr.value in methods), None)
            if handler is not None:
                found.append(_Call(fn, node, self.ctx.code(receiver), node.func.attr.value, handler))
        return found

    def _owned(self, cls: cst.ClassDef, receiver: str) -> bool:
        """Did the class build the object (`self.x = Renderer()`)? A cycle through what the
        instance made is freed with it, `__del__` and all."""
        attr = receiver.split(".")[1]
        for fn in body_functions(cls):
            for value, _ in self.ctx.heavy.local_assignments(fn).get(f"self.{attr}", ()):
                if isinstance(value, cst.Call) and not (
                        isinstance(value.func, cst.Attribute) and value.func.attr.value.startswith("get")):
                    return True
        return False

    def _report(self, cls: cst.ClassDef, call: _Call, only_in_del: bool) -> None:
        owner = cls.name.value
        why = ("and only `__del__` removes it" if only_in_del else
               f"and nothing removes it (the class takes its other handlers off `{call.receiver}` only in "
               "`__del__`)")
        self.report(
            call.node,
            f"`{short(self.ctx.code(call.node))}` registers `self.{call.handler}` on `{call.receiver}`, "
            f"which the `{owner}` keeps but did not make, {why}: `__del__` runs only once the instance is "
            f"freed, and the registration keeps it, so every `{owner}` stays as long as `{call.receiver}`; "
            f"take it off in an explicit release (`close()`, `cleanup()`) its owner calls",
            consequence=Consequence(f"every `{owner}` instance, with all it holds",
                                    f"the handlers of `{short(call.receiver, 40)}`",
                                    f"as long as `{short(call.receiver, 40)}`", f"one per `{owner}` made"),
        )


def _rooted_at_self(expr: cst.BaseExpression) -> bool:
    """`self.x`, `self.x.y`: an object the instance keeps."""
    while isinstance(expr, cst.Attribute):
        if is_self(expr.value):
            return True
        expr = expr.value
    return False
