"""What the retention model adds to indexing: summarizes every file of a tree with and
without the retention facts, in one process, alternating, and prints both times.

    python benchmarks/retention_facts.py PATH [--rounds N]

PATH: a source tree (e.g. a wheel's .py files unpacked by scripts/corpus.py). Compare the
ratio, not the seconds: machines here are shared."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from retainlint.engine.registry import all_prefilters
from retainlint.project import index


class _NoFacts:
    def plain(self) -> tuple:
        return ()


def _summarize_all(files: list[tuple[str, bytes]]) -> float:
    scanners = all_prefilters()
    start = time.perf_counter()
    for path, data in files:
        index.summarize(path, data, scanners)
    return time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("path")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    files = [(str(p), p.read_bytes()) for p in sorted(Path(args.path).rglob("*.py"))]
    facts = index.module_facts
    with_facts, without = [], []
    for _ in range(args.rounds):
        index.module_facts = facts
        with_facts.append(_summarize_all(files))
        index.module_facts = lambda *a, **k: _NoFacts()  # type: ignore[assignment]
        without.append(_summarize_all(files))
    index.module_facts = facts
    best_with, best_without = min(with_facts), min(without)
    print(f"{len(files)} files; summaries without the retention facts {best_without:.2f} s, "
          f"with them {best_with:.2f} s ({best_with / best_without:.2f}x; best of {args.rounds})")


if __name__ == "__main__":
    main()
