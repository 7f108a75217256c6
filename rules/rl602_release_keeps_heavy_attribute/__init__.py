"""RL602 release-keeps-heavy-attribute.

The rule's class: its detection and reports, and the fixes it offers. Its parts, beside
it: `docs` and `examples` (its documentation and the samples the tests run), `owned` (the
heavy attributes a class builds), `exit_paths` (releases that only run at exit), `fix`
(where a fix's statements go), one module for each further shape (`exceptions`,
`freeing`, `exit_stacks`, `acquired`, `stores`), and `common` (the limits they share)."""

from __future__ import annotations

import os
from typing import Optional

import libcst as cst

from retainlint.analysis.cstutil import body_functions
from retainlint.core.finding import Applicability, Position, Related, Severity
from retainlint.core.paths import display_path
from retainlint.analysis.fix_preconditions import nulling, still_held
from retainlint.analysis.holding import caller_supplied
from retainlint.project.names import releases as releases_word
from retainlint.project.release_shape import exception_slots, may_release_parts, releasing_owners
from retainlint.analysis.release import FINALIZER, is_release_method, release_methods, release_names
from retainlint.rules.prefilters.rl602 import (
    ACQUIRES, ReleaseKeepsHeavyAttributePrefilter, may_store_exception,
)
from retainlint.analysis.rule import RelatedNode, Rule
from retainlint.analysis.walk import visit
from retainlint.rules.rl602_release_keeps_heavy_attribute.acquired import _SYNC_PRIMITIVES, _acquired_in_place, _given_back, _has_inverse
from retainlint.rules.rl602_release_keeps_heavy_attribute.docs import DOCS
from retainlint.rules.rl602_release_keeps_heavy_attribute.examples import INVALID, VALID
from retainlint.rules.rl602_release_keeps_heavy_attribute.exceptions import _raised_once_released, _release_flags
from retainlint.rules.rl602_release_keeps_heavy_attribute.exit_paths import _only_at_exit
from retainlint.rules.rl602_release_keeps_heavy_attribute.exit_stacks import (
    _StackClosers, _StackUses, _closed_by_subclasses_elsewhere, _exit_stacks,
)
from retainlint.rules.rl602_release_keeps_heavy_attribute.fix import _append, _has_slots, _release_method_of, _set_in_init
from retainlint.rules.rl602_release_keeps_heavy_attribute.freeing import _closed_whole, _freed_in_place, _handed_methods
from retainlint.rules.rl602_release_keeps_heavy_attribute.owned import (
    _Heavy, _built_parts, _heavy_attributes, _is_model, _is_module_class, _substantial,
)
from retainlint.rules.rl602_release_keeps_heavy_attribute.stores import _reached_by_callbacks, _stores


