"""RL912 dbus-signal-keeps-subscriber: an instance subscribes a handler over itself to a
D-Bus signal (dbus-python's `add_signal_receiver`, `connect_to_signal`) and never removes
the match: the bus connection, shared by the process, keeps the handler and the instance."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import is_self
from retainlint.analysis.gobject import method_of
from retainlint.analysis.hook_exprs import iter_nodes
from retainlint.analysis.hooks import handler_keeps_instance, short
from retainlint.analysis.once import one_instance_per_process, runs_once_per_instance
from retainlint.analysis.release import release_methods
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl912 import DBusSignalKeepsSubscriberPrefilter, SUBSCRIBERS

# What takes a match off the bus: `bus.remove_signal_receiver(handler, ...)`, or the
# `SignalMatch` the subscription returned, `match.remove()`.
_REMOVE_RECEIVER = "remove_signal_receiver"
_DBUS = frozenset({"dbus"})


@dataclass
class _Subscription:
    cls: cst.ClassDef
    method: cst.FunctionDef
    call: cst.Call
    statement: Optional[cst.CSTNode]
    handler: str
    kept: bool  # the returned match is kept (assigned, appended), so it can be removed


class DBusSignalKeepsSubscriber(Rule):
    prefilter = DBusSignalKeepsSubscriberPrefilter
    name = "dbus-signal-keeps-subscriber"
    summary = ("An instance subscribes a handler over itself to a D-Bus signal and never removes the match: "
               "the process's bus connection keeps the handler, and the instance, for as long as it lives")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
In a file that imports dbus-python (`import dbus`), reports `bus.add_signal_receiver(handler,
...)` and `proxy.connect_to_signal("Signal", handler)` in a method of a class when:
- the handler reaches the instance: a bound method of it (`self.on_found`), a lambda,
  `partial` or nested function over `self`;
- nothing in the class takes the match off: the `SignalMatch` the call returns is thrown
  away, or kept but no `match.remove()` runs anywhere in the class, and the class never
  calls `bus.remove_signal_receiver(...)`.

Silent for a class whose one instance is made at start-up (module level or the entry
point) when it subscribes in its constructor: it lives for the process anyway. A
subscription in another method is reported even then: each call adds one more match.
Severity: an error when the class has a release method (`close()`, `shutdown()`) that
leaves the match on the bus; a warning otherwise.

## Why it leaks
dbus-python keeps every signal match in the bus connection until it is removed, and
`dbus.SessionBus()` and `dbus.SystemBus()` return the one connection the process shares.
The match holds its handler, a bound method holds its instance, so the connection keeps
the instance - and all it references - for the rest of the process; dropping the proxy
(`del self.browser`) removes nothing. One more stays for every object made, or every
call that subscribes again.

## Example
```python
import dbus


class ServiceBrowser:
    def start(self):
        proxy = dbus.SystemBus().get_object("org.freedesktop.Avahi", "/")
        proxy.connect_to_signal("ItemNew", self.on_item_new)  # RL912

    def on_item_new(self, *args):
        ...
```

## Fix
None automatic: keep the match (`self._matches.append(browser.connect_to_signal(...))`)
and call `match.remove()` on each when the instance is done with the signal.
"""

    valid = [
        """
import dbus

class ServiceBrowser:
    def __init__(self):
        self._matches = []

    def start(self, browser):
        self._matches.append(browser.connect_to_signal("ItemNew", self.on_item_new))

    def stop(self):
        for match in self._matches:
            match.remove()
        self._matches = []

    def on_item_new(self, *args):
        pass
""",
        """
import dbus

def on_name_owner_changed(name, old, new):
    pass

class Watcher:
    def __init__(self):
        dbus.SessionBus().add_signal_receiver(on_name_owner_changed, signal_name="NameOwnerChanged")
""",
    ]
    invalid = [
        Example(
            """
import dbus

class ServiceBrowser:
    def start(self, browser):
        browser.connect_to_signal("ItemNew", self.on_item_new)

    def on_item_new(self, *args):
        pass
""",
            lines=[6],
        ),
    ]

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._subscriptions: list[_Subscription] = []

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value not in SUBSCRIBERS \
                or not self.ctx.imports.uses(_DBUS):
            return
        cls, method = method_of(self.ctx)
        handler = _handler(node)
        if cls is None or method is None or handler is None \
                or not handler_keeps_instance(self.ctx, handler, cls, method):
            return
        statement = self.ctx.scope.statement
        thrown_away = isinstance(statement, cst.SimpleStatementLine) and any(
            isinstance(small, cst.Expr) and small.value is node for small in statement.body)
        self._subscriptions.append(_Subscription(cls, method, node, statement, self.ctx.code(handler),
                                                 kept=not thrown_away))

    def leave_Module(self, original_node: cst.Module) -> None:
        for sub in self._subscriptions:
            cls = sub.cls
            if _removed(cls, sub.kept):
                continue
            per_instance = runs_once_per_instance(self.ctx, cls, sub.method)
            if per_instance and one_instance_per_process(self.ctx, cls):
                continue
            owner = cls.name.value
            released = release_methods(self.ctx, cls)
            teardown = (f"; `{released[0].name.value}()` releases the `{owner}` but leaves the match on the bus"
                        if released else "")
            growth = (f"one match per `{owner}` made" if per_instance
                      else f"one match per call of `{owner}.{sub.method.name.value}()`")
            how = "its match is thrown away" if not sub.kept else "nothing calls `remove()` on its match"
            self.report(
                sub.call,
                f"`{short(self.ctx.code(sub.call))}` subscribes `{short(sub.handler, 40)}`, which keeps the "
                f"`{owner}` instance, to a D-Bus signal, and {how}{teardown}: the process's bus connection "
                f"keeps the handler, and with it every `{owner}`; keep the `SignalMatch` and call its "
                f"`remove()` when the `{owner}` is done",
                severity=Severity.ERROR if released else Severity.WARNING,
                statement=sub.statement,
                consequence=Consequence(f"every `{owner}` instance, with all it holds",
                                        "the signal matches of the process's D-Bus connection",
                                        "the life of the process", growth),
            )


def _handler(call: cst.Call) -> Optional[cst.BaseExpression]:
    """The handler: `handler_function=`, or the positional argument where the method takes it
    (first for `add_signal_receiver`, second for `connect_to_signal`)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "handler_function":
            return arg.value
    assert isinstance(call.func, cst.Attribute)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    where = SUBSCRIBERS[call.func.attr.value]
    return positional[where].value if len(positional) > where else None


def _removed(cls: cst.ClassDef, kept: bool) -> bool:
    """Does the class take matches off: `remove_signal_receiver(...)`, or - when the match
    was kept - a `match.remove()` (no argument: a list's `remove` takes one)?"""
    for node in iter_nodes(cls.body):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            verb = node.func.attr.value
            if verb == _REMOVE_RECEIVER or kept and verb == "remove" and not node.args \
                    and not is_self(node.func.value):
                return True
    return False
