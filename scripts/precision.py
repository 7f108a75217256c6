"""Precision on the triaged trees: today's findings joined with the verdicts read in
docs/triage/<name>-<version>.md, one line per finding:

    - `path/relative/to/tree.py:LINE` RLnnn error|warning|info bug|negligible|wrong - why

    python scripts/precision.py                # every tree with a file in docs/triage/
    python scripts/precision.py sglang         # trees whose name contains "sglang"
    python scripts/precision.py --cli PATH     # score a given retainlint executable
    python scripts/precision.py --by-rule      # a row per rule as well
    python scripts/precision.py --keep DIR     # also keep each tree's findings (JSON) in DIR
    python scripts/precision.py --saved DIR    # re-join the findings kept in DIR, no run

The tree and version come from the file's name (a file without a version, such as README.md,
is left out); the folders checked from scripts/corpus.py DEVELOPMENT. A finding no line names (lines in the older true/minor/false format included)
is unread; the shares are over read findings, so a tree with unread findings must be read
before its figures mean anything. "Shown" is what the default output shows: a finding whose
severity is neither error nor warning is hidden."""

from __future__ import annotations

import argparse
import collections
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402 - the script's own folder

ROOT = Path(__file__).resolve().parent.parent
VERDICT = re.compile(r"^\s*- `([^`\s]+):(\d+)`\s+(RL\d{3})\s+(?:error|warning|info)\s+"
                     r"(bug|negligible|wrong)\b", re.M)
TREE_FILE = re.compile(r"^(?P<name>.+)-(?P<version>\d[^-]*)$")
SHOWN = ("error", "warning")
Key = tuple[str, int, str]
Finding = dict[str, Any]
Tally = collections.Counter[str]


def default_cli() -> str:
    beside = Path(sys.executable).parent / "retainlint"
    return str(beside) if beside.exists() else (shutil.which("retainlint") or "retainlint")


def trees(triage: Path) -> list[tuple[str, str, Path]]:
    """(name, version, file) of every tree's triage file; a file whose name carries no version
    (README.md, notes such as fixes-first-run.md) is not a tree's and is left out."""
    found = []
    for path in sorted(triage.glob("*.md")):
        m = TREE_FILE.match(path.stem)
        if not m:
            continue
        if f"{m['name']}=={m['version']}" not in corpus.DEVELOPMENT:
            sys.exit(f"{path}: {m['name']}=={m['version']} is not in scripts/corpus.py DEVELOPMENT")
        found.append((m["name"], m["version"], path))
    return found


def verdicts(path: Path) -> dict[Key, str]:
    known: dict[Key, str] = {}
    for m in VERDICT.finditer(path.read_text(encoding="utf-8")):
        key = (m[1], int(m[2]), m[3])
        if known.setdefault(key, m[4]) != m[4]:
            sys.exit(f"{path}: `{m[1]}:{m[2]}` {m[3]} is both {known[key]} and {m[4]}")
    return known


def findings(cli: str, requirement: str, keep: Path | None = None,
             saved: Path | None = None) -> list[Finding]:
    """The tree's findings at every level: from a run of `cli`, or read back from the JSON an
    earlier run kept in `saved` (re-joining changed verdict lines needs no second run)."""
    if saved is not None:
        kept: list[Finding] = json.loads((saved / f"{requirement}.json").read_text())
        return kept
    top = corpus.fetch(requirement)
    folders = [f or "." for f in corpus.DEVELOPMENT[requirement]]
    # Every level: the hidden `info` findings are read and counted too.
    done = subprocess.run([cli, "check", *folders, "--no-cache", "--output-format", "json",
                           "--min-severity", "info", "--exit-zero"], cwd=top, capture_output=True,
                          text=True)
    if done.returncode != 0:
        sys.exit(f"{top}: retainlint failed (exit {done.returncode}): {done.stderr.strip()[-300:]}")
    found: list[Finding] = json.loads(done.stdout or "[]")
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        (keep / f"{requirement}.json").write_text(done.stdout or "[]")
    return found


def count(found: list[Finding], known: dict[Key, str], by_rule: bool) -> dict[str, Tally]:
    rows: dict[str, Tally] = collections.defaultdict(collections.Counter)
    for f in found:
        verdict = known.get((f["filename"], f["location"]["row"], f["code"]), "unread")
        error, shown = f["severity"] == "error", f["severity"] in SHOWN
        for key in ((f["code"], "all") if by_rule else ("all",)):
            c = rows[key]
            c["findings"] += 1
            c[verdict] += 1
            c["errors"] += error
            c["errors read"] += error and verdict != "unread"
            c["error bugs"] += error and verdict == "bug"
            c["shown"] += shown
            c["shown read"] += shown and verdict != "unread"
            c["shown bugs"] += shown and verdict == "bug"
    return rows


def share(part: int, whole: int) -> str:
    return f"{part / whole:.0%}" if whole else "-"


def row(first: str, c: Tally) -> str:
    read = c["findings"] - c["unread"]
    cells = [first, c["findings"], c["bug"], c["negligible"], c["wrong"], c["unread"], c["errors"],
             f"{c['error bugs']} ({share(c['error bugs'], c['errors read'])})", c["shown"],
             f"{c['shown bugs']} ({share(c['shown bugs'], c['shown read'])})",
             share(c["wrong"], read)]
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("wanted", nargs="*", help="only trees whose name contains one of these")
    ap.add_argument("--cli", default=default_cli(), help="the retainlint executable to score")
    ap.add_argument("--triage", type=Path, default=ROOT / "docs" / "triage",
                    help="the folder of triage files")
    ap.add_argument("--by-rule", action="store_true", help="a row per rule under each tree")
    ap.add_argument("--keep", type=Path, help="also write each tree's findings (JSON) here")
    ap.add_argument("--saved", type=Path,
                    help="join the findings a --keep run wrote here instead of running again")
    args = ap.parse_args()
    print("| tree | findings | bug | negligible | wrong | unread | errors | errors that are bugs "
          "| shown | bugs of shown | wrong of all |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    total: Tally = collections.Counter()
    for name, version, path in trees(args.triage):
        if args.wanted and not any(w in name for w in args.wanted):
            continue
        known = verdicts(path)
        found = findings(args.cli, f"{name}=={version}", args.keep, args.saved)
        rows = count(found, known, args.by_rule)
        for code in sorted(c for c in rows if c != "all"):
            print(row(f"{name} {version} {code}", rows[code]))
        print(row(f"{name} {version}", rows["all"]))
        total.update(rows["all"])
    print(row("**all**", total))


if __name__ == "__main__":
    main()
