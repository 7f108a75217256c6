"""A pull request's configuration change against what the base revision's configuration
checked, on real git repositories with the Action run as action.yml runs it: turning a
rule off on a file, or no longer checking a file, fails the step with an error naming the
configuration file, unless the workflow sets allow-config-changes."""

import json
import sys
from pathlib import Path

import pytest

from conftest import BUGGY, run_cli
from test_action import ROOT, commands, git, pr_checkout, run_composite, run_script

BASE_RUN_LOG = "retainlint: configuration changed in this pull request"
ALLOW_HINT = "; set allow-config-changes: true to accept"
BASELINE = "retainlint-baseline.json"
EMPTY_BASELINE = json.dumps({"format": "retainlint-baseline/1", "findings": []}) + "\n"


def baseline_of(tmp_path, files):
    """The baseline `retainlint check --write-baseline` writes for `files` (path -> text)."""
    tree = tmp_path / "baseline-source"
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    r = run_cli("check", "--no-cache", "--write-baseline", BASELINE, ".", cwd=tree)
    assert r.returncode == 0, r.stdout + r.stderr
    data = (tree / BASELINE).read_text()
    assert len(json.loads(data)["findings"]) == 1  # old.py's RL501
    return data


def config_errors(stdout):
    return [c for c in commands(stdout) if c.startswith("::error") and ",line=" not in c]


# name -> (base files, PR files, args, the configuration file named, what the error says)
TURNING_OFF = {
    "select-nothing": ({}, {"retainlint.toml": "select = []\n"}, "", "retainlint.toml",
                       "retainlint.toml in this pull request turns off RL"),
    "ignore-all": ({}, {"retainlint.toml": 'ignore = ["ALL"]\n'}, "", "retainlint.toml",
                   "on 2 files (e.g. old.py)"),
    "exclude-everything": ({}, {"retainlint.toml": 'exclude = ["*"]\n'}, "", "retainlint.toml",
                           "retainlint.toml in this pull request stops checking 2 files (e.g. old.py)"),
    "nested-select": ({}, {"sub/retainlint.toml": 'select = ["RL9"]\n'}, "", "sub/retainlint.toml",
                      "on 1 file (e.g. sub/leaky.py)"),
    "per-file-ignores": ({}, {"retainlint.toml": '[per-file-ignores]\n"old.py" = ["RL501"]\n'}, "",
                         "retainlint.toml", "turns off RL501 on 1 file (e.g. old.py)"),
    "pyproject-table": ({"pyproject.toml": '[project]\nname = "proj"\n'},
                        {"pyproject.toml": '[project]\nname = "proj"\n\n[tool.retainlint]\nignore = ["RL1"]\n'},
                        "", "pyproject.toml", "pyproject.toml in this pull request turns off RL101"),
    "deleted-nested": ({"retainlint.toml": 'ignore = ["RL5"]\n', "sub/retainlint.toml": 'select = ["ALL"]\n'},
                       {"sub/retainlint.toml": None}, "", "sub/retainlint.toml",
                       "turns off RL501, RL502"),
}


def _checkout(tmp_path, base_extra, pr_files):
    """pr_checkout with `old.py` and `sub/leaky.py` (an RL501 each) in the base; a PR file
    given as None is deleted by the pull request."""
    base = {"old.py": BUGGY, "sub/leaky.py": BUGGY, **base_extra}
    written = {k: v for k, v in pr_files.items() if v is not None}
    deleted = [k for k, v in pr_files.items() if v is None]
    run = pr_checkout(tmp_path, base, written or {"README.md": "proj\n"})
    if deleted:  # a second commit of the pull request, merged again as GitHub does
        workspace = run["workspace"]
        git(workspace, "checkout", "-q", "feature")
        git(workspace, "rm", "-q", *deleted)
        git(workspace, "commit", "-q", "-m", "delete")
        git(workspace, "checkout", "-q", "--detach", "origin/main")
        git(workspace, "merge", "-q", "--no-ff", "-m", "Merge feature into main", "feature")
    return run


@pytest.mark.parametrize("case", sorted(TURNING_OFF))
def test_a_configuration_change_that_turns_checks_off_fails_naming_the_file(tmp_path, case):
    base_extra, pr_files, args, config, says = TURNING_OFF[case]
    run = _checkout(tmp_path, base_extra, pr_files)
    r = run_script(run["env"], args=args)
    assert r.returncode == 1, r.stdout + r.stderr
    (error,) = config_errors(r.stdout)
    assert error.startswith(f"::error file={config},title=retainlint::{config} in this pull request "), error
    assert says in error and error.endswith(ALLOW_HINT), error
    assert BASE_RUN_LOG in r.stdout

    allowed = run_script(run["env"], args=args, allow_config_changes="true")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert config_errors(allowed.stdout) == []
    (said,) = [c for c in commands(allowed.stdout) if c.startswith(f"::warning file={config},")]
    assert says in said and said.endswith("(allow-config-changes is on)"), said


def test_the_error_lists_the_rules_lost_and_the_files_dropped(tmp_path):
    run = _checkout(tmp_path, {}, {"retainlint.toml": 'select = ["RL5"]\nexclude = ["sub"]\n'})
    r = run_script(run["env"])
    assert r.returncode == 1, r.stdout + r.stderr
    (error,) = config_errors(r.stdout)
    assert "turns off RL101, RL102, " in error and "RL501" not in error.split("turns off")[1].split(" on ")[0]
    assert error.endswith(" on 1 file (e.g. old.py) and stops checking 1 file (e.g. sub/leaky.py)" + ALLOW_HINT)


