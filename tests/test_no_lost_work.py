"""Ctrl-C during `--fix` leaves every file either as it was or fully fixed, never
half-written, no temp file behind, and a one-line message with exit code 130."""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from conftest import BUGGY, run_cli

FILES = 120
FILLER = "".join(f"\n\ndef helper_{i}(x, y=None):\n    return [x + k for k in range(y or 3)]\n"
                 for i in range(3))


def _source(i: int) -> str:
    return BUGGY.replace("class Wrapper", f"class Wrapper{i}") + FILLER


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_sigint_during_fix_loses_nothing(tmp_path, jobs):
    tree, fixed_copy = tmp_path / "tree", tmp_path / "fixed"
    tree.mkdir()
    for i in range(FILES):
        (tree / f"m{i:03}.py").write_text(_source(i))
    original = {p.name: p.read_bytes() for p in tree.glob("*.py")}
    shutil.copytree(tree, fixed_copy)
    done = run_cli("check", "--fix", "-j", "2", cwd=fixed_copy)
    assert done.returncode == 0, done.stdout
    fixed = {p.name: p.read_bytes() for p in fixed_copy.glob("*.py")}
    assert all(fixed[n] != original[n] for n in original)

    env = {**os.environ, "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "retainlint", "check", "--fix", "-j", jobs],
        cwd=tree, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        start_new_session=True,  # its own process group: Ctrl-C reaches every worker
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            if any((tree / n).read_bytes() != data for n, data in original.items()):
                break  # fixing has begun
            time.sleep(0.005)
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal does
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    assert proc.returncode == 130, out + err
    assert err.strip() == "retainlint: interrupted"
    assert "Traceback" not in out + err
    assert sorted(p.name for p in tree.glob("*.py")) == sorted(original)
    assert not list(tree.rglob("*.tmp"))  # no temp files left behind
    states = {n: "old" if (tree / n).read_bytes() == original[n] else
              "new" if (tree / n).read_bytes() == fixed[n] else "HALF" for n in original}
    assert "HALF" not in states.values()
    assert "new" in states.values() and "old" in states.values()  # interrupted mid-way
