"""`retainlint check --watch`: one check, then another each time a checked file changes,
each run announced on stderr with the time; Ctrl-C or SIGTERM ends it with exit 0 and no
traceback."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import BUGGY_SAFE_FIX, CLEAN

RUN_LINE = re.compile(r"^\[\d\d:\d\d:\d\d\] ", re.M)


def _until(path: Path, condition, timeout: float = 60.0) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text()
        if condition(text):
            return text
        time.sleep(0.1)
    raise AssertionError(f"timed out; so far:\n{path.read_text()}")


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_watch_checks_again_after_an_edit_and_stops_cleanly(tmp_path, stop):
    root = tmp_path / "p"
    root.mkdir()
    (root / "model.py").write_text(CLEAN)
    (root / "other.py").write_text(CLEAN)
    out, err = tmp_path / "out", tmp_path / "err"
    env = {**os.environ, "NO_COLOR": "1"}
    with out.open("w") as stdout, err.open("w") as stderr:
        watching = subprocess.Popen(
            [sys.executable, "-m", "retainlint", "check", "--watch", "-j", "1",
             "--cache-dir", str(tmp_path / "cache"), "--output-format", "concise", "."],
            cwd=root, env=env, stdout=stdout, stderr=stderr)
        try:
            _until(out, lambda t: "All checks passed!" in t)
            assert "Checking; watching 2 files for changes (Ctrl-C to stop)." in err.read_text()
            time.sleep(0.1)  # a later modification time, even on coarse clocks
            (root / "model.py").write_text(BUGGY_SAFE_FIX)
            text = _until(out, lambda t: "model.py:3:1: RL301" in t)
            assert text.count("All checks passed!") == 1
            log = _until(err, lambda t: "model.py changed: checking again." in t)
            assert len(RUN_LINE.findall(log)) == 2
            (root / "model.py").write_text(CLEAN)  # fixed by hand: clean again
            _until(out, lambda t: t.count("All checks passed!") == 2)
            time.sleep(0.5)
        finally:
            watching.send_signal(stop)
            code = watching.wait(timeout=30)
    assert code == 0, err.read_text()
    assert "Traceback" not in err.read_text()
    assert len(RUN_LINE.findall(err.read_text())) == 3


def test_watch_refuses_standard_input(tmp_path):
    done = subprocess.run([sys.executable, "-m", "retainlint", "check", "--watch",
                           "--stdin-filename", "x.py"], cwd=tmp_path, input="x = 1\n",
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "retainlint: error: --watch cannot be combined with --stdin-filename\n"
