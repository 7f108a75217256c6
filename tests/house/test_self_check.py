"""retainlint's own code checks clean under its own configuration, at every level: the
verifier's scenarios leak on purpose and are excluded there (pyproject.toml), not here."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_retainlint_reports_nothing_on_its_own_code():
    done = subprocess.run(
        [sys.executable, "-m", "retainlint", "check", "retainlint", "rules", "scripts", "benchmarks",
         "--no-cache", "--min-severity", "info", "--output-format", "concise"],
        cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "All checks passed!" in done.stdout
