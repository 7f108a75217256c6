"""Scenario discovery and the fixed variant, produced at run time by retainlint's own autofix.

A scenario is `<root>/<CODE>/<name>.py`: a buggy engine-like program with a `lifecycle(ctx)`
entry point. Its fixed variant is the output of `--fix --unsafe-fixes --select <CODE>` on it;
only for rules without an autofix (suggestion-only) is a hand-written `<name>.fixed.py` used,
and it is reported as such. Folders whose code is not a registered rule are skipped, so a new
rule is verified by adding one scenario file.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from retainlint.core.config import Settings
from retainlint.core.finding import Applicability
from retainlint.engine.registry import all_rules
from retainlint.engine.runner import FileOutcome, Mode, fix_bytes

DEFAULT_ROOT = Path(__file__).resolve().parent / "scenarios"  # package data: ships in the wheel
_CODE = re.compile(r"^RL\d{3}$")


class ScenarioError(RuntimeError):
    pass


@dataclass
class Scenario:
    rule: str
    name: str
    path: Path
    fixed_path: Optional[Path]  # a hand-written fix, when there is one

    @property
    def module(self) -> str:
        return self.name


def discover(root: Path, rules: Iterable[str] = ()) -> list[Scenario]:
    if not root.is_dir():
        raise ScenarioError(f"no scenario folder at {root} (give one with --scenarios)")
    registered = {r.code for r in all_rules()}
    wanted = {r.upper() for r in rules}
    unknown = wanted - registered
    if unknown:
        raise ScenarioError(f"unknown rule(s): {', '.join(sorted(unknown))}")
    found = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir() and _CODE.match(p.name)):
        if folder.name not in registered or (wanted and folder.name not in wanted):
            continue
        for path in sorted(folder.glob("*.py")):
            if path.name.endswith(".fixed.py"):
                continue
            fixed = path.with_name(path.stem + ".fixed.py")
            found.append(Scenario(folder.name, path.stem, path, fixed if fixed.exists() else None))
    if wanted and not found:
        raise ScenarioError(f"no scenario for {', '.join(sorted(wanted))} under {root}")
    return found


def fixed_source(scenario: Scenario) -> tuple[bytes, str]:
    """(source, how): how is "autofix" or "hand-written"."""
    if scenario.fixed_path is not None:
        return scenario.fixed_path.read_bytes(), "hand-written"
    rule = next(r for r in all_rules() if r.code == scenario.rule)
    if rule.fix_applicability is Applicability.NONE:
        raise ScenarioError(f"{scenario.path}: {rule.code} is suggestion-only, so the scenario needs "
                            f"a hand-written {scenario.name}.fixed.py")
    data = scenario.path.read_bytes()
    outcome = FileOutcome(str(scenario.path))
    _, fixed = fix_bytes(str(scenario.path), data, [rule], Settings(),
                         Mode(fix=True, unsafe_fixes=True), outcome)
    if fixed == data or not outcome.fixed:
        raise ScenarioError(f"{scenario.path}: retainlint's autofix for {rule.code} changed nothing")
    return fixed, "autofix"
