"""`python -m retainlint.scaffold` starts a rule that works: the registry finds it, its
examples hold, and `retainlint check` reports its fixture's expected lines."""

import json
import subprocess
import sys


def test_a_scaffolded_rule_runs_end_to_end(tmp_path):
    done = subprocess.run([sys.executable, "-m", "retainlint.scaffold", "RL990", "pinned-by-call",
                           "--call", "mylib.keep", "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rules" / "rl990_pinned_by_call.py").exists()
    probe = f"""
import json, sys
import retainlint.rules as rules, retainlint.rules.prefilters as prefilters
rules.__path__.append({str(tmp_path / 'rules')!r})
prefilters.__path__.append({str(tmp_path / 'rules' / 'prefilters')!r})
from retainlint.core.config import Settings
from retainlint.engine.lint import lint_bytes
from retainlint.engine.registry import lookup
[rule] = lookup("RL990")
assert rule.name == "pinned-by-call"
for example in rule.invalid:
    found = lint_bytes("x.py", example.code.encode(), [rule], Settings()).findings
    assert [f.start.line for f in found] == list(example.lines), found
for code in rule.valid:
    assert not lint_bytes("x.py", code.encode(), [rule], Settings()).findings
from retainlint.cli import main
main(["check", "--no-cache", "--select", "RL990", "--output-format", "json", sys.argv[1]])
"""
    fixture = tmp_path / "fixtures" / "RL990" / "basic.py"
    run = subprocess.run([sys.executable, "-c", probe, str(fixture)], capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1, run.stderr
    assert [(f["code"], f["location"]["row"]) for f in json.loads(run.stdout)] == [
        ("RL990", 6), ("RL990", 7)]
    expected = [i for i, line in enumerate(fixture.read_text().splitlines(), 1) if "expect: RL990" in line]
    assert expected == [6, 7]


def test_scaffold_refuses_to_overwrite_or_bad_names(tmp_path):
    args = [sys.executable, "-m", "retainlint.scaffold", "RL990", "pinned-by-call", "--call",
            "mylib.keep", "--root", str(tmp_path)]
    assert subprocess.run(args, capture_output=True, timeout=60).returncode == 0
    again = subprocess.run(args, capture_output=True, text=True, timeout=60)
    assert again.returncode == 2 and "already exists" in again.stderr
    bad = subprocess.run([*args[:3], "RL9", "x", "--call", "a.b", "--root", str(tmp_path)],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.startswith("retainlint.scaffold: error: RL9:")
