"""Leak mode's switches on a plain-Python project (no torch: a watched type listed in
pyproject's `[tool.retainlint] leaks` table): the mode and types from pyproject, `=fail`
turning a leak into exit 1, a bad table as a one-line usage error naming the file, the
JSON file, and `confirm` marking the static finding it saw happen (JSON and SARIF)."""

import json
import os
import subprocess
import sys

import pytest

from retainlint.core.finding import Finding, Position, Severity
from retainlint.output.json_report import to_json
from retainlint.output.sarif import sarif
from retainlint.verify.leak_report import LeakFileError, confirm

CACHE = '''\
class Session:
    def __init__(self, name):
        self.name = name


_open_sessions = []


def open_session(name):
    session = Session(name)
    _open_sessions.append(session)
    return session
'''
TEST = '''\
from app import open_session


def test_open():
    open_session("a")


def test_nothing():
    pass
'''


def make(tmp_path, leaks_table):
    (tmp_path / "pyproject.toml").write_text(f"[tool.pytest.ini_options]\n\n[tool.retainlint]\n{leaks_table}\n")
    (tmp_path / "app.py").write_text(CACHE)
    (tmp_path / "test_app.py").write_text(TEST)


def run_pytest(cwd, *options):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options],
                          cwd=cwd, capture_output=True, text=True, env=env, timeout=300)


def test_pyproject_table_turns_the_mode_on_and_lists_types(tmp_path):
    make(tmp_path, 'leaks = { mode = "report", types = ["app.Session"] }')
    done = run_pytest(tmp_path, "--retainlint-leaks-json", "out.json")
    assert done.returncode == 0, done.stdout + done.stderr
    [leak] = json.loads((tmp_path / "out.json").read_text())["leaks"]
    assert (leak["test"], leak["what"], leak["kind"]) == ("test_app.py::test_open", "app.Session", "listed")
    assert leak["held_by"] == "module app global _open_sessions -> list(len=1)[0] -> Session"
    if sys.version_info >= (3, 12):  # on 3.11 a plain instance carries no allocation traceback
        assert leak["created_at"].endswith("app.py:10")
    assert "retainlint leaks: 1 object(s) outlived their test" in done.stdout


def test_fail_mode_exits_1_only_on_a_leak(tmp_path):
    make(tmp_path, 'leaks = { types = ["app.Session"] }')
    assert run_pytest(tmp_path).returncode == 0  # no mode: the plugin stays off
    assert run_pytest(tmp_path, "--retainlint-leaks").returncode == 0
    failed = run_pytest(tmp_path, "--retainlint-leaks=fail")
    assert failed.returncode == 1, failed.stdout
    assert "2 passed" in failed.stdout
    clean = run_pytest(tmp_path, "--retainlint-leaks=fail", "-k", "nothing")
    assert clean.returncode == 0, clean.stdout


def test_nothing_is_traced_after_the_last_test(tmp_path):
    """What runs after the tests (the summary, other plugins' imports) is not slowed by
    allocation tracing that only the tests need."""
    make(tmp_path, 'leaks = { types = ["app.Session"] }')
    (tmp_path / "conftest.py").write_text(
        "import tracemalloc\n\n\n"
        "def pytest_sessionfinish(session):\n"
        "    with open('tracing.txt', 'w') as f:\n"
        "        f.write(str(tracemalloc.is_tracing()))\n")
    done = run_pytest(tmp_path, "--retainlint-leaks")
    assert "1 object(s) outlived their test" in done.stdout, done.stdout
    assert (tmp_path / "tracing.txt").read_text() == "False"


def test_off_on_the_command_line_wins_over_pyproject(tmp_path):
    make(tmp_path, 'leaks = { mode = "fail", types = ["app.Session"] }')
    assert run_pytest(tmp_path).returncode == 1
    done = run_pytest(tmp_path, "--retainlint-leaks=off")
    assert done.returncode == 0 and "retainlint leaks" not in done.stdout


@pytest.mark.parametrize("table,message", [
    ('leaks = { mode = "loud" }', "leaks.mode: expected one of report, fail, off, got 'loud'"),
    ('leaks = { kinds = [] }', "leaks: unknown key 'kinds'"),
    ('leaks = 3', "leaks: expected a mode or a table"),
])
def test_bad_table_is_a_one_line_error_naming_the_file(tmp_path, table, message):
    make(tmp_path, table)
    done = run_pytest(tmp_path)
    assert done.returncode == 4
    assert f"{tmp_path / 'pyproject.toml'}: [tool.retainlint] {message}" in done.stderr
    assert "Traceback" not in done.stderr


def finding(path, line, code="RL203"):
    return Finding(code=code, name="global-callback-pins-instance", message="m", path=str(path),
                   start=Position(line, 9), end=Position(line, 20), severity=Severity.WARNING)


def test_confirm_marks_the_finding_in_json_and_sarif(tmp_path):
    leaks = {"format": "retainlint-leaks/1", "leaks": [
        {"test": "tests/test_bugs.py::test_atexit", "rule": "RL203", "finding_path": str(tmp_path / "tracer.py"),
         "finding_line": 16}]}
    (tmp_path / "leaks.json").write_text(json.dumps(leaks))
    hit, other_line, other_rule = finding(tmp_path / "tracer.py", 16), finding(tmp_path / "tracer.py", 17), \
        finding(tmp_path / "tracer.py", 16, "RL202")
    assert confirm([hit, other_line, other_rule], [str(tmp_path / "leaks.json")]) == 1
    out = to_json([hit, other_line])
    assert out[0]["confirmed"] == "tests/test_bugs.py::test_atexit"
    assert "confirmed" not in out[1]  # the format is unchanged for what no run confirmed
    results = sarif([hit, other_line], str(tmp_path))["runs"][0]["results"]
    assert results[0]["properties"]["confirmed"] == "tests/test_bugs.py::test_atexit"
    assert "properties" not in results[1]


def test_confirm_rejects_a_file_that_is_not_leak_output(tmp_path):
    (tmp_path / "x.json").write_text('{"a": 1}')
    with pytest.raises(LeakFileError, match=r"x\.json: not a `pytest --retainlint-leaks-json` file"):
        confirm([], [str(tmp_path / "x.json")])
    with pytest.raises(LeakFileError, match=r"missing\.json: cannot read"):
        confirm([], [str(tmp_path / "missing.json")])
