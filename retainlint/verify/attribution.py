"""Which retainlint finding covers a holder chain.

The chain's shape often names the rule by itself (the finalize registry, an lru_cache, a
frozen heap: `holders.covering_rule`). Where it cannot - plain attributes of an object still
alive, a registry whose cleanup never ran - the linter is asked: the files the chain's
objects come from are linted (read as data, never imported) and the finding that names an
attribute or global on the chain is the one that covers it. Runs in the parent process
(the linter), never in the subprocess that ran the code.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable, Optional

from retainlint.core.config import Settings
from retainlint.core.finding import Finding
from retainlint.engine.registry import all_rules, select_rules


def _inside(path: str, folders: Iterable[Path]) -> bool:
    real = os.path.realpath(path)
    return any(real == str(f) or real.startswith(str(f) + os.sep) for f in folders)


# path -> (the file's bytes, its findings): a leak-mode run explains many chains through the
# same few files; the bytes are compared, so an edited file is linted again.
_LINTED: dict[str, tuple[bytes, list[Finding]]] = {}


def _findings(files: list[str]) -> list[Finding]:
    from retainlint.engine.lint import lint_bytes  # loads libcst: only when there is a chain

    codes = set(select_rules(None, (), ()))
    rules = [r for r in all_rules() if r.code in codes]
    out: list[Finding] = []
    for path in files:
        try:
            data = Path(path).read_bytes()
        except OSError:
            continue
        cached = _LINTED.get(path)
        if cached is None or cached[0] != data:
            found = [f for f in lint_bytes(path, data, rules, Settings()).findings if f.code.startswith("RL")
                     and f.code not in ("RL000", "RL999")]
            cached = _LINTED[path] = (data, found)
        out += cached[1]
    return out


# Rules whose mechanism leaves a chain of its own shape (a finalize registry, a cache, a hook
# dict, a frozen or plain cycle, a traceback, the logging manager): `holders.covering_rule`
# recognises them, so their findings cover a chain only when its shape says so.
# A hook left on a module that outlives its owner shows the same chain whether the handle
# was thrown away (RL501) or kept and never used (RL502): either finding covers it.
FAMILIES = ({"RL501", "RL502"},)

SHAPED = {"RL101", "RL102", "RL201", "RL202", "RL203", "RL401", "RL501", "RL502", "RL701", "RL702", "RL801",
          "RL907"}


def _names(message: str, name: str) -> bool:
    return any(f"`{prefix}{name}{end}" in message for prefix in ("", "self.") for end in ("`", ".", "(", "["))


def _first_naming(findings: list[Finding], names: list[str]) -> Optional[Finding]:
    for name in names:  # the chain's first names are the nearest to its root
        for f in findings:
            if _names(f.message, name):
                return f
    return None


def cover(holder: Optional[dict], inside: Iterable[Path]) -> None:
    """Set `holder["rule"]` (and `holder["finding"]`, `file:line`) from the findings in the
    chain's own source files under the folders `inside`; leave it as it is when none of them
    can be read or linted."""
    if not holder:
        return
    folders = [Path(os.path.realpath(f)) for f in inside]
    files = [f for f in holder.get("files") or () if f.endswith(".py") and _inside(f, folders)]
    if not files:
        return
    shape = holder.get("rule")
    family = next((fam for fam in FAMILIES if shape in fam), {shape})
    findings = sorted((f for f in _findings(files) if f.code not in SHAPED or f.code in family),
                      key=Finding.sort_key)
    names = list(holder.get("names") or ())
    shaped = [f for f in findings if f.code in family]
    pick = _first_naming(shaped, names) or (shaped[0] if shaped else None) or _first_naming(findings, names)
    if pick is None and len({f.code for f in findings}) == 1:
        pick = findings[0]  # the one rule this code breaks
    if pick is not None:
        holder["rule"] = pick.code
        holder["finding"] = f"{os.path.basename(pick.path)}:{pick.start.line}"
        holder["finding_path"] = os.path.realpath(pick.path)
        holder["finding_line"] = pick.start.line
