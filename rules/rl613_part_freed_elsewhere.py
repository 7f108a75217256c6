"""RL613 part-freed-elsewhere: another method frees a part in place (`__del__`, a
`render(close=True)`), and the release path, which lets go of other parts, keeps it."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.cstutil import body_functions
from retainlint.analysis.holding import caller_supplied
from retainlint.analysis.owned_parts import is_ray_actor
from retainlint.analysis.part_freeing import _closed_whole, _freed_in_place, _handed_methods
from retainlint.analysis.release import FINALIZER, release_methods
from retainlint.analysis.rule import Example, RelatedNode, Rule
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.names import releases as releases_word
from retainlint.rules.prefilters.rl613 import PartFreedElsewherePrefilter


class PartFreedElsewhere(Rule):
    prefilter = PartFreedElsewherePrefilter
    name = "part-freed-elsewhere"
    summary = ("Another method frees a part in place (`__del__`, `render(close=True)`) that the release "
               "path keeps: after release it stays allocated while the object is referenced")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports a release method (any object, torch or not) when another method frees an
attribute: `__del__` frees it in place (`native.adapter_free(self._adapter)`,
`self.index.release()`), or a method that is not itself a release closes it as a whole
(`render(close=True)`: `self.viewer.close()`, also `.shutdown()`, `.unload()`,
`.destroy()`, ... without arguments), and the release path, which lets go of other parts,
neither frees nor drops it. Not evidence: a method handed on as a callback (the release
path may run it: `self._stack.callback(self._free_adapter)`; what it frees counts as
freed), a method named as a release of its own (`release_host_resources()`, which its
owner calls), a per-item `free(request)`, a lock's or semaphore's `release()`, freeing a
file on disk (`os.remove(self.path)`), and a method closing an object the caller handed
in.

Split from RL602 (release-keeps-heavy-attribute), which still selects and silences it.

## Why it leaks
`__del__` runs only when the last reference goes; after `close()` the part - a native
handle (a LoRA adapter's weights, a multimodal projector context), a window - stays
allocated while a server, a UI, an evaluation loop or a cache still holds the object.

## Example
```python
class Llama:
    def close(self):  # RL613: `self._lora` is freed only by __del__
        self._stack.close()

    def __del__(self):
        native.lora_adapter_free(self._lora)
        self.close()
```

## Fix
None automatic: free the part on the release path too (e.g. on the `ExitStack` `close()`
unwinds), and let `__del__` call `close()`.
"""

    valid = [
        # the adapter's free is registered on the stack close() unwinds
        """
import contextlib
import native

class Llama:
    def __init__(self, path, lora_path):
        self._stack = contextlib.ExitStack()
        self._model = self._stack.enter_context(native.open_model(path))
        self._lora = native.lora_adapter_init(self._model, lora_path)
        self._stack.callback(self._free_lora)

    def _free_lora(self):
        native.lora_adapter_free(self._lora)
        self._lora = None

    def close(self):
        self._stack.close()

    def __del__(self):
        self.close()
""",
    ]

    invalid = [
        # a viewer only render() closes, kept by close()
        Example(
            """
import native

class Env:
    def __init__(self, rom):
        self.viewer = None
        self.emulator = native.Emulator(rom)

    def render(self, close=False):
        if close and self.viewer is not None:
            self.viewer.close()
        elif self.viewer is None:
            self.viewer = native.Window()

    def close(self):
        del self.emulator
""",
            lines=[15],
        ),
        # a part only __del__ frees, kept by close()
        Example(
            """
import contextlib
import native

class Llama:
    def __init__(self, path, lora_path):
        self._stack = contextlib.ExitStack()
        self._model = self._stack.enter_context(native.open_model(path))
        self._lora = native.lora_adapter_init(self._model, lora_path)

    def close(self):
        self._stack.close()

    def __del__(self):
        native.lora_adapter_free(self._lora)
        self.close()
""",
            lines=[11],
        ),
    ]

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        """Another method frees a part in place that the release path, which lets go of
        other parts, neither frees nor drops. The author's own code says the part needs
        freeing, whatever it is."""
        releases = release_methods(self.ctx, node)
        if not releases:
            return
        path = self.ctx.release.drops(node, releases)
        if path is None or not path.objects:
            return
        methods = self.ctx.methods(node)
        on_path = {id(fn) for _, fn in path.methods}
        handed = _handed_methods(node)
        evidence: dict[str, cst.FunctionDef] = {}
        maybe_on_path: set[str] = set()
        for fn in body_functions(node):
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
                if name != FINALIZER and caller_supplied(self.ctx, node, attr):
                    # the caller's object (`self.conn = conn`): a method closing it (a reset,
                    # the end of a run) is no sign the release path owns it; a finalizer
                    # freeing it is
                    continue
                evidence.setdefault(attr, fn)
        kept = sorted(a for a in evidence if a not in path.all and a not in maybe_on_path and a not in methods)
        if not kept or is_ray_actor(self.ctx, node):
            return
        release = releases[0]
        where = f"{node.name.value}.{release.name.value}()"
        names = " nor ".join(f"`self.{a}` (which `{evidence[a].name.value}()` frees)" for a in kept[:3])
        message = (
            f"`{where}` lets go of other parts but never frees {names}: after "
            f"`{release.name.value}()` {'it stays' if len(kept) == 1 else 'they stay'} allocated as long "
            f"as the `{node.name.value}` is referenced; free {'it' if len(kept) == 1 else 'them'} on the "
            f"release path and drop the reference"
        )
        related = [RelatedNode(f"`{evidence[a].name.value}()` frees `self.{a}` here", evidence[a].name)
                   for a in kept]
        freers = list(dict.fromkeys(f"`{evidence[a].name.value}()`" for a in kept))
        self.report(release.name, message, related=related, statement=release,
                    consequence=Consequence(
                        f"the part{'s' if len(kept) > 1 else ''} {_listed(freers)} {'frees' if len(freers) == 1 else 'free'}",
                        _listed([f"`self.{a}`" for a in kept]),
                        f"as long as the `{node.name.value}` instance, after `{release.name.value}()`"))


def _listed(names: list[str]) -> str:
    """`a`, `b` and `c`; past three, how many more."""
    shown = names[:3] + ([f"{len(names) - 3} more"] if len(names) > 3 else [])
    return ", ".join(shown[:-1]) + (" and " if len(shown) > 1 else "") + shown[-1]
