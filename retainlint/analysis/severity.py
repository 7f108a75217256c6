"""A finding's level from its consequence, decided once for every rule.

A rule states the facts it has about what it found - does the kept object weigh anything,
does the retention grow, was the object meant to go away, is the retention freed by the
cyclic collector anyway - and `level` turns them into the severity, with the definitions
every rule shares:

- `error`: growth, or a defeated release, of something heavy or without bound - it costs
  something (heavy, or growing) AND the object was meant to go away (made again and again
  in a long-lived process, or released by the project itself), and the rule knows both;
- `warning`: real, but bounded or unproven (a cost without a sign that the object was meant
  to go, or a sign it was meant to go without a known cost);
- `info`: real but negligible (hidden by default) - light and bounded, kept by something
  that lives as long as it would anyway, or a cycle the collector frees in time.

Facts are three-valued where a rule may not know: True (the code shows it), False (the code
shows the opposite), None (unknown). Unknown never makes an error, and never hides a finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from retainlint.core.finding import Severity


@dataclass(frozen=True)
class Facts:
    """What a rule knows about the cost of one finding.

    `heavy`: the kept object pins real memory or a resource (a model, tensors, a buffer, a
    subprocess, a connection). `grows`: one more is kept per call, instance, request or
    thread, without bound. `meant_to_go`: the object is made again and again in a long-lived
    process, or the project releases it (`close()`, `del x; gc.collect()`) and the holder
    defeats that; False when it lives for the whole process anyway. `collected`: the
    retention is a reference cycle that the cyclic collector frees (nothing disables it, and
    no finalizer or release waits on it): the object goes, only later."""

    heavy: Optional[bool] = None
    grows: Optional[bool] = None
    meant_to_go: Optional[bool] = None
    collected: bool = False

    @property
    def costly(self) -> Optional[bool]:
        """Heavy or growing: True when either is shown, False when both are ruled out."""
        if self.heavy or self.grows:
            return True
        if self.heavy is False and self.grows is False:
            return False
        return None


def level(facts: Facts) -> Severity:
    """The severity the facts give (see the module's docstring)."""
    if facts.collected or facts.meant_to_go is False or facts.costly is False:
        return Severity.INFO
    if facts.costly and facts.meant_to_go:
        return Severity.ERROR
    return Severity.WARNING

