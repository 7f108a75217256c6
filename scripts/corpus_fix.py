"""Apply every fix (safe and unsafe) to a copy of a real tree, then check that every
changed file still compiles and that a second run has nothing left to fix.

    python scripts/corpus_fix.py vllm==0.33.0      # or a directory

Prints the figures; exits 1 on any failure."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from corpus import fetch


def check(root: Path, *args: str) -> list[dict]:
    out = subprocess.run(
        [sys.executable, "-m", "retainlint", "check", ".", "--output-format", "json",
         "--exit-zero", *args],
        cwd=root, capture_output=True, text=True,
    )
    if out.returncode != 0:
        sys.exit(f"retainlint failed ({out.returncode}): {out.stderr.strip()}")
    return json.loads(out.stdout) if out.stdout.strip() else []


def main(target: str) -> int:
    source = Path(target) if Path(target).is_dir() else fetch(target)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "tree"
        shutil.copytree(source, copy)
        before_files = {p: p.read_bytes() for p in copy.rglob("*.py")}
        findings = check(copy)
        fixable = [f for f in findings if f["fix"] and f["fix"]["applicability"] != "none"]
        start = time.perf_counter()
        subprocess.run([sys.executable, "-m", "retainlint", "check", ".", "--fix",
                        "--unsafe-fixes", "--exit-zero", "--output-format", "concise"],
                       cwd=copy, capture_output=True, check=True)
        elapsed = time.perf_counter() - start
        changed = [p for p, data in before_files.items() if p.read_bytes() != data]
        broken = []
        for path in changed:
            try:
                compile(path.read_bytes(), str(path), "exec")
            except SyntaxError as e:
                broken.append(f"{path.relative_to(copy)}: {e}")
        after = check(copy)
        left = [f for f in after if f["fix"] and f["fix"]["applicability"] != "none"]
        print(f"files: {len(before_files)}; findings before: {len(findings)} "
              f"({len(fixable)} fixable); fix run: {elapsed:.1f} s")
        print(f"changed files: {len(changed)}; not compiling: {len(broken)}; "
              f"findings after: {len(after)}; still fixable: {len(left)}")
        for line in broken + [f"{f['filename']}:{f['location']['row']} {f['code']}" for f in left]:
            print("  ", line)
        return 1 if broken or left or len(after) > len(findings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
