"""The README's install, pre-commit and GitHub Action snippets, run as a user runs them,
against a local `git clone` of this checkout standing in for the published repository.
Each snippet is the fenced block after a `<!-- snippet: NAME -->` line of README.md; only
the repository URL is replaced (by the clone's file:// URL), and the ref `main` by the
clone's HEAD commit. Dependencies come from the package index; retainlint never does."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement

from conftest import BUGGY, CLEAN

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
REPOSITORY = "retainlint/retainlint"
PUBLISHED = f"https://github.com/{REPOSITORY}"
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", "-c", "commit.gpgsign=false",
       "-c", "init.defaultBranch=main"]
FINDING = "buggy.py:7:9: RL501"  # conftest.BUGGY's discarded hook handle
SNIPPET = re.compile(r"^<!-- snippet: (?P<name>[\w-]+) -->\n```\w*\n(?P<body>.*?)^```$", re.M | re.S)


def git(cwd, *args):
    return subprocess.run([*GIT, *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def snippet(name):
    found = {m["name"]: m["body"] for m in SNIPPET.finditer(README.read_text())}
    assert name in found, f"README.md has no fenced block right after `<!-- snippet: {name} -->`"
    return found[name]


def clean_env(**extra):
    """This environment without the test run's own git, pre-commit, venv and Actions settings."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GIT_", "PRE_COMMIT", "GITHUB_", "RL_", "INPUT_", "RUNNER_"))
           and k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    return {**env, "NO_COLOR": "1", **extra}


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """The published repository: a clone of this checkout (its committed state), its HEAD commit."""
    if not (ROOT / ".git").exists():
        pytest.skip("the README snippets install from a git clone of this checkout, and it is not a git checkout")
    path = tmp_path_factory.mktemp("published") / "retainlint"
    git(ROOT, "clone", "-q", "--no-hardlinks", str(ROOT), str(path))
    # file://localhost/..., not file:///...: older pips (23.x, what a fresh venv may bring)
    # reject a `name @ git+file:///...` requirement, whose URL has no host.
    return {"path": path, "url": f"file://localhost{path.as_posix()}", "head": git(path, "rev-parse", "HEAD")}


def localize(text, clone):
    """`text` with the published repository replaced by the clone; `main` by its HEAD."""
    assert PUBLISHED in text, f"the snippet does not install from {PUBLISHED}:\n{text}"
    text = text.replace(f"{PUBLISHED}@main", f"{PUBLISHED}@{clone['head']}")
    text = re.sub(r"^(\s*rev:\s*)main\b", rf"\g<1>{clone['head']}", text, flags=re.M)
    return text.replace(PUBLISHED, clone["url"])


def resolve(clone, ref):
    """The commit GitHub or pre-commit would fetch for `ref`, or a failed assertion naming it."""
    if ref == "main":
        return clone["head"]
    r = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"],
                       cwd=clone["path"], capture_output=True, text=True)
    assert r.returncode == 0, f"`{ref}` is neither a branch, a tag nor a commit of the repository"
    return r.stdout.strip()


def fresh_venv(path):
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True, timeout=300)
    return clean_env(VIRTUAL_ENV=str(path), PATH=f"{path / 'bin'}{os.pathsep}{os.environ['PATH']}")


def run_bash(script, cwd, env, timeout=900):
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


# --- pip ----------------------------------------------------------------------------------

