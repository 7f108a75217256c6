"""Findings at the lowest level (`info`) are left out unless asked for: `--min-severity
info` or `min-severity = "info"` in the configuration shows them; otherwise one note
counts them, and they never make the exit code 1.

No rule of the catalog reports at `info` yet, so these runs start the real CLI in a
subprocess whose RL801 (logger-registry-growth) reports its findings at `info`: the
rest of the run (selection, the floor, every output format, the exit code) is the
product's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
WARNING = (ROOT / "fixtures" / "RL610" / "holds_buffers.py").read_text()  # RL610 at line 22, a warning
LOGGER = ('import logging\n\n\nclass Session:\n    def __init__(self):\n'
          '        self.log = logging.getLogger(f"session.{id(self)}")\n')  # RL801 at line 6

# `python harness.py CODE -- ARGS...`: `retainlint ARGS...`, with rule CODE at `info`
# (its level, and that of each of its findings).
HARNESS = textwrap.dedent('''\
    import sys

    from retainlint.cli import main
    from retainlint.core.finding import Severity
    from retainlint.engine.registry import all_rules

    code, _, *args = sys.argv[1:]
    rule = next(r for r in all_rules() if r.code == code)


    def at_info(original):
        def report(self, *a, **kw):
            kw["severity"] = Severity.INFO
            return original(self, *a, **kw)
        return report


    rule.severity = Severity.INFO
    rule.report = at_info(rule.report)
    rule.report_at = at_info(rule.report_at)
    main(args=args, prog_name="retainlint")
''')

NOTE = "note: 1 info finding not shown (--min-severity info shows it)"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "run.py").write_text(HARNESS)
    root = tmp_path / "p"
    root.mkdir()
    return root


def run_info(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`retainlint check --no-cache -j 1 ARGS` in `root`, RL801 reporting at `info`. One
    process (-j 1), so that the rule changed is the one that runs; no cache, so that no
    later run reads these findings back."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, str(root.parent / "harness" / "run.py"), "RL801", "--",
         "check", "--no-cache", "-j", "1", "--select", "RL610,RL801", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=120)


def reported(r: subprocess.CompletedProcess) -> list[tuple[str, str]]:
    return sorted((f["filename"], f["code"]) for f in json.loads(r.stdout))


def test_info_finding_is_counted_not_shown_and_the_warning_fails_the_run(project):
    (project / "warn.py").write_text(WARNING)
    (project / "logs.py").write_text(LOGGER)
    r = run_info(project, "--output-format", "concise")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "warn.py:22:9: RL610" in r.stdout
    assert "RL801" not in r.stdout and "logs.py" not in r.stdout
    assert r.stdout.splitlines()[-1] == "Found 1 finding (1 fixable with --fix --unsafe-fixes)."
    assert r.stderr.splitlines()[-1] == NOTE, r.stderr
    full = run_info(project)
    assert full.returncode == 1 and "RL801" not in full.stdout
    assert full.stderr.splitlines()[-1] == NOTE, full.stderr


def test_only_info_findings_exit_0_with_the_count(project):
    (project / "logs.py").write_text(LOGGER)
    (project / "more.py").write_text(LOGGER)
    r = run_info(project, "--output-format", "concise")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip() == "All checks passed!"
    assert r.stderr.splitlines() == ["note: 2 info findings not shown (--min-severity info shows them)"]
    quiet = run_info(project, "-q", "--output-format", "concise")
    assert (quiet.returncode, quiet.stdout, quiet.stderr) == (0, "", "")


def test_no_note_when_nothing_is_hidden(project):
    (project / "warn.py").write_text(WARNING)
    r = run_info(project, "--output-format", "concise")
    assert r.returncode == 1 and "not shown" not in r.stderr, r.stderr


def test_min_severity_info_shows_both(project):
    (project / "warn.py").write_text(WARNING)
    (project / "logs.py").write_text(LOGGER)
    r = run_info(project, "--min-severity", "info", "--output-format", "concise")
    assert r.returncode == 1
    assert "logs.py:6:20: RL801" in r.stdout and "warn.py:22:9: RL610" in r.stdout
    assert "not shown" not in r.stderr
    j = run_info(project, "--min-severity", "info", "--output-format", "json")
    assert reported(j) == [("logs.py", "RL801"), ("warn.py", "RL610")]
    assert {f["code"]: f["severity"] for f in json.loads(j.stdout)} == {"RL801": "info", "RL610": "warning"}


def test_an_info_finding_alone_fails_the_run_once_shown(project):
    (project / "logs.py").write_text(LOGGER)
    r = run_info(project, "--min-severity", "info", "--output-format", "concise")
    assert r.returncode == 1 and "logs.py:6:20: RL801" in r.stdout


@pytest.mark.parametrize("config", [
    ("retainlint.toml", 'min-severity = "info"\n'),
    ("pyproject.toml", '[tool.retainlint]\nmin-severity = "info"\n'),
])
def test_config_key_shows_them_and_the_flag_wins(project, config):
    (project / "warn.py").write_text(WARNING)
    (project / "logs.py").write_text(LOGGER)
    (project / config[0]).write_text(config[1])
    r = run_info(project, "--output-format", "json")
    assert reported(r) == [("logs.py", "RL801"), ("warn.py", "RL610")]
    flag = run_info(project, "--min-severity", "warning", "--output-format", "json")
    assert reported(flag) == [("warn.py", "RL610")]
    shown = run_info(project, "--show-settings", "warn.py")
    assert 'min-severity = "info"' in shown.stdout.splitlines()


def test_config_key_applies_per_project(project):
    """Each configuration's floor applies to its own files."""
    (project / "logs.py").write_text(LOGGER)
    (project / "sub").mkdir()
    (project / "sub" / "logs.py").write_text(LOGGER)
    (project / "sub" / "retainlint.toml").write_text('min-severity = "info"\n')
    r = run_info(project, "--output-format", "json")
    assert reported(r) == [("sub/logs.py", "RL801")], r.stdout
    assert r.returncode == 1


