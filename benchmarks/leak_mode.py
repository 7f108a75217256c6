"""The cost of leak mode: a suite's wall time with `--retainlint-leaks` over its time without.

    python benchmarks/leak_mode.py [SUITE_DIR] [--repeat 3] [-- extra pytest arguments]

SUITE_DIR defaults to fixtures/leak_projects/incidents (a dozen tests with small torch
models, six of which leak). Each configuration runs `--repeat` times in a fresh pytest
process; the best time of each is compared (the least disturbed by other load). Prints
wall and CPU times with their overhead ratios, and the time the plugin itself reports
spending in checks. On a shared machine trust the CPU ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

DEFAULT = Path(__file__).resolve().parents[1] / "fixtures" / "leak_projects" / "incidents"


def once(suite: Path, extra: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one pytest process: on a shared machine the CPU time
    is the steadier figure."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra], cwd=suite,
                   env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("suite", nargs="?", default=str(DEFAULT))
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("extra", nargs="*", help="arguments for pytest (after --)")
    opts = ap.parse_args()
    suite = Path(opts.suite).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "leaks.json"
        plain = min(once(suite, opts.extra) for _ in range(opts.repeat))
        mode = min(once(suite, [*opts.extra, "--retainlint-leaks", "--retainlint-leaks-json", str(out)])
                   for _ in range(opts.repeat))
        data = json.loads(out.read_text()) if out.exists() else {}
    print(f"suite: {suite}")
    print(f"wall: plain {plain[0]:.2f} s, leak mode {mode[0]:.2f} s: overhead x{mode[0] / plain[0]:.2f}")
    print(f"CPU:  plain {plain[1]:.2f} s, leak mode {mode[1]:.2f} s: overhead x{mode[1] / plain[1]:.2f}")
    if data:
        print(f"checks (as the plugin counts them, last run): {data['check_seconds']:.2f} s, "
              f"{len(data['leaks'])} leak(s) reported")
    return 0


if __name__ == "__main__":
    sys.exit(main())
