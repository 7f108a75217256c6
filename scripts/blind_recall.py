"""Recall on the blind batch (fixtures/blind/): real upstream leak fixes that no rule was
written from, scored with whatever rule codes the checker reports.

Each buggy fixture `fixtures/blind/<name>.py` marks its bug sites with `# leak: <site>`
comments (several lines may carry the same site name: any of them counts); its twin
`<name>.fixed.py` applies the upstream fix (no markers). The docstring names the `Family:` of the bug.
Each file is checked alone, as a user would check it, with the default rules and output:

    retainlint check --no-cache --no-project --output-format json --exit-zero <file>

A site is caught when a finding starts on one of its lines, whatever its code; a twin is
noisy when it draws any finding at all (each is listed: a fix may leave, or make, another
retention worth reading).

    python scripts/blind_recall.py [--cli PATH] [--verbose] [--json FILE]

Exit status: 0 (a report, not a gate)."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOT = REPO / "fixtures" / "blind"
SITE = re.compile(r"#.*\bleak: ([\w.-]+)")
FAMILY = re.compile(r"^Family:\s*(\S+)", re.M)
PROJECT = re.compile(r"^Project:\s*(.+)$", re.M)


def default_cli() -> str:
    beside = Path(sys.executable).parent / "retainlint"
    return str(beside) if beside.exists() else (shutil.which("retainlint") or "retainlint")


def sites(path: Path) -> dict[str, set[int]]:
    found: dict[str, set[int]] = defaultdict(set)
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if m := SITE.search(line):
            found[m.group(1)].add(i)
    return dict(found)


def findings(cli: str, path: Path) -> list[dict]:
    done = subprocess.run([cli, "check", "--no-cache", "--no-project", "--output-format", "json",
                           "--exit-zero", str(path.relative_to(REPO))],
                          cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{path}: the check failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    return json.loads(done.stdout or "[]")


def score(cli: str, case: Path) -> dict:
    text = case.read_text(encoding="utf-8")
    marked = sites(case)
    got = findings(cli, case)
    rows = {f["location"]["row"] for f in got}
    caught = sorted(s for s, lines in marked.items() if lines & rows)
    twin = case.with_name(case.stem + ".fixed.py")
    noise: list[str] = []
    if twin.exists():
        noise = [f"{f['code']}:{f['location']['row']}" for f in findings(cli, twin)]
    return {"file": str(case.relative_to(REPO)),
            "project": (m.group(1).strip() if (m := PROJECT.search(text)) else case.stem),
            "family": (m.group(1) if (m := FAMILY.search(text)) else "other"),
            "sites": sorted(marked), "caught": caught,
            "codes": sorted({f["code"] for f in got if f["location"]["row"] in
                             set().union(*marked.values())}) if marked else [],
            "severities": sorted({f["severity"] for f in got if f["location"]["row"] in
                                  set().union(*marked.values())}) if marked else [],
            "twin": str(twin.relative_to(REPO)) if twin.exists() else None, "twin_noise": noise}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default=default_cli(), help="the retainlint executable to score")
    ap.add_argument("--root", default=str(ROOT))
    ap.add_argument("--verbose", action="store_true", help="one line per fixture")
    ap.add_argument("--json", metavar="FILE", help="also write the rows as JSON")
    args = ap.parse_args()
    cases = sorted(p for p in Path(args.root).resolve().glob("*.py") if not p.name.endswith(".fixed.py"))
    results = [score(args.cli, case) for case in cases]
    version = subprocess.run([args.cli, "--version"], capture_output=True, text=True).stdout.strip()
    by_family: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in results:
        by_family[r["family"]][0] += len(r["caught"])
        by_family[r["family"]][1] += len(r["sites"])
    total_caught = sum(c for c, _ in by_family.values())
    total = sum(n for _, n in by_family.values())
    projects = {r["project"] for r in results}
    print(f"{version}: {len(results)} fixes in {len(projects)} projects, "
          f"{total_caught} of {total} bug sites caught")
    print("| family | sites caught |")
    print("|---|---|")
    for fam, (c, n) in sorted(by_family.items()):
        print(f"| {fam} | {c} / {n} |")
    print(f"| **all** | **{total_caught} / {total}** ({total_caught / total:.0%}) |" if total else "| all | 0 / 0 |")
    noisy = [r for r in results if r["twin_noise"]]
    print(f"twins noisy: {len(noisy)} of {sum(1 for r in results if r['twin'])}")
    if args.verbose:
        for r in results:
            state = "caught" if r["caught"] and len(r["caught"]) == len(r["sites"]) else (
                "partial" if r["caught"] else "missed")
            extra = f" [{', '.join(r['codes'])} {'/'.join(r['severities'])}]" if r["codes"] else ""
            twin = f"; twin noisy: {', '.join(r['twin_noise'])}" if r["twin_noise"] else ""
            print(f"  {state:8} {r['file']}{extra}{twin}")
    if args.json:
        Path(args.json).write_text(json.dumps({"version": version, "results": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
