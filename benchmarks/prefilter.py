"""How many files each rule's prefilter lets through to the libcst parse, over a tree.

    python benchmarks/prefilter.py DIR [--select RL301,RL302] [--jobs 2]

Prints, per rule, the files whose bytes and `ast` facts say it might match (those are
parsed with libcst, the costly part of a run), the union over the selection, and the
seconds spent indexing (ast parse + scans) and prefiltering. A count, not a timing test:
the point is to see which rule makes the run parse files it cannot report on."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from retainlint.core.config import Settings
from retainlint.engine.discover import discover
from retainlint.project.prefilter import rules_triggered
from retainlint.engine.registry import all_rules
from retainlint.engine.runner import build_index
from retainlint.engine.workers import Workers
from retainlint.core.source import read_source


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tree", type=Path)
    parser.add_argument("--select", default="", help="comma-separated rule codes (default: all)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    codes = {c.strip() for c in args.select.split(",") if c.strip()}
    rules = [r for r in all_rules() if not codes or r.code in codes]
    settings = Settings()
    paths = discover([str(args.tree)], args.tree.resolve(), (), False)
    data = {p: read_source(p) for p in paths}
    start = time.perf_counter()
    with Workers(args.jobs) as workers:
        index = build_index(paths, settings, workers, data)
    indexed = time.perf_counter()
    passing = {r.code: 0 for r in rules}
    union = 0
    for path, content in data.items():
        triggered = rules_triggered(content, [r.prefilter for r in rules], settings, index, path)
        union += bool(triggered)
        for rule in triggered:
            passing[rule.code] += 1
    done = time.perf_counter()
    print(f"{len(paths)} files; index {indexed - start:.2f} s, prefilter {done - indexed:.2f} s")
    for code, count in passing.items():
        print(f"  {code}  {count:5d}")
    print(f"  union  {union:5d}  (files parsed with libcst)")


if __name__ == "__main__":
    main()