def test_a_baseline_gaining_an_entry_fails(tmp_path):
    accepted = baseline_of(tmp_path, {"old.py": BUGGY})
    run = _checkout(tmp_path, {BASELINE: EMPTY_BASELINE}, {BASELINE: accepted})
    args = f"--baseline {BASELINE}"
    r = run_script(run["env"], args=args)
    assert r.returncode == 1, r.stdout + r.stderr
    (error,) = config_errors(r.stdout)
    assert error == (f"::error file={BASELINE},title=retainlint::{BASELINE} in this pull request accepts "
                     f"1 more finding (e.g. RL501 in old.py){ALLOW_HINT}")
    allowed = run_script(run["env"], args=args, allow_config_changes="true")
    assert allowed.returncode == 0, allowed.stdout + allowed.stderr
    assert config_errors(allowed.stdout) == []


def test_a_baseline_losing_an_entry_passes(tmp_path):
    accepted = baseline_of(tmp_path, {"old.py": BUGGY})
    run = _checkout(tmp_path, {BASELINE: accepted}, {BASELINE: EMPTY_BASELINE, "old.py": "x = 1\n"})
    r = run_script(run["env"], args=f"--baseline {BASELINE}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert config_errors(r.stdout) == [] and BASE_RUN_LOG in r.stdout


def test_allow_config_changes_input_reaches_the_script(tmp_path):
    run = _checkout(tmp_path, {}, {"retainlint.toml": "select = []\n"})
    (check,), _ = run_composite(run["env"], ROOT, python=sys.executable)
    assert check.returncode == 1 and len(config_errors(check.stdout)) == 1, check.stdout + check.stderr
    (check,), _ = run_composite(run["env"], ROOT, {"allow-config-changes": "true"}, python=sys.executable)
    assert check.returncode == 0 and config_errors(check.stdout) == [], check.stdout + check.stderr


@pytest.mark.parametrize("base_extra, pr_files", [
    ({"retainlint.toml": 'select = ["RL5"]\n'}, {"retainlint.toml": 'select = ["RL5", "RL1"]\n'}),
    ({"pyproject.toml": '[project]\nname = "proj"\nversion = "1"\n\n[tool.retainlint]\nignore = ["RL2"]\n'},
     {"pyproject.toml": '[project]\nname = "proj"\nversion = "2"\n\n[tool.retainlint]\nignore = ["RL2"]\n'}),
], ids=["adds-rules", "unrelated-pyproject-keys"])
def test_a_configuration_change_that_checks_as_much_passes(tmp_path, base_extra, pr_files):
    run = _checkout(tmp_path, base_extra, pr_files)
    r = run_script(run["env"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert BASE_RUN_LOG in r.stdout  # compared, and found nothing turned off
    assert config_errors(r.stdout) == []


def test_without_a_configuration_change_the_check_runs_once(tmp_path):
    lines = BUGGY.splitlines(keepends=True)
    run = _checkout(tmp_path, {"retainlint.toml": 'ignore = ["RL2"]\n'},
                    {"old.py": "".join(lines[:7] + ["        x = 1\n"] + lines[7:])})
    r = run_script(run["env"])
    assert r.returncode == 0, r.stdout + r.stderr
    assert BASE_RUN_LOG not in r.stdout and config_errors(r.stdout) == []
    assert "retainlint: 0 findings on changed lines" in r.stdout


def test_changed_since_keeps_an_unchecked_changed_file(tmp_path):
    """A file the change makes uncheckable (a 1,001-operand expression) is reported as
    RL000 at 1:1, a line the change did not touch: --changed-since keeps it."""
    git(tmp_path, "init", "-q")
    (tmp_path / "a.py").write_text("x = 1\n" + BUGGY)
    (tmp_path / "b.py").write_text("y = 1\n")
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "base")
    chain = "FLAG = " + " and ".join(["x"] * 1001) + "\n"
    (tmp_path / "a.py").write_text("x = 1\n" + BUGGY + chain)
    r = run_cli("check", "--no-cache", "--changed-since", "HEAD", "--output-format", "json", ".", cwd=tmp_path)
    assert r.returncode == 1, r.stdout + r.stderr
    found = [(f["code"], Path(f["filename"]).name, f["location"]["row"]) for f in json.loads(r.stdout)]
    assert found == [("RL000", "a.py", 1)]


def test_run_summary_says_which_rules_ran_on_each_file(tmp_path):
    (tmp_path / "retainlint.toml").write_text('select = ["RL5"]\n[per-file-ignores]\n"b.py" = ["RL501"]\n')
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "b.py").write_text("y = 1\n")
    r = run_cli("check", "--no-cache", "--run-summary", "run.json", "a.py", "b.py", cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    checked = json.loads((tmp_path / "run.json").read_text())["checked"]
    by_file = {f: group["rules"] for group in checked for f in group["files"]}
    assert set(by_file) == {"a.py", "b.py"}
    assert "RL501" in by_file["a.py"] and "RL501" not in by_file["b.py"]
    assert set(by_file["a.py"]) - set(by_file["b.py"]) == {"RL501"}
    assert len(checked) == 2

