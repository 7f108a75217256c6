"""A finding's consequence (what stays alive, held by what, for how long, how it grows,
and where that is seen) in the reports: JSON, SARIF, GitHub annotations, the result
cache, and back from JSON (the Action reads the CLI's JSON). Every check states one: RL801
reports through `Rule.report`, RL306 from the retention model through `Rule.report_at`,
and RL610's evidence is its related location."""

from __future__ import annotations

import json
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
RELEASE = (ROOT / "fixtures" / "RL610" / "holds_buffers.py").read_text()  # RL610 at 22:9

EXPECTED = {
    "RL801": {"kept": 'each logger named by `f"session.{id(self)}"`', "holder": "the logging manager's `loggerDict`",
              "lifetime": "the process", "growth": "one logger per distinct value of `id(self)`", "evidence": []},
    "RL306": {"kept": "`job` of every `submit()` call", "holder": "`_pending` (module-level)",
              "lifetime": "the process", "growth": "one entry per distinct `request_id`", "evidence": []},
    "RL610": {"kept": "the heavy object from `FfnRunner(...)`", "holder": "`self.runner`",
              "lifetime": "as long as the `FfnExecutor` instance, after `close()`", "growth": "",
              "evidence": [{"message": "`self.runner` is assigned a heavy object here", "filename": "warn.py",
                            "location": {"row": 19, "column": 23}, "end_location": {"row": 19, "column": 48}}]},
}


@pytest.fixture
def project(tree):
    return tree({"logs.py": LOGGER, "grows.py": GROWS, "warn.py": RELEASE})


def run(root: Path, *args: str):
    return check_here("check", "-j", "1", "--select", "RL306,RL610,RL801", *args, cwd=root)


def by_code(findings: list[dict]) -> dict[str, dict]:
    return {f["code"]: f for f in findings}


def test_json_carries_the_consequence_of_every_finding(project):
    r = run(project, "--no-cache", "--output-format", "json")
    assert r.returncode == 1, r.stderr
    found = by_code(json.loads(r.stdout))
    assert {code: (f["filename"], f["location"]["row"]) for code, f in found.items()} == {
        "RL801": ("logs.py", 6), "RL306": ("grows.py", 5), "RL610": ("warn.py", 22)}
    assert {code: f["consequence"] for code, f in found.items()} == EXPECTED
    # the evidence of a check that names none of its own is its related locations
    assert found["RL610"]["consequence"]["evidence"] == found["RL610"]["related"]
    lines = run(project, "--no-cache", "--output-format", "json-lines")
    assert {f["code"]: f["consequence"] for f in map(json.loads, lines.stdout.splitlines())} == EXPECTED


def test_sarif_keeps_it_in_the_result_properties(project):
    r = run(project, "--no-cache", "--output-format", "sarif")
    results = {res["ruleId"]: res for res in json.loads(r.stdout)["runs"][0]["results"]}
    consequence = results["RL306"]["properties"]["consequence"]
    assert {k: consequence[k] for k in ("kept", "holder", "lifetime", "growth")} == {
        k: EXPECTED["RL306"][k] for k in ("kept", "holder", "lifetime", "growth")}
    assert consequence["evidence"] == []
    [evidence] = results["RL610"]["properties"]["consequence"]["evidence"]
    assert evidence["message"] == {"text": "`self.runner` is assigned a heavy object here"}
    assert evidence["physicalLocation"] == {
        "artifactLocation": {"uri": "warn.py", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 19, "startColumn": 23, "endLine": 19, "endColumn": 48}}


def test_github_annotation_says_what_is_kept_and_for_how_long(project):
    r = run(project, "--no-cache", "--output-format", "github")
    [grows] = [line for line in r.stdout.splitlines() if "RL306" in line]
    assert grows.endswith(" — keeps `job` of every `submit()` call for the process"), grows
    [release] = [line for line in r.stdout.splitlines() if "RL610" in line]
    assert " — keeps the heavy object from `FfnRunner(...)` for as long as the `FfnExecutor` instance, " \
           "after `close()`" in release


def test_the_cache_brings_it_back(project, tmp_path):
    """A run answered from the result cache reports the same consequences."""
    cache = tmp_path / "cache"
    first = run(project, "--cache-dir", str(cache), "--output-format", "json")
    assert {f["code"]: f["consequence"] for f in json.loads(first.stdout)} == EXPECTED
    again = run(project, "--cache-dir", str(cache), "--output-format", "json")
    assert json.loads(again.stdout) == json.loads(first.stdout)


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
