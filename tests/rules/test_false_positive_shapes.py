"""Shapes read as false positives on real trees (fixtures/_triage, and the shared probes
when this checkout sits beside them) must not be reported, by any rule."""

from pathlib import Path

import pytest

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
PROBES = ROOT.parent / "shared" / "probes" / "false-positives"


@pytest.mark.parametrize("folder", [ROOT / "fixtures" / "_triage", PROBES], ids=["triage", "probes"])
def test_false_positive_shapes_are_not_reported(folder):
    if not folder.is_dir():
        pytest.skip(f"{folder} is not here")
    assert len(list(folder.glob("*.py"))) >= 8
    done = run_cli("check", str(folder), "--no-cache", "--output-format", "concise")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.strip() == "All checks passed!"
