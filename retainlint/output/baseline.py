"""A baseline: the findings a project has accepted for now (`--write-baseline FILE`), left
out of later runs (`--baseline FILE`) so only new ones are reported. A finding is matched
by its code, its path (relative to the baseline file) and a fingerprint of the text of
its line (the SARIF one, not the line number), each entry matching one finding: edits
elsewhere in the file do not break it, a second copy of the same bug is still new."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Sequence

from retainlint.core.codes import split_from
from retainlint.core.errors import ConfigError
from retainlint.core.finding import INTERNAL_ERROR, SOURCE_ERROR, Finding
from retainlint.core.paths import display_path
from retainlint.core.source import write_output
from retainlint.output.sarif import fingerprints

FORMAT = "retainlint-baseline/1"
_NEVER = {SOURCE_ERROR[0], INTERNAL_ERROR[0]}  # files not checked are never accepted


def _keys(findings: Sequence[Finding], baseline: str) -> list[tuple[str, str, str]]:
    root = os.path.dirname(os.path.abspath(baseline))
    return [(f.code, display_path(f.path, root), fp)
            for f, fp in zip(findings, fingerprints(findings, root))]


def write(baseline: str, findings: Sequence[Finding]) -> int:
    """Records `findings` (those that can be accepted); returns how many. Raises
    WriteError when the file cannot be written."""
    kept = [f for f in findings if f.code not in _NEVER]
    entries = [{"code": c, "path": p, "fingerprint": fp} for c, p, fp in sorted(_keys(kept, baseline))]
    data = json.dumps({"format": FORMAT, "findings": entries}, indent=1) + "\n"
    write_output(baseline, data.encode("utf-8"))  # whole or not at all, never through a link
    return len(entries)


def read(baseline: str) -> Counter[tuple[str, str, str]]:
    try:
        with open(baseline, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise ConfigError(f"{baseline}: cannot read baseline: {e.strerror or e}") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ConfigError(f"{baseline}: not a baseline file: {e}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(
            data.get("findings"), list):
        raise ConfigError(f"{baseline}: not a baseline file (expected format {FORMAT!r})")
    try:
        return Counter((e["code"], e["path"], e["fingerprint"]) for e in data["findings"])
    except (TypeError, KeyError) as e:
        raise ConfigError(f"{baseline}: malformed entry ({e})") from None


def new_findings(baseline: str, findings: Sequence[Finding]) -> tuple[list[Finding], int]:
    """The findings the baseline does not account for, and how many it did. An entry
    written under a code since split into checks accounts for a finding of any of them."""
    accepted = read(baseline)
    fresh, known = [], 0
    for f, key in zip(findings, _keys(findings, baseline)):
        old = split_from(f.code)
        if old is not None and accepted[key] == 0:
            key = (old, key[1], key[2])
        if f.code not in _NEVER and accepted[key] > 0:
            accepted[key] -= 1
            known += 1
        else:
            fresh.append(f)
    return fresh, known
