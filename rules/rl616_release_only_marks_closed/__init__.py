"""RL616 release-only-marks-closed: a class inherits a release from a project base that
only flips flags, while it keeps a store of its own. What counts as a store is in
`stores.py`."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.owned_parts import is_ray_actor
from retainlint.analysis.release import is_release_method, release_methods, release_names
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.rules.prefilters.rl616 import ReleaseOnlyMarksClosedPrefilter
from retainlint.rules.rl616_release_only_marks_closed.stores import _reached_by_callbacks, _stores


class ReleaseOnlyMarksClosed(Rule):
    prefilter = ReleaseOnlyMarksClosedPrefilter
    name = "release-only-marks-closed"
    summary = ("A class inherits a release that only marks the object closed, while it keeps a store of "
               "its own: every entry stays after release")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports, at the class, a class with no release method of its own that inherits one from a
project base (any file) whose release path lets go of nothing and only flips flags (`def
close(self): self._closed = True`, also through methods it calls on `self`, overrides
included), while the class keeps a store of its own: an instance of a project class, built
directly or by a method returning one (`self.root = self._make_entry(...)`), with a method
other than `__init__` that puts what it is handed into a container of its own
(`self._dir[name] = entry`, `self._items.append(item)`). Not a no-op hook (`def
teardown(self): pass`), nor a base release that lets go of parts (RL610 judges that), nor a
store reached by a callback the object registers for itself (an event system may empty it
on release).

Split from RL602 (release-keeps-heavy-attribute), which still selects and silences it.

## Why it leaks
A store behind a `close()` inherited from a base that only marks the object closed (an
in-memory filesystem's tree of file buffers) stays filled after `close()`, as long as the
object is referenced.

## Example
```python
class MemoryStore(Store):  # RL616: `Store.close()` only sets `self._closed = True`
    def __init__(self):
        super().__init__()
        self.root = _Node()  # `_Node.set_child(name, node)` fills `self._children`
```

## Fix
None automatic: override the release to drop the store and call `super()`'s.
"""

    valid = [
        # the class drops its store, then closes as its base does
        """
class Store:
    def close(self):
        self._closed = True

class _Node:
    def __init__(self):
        self._children = {}

    def set_child(self, name, node):
        self._children[name] = node

class MemoryStore(Store):
    def __init__(self):
        self.root = _Node()

    def close(self):
        self.root = None
        super().close()
""",
    ]

    invalid = [
        Example(
            """
class Store:
    def close(self):
        self._closed = True

class _Node:
    def __init__(self):
        self._children = {}

    def set_child(self, name, node):
        self._children[name] = node

class MemoryStore(Store):
    def __init__(self):
        self.root = _Node()

    def write(self, name, node):
        self.root.set_child(name, node)
""",
            lines=[13],
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """After `close()` every entry of the store stays as long as the object is
        referenced."""
        if self.ctx.classes.get(node.name.value) is not node or release_methods(self.ctx, node):
            return
        inherited = None
        for name in release_names(self.ctx):
            found = self.ctx.release.lookup(node, name)
            if found is not None and found[0] is not node and found[1] is not None \
                    and is_release_method(self.ctx, found[1]):
                inherited = found
                break
        if inherited is None:
            return
        path = self.ctx.release.drops(node, [inherited[1]])
        if path is None or path.objects or not path.flags:
            return  # it lets go of something (judged as the class's own), or does nothing
        stores = {a: kind for a, kind in _stores(self.ctx, node, self.ctx.methods(node)).items()
                  if a not in path.all}
        if stores:
            # Callbacks the object hands on for itself (`self.add_trigger("shutdown",
            # self.drop_all)`): an event system may run them on release; a store they
            # reach is not known to stay.
            reached = _reached_by_callbacks(self.ctx, node)
            stores = {} if reached is None else {a: k for a, k in stores.items() if a not in reached}
        if not stores or is_ray_actor(self.ctx, node):
            return
        base = inherited[0].name.value if isinstance(inherited[0], cst.ClassDef) \
            else inherited[0].qualname.rsplit(".", 1)[1]
        release = inherited[1].name.value
        names = ", ".join(f"`self.{a}` (a `{kind}` its methods fill)" for a, kind in sorted(stores.items())[:3])
        message = (
            f"`{node.name.value}` inherits `{release}()` from `{base}`, which only marks the object "
            f"closed: {names} stays, with everything stored in it, as long as the "
            f"`{node.name.value}` is referenced after `{release}()`; override `{release}()` to drop it "
            f"and call `super().{release}()`"
        )
        shown = sorted(stores.items())[:3]
        kinds = list(dict.fromkeys(f"`{kind}`" for _, kind in shown))
        attrs = [f"`self.{a}`" for a, _ in shown]
        # a store's methods put what they are handed into a container of theirs: it grows with each
        self.report(node.name, message, statement=node,
                    consequence=Consequence(f"everything stored in the {_joined(kinds)}", _joined(attrs),
                                            f"as long as the `{node.name.value}` instance, after `{release}()`",
                                            "one entry per object stored"))


def _joined(names: list[str]) -> str:
    return ", ".join(names[:-1]) + (" and " if len(names) > 1 else "") + names[-1]
