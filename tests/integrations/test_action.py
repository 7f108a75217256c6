"""The composite GitHub Action, run locally with the GITHUB_* variables of a pull-request
run on a real git repository (a base with findings, a PR adding one buggy line)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import BUGGY, CLEAN
from retainlint.integrations.action import ANNOTATIONS_PER_LEVEL, annotations, summary_markdown
from retainlint.core.finding import Finding, Position, Severity

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text())
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false",
       "-c", "init.defaultBranch=main"]
NEW_LINE = "        torch._dynamo.convert_frame.register_bytecode_hook(self.second_hook)\n"


def git(cwd, *args):
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def write_files(root, files):
    """`files`: path -> text. A name that is not UTF-8 is given as its surrogate-escaped
    str (`os.fsdecode(b"bad\\xff.py")`)."""
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def pr_checkout(tmp_path, base, head):
    """An upstream repo whose main has the files `base`; a clone on GitHub's pull-request
    merge commit of a branch that changes them by `head`; and the environment of the
    pull_request run."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    write_files(upstream, base)
    git(upstream, "init", "-q")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "base")
    base_sha = git(upstream, "rev-parse", "HEAD")

    workspace = tmp_path / "workspace"
    git(tmp_path, "clone", "-q", str(upstream), str(workspace))
    git(workspace, "checkout", "-q", "-b", "feature")
    write_files(workspace, head)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "PR")
    head_sha = git(workspace, "rev-parse", "HEAD")
    # actions/checkout of a pull_request event: the merge commit refs/pull/1/merge, detached
    git(workspace, "checkout", "-q", "--detach", "origin/main")
    git(workspace, "merge", "-q", "--no-ff", "-m", "Merge feature into main", "feature")
    merge_sha = git(workspace, "rev-parse", "HEAD")

    event = tmp_path / "event.json"
    event.write_text(json.dumps({"action": "synchronize", "number": 1, "pull_request": {
        "number": 1, "base": {"ref": "main", "sha": base_sha}, "head": {"ref": "feature", "sha": head_sha}}}))
    runner_temp = tmp_path / "runner_temp"
    runner_temp.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RL_", "INPUT_", "GIT_"))}
    env.update({
        "CI": "true", "GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request",
        "GITHUB_EVENT_PATH": str(event), "GITHUB_WORKSPACE": str(workspace),
        "GITHUB_BASE_REF": "main", "GITHUB_HEAD_REF": "feature", "GITHUB_REF": "refs/pull/1/merge",
        "GITHUB_SHA": merge_sha, "GITHUB_REPOSITORY": "octo/proj", "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md"), "GITHUB_OUTPUT": str(tmp_path / "output.txt"),
        "RUNNER_TEMP": str(runner_temp), "NO_COLOR": "1",
    })
    return {"env": env, "workspace": workspace, "tmp": tmp_path, "head_sha": head_sha, "base_sha": base_sha}


@pytest.fixture
def pr_run(tmp_path):
    """An upstream repo whose main already has two findings; a clone on GitHub's
    pull-request merge commit, the PR adding exactly one buggy line (old.py:8)."""
    lines = BUGGY.splitlines(keepends=True)
    lines.insert(7, NEW_LINE)
    return pr_checkout(
        tmp_path,
        {"old.py": BUGGY, "pkg/other.py": BUGGY, "clean.py": CLEAN},  # RL501 at line 7 in both
        {"old.py": "".join(lines), "clean.py": CLEAN + "y = 2\n"},
    )


def run_script(env, **inputs):
    """`python -I -m retainlint.integrations.action` as the action's run step calls it (inputs as RL_*)."""
    env = {**env, **{f"RL_{k.upper()}": v for k, v in inputs.items()}}
    return subprocess.run([sys.executable, "-I", "-m", "retainlint.integrations.action"], cwd=env["GITHUB_WORKSPACE"],
                          env=env, capture_output=True, text=True, timeout=300)


def commands(stdout):
    return [line for line in stdout.splitlines() if line.startswith("::")]


def outputs(path):
    return dict(line.split("=", 1) for line in Path(path).read_text().splitlines() if "=" in line)


# --- the action.yml file itself ----------------------------------------------------------

