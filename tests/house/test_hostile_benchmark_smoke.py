"""benchmarks/hostile.py runs end to end on small sizes and prints a row per input (no
timing assertions: the figures are for a person to read)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_hostile_benchmark_prints_a_row_per_input():
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "hostile.py"), "--scale", "0.01"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines()
            if line.startswith("| ") and not line.startswith("| input")]
    assert [r[0].strip().split(",")[0] for r in rows] == ["module dict", "varied shapes",
                                                          "star-import diamond"]
    for _, nbytes, check, parse, ratio in rows:
        assert int(nbytes) > 0 and float(check) > 0 and float(parse) >= 0 and float(ratio) > 0