def test_config_key_must_be_a_level(project):
    (project / "logs.py").write_text(LOGGER)
    (project / "retainlint.toml").write_text('min-severity = "debug"\n')
    r = run_info(project)
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"retainlint: error: {project / 'retainlint.toml'}: [tool.retainlint] min-severity: "
        "expected one of \"error\", \"warning\", \"info\", got 'debug'"], r.stderr


@pytest.mark.parametrize("fmt", ["json", "sarif", "github", "json-lines", "junit", "gitlab", "pylint"])
def test_machine_formats_leave_it_out(project, fmt):
    (project / "warn.py").write_text(WARNING)
    (project / "logs.py").write_text(LOGGER)
    r = run_info(project, "--output-format", fmt)
    assert r.returncode == 1
    assert "RL610" in r.stdout and "RL801" not in r.stdout and "logs.py" not in r.stdout
    assert "not shown" not in r.stdout + r.stderr  # for programs: the output alone
    shown = run_info(project, "--output-format", fmt, "--min-severity", "info")
    assert "RL801" in shown.stdout


def test_statistics_count_what_is_shown(project):
    (project / "warn.py").write_text(WARNING)
    (project / "logs.py").write_text(LOGGER)
    (project / "more.py").write_text(LOGGER)
    r = run_info(project, "--statistics")
    assert [line.split()[:2] for line in r.stdout.splitlines()[:-1]] == [["1", "RL610"]], r.stdout
    assert r.stderr.splitlines()[-1] == "note: 2 info findings not shown (--min-severity info shows them)"
    j = run_info(project, "--statistics", "--output-format", "json")
    assert [(row["code"], row["count"]) for row in json.loads(j.stdout)] == [("RL610", 1)]
    every = run_info(project, "--statistics", "--output-format", "json", "--min-severity", "info")
    assert [(row["code"], row["count"]) for row in json.loads(every.stdout)] == [("RL801", 2), ("RL610", 1)]


def test_a_higher_floor_counts_the_warnings_too(project):
    (project / "warn.py").write_text(WARNING)
    (project / "logs.py").write_text(LOGGER)
    r = run_info(project, "--min-severity", "error", "--output-format", "concise")
    assert r.returncode == 0 and r.stdout.strip() == "All checks passed!"
    assert r.stderr.splitlines() == [
        "note: 2 findings not shown (1 warning, 1 info; --min-severity info shows them)"]


def test_rule_page_says_the_level_and_what_it_means(project):
    r = subprocess.run([sys.executable, "-m", "retainlint", "rule", "RL610"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0
    assert "\nSeverity: warning (real, but bounded or unproven). Fix: " in r.stdout, r.stdout
    info = subprocess.run([sys.executable, str(project.parent / "harness" / "run.py"), "RL801", "--",
                           "rule", "RL801"], capture_output=True, text=True, timeout=60)
    assert ("\nSeverity: info (real but negligible; shown only with --min-severity info). Fix: "
            in info.stdout), info.stdout
