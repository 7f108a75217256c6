"""Held-out container incidents (issue 17, session 8) that needed the RL301/RL304 changes:
extruct's class-level element-class lookup keyed by the document lxml hands `lookup()`
(RL301) and django-components' weak-keyed cache of the data the context processors
return for a request (RL304). Checked through the CLI one file at a time, as
scripts/incident_recall.py does: each buggy fixture is reported on exactly its
`# expect:` lines with the severity a user sees; its `.fixed.py` twin is silent."""

import json
import re
from pathlib import Path

import pytest

from conftest import run_cli

INCIDENTS = Path(__file__).resolve().parents[2] / "fixtures" / "incidents"
EXPECT = re.compile(r"#.*\bexpect: (RL\d{3})\b")

# every document ever parsed has no bound (an error); the requests pinned by the
# processors' data are not known to be heavy (a warning)
CASES = [
    ("RL301/extruct_class_lookup_cache", "error"),
    ("RL304/django_components_context_processors", "warning"),
]


def _findings(path: Path, code: str) -> list[tuple[int, str, str]]:
    done = run_cli("check", str(path), "--no-cache", "--no-project", "--select", code,
                   "--output-format", "json", "--exit-zero")
    assert done.returncode == 0, done.stderr
    return sorted((f["location"]["row"], f["severity"], f["message"]) for f in json.loads(done.stdout))


def _expected(path: Path) -> list[int]:
    lines = [i for i, text in enumerate(path.read_text().splitlines(), 1) if EXPECT.search(text)]
    assert lines, f"{path} marks no line"
    return lines


@pytest.mark.parametrize("case,severity", CASES, ids=[c for c, _ in CASES])
def test_incident_reported_on_its_lines_and_twin_silent(case, severity):
    buggy = INCIDENTS / f"{case}.py"
    code = case.split("/")[0]
    found = _findings(buggy, code)
    assert [(line, sev) for line, sev, _ in found] == [(line, severity) for line in _expected(buggy)]
    assert _findings(INCIDENTS / f"{case}.fixed.py", code) == []


def test_messages_name_what_is_pinned():
    """The message says which argument is kept and through which callback."""
    (_, _, extruct), = _findings(INCIDENTS / "RL301/extruct_class_lookup_cache.py", "RL301")
    assert "`document`" in extruct and "`DomElementClassLookup.lookup()`" in extruct
    (_, _, django), = _findings(INCIDENTS / "RL304/django_components_context_processors.py", "RL304")
    assert "`processor(request)`" in django and "`context_processors_data`" in django
