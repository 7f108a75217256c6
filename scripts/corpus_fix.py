"""Apply every fix (safe and unsafe) to a copy of a real tree, then check that every
changed file still compiles, that nothing changed outside what the fixes said they would
edit (each diff hunk against the original lies within a predicted edit of the JSON output
and adds only lines those edits add), that the total number of findings only went down,
and that a second run has nothing left to fix. Lists the fixes offered, by rule and
applicability (safe / unsafe), each with its message, for a reviewer to read.

    python scripts/corpus_fix.py vllm==0.33.0      # or a directory

Prints the figures; exits 1 on any failure."""

from __future__ import annotations

import difflib
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


def _slides_to(first: int, edge: int, old: list[str]) -> bool:
    """An insertion before old line `first` is the one predicted at `edge` when only blank
    lines lie between them: difflib may align a block that starts or ends with a blank line
    one blank line away from where the edit put it."""
    low, high = sorted((first, edge))
    return all(not old[k - 1].strip() for k in range(low, high) if 0 < k <= len(old))


def unpredicted(before: bytes, after: bytes, edits: list[dict]) -> list[str]:
    """Diff hunks of `after` against `before` that no predicted edit accounts for."""
    old = before.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    new = after.decode("utf-8", "surrogateescape").splitlines(keepends=True)
    covered: set[int] = set()  # old lines some edit replaces
    edges: set[int] = set()  # where an edit starts or ends (an insertion point)
    for e in edits:
        start, end = e["location"]["row"], e["end_location"]["row"]
        covered.update(range(start, end))
        edges.update((start, end))
    added = {line for e in edits for line in e["content"].splitlines(keepends=True)}
    problems = []
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        # 1-based: the hunk replaces old lines i1+1 .. i2 (none: an insertion before i1+1)
        first = i1 + 1
        if i1 < i2:
            inside = all(line in covered for line in range(first, i2 + 1))
        else:
            inside = (first in covered or i1 in covered
                      or any(_slides_to(first, edge, old) for edge in edges))
        foreign = [line for line in new[j1:j2] if line not in added]
        if not inside or foreign:
            problems.append(f"lines {first}-{i2}: {tag} not predicted"
                            + (f" (adds {foreign[0]!r})" if foreign else ""))
    return problems


def replayed(path: Path, before: bytes, after: bytes) -> bool:
    """True when `after` is what fixing `before` round by round gives, and every round's
    change lies within the edits that round's findings predict: a fix that only becomes
    possible once another is applied (a transitive alias) is not in the first JSON."""
    from retainlint.core.config import Settings
    from retainlint.engine.fixer import MAX_ROUNDS, apply, edits_of
    from retainlint.engine.lint import lint_bytes
    from retainlint.engine.registry import all_rules
    from retainlint.engine.runner import Mode, _applies

    rules, mode, data = list(all_rules()), Mode(fix=True, unsafe_fixes=True), before
    for _ in range(MAX_ROUNDS):
        result = lint_bytes(str(path), data, rules, Settings(), keep_module=True)
        fixes = [f.fix for f in result.findings if _applies(f, mode)]
        if not fixes or result.module is None:
            break
        new, applied = apply(result.module, fixes)
        if not applied:
            break
        edits = [{"location": {"row": a.line}, "end_location": {"row": b.line}, "content": c}
                 for fix in applied for a, b, c in edits_of(result.module, fix)]
        if unpredicted(data, new.bytes, edits):
            return False
        data = new.bytes
    return data == after


def offered(fixable: list[dict]) -> list[str]:
    """The fixes offered, for a reviewer: a count per rule and applicability, then one
    line per fix (`path:row CODE safe|unsafe: what it does`)."""
    counts: dict[tuple[str, str], int] = {}
    for f in fixable:
        key = (f["code"], f["fix"]["applicability"])
        counts[key] = counts.get(key, 0) + 1
    safe = sum(n for (_, kind), n in counts.items() if kind == "safe")
    lines = [f"fixes offered: {len(fixable)} ({safe} safe, {len(fixable) - safe} unsafe)"]
    lines += [f"  {code} {kind}: {n}" for (code, kind), n in sorted(counts.items())]
    lines += [f"  {f['filename']}:{f['location']['row']} {f['code']} {f['fix']['applicability']}: "
              f"{f['fix']['message']}"
              for f in sorted(fixable, key=lambda f: (f["filename"], f["location"]["row"], f["code"]))]
    return lines


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
        predicted: dict[Path, list[dict]] = {}
        for f in fixable:
            predicted.setdefault(copy / f["filename"], []).extend(f["fix"].get("edits") or [])
        outside, rounds = [], 0
        for path in changed:
            problems = unpredicted(before_files[path], path.read_bytes(), predicted.get(path, []))
            if problems and replayed(path, before_files[path], path.read_bytes()):
                rounds += 1  # later fix rounds, each within its own predicted edits
            else:
                outside += [f"{path.relative_to(copy)}: {problem}" for problem in problems]
        after = check(copy)
        left = [f for f in after if f["fix"] and f["fix"]["applicability"] != "none"]
        print(f"files: {len(before_files)}; findings before: {len(findings)} "
              f"({len(fixable)} fixable); fix run: {elapsed:.1f} s")
        print(f"changed files: {len(changed)}; not compiling: {len(broken)}; "
              f"changes outside fix edits: {len(outside)} "
              f"({rounds} files needed later fix rounds, each within its own edits); "
              f"findings after: {len(after)}; still fixable: {len(left)}")
        for line in broken + outside + [f"{f['filename']}:{f['location']['row']} {f['code']}"
                                        for f in left]:
            print("  ", line)
        for line in offered(fixable):
            print(line)
        return 1 if broken or outside or left or len(after) > len(findings) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
