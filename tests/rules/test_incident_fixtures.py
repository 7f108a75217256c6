"""Every catalogued incident (fixtures/incidents/<CODE>/<name>.py, docs/incidents.md) is
reported by its check on each of its `# expect:` lines, at some level, and its `.fixed.py`
twin is silent - in process, with the file's own index, so that a prefilter that would
skip the file fails here and not only in scripts/incident_recall.py."""

import re
from pathlib import Path

import pytest

from retainlint.core.config import Settings
from retainlint.engine.lint import lint_bytes
from retainlint.engine.registry import all_rules

INCIDENTS = Path(__file__).resolve().parents[2] / "fixtures" / "incidents"
EXPECT = re.compile(r"#.*\bexpect: (RL\d{3})\b")
RULES = {r.code: r for r in all_rules()}
CASES = sorted(p for p in INCIDENTS.glob("RL*/*.py") if not p.name.endswith(".fixed.py"))
# Documented in docs/incidents.md: no general shape catches it at any level.
MISSED = {"RL610/jupyter_client_kernel_manager_cleanup"}


def _reported(path: Path, code: str) -> list[int]:
    result = lint_bytes(str(path), path.read_bytes(), [RULES[code]], Settings())
    assert not result.has_errors, [f.message for f in result.findings]
    return sorted({f.start.line for f in result.findings if f.code == code})


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_incident_is_reported_and_its_twin_is_silent(case):
    code = case.parent.name
    expected = [i for i, line in enumerate(case.read_text().splitlines(), 1) if EXPECT.search(line)]
    assert expected, "an incident fixture marks the lines its check reports"
    if f"{code}/{case.stem}" in MISSED:
        assert _reported(case, code) == []
    else:
        assert set(expected) <= set(_reported(case, code))
    twin = case.with_name(case.stem + ".fixed.py")
    if twin.exists() and code != "RL801":  # tribler's twin: docs/incidents.md, noisy twins
        assert _reported(twin, code) == []