@pytest.mark.slow
def test_pip_install_snippet_installs_the_repository_into_a_fresh_venv(clone, tmp_path):
    env = fresh_venv(tmp_path / "venv")
    r = run_bash(localize(snippet("pip-install"), clone), tmp_path, env)
    assert r.returncode == 0, r.stdout + r.stderr
    py = tmp_path / "venv" / "bin" / "python"
    # What pip recorded: the clone, at the commit `main` stands for.
    shown = subprocess.run([py, "-c", "from importlib.metadata import distribution as d;"
                            "print(d('retainlint').read_text('direct_url.json'))"],
                           env=env, capture_output=True, text=True, cwd=tmp_path)
    direct = json.loads(shown.stdout)
    assert direct["url"] == clone["url"] and direct["vcs_info"]["commit_id"] == clone["head"], shown.stdout
    work = tmp_path / "work"
    work.mkdir()
    (work / "buggy.py").write_text(BUGGY)
    (work / "clean.py").write_text(CLEAN)
    r = run_bash("retainlint check --output-format concise --no-cache .", work, env)
    assert r.returncode == 1, r.stdout + r.stderr
    assert r.stdout.splitlines()[0].startswith(FINDING), r.stdout


def test_every_install_from_the_repository_names_it_a_ref_and_real_extras():
    """The extras lines (`[lsp]`, `[verify]`) ask for extras that pyproject.toml defines,
    from the repository the other snippets use (pip only warns about an unknown extra)."""
    extras = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"])
    quoted = re.findall(r"[\"'](retainlint[^\"']*@ *git\+[^\"']*)[\"']", README.read_text())
    assert quoted, "README.md installs nothing from the repository"
    asked = set()
    for text in quoted:
        req = Requirement(text)
        assert req.url == f"git+{PUBLISHED}@main", text
        assert req.extras <= extras, f"{text}: no such extra (pyproject.toml has {sorted(extras)})"
        asked |= req.extras
    assert {"lsp", "verify"} <= asked, quoted


# --- pre-commit ---------------------------------------------------------------------------

@pytest.mark.slow
def test_precommit_snippet_fails_the_commit_on_a_leaky_file(clone, tmp_path):
    config = yaml.safe_load(snippet("pre-commit"))
    (repo,) = [r for r in config["repos"] if r["repo"] == PUBLISHED]
    resolve(clone, str(repo["rev"]))  # a tag that does not exist fails here, with its name
    work = tmp_path / "project"
    work.mkdir()
    git(work, "init", "-q")
    (work / ".pre-commit-config.yaml").write_text(localize(snippet("pre-commit"), clone))
    (work / "buggy.py").write_text(BUGGY)
    (work / "clean.py").write_text(CLEAN)
    git(work, "add", "-A")
    env = clean_env(PRE_COMMIT_HOME=str(tmp_path / "pc-home"), PRE_COMMIT_COLOR="never")
    r = subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files", "--color", "never"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=900)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert re.search(r"^retainlint\.+Failed$", out, re.M), out
    assert FINDING in out and "clean.py" not in out, out


# --- GitHub Action ------------------------------------------------------------------------

def expand(value, context):
    """`${{ expr }}` as the runner evaluates the few expressions action.yml uses."""
    def sub(m):
        expr = m.group(1).strip()
        assert expr in context, f"action.yml uses `${{{{ {expr} }}}}`, which this run does not provide"
        return context[expr]
    return re.sub(r"\$\{\{(.+?)\}\}", sub, str(value))


def run_composite(action_dir, with_, env):
    """action.yml's steps as the runner runs a composite action: each `run:` through
    `bash --noprofile --norc -eo pipefail`, its `env:` expanded, a GITHUB_OUTPUT per step
    whose lines become `steps.<id>.outputs.*`; stops at the first failing step. Inputs
    reach a step only through the `env:` it declares: the runner sets no INPUT_* variables
    for a composite action's steps."""
    action = yaml.safe_load((action_dir / "action.yml").read_text())
    unknown = set(with_) - set(action["inputs"])
    assert not unknown, f"the workflow passes inputs action.yml does not have: {sorted(unknown)}"
    context = {f"inputs.{name}": str(with_.get(name, spec.get("default", "")))
               for name, spec in action["inputs"].items()}
    context["github.workspace"] = env["GITHUB_WORKSPACE"]
    context["github.action_path"] = str(action_dir)
    runner_temp = Path(env["RUNNER_TEMP"])
    results = []
    for i, step in enumerate(action["runs"]["steps"]):
        output = runner_temp / f"step{i}-output"
        output.write_text("")
        step_env = {**env, "GITHUB_ACTION_PATH": str(action_dir), "GITHUB_OUTPUT": str(output)}
        step_env.update({k: expand(v, context) for k, v in (step.get("env") or {}).items()})
        assert step.get("shell") == "bash", step
        cwd = expand(step.get("working-directory", env["GITHUB_WORKSPACE"]), context)
        r = run_bash(step["run"], cwd, step_env)
        results.append(r)
        for line in output.read_text().splitlines():
            if "=" in line and "id" in step:
                name, value = line.split("=", 1)
                context[f"steps.{step['id']}.outputs.{name}"] = value
        if r.returncode != 0:
            break
    return results, context


