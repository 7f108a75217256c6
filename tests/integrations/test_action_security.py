"""The Action against a hostile or broken pull request, on a real checkout: nothing from
the checkout runs, a check that crashes fails the step, odd file names stay text, and a
deleted cleanup line is reported."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from markdown_it import MarkdownIt

from conftest import BUGGY
from retainlint.engine.registry import catalog
from retainlint.engine.workers import POOL_THRESHOLD
from test_action import NEW_LINE, ROOT, commands, git, outputs, pr_checkout, run_composite, run_script

_LINES = BUGGY.splitlines(keepends=True)
WITH_NEW_HOOK = "".join(_LINES[:7] + [NEW_LINE] + _LINES[7:])  # the PR's one new finding, old.py:8
NEW_HOOK_ANNOTATION = "::error file=old.py,line=8,endLine=8,col=9,endColumn=77,title=retainlint RL501"


def planted(markers):
    """Modules a pull request adds to shadow what the Action runs with `python -m`: each
    leaves a file in `markers` when imported; the fake retainlint reports 0 findings."""
    def mark(name):
        return f"open({str(markers / name)!r}, 'w').write('ran')\n"
    return {
        "json.py": mark("json"),
        "retainlint/__init__.py": mark("retainlint"),
        "retainlint/__main__.py": "print('[]')\n",
        "retainlint/cli.py": "print('[]')\n",
        "retainlint/integrations/action.py": "print('retainlint: 0 findings; see the job summary')\n",
        "venv/__init__.py": mark("venv"),
        "venv/__main__.py": "",
        "pip/__init__.py": mark("pip"),
        "pip/__main__.py": "",
    }


def hostile_pr(tmp_path):
    markers = tmp_path / "markers"
    markers.mkdir()
    run = pr_checkout(tmp_path, {"old.py": BUGGY}, {"old.py": WITH_NEW_HOOK, **planted(markers)})
    return run, markers


# --- nothing from the checkout runs ------------------------------------------------------

def test_run_step_imports_nothing_from_the_checkout(tmp_path):
    """action.yml's run step, as the runner runs it (in the checkout), and the
    `retainlint check` it starts there: the real ones run and find the new hook."""
    run, markers = hostile_pr(tmp_path)
    (check,), context = run_composite(run["env"], ROOT, python=sys.executable)
    assert sorted(os.listdir(markers)) == []
    assert check.returncode == 1, check.stdout + check.stderr
    (line,) = commands(check.stdout)
    assert line.startswith(NEW_HOOK_ANNOTATION)
    assert context["steps.check.outputs.findings"] == "1"


@pytest.mark.slow  # installs the action into a new virtual environment
def test_install_step_imports_nothing_from_the_checkout(tmp_path):
    """The whole action, its install step included (`python3 -m venv`, `python -m pip`)."""
    run, markers = hostile_pr(tmp_path)
    action_path = tmp_path / "action"
    shutil.copytree(ROOT, action_path, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".venv", "venv"))
    logs, _ = run_composite(run["env"], action_path)
    assert sorted(os.listdir(markers)) == []
    install, check = logs
    assert install.returncode == 0, install.stdout + install.stderr
    assert check.returncode == 1, check.stdout + check.stderr
    (line,) = commands(check.stdout)
    assert line.startswith(NEW_HOOK_ANNOTATION)


# --- a check that crashes fails the step -------------------------------------------------

def test_a_check_that_crashes_fails_the_step_with_its_error(tmp_path):
    run = pr_checkout(tmp_path, {"old.py": BUGGY},
                      {"old.py": WITH_NEW_HOOK, "pyproject.toml": "[tool]\nretainlint = 5\n"})
    r = run_script(run["env"])
    assert r.returncode == 2, r.stdout + r.stderr
    (line,) = commands(r.stdout)
    # the check's own last line, whatever it is (a traceback's or a one-line error)
    last = [text for text in r.stderr.splitlines() if text.strip()][-1].strip()
    failure = re.fullmatch(r"::error title=retainlint::retainlint check failed \(exit \d+\): (.*)", line)
    assert failure and failure.group(1) == last, line
    # no "No findings" summary, no findings=0 output
    assert not Path(run["env"]["GITHUB_STEP_SUMMARY"]).exists()
    assert not Path(run["env"]["GITHUB_OUTPUT"]).exists()


# --- file names are text, never markup or terminal input ---------------------------------

BAD_BYTES = os.fsdecode(b"bad\xff.py")
INJECTION = "x`](javascript:alert(1))|<img src=x>.py"
ESCAPE = "esc\x1b[2Jred.py"


def test_odd_file_names_in_annotations_summary_and_sarif(tmp_path):
    run = pr_checkout(tmp_path, {"old.py": BUGGY}, {BAD_BYTES: BUGGY, INJECTION: BUGGY, ESCAPE: BUGGY})
    r = run_script(run["env"], sarif_file="r.sarif")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "\x1b" not in r.stdout + r.stderr
    assert [line.split(",", 1)[0] for line in commands(r.stdout)] == [
        "::error file=bad\\xff.py", "::error file=esc\\x1b[2Jred.py",
        "::error file=x`](javascript%3Aalert(1))|<img src=x>.py"]

    # the job summary, rendered as GitHub does (GFM tables): three rows of four cells, the
    # names as code, links only to the files on GitHub, no image, no other link
    html = MarkdownIt("commonmark").enable("table").render(Path(run["env"]["GITHUB_STEP_SUMMARY"]).read_text())
    rows = re.findall(r"<tr>\n(.*?)</tr>", html, re.S)[1:]
    assert [row.count("<td>") for row in rows] == [4, 4, 4]
    assert re.findall(r"<code>([^<]*\.py):7:9</code>", html) == [
        "bad\\xff.py", "esc\\x1b[2Jred.py", "x`](javascript:alert(1))|&lt;img src=x&gt;.py"]
    blob = f"https://github.com/octo/proj/blob/{run['head_sha']}/"
    assert re.findall(r'href="([^"]*)"', html) == [
        f"{blob}bad%FF.py#L7", f"{blob}esc%1B%5B2Jred.py#L7",
        f"{blob}x%60%5D%28javascript%3Aalert%281%29%29%7C%3Cimg%20src%3Dx%3E.py#L7"]
    assert "<img" not in html

    sarif = json.loads((run["workspace"] / "r.sarif").read_text())
    assert sorted(res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
                  for res in sarif["runs"][0]["results"]) == [
        "bad%FF.py", "esc%1B%5B2Jred.py", "old.py",
        "x%60%5D%28javascript%3Aalert%281%29%29%7C%3Cimg%20src%3Dx%3E.py"]


# --- a deleted cleanup line --------------------------------------------------------------

ENGINE = """\
import gc

