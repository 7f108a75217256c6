"""Held-out registry and hook-handle incidents (issue 17, session 8): real upstream fixes of
projects new to the catalogue, checked through the CLI one file at a time, as
scripts/incident_recall.py does. Each buggy fixture must be reported on exactly its
`# expect:` lines, with the severity a user sees; its `.fixed.py` twin must be silent."""

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli

INCIDENTS = Path(__file__).resolve().parents[2] / "fixtures" / "incidents"
EXPECT = re.compile(r"#.*\bexpect: (RL\d{3})\b")

# (fixture, severity of its findings): heavy retention is an error, bounded or
# error-path-only retention a warning
CASES = [
    ("RL202/hidapi_device_finalizer", "error"),
    ("RL203/easyprocess_proc_start_atexit", "warning"),
    ("RL203/gdxpds_gdx_file_atexit", "warning"),
    ("RL203/marker_pdf_provider_atexit", "warning"),
    ("RL203/rosys_on_shutdown_registry", "warning"),
    ("RL204/autoresearchclaw_acp_client_atexit", "warning"),
    ("RL501/gradcam_activations_and_gradients", "warning"),
    ("RL502/captum_layer_eval_hook_not_removed_on_error", "warning"),
]


def _findings(path: Path, code: str) -> list[tuple[int, str]]:
    done = run_cli("check", str(path), "--no-cache", "--no-project", "--select", code,
                   "--output-format", "json", "--exit-zero")
    assert done.returncode == 0, done.stderr
    return sorted((f["location"]["row"], f["severity"]) for f in json.loads(done.stdout))


@pytest.mark.parametrize("case,severity", CASES, ids=[c for c, _ in CASES])
def test_incident_reported_on_its_lines_and_twin_silent(case, severity):
    buggy = INCIDENTS / f"{case}.py"
    code = case.split("/")[0]
    lines = [i for i, text in enumerate(buggy.read_text().splitlines(), 1) if EXPECT.search(text)]
    assert lines, f"{buggy} marks no line"
    assert _findings(buggy, code) == [(line, severity) for line in lines]
    assert _findings(INCIDENTS / f"{case}.fixed.py", code) == []