def test_action_yml_is_valid_and_never_splices_expressions_into_scripts():
    r = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema",
                        "vendor.github-actions", str(ROOT / "action.yml")], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    assert ACTION["runs"]["using"] == "composite"
    assert {"paths", "args", "base-ref", "fail-on-findings", "sarif-file"} <= set(ACTION["inputs"])
    for step in ACTION["runs"]["steps"]:
        if "run" in step:
            assert "${{" not in step["run"], step["name"]
            assert step["shell"] == "bash"
    assert "$GITHUB_ACTION_PATH" in ACTION["runs"]["steps"][0]["run"]


def _expand(value, context):
    def sub(m):
        expr = m.group(1).strip()
        assert expr in context, f"unexpected expression {expr}"
        return context[expr]
    return re.sub(r"\$\{\{(.+?)\}\}", sub, str(value))


def run_composite(env, action_path, with_=None, python=None):
    """Run action.yml's steps as the runner does: each `run:` with
    `bash --noprofile --norc -eo pipefail`, its env: expanded, a fresh GITHUB_OUTPUT per step.
    With `python`, the install step is left out and that interpreter is what it installed."""
    context = {f"inputs.{name}": (with_ or {}).get(name, spec.get("default", ""))
               for name, spec in ACTION["inputs"].items()}
    context["github.workspace"] = env["GITHUB_WORKSPACE"]
    context["github.action_path"] = str(action_path)
    if python is not None:
        context["steps.install.outputs.python"] = python
    logs = []
    for i, step in enumerate(ACTION["runs"]["steps"]):
        if python is not None and step.get("id") == "install":
            continue
        out_file = Path(env["RUNNER_TEMP"]) / f"step{i}_output"
        out_file.write_text("")
        step_env = {**env, "GITHUB_ACTION_PATH": str(action_path), "GITHUB_OUTPUT": str(out_file)}
        step_env.update({k: _expand(v, context) for k, v in (step.get("env") or {}).items()})
        script = Path(env["RUNNER_TEMP"]) / f"step{i}.sh"
        script.write_text(step["run"])
        cwd = _expand(step.get("working-directory", env["GITHUB_WORKSPACE"]), context)
        r = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                           cwd=cwd, env=step_env, capture_output=True, text=True, timeout=600)
        logs.append(r)
        if "id" in step:
            for name, value in outputs(out_file).items():
                context[f"steps.{step['id']}.outputs.{name}"] = value
        if r.returncode != 0:
            break
    return logs, context


@pytest.mark.slow  # installs the action into a new virtual environment
def test_composite_action_on_a_pull_request_annotates_exactly_the_new_line(pr_run):
    """The whole action: installs retainlint from the action's own checkout (pip, from
    PyPI), runs the changed-lines check, annotates, writes the summary."""
    action_path = pr_run["tmp"] / "action"
    shutil.copytree(ROOT, action_path, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".pytest_cache", ".venv", "venv"))
    logs, context = run_composite(pr_run["env"], action_path, {"sarif-file": "retainlint.sarif"})
    install, check = logs
    assert install.returncode == 0, install.stdout + install.stderr
    assert context["steps.install.outputs.python"].startswith(pr_run["env"]["RUNNER_TEMP"])
    assert check.returncode == 1, check.stdout + check.stderr  # fail-on-findings defaults to true
    assert commands(check.stdout) == [
        "::error file=old.py,line=8,endLine=8,col=9,endColumn=77,"
        "title=retainlint RL501 discarded-hook-handle::handle returned by `register_bytecode_hook` is "
        "discarded: the global hook registry keeps the hook `self.second_hook` (and all it references) "
        "alive, and nothing can remove it — keeps the `Wrapper` instance and what it holds, through the "
        "hook `self.second_hook` for the process%0A  help (unsafe fix): Keep the handle as "
        "`self._bytecode_hook_handle` and remove it in `close()`: `self.second_hook` no longer runs "
        "after `close()`"
    ], check.stdout
    summary = Path(pr_run["env"]["GITHUB_STEP_SUMMARY"]).read_text()
    assert "old.py:8:9" in summary and "2 older findings on lines this change did not touch were left out" in summary
    assert f"https://github.com/octo/proj/blob/{pr_run['head_sha']}/old.py#L8" in summary
    assert context["steps.check.outputs.findings"] == "1"
    assert context["steps.check.outputs.older-findings"] == "2"
    sarif = json.loads((pr_run["workspace"] / "retainlint.sarif").read_text())
    assert len(sarif["runs"][0]["results"]) == 3  # SARIF carries every finding


