"""A file that takes too long is abandoned at its time budget (one RL000 line, the other
files still checked), alone or in the worker pool; Ctrl-C or SIGTERM stop a run at once,
not once the file in hand is done."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BUGGY, run_cli

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import hostile  # noqa: E402 - the generators of hostile inputs

BUDGET = {"RETAINLINT_FILE_BUDGET": "0.5"}  # seconds of CPU; the slow file needs many more
SLOW = hostile.varied(600_000)  # several seconds of analysis on any machine


def _tree(root: Path, others: int) -> Path:
    (root / "slow.py").write_text(SLOW)
    for i in range(others):
        (root / f"ok{i}.py").write_text(BUGGY)
    return root


def _lines(r, name: str) -> list[str]:
    return [line for line in r.stdout.splitlines() if line.startswith(f"{name}:")]


@pytest.mark.parametrize("jobs, others", [("1", 1), ("2", 12)], ids=["alone", "pool"])
def test_a_file_over_its_budget_is_one_line_and_the_others_are_checked(tmp_path, jobs, others):
    root = _tree(tmp_path, others)
    r = run_cli("check", "--no-cache", "--output-format", "concise", "-j", jobs, ".",
                cwd=root, env=BUDGET)
    assert "Traceback" not in r.stdout + r.stderr
    assert _lines(r, "slow.py") == [
        "slow.py:1:1: RL000 cannot check: time budget exceeded (0.5 s of CPU); not checked"]
    for i in range(others):  # every other file checked as usual
        assert [x.split(" ", 2)[:2] for x in _lines(r, f"ok{i}.py")] == [[f"ok{i}.py:7:9:", "RL501"]]
    assert r.returncode == 1


def test_the_budget_is_not_cached(tmp_path):
    """A file cut short is checked afresh on the next run (with the default budget it passes)."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "slow.py").write_text(hostile.varied(60_000))
    cache = str(tmp_path / "cache")
    first = run_cli("check", "--cache-dir", cache, "--output-format", "concise", ".", cwd=root,
                    env={"RETAINLINT_FILE_BUDGET": "0.01"})
    assert "time budget exceeded" in first.stdout
    second = run_cli("check", "--cache-dir", cache, "--output-format", "concise", ".", cwd=root)
    assert "time budget exceeded" not in second.stdout
    assert " RL304 " in second.stdout  # the shapes' findings, now that it was checked


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def _wait(proc, ready) -> None:
    while proc.poll() is None and not ready():
        time.sleep(0.1)


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_signal_stops_a_run_in_the_middle_of_a_slow_file(tmp_path, signum):
    """Without the budget (0: none), the 1 MB file takes half a minute of CPU. The signal
    lands in the rules' analysis: after the project index (the `ast` of the file, about
    200 MB) and the libcst parse (native code, where no signal is handled, which takes the
    memory past that by more than 300 MB), a few seconds of CPU into the rules."""
    (tmp_path / "slow.py").write_text(hostile.varied(1_000_000))
    with open(tmp_path / "out", "w") as out, open(tmp_path / "err", "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "retainlint", "check", "--no-cache",
                                 "-j", "1", "."], cwd=tmp_path, stdout=out, stderr=err,
                                env={**os.environ, "NO_COLOR": "1", "RETAINLINT_FILE_BUDGET": "0"})
    try:
        _wait(proc, lambda: _cpu_seconds(proc.pid) > 2)
        indexed = _rss_mb(proc.pid)
        _wait(proc, lambda: _rss_mb(proc.pid) > indexed + 300)  # the libcst tree is built
        parsed = _cpu_seconds(proc.pid)
        _wait(proc, lambda: _cpu_seconds(proc.pid) > parsed + 4)
        assert proc.poll() is None, "the check ended before the signal: make the file bigger"
        proc.send_signal(signum)
        sent = time.monotonic()
        code = proc.wait(timeout=120)
        waited = time.monotonic() - sent
    finally:
        proc.kill()
    assert code == 130
    assert (tmp_path / "err").read_text().strip().endswith("retainlint: interrupted")
    assert "Traceback" not in (tmp_path / "err").read_text()
    assert waited < 10, f"the run went on for {waited:.0f} s after the signal"
