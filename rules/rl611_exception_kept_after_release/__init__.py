"""RL611 exception-kept-after-release: a release path that lets go of other objects keeps
an exception a method was handed. What counts as raised once released is in
`exceptions.py`."""

from __future__ import annotations

import os

import libcst as cst

from retainlint.analysis.exit_only_release import _only_at_exit
from retainlint.analysis.fix_preconditions import nulling
from retainlint.analysis.owned_parts import is_ray_actor
from retainlint.analysis.release import release_methods
from retainlint.analysis.release_fix import _append, _has_slots
from retainlint.analysis.rule import Example, Rule
from retainlint.core.finding import Applicability, Consequence, Position, Related, Severity
from retainlint.core.paths import display_path
from retainlint.project.release_parts_scan import PARTS_SCAN, may_store_exception
from retainlint.project.release_shape import exception_slots
from retainlint.rules.prefilters.rl611 import ExceptionKeptAfterReleasePrefilter
from retainlint.rules.rl611_exception_kept_after_release.exceptions import _raised_once_released, _release_flags


class ExceptionKeptAfterRelease(Rule):
    prefilter = ExceptionKeptAfterReleasePrefilter
    name = "exception-kept-after-release"
    summary = ("A release method that lets go of other objects keeps an exception a method was handed, "
               "with every frame of its traceback")
    severity = Severity.WARNING
    fix_applicability = Applicability.UNSAFE

    docs = """
## What it does
Reports a release method (`shutdown`, `close`, `cleanup`, `release`, ...; configurable)
that lets go of other objects (it drops or releases at least one attribute; flipping a
flag such as `self._closed = True` is not enough) but keeps an exception handed to a
method and stored on `self` (`def set_exception(self, exc): self._exception = exc`, in the
class or a project base class in any file; a parameter annotated as an exception, or
named `exc`, `exception`, `exc_val` or `exc_value` without an annotation). Not a class of
exception (`type[Exception]`), not a slot some method other than `__init__` empties
(`self.output = None`: a reader taking the exception out hands it off), and not an
exception the class raises once released (`if self.closed: raise self._failure`): kept
on purpose, for callers still in flight to see the cause.

Split from RL602 (release-keeps-heavy-attribute), which still selects and silences it.

## Why it leaks
A stored exception's traceback references every frame it went through and their locals:
the request, the connection, often the holder itself. It pins that object graph as long
as the holder lives on after its release.

## Example
```python
class Protocol:
    def set_exception(self, exc):
        self._exception = exc

    def close(self):  # RL611: `self._exception` is kept
        self.transport = None
```

## Fix (unsafe)
`self._exception = None` at the end of the release method (before a final `return`),
always unsafe: code that looks at the exception after the release sees `None`. Not offered
when a method reads it, nor for a `__slots__` name.
"""

    valid = [
        # the stored exception is dropped with the rest
        """
class Manager:
    def __init__(self):
        self.socket = None

    def fail(self, exc: Exception):
        self.error = exc

    def cleanup(self):
        self.socket = None
        self.error = None
""",
    ]

    invalid = [
        Example(
            """
class Protocol:
    def __init__(self):
        self.transport = None

    def set_exception(self, exc):
        self._exception = exc

    def close(self):
        self.transport = None
""",
            lines=[9],
            fixed="""
class Protocol:
    def __init__(self):
        self.transport = None

    def set_exception(self, exc):
        self._exception = exc

    def close(self):
        self.transport = None
        self._exception = None
""",
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        releases = release_methods(self.ctx, node)
        if not releases:
            return
        exceptions = self._exception_slots(node)
        if not exceptions:
            return
        drops = self.ctx.release.drops(node, releases)
        if drops is None or not drops.objects:
            return
        # an exception kept by a release path that lets go of other objects, unless the
        # class raises it once released (`if self.closed: raise self._failure`): kept on
        # purpose, for callers still in flight to see the cause
        after = _release_flags(drops)
        kept = [e for e in exceptions if e[0] not in drops.all and not _raised_once_released(node, e[0], after)]
        if not kept or is_ray_actor(self.ctx, node):
            return
        live = [r for r in releases if not _only_at_exit(self.ctx, node, r)]
        if live:
            self._report(node, live[0], kept, self.ctx.methods(node))

    def _exception_slots(self, cls: cst.ClassDef) -> list[tuple]:
        """Attributes the class or a project base assigns an exception handed to a method
        (`project/release_shape.py` `exception_slots`), one entry per attribute."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return []
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        index = self.ctx.index
        summary = index.files.get(os.path.abspath(self.ctx.path))
        scanned = summary.scans.get(PARTS_SCAN) if summary is not None else None
        if scanned is not None and not may_store_exception(qualified, summary, scanned, index):
            return []  # what the scans tell, without reading the files again
        slots: dict[str, tuple] = {}
        for slot in self.ctx.index.ask(exception_slots, qualified):
            slots.setdefault(slot[0], slot)
        return [s for a, s in slots.items() if a not in self.ctx.methods(cls)]

    def _report(self, cls: cst.ClassDef, release: cst.FunctionDef, kept: list[tuple], methods) -> None:
        where = f"{cls.name.value}.{release.name.value}()"
        names = " nor ".join(
            f"`self.{attr}` (an exception `{owner.rsplit('.', 1)[1]}.{method}()` stores)"
            for attr, _, _, owner, method in kept[:3])
        message = (
            f"`{where}` never drops {names}: its traceback keeps every frame it went through "
            f"and their locals (often this `{cls.name.value}` itself, and what it served) alive "
            f"as long as the `{cls.name.value}` lives on after release"
        )
        related = []
        for attr, path, line, owner, method in kept:
            position = Position(line, 1)
            related.append(Related(f"`self.{attr}` is assigned an exception here",
                                   display_path(path, os.getcwd()), position, position))
        fix = None
        verdicts = [nulling(self.ctx, cls, attr, release) for attr, *_ in kept]
        if not _has_slots(cls) and not any(attr in methods for attr, *_ in kept) \
                and not any(v.blockers for v in verdicts):
            statements = [cst.parse_statement(f"self.{attr} = None\n") for attr, *_ in kept]
            new = _append(release, statements)
            if new is not None:
                spelled = ", ".join(f"`self.{attr} = None`" for attr, *_ in kept)
                # unsafe: code outside the class that looks at the exception now sees `None`
                changes = [c for v in verdicts for c in v.changes] or [
                    f"`{cls.name.value}.{attr}` is `None` after `{release.name.value}()`" for attr, *_ in kept]
                fix = self.fix(f"Add {spelled} at the end of `{release.name.value}()`: {'; '.join(changes)}",
                               {release: new}, applicability=Applicability.UNSAFE)
        attrs = ", ".join(f"`self.{attr}`" for attr, *_ in kept[:3])
        plural = len(kept) > 1
        consequence = Consequence(
            f"the exception{'s' if plural else ''} in {attrs}, with every frame of {'their tracebacks' if plural else 'its traceback'} "
            "and their locals",
            f"the `{cls.name.value}` instance ({attrs})",
            f"as long as the `{cls.name.value}` lives on after `{release.name.value}()`")
        self.report(release.name, message, fix=fix, related=related, statement=release, consequence=consequence)