def pull_request(tmp_path):
    """A repository whose main has BUGGY as old.py (one finding), and the checkout
    actions/checkout makes of a pull request adding buggy.py: the merge commit, detached."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    (upstream / "old.py").write_text(BUGGY)
    git(upstream, "init", "-q")
    git(upstream, "add", "-A")
    git(upstream, "commit", "-q", "-m", "base")
    workspace = tmp_path / "workspace"
    git(tmp_path, "clone", "-q", str(upstream), str(workspace))
    git(workspace, "checkout", "-q", "-b", "feature")
    (workspace / "buggy.py").write_text(BUGGY)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "add buggy.py")
    git(workspace, "checkout", "-q", "--detach", "origin/main")
    git(workspace, "merge", "-q", "--no-ff", "-m", "Merge feature into main", "feature")
    event = tmp_path / "event.json"
    event.write_text(json.dumps({"pull_request": {"number": 1, "base": {"ref": "main"}}}))
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    return clean_env(
        CI="true", GITHUB_ACTIONS="true", GITHUB_EVENT_NAME="pull_request", GITHUB_EVENT_PATH=str(event),
        GITHUB_WORKSPACE=str(workspace), GITHUB_BASE_REF="main", GITHUB_HEAD_REF="feature",
        GITHUB_SHA=git(workspace, "rev-parse", "HEAD"), GITHUB_REPOSITORY="octo/project",
        GITHUB_SERVER_URL="https://github.com", GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        RUNNER_TEMP=str(runner_temp))


@pytest.mark.slow
def test_action_snippet_annotates_the_line_a_pull_request_adds(clone, tmp_path):
    workflow = yaml.safe_load(snippet("action"))
    steps = [s for job in workflow["jobs"].values() for s in job["steps"]]
    (step,) = [s for s in steps if str(s.get("uses", "")).split("@")[0] == REPOSITORY]
    ref = step["uses"].split("@", 1)[1]
    # GitHub fetches the action's repository at `ref` into a folder of its own.
    action_dir = tmp_path / "action"
    git(tmp_path, "clone", "-q", "--no-checkout", str(clone["path"]), str(action_dir))
    git(action_dir, "checkout", "-q", "--detach", resolve(clone, ref))
    env = pull_request(tmp_path)
    results, context = run_composite(action_dir, step.get("with") or {}, env)
    install, check = results
    assert install.returncode == 0, install.stdout + install.stderr
    assert check.returncode == 1, check.stdout + check.stderr  # fail-on-findings by default
    annotations = [line for line in check.stdout.splitlines() if line.startswith("::error ")]
    assert len(annotations) == 1, check.stdout
    assert annotations[0].startswith(
        "::error file=buggy.py,line=7,endLine=7,col=9,endColumn=70,title=retainlint RL501 discarded-hook-handle::"
    ), check.stdout
    assert context["steps.check.outputs.findings"] == "1"
    assert context["steps.check.outputs.older-findings"] == "1"  # old.py, untouched
    assert "buggy.py:7:9" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()
