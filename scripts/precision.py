"""Precision on the development trees: today's findings joined with the verdicts read in
docs/triage/<tree>.md (`path:line RLnnn true|minor|false - why`).

    python scripts/precision.py            # every development tree but vLLM/transformers
    python scripts/precision.py sglang     # trees whose name contains "sglang"

A finding no triage line names is counted as unread: precision is (true + minor) / read,
and a tree with unread findings needs reading before its figure means anything."""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus  # noqa: E402 - the script's own folder

ROOT = Path(__file__).resolve().parent.parent
VERDICT = re.compile(r"`([^`\s]+):(\d+)`\s+(RL\d{3})\s+\**(true|minor|false)\**")
TRIAGED = {"sglang": "sglang-0.5.23", "diffusers": "diffusers-0.42.1", "peft": "peft-0.21.2",
           "timm": "timm-1.0.31", "trl": "trl-1.16.0", "ray": "ray-2.60.0",
           "accelerate": "accelerate-1.15.0", "deepspeed": "deepspeed-0.19.8",
           "pytorch-lightning": "pytorch-lightning-2.6.6", "lmdeploy": "lmdeploy-0.18.0",
           "sentence-transformers": "sentence-transformers-6.2.0",
           "ultralytics": "ultralytics-8.4.190", "torchtune": "torchtune-0.6.1"}


def verdicts(tree: str) -> dict[tuple[str, int, str], str]:
    text = (ROOT / "docs" / "triage" / f"{TRIAGED[tree]}.md").read_text()
    return {(m[1], int(m[2]), m[3]): m[4] for m in VERDICT.finditer(text)}


def findings(requirement: str, folders: list[str]) -> list[dict]:
    top = corpus.fetch(requirement)
    done = subprocess.run(["retainlint", "check", *(f or "." for f in folders), "--no-cache",
                           "--output-format", "json", "--exit-zero"],
                          cwd=top, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"retainlint failed on {top} (exit {done.returncode}): {done.stderr.strip()}")
    return json.loads(done.stdout)


def main(wanted: list[str]) -> None:
    print("| tree | rule | findings | read | true | minor | false | precision |")
    print("|---|---|---|---|---|---|---|---|")
    for requirement, folders in corpus.DEVELOPMENT.items():
        tree = requirement.split("==")[0]
        if tree not in TRIAGED or wanted and not any(w in tree for w in wanted):
            continue
        known = verdicts(tree)
        rows: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        for f in findings(requirement, folders):
            verdict = known.get((f["filename"], f["location"]["row"], f["code"]), "unread")
            for key in (f["code"], "all"):
                rows[key]["findings"] += 1
                rows[key][verdict] += 1
        for code in sorted(rows, key=lambda c: (c == "all", c)):
            c = rows[code]
            read = c["findings"] - c["unread"]
            share = f"{(c['true'] + c['minor']) / read:.0%}" if read else "-"
            print(f"| {tree} | {code} | {c['findings']} | {read} | {c['true']} | {c['minor']} "
                  f"| {c['false']} | {share} |")
        if not rows:
            print(f"| {tree} | all | 0 | 0 | 0 | 0 | 0 | - |")


if __name__ == "__main__":
    main(sys.argv[1:])