import torch
import torch.nn as nn


class Engine:
    def __init__(self):
        self.model = nn.Linear(8, 8)
        self.kv_cache = torch.empty(4096, 4096)

    def close(self):
        self.model = None
        self.kv_cache = None


class EngineCore:
    def __init__(self, model):
        self.model = model
        gc.freeze()

    def shutdown(self):
        self.model = None
        gc.unfreeze()
"""


def test_a_pull_request_deleting_a_cleanup_line_is_annotated(tmp_path):
    """The PR only deletes lines; each deletion makes a finding on a line it leaves as it
    was: `Engine.close()` no longer drops the KV cache (RL610, on `def close`), and
    nothing undoes `gc.freeze()` any more (RL401, in `__init__`)."""
    pr = ENGINE.replace("        self.kv_cache = None\n", "").replace("        gc.unfreeze()\n", "")
    run = pr_checkout(tmp_path, {"engine.py": ENGINE, "old.py": BUGGY}, {"engine.py": pr})
    r = run_script(run["env"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert [line.split("::")[1] for line in commands(r.stdout)] == [
        "error file=engine.py,line=19,endLine=19,col=9,endColumn=20,"
        "title=retainlint RL401 gc-freeze-without-unfreeze",
        "warning file=engine.py,line=12,endLine=12,col=9,endColumn=14,"
        "title=retainlint RL610 heavy-attribute-never-dropped",
    ]
    assert outputs(run["env"]["GITHUB_OUTPUT"]) == {"findings": "2", "older-findings": "1", "total-findings": "3"}


def test_python_m_retainlint_imports_nothing_from_the_checked_tree(tmp_path):
    """`python -m retainlint check .` run inside a tree (as people do) must not import the
    tree's `multiprocessing/` or `json.py` in place of the standard library's, nor may
    the processes it starts (a tree of many files is checked by a pool of workers)."""
    marker = tmp_path / "imported"
    tree = tmp_path / "tree"
    (tree / "multiprocessing").mkdir(parents=True)
    plant = f"open({str(marker)!r}, 'a').write(__name__ + '\\n')\n"
    (tree / "multiprocessing" / "__init__.py").write_text(plant)
    (tree / "json.py").write_text(plant)
    for name in ["m", *(f"m{i}" for i in range(POOL_THRESHOLD + 4))]:
        (tree / f"{name}.py").write_text("import gc\n\nclass E:\n    def start(self):\n        gc.freeze()\n")
    done = subprocess.run([sys.executable, "-m", "retainlint", "check", ".", "--no-cache",
                           "--output-format", "concise", "-j", "2"],
                          cwd=tree, capture_output=True, text=True, timeout=120)
    assert not marker.exists(), marker.read_text()
    assert done.returncode == 1 and "m.py:5:9: RL401" in done.stdout, done.stdout + done.stderr


# --- files the Action writes -------------------------------------------------------------

def _outside_victim(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    victim = outside / "victim"
    victim.write_text("precious\n")
    return outside, victim


def test_sarif_file_is_not_written_through_a_link_the_pull_request_commits(tmp_path):
    outside, victim = _outside_victim(tmp_path)
    run = pr_checkout(tmp_path, {"old.py": BUGGY}, {"old.py": WITH_NEW_HOOK})
    work = run["workspace"]
    (work / "r.sarif").symlink_to(victim)
    (work / "reports").symlink_to(outside)
    git(work, "add", "r.sarif", "reports")
    git(work, "commit", "-q", "-m", "links")
    for name in ("r.sarif", "reports/new.sarif"):
        r = run_script(run["env"], sarif_file=name)
        assert r.returncode == 2, r.stdout + r.stderr
        errors = [line for line in commands(r.stdout) if line.startswith("::error title=retainlint::")]
        assert len(errors) == 1 and errors[0].startswith(f"::error title=retainlint::{name}: cannot write SARIF: "), r.stdout
        assert victim.read_text() == "precious\n" and sorted(os.listdir(outside)) == ["victim"]
    # a plain path still works, folders made as needed
    r = run_script(run["env"], sarif_file="out/sub/r.sarif")
    assert r.returncode == 1, r.stdout + r.stderr
    assert json.loads((work / "out" / "sub" / "r.sarif").read_text())["version"] == "2.1.0"


# --- nothing the pull request writes becomes a workflow command --------------------------

FORGED = "::error file=old.py,line=1::forged"


def _live_commands(text):
    """Lines the runner would run as workflow commands (it skips leading blanks)."""
    return [line.lstrip() for line in text.splitlines() if line.lstrip().startswith(("::", "##["))]


def test_names_and_keys_from_the_pull_request_never_become_workflow_commands(tmp_path):
    """A file name and a TOML key with newlines, workflow commands and an escape sequence
    in them reach the check's stderr; the Action echoes it as text."""
    name = f"n\n{FORGED}\n  ::add-mask::secret\n##[error]old\x1b[2J.py"
    run = pr_checkout(tmp_path, {"old.py": BUGGY},
                      {"old.py": WITH_NEW_HOOK, name: "x = 1  # noqa: RL998\n"})
    r = run_script(run["env"])
    assert r.returncode == 1, r.stdout + r.stderr
    assert "forged" in r.stdout + r.stderr  # the name is shown ...
    (live,) = _live_commands(r.stdout + r.stderr)  # the one real finding, nothing forged
    assert live.startswith(NEW_HOOK_ANNOTATION)
    assert "\x1b" not in r.stdout + r.stderr

    key = '"k\\n::stop-commands::pwned\\n::add-mask::secret\\u001b[2J"'
    (tmp_path / "2").mkdir()
    run = pr_checkout(tmp_path / "2", {"old.py": BUGGY},
                      {"old.py": WITH_NEW_HOOK, "pyproject.toml": f"[tool.retainlint]\n{key} = 1\n"})
    r = run_script(run["env"])
    assert r.returncode == 2, r.stdout + r.stderr
    (live,) = _live_commands(r.stdout + r.stderr)  # the Action's own error, the key escaped in it
    assert live.startswith("::error title=retainlint::retainlint check failed (exit 2): ") and "stop-commands" in live
    assert "\x1b" not in r.stdout + r.stderr


