"""The benchmark runs end to end on a small tree (no timing assertions: figures are for
benchmarks/bench.py to print, not for tests to judge)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_prints_a_row_per_retainlint_mode(tmp_path):
    tree = tmp_path / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("")
    for i in range(5):
        (tree / "pkg" / f"m{i}.py").write_text(
            "import gc\n\ndef warm_up():\n    gc.freeze()\n" if i == 0 else f"X = {i}\n")
    before = {p: p.read_bytes() for p in tree.rglob("*.py")}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench.py"), "--path",
                           str(tree), "--tools", "retainlint", "--runs", "1"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in done.stdout.splitlines() if line.startswith("| retainlint")}
    assert set(rows) == {"retainlint cold", "retainlint warm", "retainlint 1 changed"}
    for files, wall, rate, rss, ratio, _note in rows.values():
        assert files == "6"
        assert float(wall) > 0 and float(rate) > 0 and int(rss) > 0 and float(ratio) > 0
    assert rows["retainlint cold"][4] == "1.00"
    assert {p: p.read_bytes() for p in tree.rglob("*.py")} == before  # measured on a copy
