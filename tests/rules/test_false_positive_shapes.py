"""The shared probes (minimal reproductions of false positives seen on real trees, when
this checkout sits beside them) must not be reported, by any rule. The shapes the
triage found are do-not-flag fixtures in fixtures/RLnnn/, checked by test_fixtures."""

from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT.parent / "shared" / "probes" / "false-positives"


def test_false_positive_probes_are_not_reported():
    if not PROBES.is_dir():
        pytest.skip(f"{PROBES} is not here")
    assert len(list(PROBES.glob("*.py"))) >= 8
    done = run_cli("check", str(PROBES), "--no-cache", "--output-format", "concise")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "All checks passed!"
