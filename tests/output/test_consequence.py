"""A finding's consequence (what stays alive, held by what, for how long, how it grows,
and where that is seen) in the reports: JSON, SARIF, GitHub annotations, the result
cache, and back from JSON (the Action reads the CLI's JSON).

Rules of the catalog do not attach consequences yet, so the runs through the CLI start it
in a subprocess where RL801 (`Rule.report`) and RL306 (`Rule.report_at`, from the
retention model) attach one to each finding: the rest of the run is the product's own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import check_here
from retainlint.core.finding import Consequence, Finding, Position, Related, Severity
from retainlint.engine.cache import pack, unpack
from retainlint.output.github import github_line
from retainlint.output.json_report import from_json, to_json
from retainlint.output.sarif import sarif

ROOT = Path(__file__).resolve().parents[2]
LOGGER = ('import logging\n\n\nclass Session:\n    def __init__(self):\n'
          '        self.log = logging.getLogger(f"session.{id(self)}")\n')  # RL801 at 6:20
GROWS = "_pending = {}\n\n\ndef submit(request_id, job):\n    _pending[request_id] = job\n"  # RL306 at 5:5
WARNING = (ROOT / "fixtures" / "RL610" / "holds_buffers.py").read_text()  # RL610: no consequence

# `python harness.py -- ARGS...`: `retainlint ARGS...`, RL801 and RL306 attaching a
# consequence (evidence: line 1 of the file reported) to every finding.
HARNESS = textwrap.dedent('''\
    import sys

    from retainlint.cli import main
    from retainlint.core.finding import Consequence, Position, Related
    from retainlint.engine.registry import all_rules


    def with_consequence(original):
        def report(self, *a, **kw):
            kw["consequence"] = Consequence(
                kept=f"every `Job` submitted ({self.code})", holder="`_pending` (module-level)",
                lifetime="the process", growth="one entry per request",
                evidence=(Related("bound here", self.ctx.path, Position(1, 1), Position(1, 9)),))
            return original(self, *a, **kw)
        return report


    for rule in all_rules():
        if rule.code in ("RL801", "RL306"):
            rule.report = with_consequence(rule.report)
            rule.report_at = with_consequence(rule.report_at)
    main(args=sys.argv[2:], prog_name="retainlint")
''')


@pytest.fixture
def project(tmp_path):
    (tmp_path / "harness").mkdir()
    (tmp_path / "harness" / "run.py").write_text(HARNESS)
    root = tmp_path / "p"
    root.mkdir()
    (root / "logs.py").write_text(LOGGER)
    (root / "grows.py").write_text(GROWS)
    (root / "warn.py").write_text(WARNING)
    return root


def run_with(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`retainlint check -j 1 ARGS` in `root`, RL801 and RL306 attaching consequences
    (one process, so that the rules changed are the ones that run)."""
    env = {**os.environ, "NO_COLOR": "1"}
    env.pop("FORCE_COLOR", None)
    return subprocess.run(
        [sys.executable, str(root.parent / "harness" / "run.py"), "--", "check", "-j", "1",
         "--select", "RL306,RL610,RL801", *args],
        cwd=root, env=env, capture_output=True, text=True, timeout=120)


def by_code(findings: list[dict]) -> dict[str, dict]:
    return {f["code"]: f for f in findings}


def expected(path: str, code: str) -> dict:
    return {
        "kept": f"every `Job` submitted ({code})", "holder": "`_pending` (module-level)",
        "lifetime": "the process", "growth": "one entry per request",
        "evidence": [{"message": "bound here", "filename": path,
                      "location": {"row": 1, "column": 1}, "end_location": {"row": 1, "column": 9}}],
    }


def test_json_carries_the_consequence_of_report_and_report_at(project):
    r = run_with(project, "--no-cache", "--output-format", "json")
    assert r.returncode == 1, r.stderr
    found = by_code(json.loads(r.stdout))
    assert (found["RL801"]["filename"], found["RL801"]["location"]["row"]) == ("logs.py", 6)
    assert found["RL801"]["consequence"] == expected("logs.py", "RL801")
    assert (found["RL306"]["filename"], found["RL306"]["location"]["row"]) == ("grows.py", 5)
    assert found["RL306"]["consequence"] == expected("grows.py", "RL306")
    assert found["RL610"]["consequence"] is None
    lines = run_with(project, "--no-cache", "--output-format", "json-lines")
    assert by_code([json.loads(line) for line in lines.stdout.splitlines()])["RL306"]["consequence"] \
        == expected("grows.py", "RL306")