class ReleaseKeepsHeavyAttribute(Rule):
    prefilter = ReleaseKeepsHeavyAttributePrefilter
    name = "release-keeps-heavy-attribute"
    summary = "A release method never drops an attribute that holds a model, tensors or an object owning them"
    severity = Severity.WARNING
    fix_applicability = Applicability.SAFE
    docs = DOCS

    valid = VALID
    invalid = INVALID

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._class: Optional[cst.ClassDef] = None
        self._actor_names: Optional[set[str]] = None

    def _is_actor(self, cls: cst.ClassDef) -> bool:
        """A Ray actor (`@ray.remote`, `ray.remote(Cls)` in this file) runs in a process
        of its own, which goes away with it."""
        if self._actor_names is None:
            names: set[str] = set()
            ctx = self.ctx

            class _Actors(cst.CSTVisitor):
                def visit_ClassDef(self, node: cst.ClassDef) -> None:
                    for d in node.decorators:
                        target = d.decorator.func if isinstance(d.decorator, cst.Call) else d.decorator
                        if ctx.qualname(target) == "ray.remote":
                            names.add(node.name.value)

                def visit_Call(self, node: cst.Call) -> None:
                    func = node.func.func if isinstance(node.func, cst.Call) else node.func
                    if ctx.qualname(func) == "ray.remote" and node.args and isinstance(
                            node.args[0].value, cst.Name):
                        names.add(node.args[0].value.value)

            if "ray" in ctx.imports.names.values() or any(
                    v.startswith("ray.") for v in ctx.imports.names.values()):
                visit(ctx.module, _Actors())
            self._actor_names = names
        return cls.name.value in self._actor_names

    # -- detection -----------------------------------------------------------------
    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        methods = self.ctx.methods(node)
        self._check_unclosed_stacks(node)
        self._check_never_given_back(node)
        releases = release_methods(self.ctx, node)
        if not releases:
            self._check_unreleasable(node, methods)
            self._check_inherited_flag_only(node, methods)
            return
        self._check_freed_elsewhere(node, releases, methods)
        heavy = _heavy_attributes(self.ctx, node, methods)
        if heavy and _is_module_class(self.ctx, node):
            heavy = {}
        exceptions = self._exception_slots(node)
        if not heavy and not exceptions:
            return
        drops = self.ctx.release.drops(node, releases)
        if drops is None:
            return
        dropped = drops.all
        self._class = node
        kept = [h for a, h in heavy.items() if a not in dropped and _substantial(self.ctx, h, self._class)]
        # an exception kept by a release path that lets go of other objects, unless the
        # class raises it once released (`if self.closed: raise self._failure`): kept on
        # purpose, for callers still in flight to see the cause
        after = _release_flags(drops) if exceptions else {}
        kept_exceptions = [e for e in exceptions if e[0] not in dropped
                           and not _raised_once_released(node, e[0], after)] if drops.objects else []
        if not (kept or kept_exceptions) or self._is_actor(node):
            return
        live = [r for r in releases if not _only_at_exit(self.ctx, node, r)]
        if live and kept:
            self._report(node, live[0], kept, methods, drops.unbound)
        if live and kept_exceptions:
            self._report_exceptions(node, live[0], kept_exceptions, methods)

    def _exception_slots(self, cls: cst.ClassDef) -> list[tuple]:
        """Attributes the class or a project base assigns an exception handed to a method
        (`project/release_shape.py` `exception_slots`), one entry per attribute."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return []
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        index = self.ctx.index
        summary = index.files.get(os.path.abspath(self.ctx.path))
        scanned = summary.scans.get(self.code) if summary is not None else None
        if scanned is not None and not may_store_exception(qualified, summary, scanned, index):
            return []  # what the scans tell, without reading the files again
        slots: dict[str, tuple] = {}
        for slot in self.ctx.index.ask(exception_slots, qualified):
            slots.setdefault(slot[0], slot)
        return [s for a, s in slots.items() if a not in self.ctx.methods(cls)]

    def _report_exceptions(self, cls: cst.ClassDef, release: cst.FunctionDef, kept: list[tuple],
                           methods) -> None:
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
        self.report(release.name, message, fix=fix, related=related, statement=release)

    # -- a part another method frees ----------------------------------------------
    def _check_freed_elsewhere(self, cls: cst.ClassDef, releases: list, methods) -> None:
        """Another method frees a part in place (`__del__`: `free_adapter(self.x)`;
        `render(close=True)`: `self.viewer.close()`) that the release path, which lets go
        of other parts, neither frees nor drops: after `close()` the part stays allocated
        as long as the instance is referenced. The author's own code says the part needs
        freeing, whatever it is."""
        path = self.ctx.release.drops(cls, releases)
        if path is None or not path.objects:
            return
        on_path = {id(fn) for _, fn in path.methods}
        handed = _handed_methods(cls)
        evidence: dict[str, cst.FunctionDef] = {}
        maybe_on_path: set[str] = set()
        for fn in body_functions(cls):
            name = fn.name.value
            if id(fn) in on_path or name == "__init__":
                continue
            if name in handed:
                # a callback the release path may run unseen (`self._stack.callback(self.m)`)
                maybe_on_path |= _freed_in_place(fn)
                continue
            if name != FINALIZER and releases_word(name):
                continue  # another release path (`release_host_resources()`) the owner calls
            for attr in _freed_in_place(fn) if name == FINALIZER else _closed_whole(fn):
                if name != FINALIZER and caller_supplied(self.ctx, cls, attr):
                    # the caller's object (`self.conn = conn`): a method closing it (a reset,
                    # the end of a run) is no sign the release path owns it; a finalizer
                    # freeing it is
                    continue
                evidence.setdefault(attr, fn)
        kept = sorted(a for a in evidence if a not in path.all and a not in maybe_on_path and a not in methods)
        if not kept or self._is_actor(cls):
            return
        release = releases[0]
        where = f"{cls.name.value}.{release.name.value}()"
        names = " nor ".join(f"`self.{a}` (which `{evidence[a].name.value}()` frees)" for a in kept[:3])
        message = (
            f"`{where}` lets go of other parts but never frees {names}: after "
            f"`{release.name.value}()` {'it stays' if len(kept) == 1 else 'they stay'} allocated as long "
            f"as the `{cls.name.value}` is referenced; free {'it' if len(kept) == 1 else 'them'} on the "
            f"release path and drop the reference"
        )
        related = [RelatedNode(f"`{evidence[a].name.value}()` frees `self.{a}` here", evidence[a].name)
                   for a in kept]
        self.report(release.name, message, related=related, statement=release)

    # -- an ExitStack nothing closes -------------------------------------------------
    def _check_unclosed_stacks(self, cls: cst.ClassDef) -> None:
        """Cleanup registered on an `ExitStack` the instance holds (`self._stack.callback(
        free)`, `.enter_context(...)`) that no method of the class closes, hands on or
        enters, and nothing in the file closes (`x._stack.close()`): the callbacks run
        only if someone unwinds the stack, so what they would free stays allocated as long
        as the instance lives."""
        stacks = _exit_stacks(self.ctx, cls)
        if not stacks:
            return
        uses = _StackUses(set(stacks))
        visit(cls, uses)
        closers = _StackClosers(set(stacks))
        visit(self.ctx.module, closers)  # the class, its subclasses here, its owners here
        closed = closers.closed | _closed_by_subclasses_elsewhere(self.ctx, cls, set(stacks))
        for attr in stacks:
            registrations = uses.registrations.get(attr)
            if not registrations or attr in uses.other or attr in closed:
                continue
            first, statement = registrations[0]
            assert isinstance(first.func, cst.Attribute)
            message = (
                f"`self.{attr}.{first.func.attr.value}(...)` registers cleanup on an `ExitStack` "
                f"nothing closes: no method of `{cls.name.value}` unwinds `self.{attr}`, so what "
                f"its callbacks free stays allocated as long as the `{cls.name.value}` lives; "
                f"close it from a release method, or register the cleanup on the stack of the "
                f"object whose release it belongs to"
            )
            self.report(first, message, statement=statement)

    # -- a resource acquired in place and never given back ---------------------------
    def _check_never_given_back(self, cls: cst.ClassDef) -> None:
        """A part the class builds (`self.m = Model.from_config(c)`) and then makes
        acquire a resource of its own (`self.m.load()`: no item handed in) whose inverse
        (`unload()`) nothing calls on it - no method of the class, nothing in the file,
        no project subclass elsewhere - and that nothing drops (`self.m = None`): what it
        acquired (weights a library loaded, a connection) is given back only if and when
        the part is collected, and a library that registers it keeps it for good."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return  # a nested class: its subclasses and holders are not known
        acquired = _acquired_in_place(cls)
        if not acquired:
            return
        built = _built_parts(self.ctx, cls)
        given = _given_back(self.ctx.module, {a: ACQUIRES[v] for a, (v, _) in acquired.items()})
        kept = [a for a in acquired if a in built and a not in given
                and self.ctx.qualname(built[a].func) not in _SYNC_PRIMITIVES
                and _has_inverse(self.ctx, built[a], acquired[a][0])]
        if not kept:
            return
        elsewhere = _closed_by_subclasses_elsewhere(
            self.ctx, cls, set(kept), frozenset().union(*(ACQUIRES[acquired[a][0]] for a in kept)))
        kept = [a for a in kept if a not in elsewhere]
        if not kept or self._is_actor(cls):
            return
        def inverse(attr: str) -> str:
            first, *others = sorted(ACQUIRES[acquired[attr][0]])
            return f"`self.{attr}.{first}()`" + "".join(f" (or `.{o}()`)" for o in others)

        names = " nor ".join(f"{inverse(a)} after `self.{a}.{acquired[a][0]}()`" for a in kept[:3])
        message = (
            f"`{cls.name.value}` never calls {names}, nor drops the part: what "
            f"{'it acquired stays' if len(kept) == 1 else 'they acquired stay'} held as long as the "
            f"`{cls.name.value}` lives, and an owner has no method to call to give it back; add "
            f"a release method that does it"
        )
        related = [RelatedNode(f"`self.{a}` acquires it here", acquired[a][1]) for a in kept]
        self.report(cls.name, message, related=related, statement=cls)

    # -- an inherited release that only marks the object closed -----------------------
    def _check_inherited_flag_only(self, cls: cst.ClassDef, methods) -> None:
        """A class with no release method of its own inherits one from a project base
        that only flips flags (`FS.close()`: `self._closed = True`), while the class
        keeps a store of its own - an instance of a project class whose methods fill a
        container of theirs with what they are handed (`self._dir[name] = entry`): after
        `close()` every entry stays as long as the object is referenced."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return
        inherited = None
        for name in release_names(self.ctx):
            found = self.ctx.release.lookup(cls, name)
            if found is not None and found[0] is not cls and found[1] is not None \
                    and is_release_method(self.ctx, found[1]):
                inherited = found
                break
        if inherited is None:
            return
        path = self.ctx.release.drops(cls, [inherited[1]])
        if path is None or path.objects or not path.flags:
            return  # it lets go of something (judged as the class's own), or does nothing
        stores = {a: kind for a, kind in _stores(self.ctx, cls, methods).items() if a not in path.all}
        if stores:
            # Callbacks the object hands on for itself (`self.add_trigger("shutdown",
            # self.drop_all)`): an event system may run them on release; a store they
            # reach is not known to stay.
            reached = _reached_by_callbacks(self.ctx, cls)
            stores = {} if reached is None else {a: k for a, k in stores.items() if a not in reached}
        if not stores or self._is_actor(cls):
            return
        base = inherited[0].name.value if isinstance(inherited[0], cst.ClassDef) \
            else inherited[0].qualname.rsplit(".", 1)[1]
        release = inherited[1].name.value
        names = ", ".join(f"`self.{a}` (a `{kind}` its methods fill)" for a, kind in sorted(stores.items())[:3])
        message = (
            f"`{cls.name.value}` inherits `{release}()` from `{base}`, which only marks the object "
            f"closed: {names} stays, with everything stored in it, as long as the "
            f"`{cls.name.value}` is referenced after `{release}()`; override `{release}()` to drop it "
            f"and call `super().{release}()`"
        )
        self.report(cls.name, message, statement=cls)

    # -- a part its owner cannot release ----------------------------------------------
    def _check_unreleasable(self, cls: cst.ClassDef, methods) -> None:
        """A class that holds a model it builds (and maybe more heavy state) and has no
        release method at all (nor inherits one), held by a project class whose release
        method releases its other parts in place (`self.profiler.shutdown()`) and can
        neither release this one nor, as it stands, drops it (`project/release_shape.py`
        `releasing_owners`)."""
        if self.ctx.classes.get(cls.name.value) is not cls:
            return  # a nested class: the index does not know who holds it
        names = tuple(n for n in self.ctx.settings.release_methods if n != FINALIZER)
        qualified = f"{self.ctx.module_name}.{cls.name.value}"
        index = self.ctx.index
        # first what the index tells (as the prefilter does), then the class itself
        if not index.is_heavy_class(qualified) or not index.ask(may_release_parts, (qualified, names)):
            return
        if any(self.ctx.release.lookup(cls, n) is not None for n in names):
            return
        heavy = _heavy_attributes(self.ctx, cls, methods)
        if not heavy or _is_module_class(self.ctx, cls):
            return
        self._class = cls
        kept = [h for h in heavy.values() if _substantial(self.ctx, h, self._class)]
        if not any(_is_model(self.ctx, h) for h in kept) or self._is_actor(cls):
            return
        owners = index.ask(releasing_owners, (qualified, names))
        if not owners:
            return
        owner, path, line, column, attr, method, others = owners[0]
        where = f"{owner.rsplit('.', 1)[1]}.{method}()"
        parts = ", ".join(f"`self.{o}`" for o in others[:3]) + (" ..." if len(others) > 3 else "")
        message = (
            f"`{cls.name.value}` holds {self._listed(kept)} and has no release method: `{where}` "
            f"releases its other parts ({parts}) but cannot release `self.{attr}`, so what "
            f"`{cls.name.value}` holds stays allocated as long as its owner keeps it; give "
            f"`{cls.name.value}` a release method that frees it and call it from `{where}`"
        )
        position = Position(line, column)
        related = [Related(f"`{where}` releases its other parts here", display_path(path, os.getcwd()),
                           position, position)]
        related += [RelatedNode(f"`self.{h.attr}` is assigned a heavy object here", h.value) for h in kept]
        self.report(cls.name, message, related=related, statement=cls)

    def _listed(self, kept: list[_Heavy]) -> str:
        def describe(h: _Heavy) -> str:
            return f"`self.{h.attr}` (`{_short(self.ctx.code(h.origin.func))}(...)` in `{h.fn.name.value}()`)"

        listed = [describe(h) for h in kept[:5]]
        if len(kept) > 5:
            listed.append(f"{len(kept) - 5} more")
        return ", ".join(listed[:-1]) + (" and " if len(listed) > 1 else "") + listed[-1]

    # -- reporting -----------------------------------------------------------------
    def _report(self, cls: cst.ClassDef, release: cst.FunctionDef, kept: list[_Heavy], methods,
                dropped: set[str]) -> None:
        def describe(h: _Heavy) -> str:
            what = f"`{_short(self.ctx.code(h.origin.func))}(...)`"
            return f"`self.{h.attr}` ({what} in `{h.fn.name.value}()`)"

        listed = [describe(h) for h in kept[:5]]
        if len(kept) > 5:
            listed.append(f"{len(kept) - 5} more")
        names = ", ".join(listed[:-1]) + (" nor " if len(listed) > 1 else "") + listed[-1]
        where = f"{cls.name.value}.{release.name.value}()"
        message = (
            f"`{where}` never drops {names}: no release method deletes "
            f"{'it' if len(kept) == 1 else 'them'}, sets {'it' if len(kept) == 1 else 'them'} "
            f"to `None`, clears or releases {'it' if len(kept) == 1 else 'them'}, so the memory "
            f"held stays allocated as long as the `{cls.name.value}` lives on after release"
        )
        # dropping the attribute frees nothing while another one keeps the object or its parts
        others = {h.attr for h in kept}
        held = [(h.attr, holder, built) for h in kept
                for holder, built in still_held(self.ctx, cls, h.attr, dropped | others)]
        if held:
            message += "; " + "; ".join(
                f"`self.{holder}` (built from it in `{built}()`) would still hold `self.{attr}`'s object or its parts"
                for attr, holder, built in held[:3])
        related = [RelatedNode(f"`self.{h.attr}` is assigned a heavy object here", h.value) for h in kept]
        fix = None if held else self._fix(cls, release, kept, methods)
        self.report(release.name, message, fix=fix, related=related, statement=release)

    # -- fix -----------------------------------------------------------------------
    def _fix(self, cls, release: cst.FunctionDef, kept: list[_Heavy], methods):
        if _has_slots(cls):
            return None
        statements, spelled, changes = [], [], []
        for h in kept:
            if h.attr in methods:
                return None  # a part the fix cannot drop: it would not leave nothing to report
            method = _release_method_of(self.ctx, h)
            verdict = nulling(self.ctx, cls, h.attr, release,
                              "`None`" if method is None else f"released by its own `{method}()`")
            if verdict.blockers:
                return None
            changes.extend(verdict.changes)
            if method is None:
                statements.append(cst.parse_statement(f"self.{h.attr} = None\n"))
                spelled.append(f"`self.{h.attr} = None`")
                continue
            # the part's own release runs now: whatever else it does (flush, close a file) happens
            if not verdict.changes:
                changes.append(f"`self.{h.attr}.{method}()` now runs in `{release.name.value}()`")
            call = f"self.{h.attr}.{method}()"
            always, maybe_none = _set_in_init(self.ctx, cls, h.attr)
            if always and not maybe_none:
                code = f"{call}\n"
            elif always:
                code = f"if self.{h.attr} is not None:\n    {call}\n"
            else:
                code = f'if getattr(self, "{h.attr}", None) is not None:\n    {call}\n'
            statements.append(cst.parse_statement(code))
            spelled.append(f"`{call}`")
        if not statements:
            return None
        new = _append(release, statements)
        if new is None:
            return None
        message = f"Add {', '.join(spelled)} at the end of `{release.name.value}()`"
        if changes:
            return self.fix(f"{message}: {'; '.join(changes)}", {release: new},
                            applicability=Applicability.UNSAFE)
        return self.fix(message, {release: new})


def _short(code: str) -> str:
    code = " ".join(code.split())
    return code if len(code) <= 40 else code[:37] + "..."