# --- the script, with the interpreter running these tests -------------------------------

def test_script_pull_request_one_annotation_and_summary(pr_run):
    r = run_script(pr_run["env"])
    assert r.returncode == 1, r.stdout + r.stderr
    (line,) = commands(r.stdout)
    assert line.startswith("::error file=old.py,line=8,endLine=8,col=9,") and "self.second_hook" in line
    summary = Path(pr_run["env"]["GITHUB_STEP_SUMMARY"]).read_text()
    rows = [row for row in summary.splitlines() if row.startswith("| [")]
    assert len(rows) == 1 and "`RL501` discarded-hook-handle" in rows[0]
    assert "**1 finding** on lines this change added or modified (1 error)" in summary
    assert "2 older findings on lines this change did not touch were left out." in summary
    assert outputs(pr_run["env"]["GITHUB_OUTPUT"]) == {
        "findings": "1", "older-findings": "2", "total-findings": "3"}


def test_base_from_event_sha_when_no_base_branch_ref(pr_run):
    env = {**pr_run["env"]}
    del env["GITHUB_BASE_REF"]
    r = run_script(env, fail_on_findings="false")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(commands(r.stdout)) == 1 and pr_run["base_sha"] in r.stdout


def test_unknown_base_is_an_error_exit_2(pr_run):
    r = run_script(pr_run["env"], base_ref="no-such-ref")
    assert r.returncode == 2
    assert commands(r.stdout) == ["::error title=retainlint::unknown git revision `no-such-ref`"]


def test_push_event_without_pull_request_reports_everything(pr_run):
    env = {**pr_run["env"], "GITHUB_EVENT_NAME": "push"}
    del env["GITHUB_BASE_REF"]
    Path(env["GITHUB_EVENT_PATH"]).write_text(json.dumps({"after": "x"}))
    r = run_script(env, paths="old.py pkg", fail_on_findings="false", sarif_file="reports/r.sarif")
    assert r.returncode == 0, r.stdout + r.stderr
    assert len(commands(r.stdout)) == 3
    assert "no pull request base" in r.stdout
    assert (pr_run["workspace"] / "reports" / "r.sarif").is_file()


def test_extra_args_reach_the_check(pr_run):
    r = run_script(pr_run["env"], args="--ignore RL501")
    assert r.returncode == 0, r.stdout + r.stderr
    assert commands(r.stdout) == []
    assert "No findings on lines this change added or modified." in Path(
        pr_run["env"]["GITHUB_STEP_SUMMARY"]).read_text()


# --- annotation cap and summary table ----------------------------------------------------

def _f(i, severity=Severity.ERROR, message="m"):
    return Finding("RL501", "discarded-hook-handle", message, f"f{i:02}.py", Position(i + 1, 1),
                   Position(i + 1, 5), severity)


def test_at_most_ten_per_level_then_one_summary_warning(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    findings = [_f(i) for i in range(14)] + [_f(i, Severity.WARNING) for i in range(3)] \
        + [_f(i, Severity.INFO) for i in range(12)]
    lines = annotations(findings, str(tmp_path))
    levels = [line.split(" ", 1)[0] for line in lines]
    assert levels.count("::error") == ANNOTATIONS_PER_LEVEL
    assert levels.count("::notice") == ANNOTATIONS_PER_LEVEL
    assert levels.count("::warning") == 3 + 1
    assert lines[-1] == ("::warning title=retainlint::6 more findings not annotated "
                         "(GitHub shows at most 10 per level); see the job summary")
    # with 10+ warnings, 9 are annotated so that the summary warning is the 10th
    many = annotations([_f(i, Severity.WARNING) for i in range(12)], str(tmp_path))
    assert len(many) == 10 and many[-1].startswith("::warning title=retainlint::3 more")
    assert len(annotations([_f(i) for i in range(10)], str(tmp_path))) == 10


def test_summary_lists_every_finding_and_escapes_cells(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    findings = [_f(i) for i in range(30)] + [_f(99, message="a | b\nc `odd")]
    text = summary_markdown(findings, 5, str(tmp_path), "comparing with origin/main", {}, {}, True)
    rows = [row for row in text.splitlines() if row.startswith("| `")]
    assert len(rows) == 31
    assert "a \\| b<br>c \\`odd" in text
    assert "5 older findings on lines this change did not touch were left out." in text