def test_code_quoted_in_messages_stays_code_in_the_job_summary(tmp_path):
    """RL501's message quotes the hook expression in backticks; one holding backticks must
    not close the span and put a live link or HTML in the summary."""
    hook = 'HOOKS["`](https://evil.example) <img src=x> `"]'
    pr = WITH_NEW_HOOK.replace("register_bytecode_hook(self.second_hook)", f"register_bytecode_hook({hook})")
    run = pr_checkout(tmp_path, {"old.py": BUGGY}, {"old.py": "HOOKS = {}\n" + pr})
    r = run_script(run["env"])
    assert r.returncode == 1, r.stdout + r.stderr
    summary = Path(run["env"]["GITHUB_STEP_SUMMARY"]).read_text()
    html = MarkdownIt("commonmark").enable("table").render(summary)
    assert "https://evil.example" in html  # the message is there ...
    assert "<img" not in html  # ... as text: no image, no link but the file's own
    assert re.findall(r'href="([^"]*)"', html) == [f"https://github.com/octo/proj/blob/{run['head_sha']}/old.py#L9"]


# --- a changed file that cannot be checked -----------------------------------------------

def test_a_changed_file_that_cannot_be_checked_fails_the_step(tmp_path):
    """The PR adds a new hook at line 9 and a 1,001-operand expression further down:
    the file is no longer checked (RL000 at 1:1, a line the PR did not touch), and the
    new hook goes unreported with it. The RL000 must fail the step."""
    chain = "FLAG = " + " and ".join(["x"] * 1001) + "\n"
    pr = "x = 1\n" + WITH_NEW_HOOK + chain
    run = pr_checkout(tmp_path, {"old.py": "x = 1\n" + BUGGY}, {"old.py": pr})
    r = run_script(run["env"])
    assert r.returncode == 1, r.stdout + r.stderr
    (line,) = commands(r.stdout)
    assert line.startswith("::error file=old.py,line=1,endLine=1,col=1,endColumn=1,title=retainlint RL000 source-error::")
    assert outputs(run["env"]["GITHUB_OUTPUT"])["findings"] == "1"
    assert "`RL000` source-error" in Path(run["env"]["GITHUB_STEP_SUMMARY"]).read_text()


