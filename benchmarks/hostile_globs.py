"""Exclude patterns a pull request's configuration may choose, against a deep tree of long
names: the time discovery spends matching them, next to the time of parsing one file.

    python benchmarks/hostile_globs.py [--depth 16] [--files 200]

Prints figures, judges nothing (tests/engine/test_globs.py checks the answers). pathspec's
backtracking regular expression is timed on one short name only: on the tree it would
not finish (each name of `a`s longer by two about triples its time)."""

from __future__ import annotations

import argparse
import ast
import tempfile
import time
from pathlib import Path

import pathspec

from retainlint.engine.discover import discover

PATTERNS = {
    "50 stars": "*a" * 50 + "*b",
    "20 stars": "*a" * 20 + "*b",
    "** and stars": "**/a*a**/*a*a*b/**",
}


def deep_tree(top: Path, depth: int, files: int) -> Path:
    folder = top
    for _ in range(depth):
        folder = folder / ("a" * 200)
    folder.mkdir(parents=True)
    for i in range(files):
        (folder / f"{'a' * 200}{i}.py").write_text("x = 1\n")
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--depth", type=int, default=16)
    parser.add_argument("--files", type=int, default=200)
    args = parser.parse_args()
    source = Path(ast.__file__).read_text()
    started = time.perf_counter()
    ast.parse(source)
    parse_ms = (time.perf_counter() - started) * 1000
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        deep_tree(root, args.depth, args.files)
        print(f"tree: {args.depth} folders deep, {args.files} files, names of 200+ characters")
        print(f"| {'pattern':<14} | {'files kept':>10} | {'discovery ms':>12} |")
        print(f"|{'-' * 16}|{'-' * 12}|{'-' * 14}|")
        for label, pattern in PATTERNS.items():
            started = time.perf_counter()
            kept = discover([str(root)], root, [pattern], False)
            print(f"| {label:<14} | {len(kept):>10} | {(time.perf_counter() - started) * 1000:>12.1f} |")
    print(f"ast.parse of {Path(ast.__file__).name} ({len(source) // 1024} KiB): {parse_ms:.1f} ms")
    spec = pathspec.GitIgnoreSpec.from_lines([PATTERNS["20 stars"]])
    started = time.perf_counter()
    spec.match_file("a" * 24)
    print(f"pathspec's regex, 20 stars, one name of 24 `a`s: {(time.perf_counter() - started) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
