"""Held-out cycle, stored-exception, logging and context-variable incidents (issue 17,
session 8): real upstream fixes of projects new to the catalogue, checked through the CLI
one file at a time, as scripts/incident_recall.py does. Each buggy fixture must be
reported on exactly its `# expect:` lines, with the severity a user sees; its `.fixed.py`
twin must be silent."""

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli

INCIDENTS = Path(__file__).resolve().parents[2] / "fixtures" / "incidents"
EXPECT = re.compile(r"#.*\bexpect: (RL\d{3})\b")

# (fixture, severity of its findings): a plain Python cycle or a per-instance context
# variable is a warning; a cycle through a C++ holder (a Qt connection) an error
CASES = [
    ("RL701/fairscale_checkpoint_wrapper_partial", "warning"),
    ("RL701/pyro_rejector_bound_methods", "warning"),
    ("RL701/mne_qt_browser_signal_partials", "error"),
    ("RL702/pymongo_server_description_error", "warning"),
    ("RL904/pydantic_resolve_resolver_contextvars", "warning"),
]


def _findings(path: Path, code: str) -> list[tuple[int, str]]:
    done = run_cli("check", str(path), "--no-cache", "--no-project", "--select", code,
                   "--output-format", "json", "--exit-zero")
    assert done.returncode == 0, done.stderr
    return sorted((f["location"]["row"], f["severity"]) for f in json.loads(done.stdout))


def _expected(path: Path) -> list[int]:
    lines = [i for i, text in enumerate(path.read_text().splitlines(), 1) if EXPECT.search(text)]
    assert lines, f"{path} marks no line"
    return lines


@pytest.mark.parametrize("case,severity", CASES, ids=[c for c, _ in CASES])
def test_incident_reported_on_its_lines_and_twin_silent(case, severity):
    buggy = INCIDENTS / f"{case}.py"
    code = case.split("/")[0]
    assert _findings(buggy, code) == [(line, severity) for line in _expected(buggy)]
    assert _findings(INCIDENTS / f"{case}.fixed.py", code) == []


def test_target_less_memory_handler_is_an_error_and_the_trimming_subclass_is_not():
    """Tribler: the MemoryHandler without a target is reported as an error. Both files
    also add the handler to the root logger in `__init__` with no `removeHandler`, which
    RL801's per-instance handler check reports as a warning (upstream kept that line)."""
    buggy = INCIDENTS / "RL801/tribler_memory_handler_no_target.py"
    (line,) = _expected(buggy)
    assert _findings(buggy, "RL801") == [(line, "error"), (line + 1, "warning")]
    fixed = _findings(INCIDENTS / "RL801/tribler_memory_handler_no_target.fixed.py", "RL801")
    assert [severity for _, severity in fixed] == ["warning"]
