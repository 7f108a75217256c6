"""--fix and --diff apply only the fixes of findings the output shows: an `info` finding,
hidden by default, keeps its code as it is until `--min-severity info` shows it. The
summary counts what was fixed among what is shown.

As in test_severity_floor.py, the runs start the real CLI through a harness whose RL301
(a safe fix) reports at `info`; RL610 (holds_buffers.py) is a warning with an unsafe fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import BUGGY_SAFE_FIX, SAFE_FIX_LINE
from test_severity_floor import HARNESS, NOTE, WARNING


@pytest.fixture
def project(tmp_path):
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "run.py").write_text(HARNESS)
    root = tmp_path / "p"
    root.mkdir()
    (root / "info.py").write_text(BUGGY_SAFE_FIX)  # RL301, at info here
    (root / "warn.py").write_text(WARNING)  # RL610 at line 22
    return root


def run_info(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`retainlint check` in `root`, RL301 at `info` (one process, no cache: see
    test_severity_floor.run_info)."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, str(root.parent / "harness" / "run.py"), "RL301", "--",
         "check", "--no-cache", "-j", "1", "--select", "RL301,RL610", "--unsafe-fixes",
         "--output-format", "concise", *args, "."],
        cwd=root, env=env, capture_output=True, text=True, timeout=120)


def test_fix_leaves_a_hidden_info_findings_fix_unapplied(project):
    done = run_info(project, "--fix")
    assert done.returncode == 0, done.stdout + done.stderr
    assert (project / "info.py").read_text() == BUGGY_SAFE_FIX
    assert "        self.runner = None\n" in (project / "warn.py").read_text()
    assert done.stdout.splitlines()[-1] == "Found 1 finding (1 fixed, 0 remaining)."
    assert done.stderr.splitlines()[-1] == NOTE


def test_diff_shows_only_the_fixes_of_shown_findings(project):
    done = run_info(project, "--diff")
    assert done.returncode == 1
    assert "+++ warn.py" in done.stdout and "info.py" not in done.stdout
    assert "Would fix 1 finding." in done.stderr


def test_fix_applies_the_info_findings_fix_once_it_is_shown(project):
    done = run_info(project, "--fix", "--min-severity", "info")
    assert done.returncode == 0, done.stdout + done.stderr
    assert SAFE_FIX_LINE in (project / "info.py").read_text()
    assert done.stdout.splitlines()[-1] == "Found 2 findings (2 fixed, 0 remaining)."
