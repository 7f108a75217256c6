"""The report as users and their tools read it, through the real CLI: json-lines, junit,
gitlab, pylint, --output-file; the text report's first lines, severity in words, the
rule's advice once; --show-fixes, fix counts that add up, the --diff hint; `rule` piped."""

import json
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import BUGGY, check_here

CROSS = Path(__file__).resolve().parents[2] / "fixtures" / "RL101" / "cross_file"


def test_json_lines_one_object_per_finding(tree):
    root = tree({"a.py": BUGGY, "b.py": BUGGY})
    r = check_here("check", "--output-format", "json-lines", cwd=root)
    assert r.returncode == 1
    rows = [json.loads(line) for line in r.stdout.splitlines()]
    assert [(x["filename"], x["code"], x["location"]["row"]) for x in rows] == [
        ("a.py", "RL501", 7), ("b.py", "RL501", 7)]


def test_junit_is_xml_with_a_failure_per_finding(tree):
    root = tree({"a.py": BUGGY, "sub/b.py": BUGGY})
    r = check_here("check", "--output-format", "junit", cwd=root)
    assert r.returncode == 1
    suites = ET.fromstring(r.stdout)
    assert suites.get("tests") == "2" and suites.get("failures") == "2"
    cases = suites.findall("./testsuite/testcase")
    assert [(c.get("classname"), c.get("line")) for c in cases] == [("a.py", "7"), ("sub/b.py", "7")]
    assert cases[0].get("name") == "retainlint.RL501.discarded-hook-handle"
    assert cases[0].find("failure").text.startswith("line 7, col 9, handle returned by")
    clean = check_here("check", "--output-format", "junit", "c.py", cwd=tree({"c.py": "x = 1\n"}))
    assert clean.returncode == 0 and ET.fromstring(clean.stdout).get("failures") == "0"


def test_gitlab_code_quality(tree):
    root = tree({"a.py": BUGGY})
    r = check_here("check", "--output-format", "gitlab", cwd=root)
    [issue] = json.loads(r.stdout)
    assert issue["check_name"] == "RL501" and issue["severity"] == "major"
    assert issue["location"] == {"path": "a.py", "lines": {"begin": 7, "end": 7}}
    assert len(issue["fingerprint"]) == 32
    (root / "a.py").write_text("# moved\n" + BUGGY)  # the fingerprint does not follow line numbers
    moved = json.loads(check_here("check", "--output-format", "gitlab", cwd=root).stdout)[0]
    assert moved["fingerprint"] == issue["fingerprint"] and moved["location"]["lines"]["begin"] == 8


def test_pylint_and_output_file(tree):
    root = tree({"a.py": BUGGY})
    r = check_here("check", "--output-format", "pylint", cwd=root)
    assert r.stdout.startswith("a.py:7: [RL501(discarded-hook-handle)] handle returned by")
    r = check_here("check", "--output-format", "pylint", "--output-file", "report.txt", cwd=root)
    assert r.returncode == 1 and r.stdout == ""
    assert (root / "report.txt").read_text().startswith("a.py:7: [RL501(discarded-hook-handle)]")
    r = check_here("check", "-o", "missing/report.txt", cwd=root)
    assert r.returncode == 2 and "cannot write the report" in r.stderr


def test_full_text_names_the_rule_says_the_severity_and_explains_once(tree):
    root = tree({"a.py": BUGGY, "b.py": BUGGY})
    r = check_here("check", cwd=root)
    lines = r.stdout.splitlines()
    heads = [line for line in lines if line.startswith(("a.py:", "b.py:"))]
    assert heads == [
        "a.py:7:9: RL501 discarded-hook-handle [error] handle returned by `register_bytecode_hook` is discarded",
        "b.py:7:9: RL501 discarded-hook-handle [error] handle returned by `register_bytecode_hook` is discarded",
    ]  # no `[*]`: RL501's fix is unsafe, plain --fix leaves it
    # The rest of the message on the next line; the rule's advice once for both findings.
    assert lines[1].startswith("  the global hook registry keeps the hook `self.hook`")
    assert sum(line.startswith("  about the rule: ") for line in lines) == 1
    assert "`retainlint rule discarded-hook-handle` explains it" in r.stdout
    # --no-show-source: one line each, as concise.
    short = check_here("check", "--no-show-source", cwd=root)
    assert short.stdout.splitlines()[0] == \
        "a.py:7:9: RL501 handle returned by `register_bytecode_hook` is discarded  [discarded-hook-handle]"


def test_fix_counts_add_up_and_show_fixes(tmp_path):
    work = tmp_path / "p"
    shutil.copytree(CROSS, work)
    # One unsafe fix (the cached function gets a facade) resolves all three findings.
    r = check_here("check", "--diff", cwd=work)
    assert r.returncode == 0 and r.stdout == ""
    assert "No safe fixes; 1 unsafe fix available: see them with --diff --unsafe-fixes." in r.stderr
    r = check_here("check", "--fix", "--unsafe-fixes", "--show-fixes", cwd=work)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Found 3 findings (3 fixed by 1 fix, 0 remaining)." in r.stdout
    assert "Fixed 1 finding:\n- pkg/utils/introspect.py:\n    1 x RL101 (cache-key-bound-method)" in r.stdout


