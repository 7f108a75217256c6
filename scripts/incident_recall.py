"""Recall of retainlint on the upstream-incident fixtures (fixtures/incidents/).

Every buggy fixture `fixtures/incidents/<CODE>/<name>.py` marks the lines the rule should
report with `# expect: <CODE>`; its twin `<name>.fixed.py` holds the fixed shape and should
be silent. This script runs the CLI only (never imports retainlint), one file at a time:

    retainlint check --no-cache --no-project --select <CODE> --output-format json --exit-zero <file>

and prints, per rule family (RL1 ... RL9), how many incidents are flagged (every expected
line reported with that code), the incidents missed or only partly flagged, and the clean
twins that are noisy (any finding of that code). Codes without a rule (`RL9xx`, proposals)
count as missed and are not run.

    python scripts/incident_recall.py [--root fixtures/incidents] [--verbose] [--json]

Exit status: 0 (a report, not a gate).
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
EXPECT = re.compile(r"#.*\bexpect: (RL\d{3}|RL9xx)\b")
RETRIES = 5  # the package may be mid-restructure: an ImportError is retried
RETRY_WAIT_S = 30


def _cli() -> list[str]:
    """The `retainlint` next to this interpreter (a venv), else the one on PATH."""
    beside = Path(sys.executable).parent / "retainlint"
    if beside.exists():
        return [str(beside)]
    exe = shutil.which("retainlint")
    return [exe] if exe else [sys.executable, "-m", "retainlint"]


def _known_codes() -> set[str] | None:
    """The rule codes the installed CLI knows (from `retainlint rule --all`)."""
    out = _run([*_cli(), "rule", "--all"])
    if out is None:
        return None
    return set(re.findall(r"\bRL\d{3}\b", out)) - {"RL999"}


def _run(cmd: list[str]) -> str | None:
    for attempt in range(RETRIES):
        done = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
        if done.returncode == 0:
            return done.stdout
        if ("ImportError" in done.stderr or "ModuleNotFoundError" in done.stderr
                or "SyntaxError" in done.stderr) and attempt + 1 < RETRIES:
            time.sleep(RETRY_WAIT_S)
            continue
        sys.stderr.write(f"failed ({done.returncode}): {' '.join(cmd)}\n{done.stderr[-2000:]}\n")
        return None
    return None


def reported_lines(path: Path, code: str) -> set[int] | None:
    """Lines of `path` the CLI reports with `code` (None: the run failed).

    An internal-error finding (RL999: a rule module that does not import, e.g. while the
    package is being edited) is retried like an ImportError."""
    rel = path.relative_to(REPO)
    for attempt in range(RETRIES):
        # --no-project: each fixture on its own, not indexed with the rest of this checkout.
        out = _run([*_cli(), "check", "--no-cache", "--no-project", "--select", code,
                    "--output-format", "json", "--exit-zero", str(rel)])
        if out is None:
            return None
        findings = json.loads(out or "[]")
        if not any(f["code"] == "RL999" for f in findings):
            return {f["location"]["row"] for f in findings if f["code"] == code}
        if attempt + 1 < RETRIES:
            time.sleep(RETRY_WAIT_S)
    sys.stderr.write(f"internal error checking {rel} with {code}\n")
    return None


def expected_lines(path: Path, code: str) -> set[int]:
    return {i for i, line in enumerate(path.read_text().splitlines(), 1)
            if (m := EXPECT.search(line)) and m.group(1) == code}


def project_of(path: Path) -> str:
    """The `Project:` line of the fixture's docstring (else the file name's first word)."""
    m = re.search(r"^Project:\s*(.+)$", path.read_text(), re.M)
    return m.group(1).strip() if m else path.stem.split("_")[0]


def family(code: str) -> str:
    return code[:3]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default="fixtures/incidents")
    ap.add_argument("--verbose", action="store_true", help="one line per incident")
    ap.add_argument("--json", action="store_true", help="machine-readable result")
    args = ap.parse_args()
    root = (REPO / args.root).resolve()
    known = _known_codes()

    results = []  # dicts: code, file, status, expected, reported, twin, twin_noise
    for code_dir in sorted(p for p in root.iterdir() if p.is_dir() and p.name.startswith("RL")):
        code = code_dir.name
        # a code the CLI knows (an RL9xx too, once its rule exists); proposed shapes without
        # a rule count as misses (RL999 is the internal-error code, never a rule)
        runnable = (code in known if known is not None
                    else bool(re.fullmatch(r"RL[1-8]\d{2}", code)))
        for case in sorted(code_dir.glob("*.py")):
            if case.name.endswith(".fixed.py"):
                continue
            twin = case.with_name(case.stem + ".fixed.py")
            expected = expected_lines(case, code)
            row = {"code": code, "file": str(case.relative_to(REPO)),
                   "project": project_of(case),
                   "expected": sorted(expected), "reported": [], "twin": None,
                   "twin_noise": []}
            if not runnable:
                row["status"] = "no-rule"
            else:
                got = reported_lines(case, code)
                if got is None:
                    row["status"] = "error"
                else:
                    row["reported"] = sorted(got)
                    hit = expected & got
                    row["status"] = ("flagged" if expected and hit == expected
                                     else "partial" if hit else "missed")
                if twin.exists():
                    row["twin"] = str(twin.relative_to(REPO))
                    noise = reported_lines(twin, code)
                    row["twin_noise"] = sorted(noise) if noise is not None else ["error"]
            results.append(row)

    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
        return 0

    per_family: dict[str, list[dict]] = defaultdict(list)
    for r in results:
        per_family[family(r["code"])].append(r)
    total_flagged = sum(r["status"] == "flagged" for r in results)
    print(f"incident recall: {total_flagged}/{len(results)} flagged "
          f"({len({r['project'] for r in results})} projects)")
    print()
    print(f"{'family':8} {'flagged':>8} {'total':>6}  recall")
    for fam in sorted(per_family):
        rows = per_family[fam]
        n = sum(r["status"] == "flagged" for r in rows)
        print(f"{fam:8} {n:>8} {len(rows):>6}  {n / len(rows):6.0%}")
    for code in sorted({r["code"] for r in results}):
        rows = [r for r in results if r["code"] == code]
        n = sum(r["status"] == "flagged" for r in rows)
        print(f"  {code:6} {n:>8} {len(rows):>6}")

    print()
    misses = [r for r in results if r["status"] != "flagged"]
    print(f"not flagged ({len(misses)}):")
    for r in misses:
        extra = f" (reported {r['reported']}, expected {r['expected']})" \
            if r["status"] == "partial" else ""
        print(f"  {r['status']:8} {r['file']}{extra}")

    print()
    noisy = [r for r in results if r["twin_noise"]]
    print(f"noisy clean twins ({len(noisy)}):")
    for r in noisy:
        print(f"  {r['twin']}: {r['code']} on line(s) {r['twin_noise']}")
    if args.verbose:
        print()
        for r in results:
            print(f"{r['status']:8} {r['file']} expected={r['expected']} "
                  f"reported={r['reported']} twin_noise={r['twin_noise']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