# --- configuration in the pull request ---------------------------------------------------

def test_a_configuration_change_is_said_in_a_warning_and_the_summary(tmp_path):
    run = pr_checkout(tmp_path, {"old.py": BUGGY, "pkg/a.py": BUGGY},
                      {"old.py": WITH_NEW_HOOK, "pkg/retainlint.toml": "select = []\n"})
    r = run_script(run["env"], allow_config_changes="true")
    assert r.returncode == 1, r.stdout + r.stderr
    warning, turned_off, finding = commands(r.stdout)
    assert finding.startswith(NEW_HOOK_ANNOTATION)
    assert warning.startswith("::warning title=retainlint::pkg/retainlint.toml changed in this pull request: "
                              "retainlint ran ")
    assert "on 2 files (RL101" in warning
    assert warning.endswith(f"; defaults: {len(catalog())} rules on 1 file; pkg/retainlint.toml: 0 rules on 1 file")
    assert turned_off.startswith("::warning file=pkg/retainlint.toml,title=retainlint::pkg/retainlint.toml in "
                                 "this pull request turns off RL101, ")
    assert turned_off.endswith(" on 1 file (e.g. pkg/a.py) (allow-config-changes is on)")
    summary = MarkdownIt("commonmark").render(Path(run["env"]["GITHUB_STEP_SUMMARY"]).read_text())
    assert f"; defaults: {len(catalog())} rules on 1 file; pkg/retainlint.toml: 0 rules on 1 file." in summary
    assert "<strong>Configuration:</strong> pkg/retainlint.toml in this pull request turns off RL101" in summary