def test_statistics_marks_only_safe_fixes(tmp_path):
    work = tmp_path / "p"
    shutil.copytree(CROSS, work)
    r = check_here("check", "--statistics", cwd=work)
    assert r.stdout.splitlines()[0].split() == ["3", "RL101", "[", "]", "cache-key-bound-method"]


def test_rule_piped_is_plain_markdown():
    r = check_here("rule", "--all")
    assert r.returncode == 0
    assert r.stdout.startswith("# RL101 cache-key-bound-method\n")
    assert max(len(line) for line in r.stdout.splitlines()) < 300  # no padding to the terminal width
    assert len(r.stdout) < 200_000


RL201 = Path(__file__).resolve().parents[2] / "fixtures" / "RL201" / "aliased_import.py"
SAFE = Path(__file__).resolve().parents[2] / "fixtures" / "RL301" / "key_bare_annotation.py"


def test_full_headline_keeps_a_colon_inside_parentheses(tree):
    root = tree({"a.py": RL201.read_text()})
    r = check_here("check", "a.py", cwd=root)
    lines = r.stdout.splitlines()
    [head] = [line for line in lines if line.startswith("a.py:15:")] or [r.stdout + r.stderr]
    assert head.endswith("`cache` (a heavy object: a model or tensor) is passed to `wr.finalize`"), head
    assert lines[lines.index(head) + 1] == \
        "  the finalizer registry keeps it alive as long as `self` lives", r.stdout


def summary_line(r):
    return r.stdout.rstrip().splitlines()[-1]


def test_summary_counts_unsafe_fixes_without_reading_as_more_findings(tree):
    # b.py: one safe fix (RL301 makes the dict weak-keyed).
    root = tree({"a.py": RL201.read_text(), "b.py": SAFE.read_text(), "clean.py": "x = 1\n"})
    # Only unsafe fixes: both findings, fixable only when unsafe fixes are allowed.
    unsafe_only = check_here("check", "a.py", cwd=root)
    assert summary_line(unsafe_only) == "Found 2 findings (2 fixable with --fix --unsafe-fixes)."
    # Safe and unsafe: the unsafe count is of the same findings, on top of the safe ones.
    both = check_here("check", "a.py", "b.py", cwd=root)
    assert summary_line(both) == \
        "Found 3 findings (1 fixable with --fix, 2 more with --fix --unsafe-fixes)."
    safe_only = check_here("check", "b.py", cwd=root)
    assert summary_line(safe_only) == "Found 1 finding (1 fixable with --fix)."
    # Unsafe fixes allowed: --fix applies them all; the summary says how many are unsafe.
    allowed = check_here("check", "a.py", "b.py", "--unsafe-fixes", cwd=root)
    assert summary_line(allowed) == "Found 3 findings (3 fixable with --fix, 2 of them unsafe)."
    allowed_unsafe_only = check_here("check", "a.py", "--unsafe-fixes", cwd=root)
    assert summary_line(allowed_unsafe_only) == "Found 2 findings (2 fixable with --fix, all unsafe)."
    assert summary_line(check_here("check", "clean.py", cwd=root)) == "All checks passed!"


def test_concise_is_one_short_line_a_finding(tree):
    root = tree({"a.py": RL201.read_text(), "b.py": SAFE.read_text()})
    r = check_here("check", "--output-format", "concise", cwd=root)
    lines = r.stdout.rstrip().splitlines()[:-1]
    assert lines == [
        "a.py:15:36: RL201 `cache` (a heavy object: a model or tensor) is passed to "
        "`wr.finalize`  [finalize-pins-argument]",
        "a.py:16:41: RL201 `self.model` (a heavy object: a model or tensor) is passed to "
        "`wr.finalize`  [finalize-pins-argument]",
        "b.py:5:1: RL301 [*] `_order` (module global) keeps `torch.nn.Module` keys alive  "
        "[strong-module-keyed-cache]",
    ], r.stdout


FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.mark.slow  # the whole fixtures folder as one project
def test_concise_lines_fit_160_characters_besides_the_path():
    r = check_here("check", "--output-format", "concise", "--no-cache", str(FIXTURES))
    lines = r.stdout.rstrip().splitlines()[:-1]
    assert len(lines) > 300, r.stdout[-2000:] + r.stderr[-2000:]
    too_long = []
    for line in lines:
        if line.startswith("  consequence: "):  # the finding's consequence, on a line of its own
            if len(line) > 160:
                too_long.append(line)
            continue
        path = line[:line.index(".py:") + 3] if ".py:" in line else line[:line.index(".ipynb:") + 6]
        if len(line) - len(path) > 160:
            too_long.append(line)
    assert too_long == []