def test_a_rule_that_sets_none_gives_null(tree):
    root = tree({"warn.py": WARNING})
    r = check_here("check", "--no-cache", "--output-format", "json", cwd=root)
    [finding] = json.loads(r.stdout)
    assert finding["code"] == "RL610" and finding["consequence"] is None


def test_sarif_keeps_it_in_the_result_properties(project):
    r = run_with(project, "--no-cache", "--output-format", "sarif")
    results = {res["ruleId"]: res for res in json.loads(r.stdout)["runs"][0]["results"]}
    consequence = results["RL306"]["properties"]["consequence"]
    assert {k: consequence[k] for k in ("kept", "holder", "lifetime", "growth")} == {
        "kept": "every `Job` submitted (RL306)", "holder": "`_pending` (module-level)",
        "lifetime": "the process", "growth": "one entry per request"}
    [evidence] = consequence["evidence"]
    assert evidence["message"] == {"text": "bound here"}
    assert evidence["physicalLocation"] == {
        "artifactLocation": {"uri": "grows.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 1, "startColumn": 1, "endLine": 1, "endColumn": 9}}
    assert "properties" not in results["RL610"]


def test_github_annotation_says_what_is_kept_and_for_how_long(project):
    r = run_with(project, "--no-cache", "--output-format", "github")
    [grows] = [line for line in r.stdout.splitlines() if "RL306" in line]
    assert grows.endswith(" — keeps every `Job` submitted (RL306) for the process"), grows
    [warn] = [line for line in r.stdout.splitlines() if "RL610" in line]
    assert " — keeps " not in warn


def test_the_cache_brings_it_back(project, tmp_path):
    """A run answered from the cache (here by the plain CLI, whose RL801 attaches nothing
    and whose RL306 attaches its own: were the files linted again, the harness's
    consequences would be gone) reports them still."""
    cache = tmp_path / "cache"
    # Installed packages are not read: the two processes' sys.path differ (the harness's
    # folder), and what was read from them is keyed by it.
    first = run_with(project, "--cache-dir", str(cache), "--no-installed-types", "--output-format", "json")
    assert by_code(json.loads(first.stdout))["RL306"]["consequence"] == expected("grows.py", "RL306")
    again = check_here("check", "-j", "1", "--select", "RL306,RL610,RL801", "--cache-dir", str(cache),
                    "--no-installed-types", "--output-format", "json", cwd=project)
    assert json.loads(again.stdout) == json.loads(first.stdout)
    relinted = check_here("check", "-j", "1", "--select", "RL306,RL610,RL801", "--no-cache",
                       "--output-format", "json", cwd=project)
    relinted_codes = by_code(json.loads(relinted.stdout))
    assert relinted_codes["RL801"]["consequence"] is None
    assert relinted_codes["RL306"]["consequence"] != expected("grows.py", "RL306")


def _finding(consequence: Consequence | None) -> Finding:
    return Finding("RL306", "process-container-grows", "`_pending` grows", "a.py", Position(5, 5),
                   Position(5, 13), Severity.WARNING, consequence=consequence)


CONSEQUENCE = Consequence(kept="every `Job` submitted", holder="`_pending` (module-level)",
                          lifetime="the process", growth="",
                          evidence=(Related("added to here", "b.py", Position(2, 3), Position(2, 9)),))


def test_json_reads_back_into_the_same_finding():
    """The Action runs the CLI once and builds SARIF and annotations from its JSON."""
    [back] = from_json(json.loads(json.dumps(to_json([_finding(CONSEQUENCE)]))))
    assert back.consequence == CONSEQUENCE
    [none] = from_json(to_json([_finding(None)]))
    assert none.consequence is None
    assert unpack(pack(_finding(CONSEQUENCE))) == _finding(CONSEQUENCE)


def test_github_annotation_stays_short(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    long = Consequence(kept="x" * 5000, holder="h", lifetime="y" * 5000, growth="", evidence=())
    line = github_line(_finding(long), str(tmp_path))
    assert len(line) < 700 and line.endswith("…")
    message = line.split("::", 2)[2]
    assert message.startswith("`_pending` grows — keeps xxx")


def test_sarif_evidence_is_relative_to_the_root(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    log = sarif([_finding(CONSEQUENCE)], str(tmp_path))
    [result] = log["runs"][0]["results"]
    assert result["properties"]["consequence"]["growth"] == ""
    assert result["properties"]["consequence"]["evidence"][0]["physicalLocation"]["artifactLocation"] \
        == {"uri": "b.py", "uriBaseId": "%SRCROOT%"}
