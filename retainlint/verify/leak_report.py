"""What leak mode shows: the table at the end of a pytest run, the JSON file for tools, and
`confirm`: static findings that a leak-mode run saw happen (`confirmed` in JSON and SARIF).

Imports no pytest and no torch: `retainlint check --confirmed-by` reads the JSON file only.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional, Sequence

from retainlint.core.finding import Finding
from retainlint.verify.leaks import Survivor

FORMAT = "retainlint-leaks/1"


@dataclass
class Record:
    nodeid: str
    when: str  # "test", "fixture NAME (SCOPE) teardown", "growth"
    survivor: Survivor
    cuda_delta: Optional[int] = None  # the test's change of torch.cuda.memory_allocated

    def as_dict(self) -> dict:
        d = {"test": self.nodeid, "when": self.when, **self.survivor.as_dict()}
        if self.cuda_delta is not None:
            d["cuda_allocated_delta"] = self.cuda_delta
        return d


def _size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / (1024 * 1024):.1f} MiB"
    return f"{n / 1024:.1f} KiB" if n >= 1024 else f"{n} B"


def _rel(where: Optional[str]) -> str:
    if not where:
        return "-"
    try:
        path, line = where.rsplit(":", 1)
        return f"{os.path.relpath(path)}:{line}"
    except ValueError:
        return where


def summary_lines(records: Sequence[Record], seconds: float) -> list[str]:
    """The terminal summary: one row per survivor (test, what, size, where the chain was
    made, rule), then the chains themselves."""
    head = f"retainlint leaks: {len(records)} object(s) outlived their test ({seconds:.1f} s spent checking)"
    if not records:
        return ["", "=" * 20 + " retainlint leaks " + "=" * 20, "no test left a watched object alive"
                f" ({seconds:.1f} s spent checking)"]
    rows = [("test", "what", "size", "created at", "rule")]
    for r in records:
        s = r.survivor.as_dict()
        size = _size(s["cpu_bytes"]) + (f" + {_size(s['cuda_bytes'])} CUDA" if s["cuda_bytes"] else "")
        if r.cuda_delta:
            size += f" (test: {r.cuda_delta:+d} B CUDA)"
        rule = f"{s['rule']} @ {s['finding']}" if s["finding"] else \
            ("none (runtime only)" if s["runtime_only"] else "none (held by the test run)")
        test = r.nodeid if r.when == "test" else f"{r.nodeid} [{r.when}]"
        rows.append((test, s["what"], size, _rel(s["created_at"]), rule))
    widths = [min(60, max(len(row[i]) for row in rows)) for i in range(4)]
    lines = ["", "=" * 20 + " retainlint leaks " + "=" * 20, head]
    for row in rows:
        lines.append("  ".join(c.ljust(w) for c, w in zip(row[:4], widths)) + "  " + row[4])
    for i, r in enumerate(records, 1):
        s = r.survivor.as_dict()
        lines.append(f"[{i}] {r.nodeid}: {s['what']}")
        lines.append(f"    held by: {s['held_by'] or 'not explained (limit of chains per test)'}")
        lines.append(f"    {s['verdict']}")
    return lines


def write_json(path: str, records: Sequence[Record], seconds: float) -> None:
    data = {"format": FORMAT, "check_seconds": round(seconds, 3),
            "leaks": [r.as_dict() for r in records]}
    Path(path).write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")


class LeakFileError(ValueError):
    """A --confirmed-by file that is not a leak-mode JSON file (the message names it)."""


def load(path: str) -> list[dict]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise LeakFileError(f"{path}: cannot read leak-mode results ({e.__class__.__name__}: {e})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("leaks"), list):
        raise LeakFileError(f"{path}: not a `pytest --retainlint-leaks-json` file (no \"format\": \"{FORMAT}\")")
    return [d for d in data["leaks"] if isinstance(d, dict)]


def confirm(findings: Iterable[Finding], paths: Iterable[str]) -> int:
    """Mark each finding that a leak-mode run tied a surviving object to (same rule, same
    file, same line) with the test that showed it. Returns how many were marked."""
    seen: dict[tuple, str] = {}
    for path in paths:
        for d in load(path):
            if d.get("finding_path") and d.get("finding_line") and d.get("rule"):
                key = (d["rule"], os.path.realpath(d["finding_path"]), int(d["finding_line"]))
                seen.setdefault(key, str(d.get("test")))
    marked = 0
    for f in findings:
        test = seen.get((f.code, os.path.realpath(f.path), f.start.line))
        if test is not None:
            f.confirmed = test
            marked += 1
    return marked
