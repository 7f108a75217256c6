"""RL608 cache-emptied-before-unload: a cleanup function empties the allocator's cache
right before the call that unloads, and never after it."""

from __future__ import annotations

import libcst as cst

from retainlint.analysis.hooks import short
from retainlint.analysis.reclaims import reclaims
from retainlint.analysis.rule import Example, Rule
from retainlint.analysis.statement_order import ordered_calls, statement_blocks
from retainlint.core.finding import Applicability, Consequence, Severity
from retainlint.project.names import name_words
from retainlint.project.release_scan import CLEANUP_WORDS
from retainlint.rules.prefilters.rl608 import CacheEmptiedBeforeUnloadPrefilter

# What gives cached allocator blocks back: useless before the objects are let go.
ALLOCATOR_RECLAIMS = frozenset({"empty_cache", "soft_empty_cache", "ipc_collect", "malloc_trim",
                                "clear_device_cache"})
# Calls that let go of loaded objects (`unload_all_models()`, `offload()`, `free_models()`).
UNLOADING_WORDS = frozenset({"unload", "offload", "release", "free", "delete", "destroy", "dispose", "teardown"})


class CacheEmptiedBeforeUnload(Rule):
    prefilter = CacheEmptiedBeforeUnloadPrefilter
    name = "cache-emptied-before-unload"
    summary = ("A cleanup function empties the allocator's cache right before the unload, and never after: "
               "what the unload frees stays reserved")
    severity = Severity.WARNING
    fix_applicability = Applicability.NONE

    docs = """
## What it does
Reports, in a cleanup function (its name says it frees: `free`, `release`, `cleanup`,
`unload`, ...), `torch.cuda.empty_cache()` (or `soft_empty_cache()`, `ipc_collect()`,
`malloc_trim()`, ...) right before the statement that unloads (`unload_all_models()`,
`offload(...)`, `free_...()`), when the cache is never emptied again after it.

Severity: a warning - what stays reserved depends on what the unload lets go of.

Split from RL603 (ineffective-release), which still selects and silences it.

## Why it leaks
The allocator gives back only blocks nothing uses yet. Emptied before the unload, the
cache returns nothing of the models; what the unload frees afterwards stays reserved by
the allocator, out of reach of other processes on the device.

## Example
```python
def free_vram():
    torch.cuda.empty_cache()  # RL608: the models are still loaded here
    manager.unload_all_models()
```

## Fix
None automatic: empty the cache after the release.
"""

    valid = [
        # the cache emptied after the unload
        """
import torch

def free_vram(manager):
    manager.unload_all_models()
    torch.cuda.empty_cache()
""",
    ]

    invalid = [
        Example(
            """
import torch

def free_vram(manager):
    torch.cuda.empty_cache()
    manager.unload_all_models()
""",
            lines=[5],
        ),
    ]

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if not name_words(node.name.value) & CLEANUP_WORDS:
            return
        for block in statement_blocks(node):
            for i, stmt in enumerate(block[:-1]):
                emptied = next((c for c in ordered_calls(stmt) if self._empties_cache(c)), None)
                if emptied is None:
                    continue
                release = next((c for c in ordered_calls(block[i + 1]) if self._unloads(c)), None)
                if release is None or any(self._empties_cache(c) for later in block[i + 1:]
                                          for c in ordered_calls(later)):
                    continue
                self.report(
                    emptied,
                    f"`{self.ctx.code(emptied)}` runs before `{short(self.ctx.code(release))}`: it gives back "
                    "only cached blocks nothing uses yet, and what the unload frees afterwards stays "
                    "reserved by the allocator; empty the cache after the release",
                    severity=Severity.WARNING,
                    consequence=Consequence(f"the memory `{short(self.ctx.code(release))}` frees",
                                            "the allocator's cache (reserved, unused)",
                                            f"as long as nothing empties the cache again (`{self.ctx.code(emptied)}`)"),
                )

    def _empties_cache(self, call: cst.Call) -> bool:
        last = (self.ctx.qualname(call.func) or "").rsplit(".", 1)[-1]
        return last in ALLOCATOR_RECLAIMS

    def _unloads(self, call: cst.Call) -> bool:
        last = (self.ctx.qualname(call.func) or "").rsplit(".", 1)[-1]
        return bool(name_words(last) & UNLOADING_WORDS) and not reclaims(self.ctx, call)
