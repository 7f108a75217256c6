"""git is started in one place only, `retainlint/core/git.py`, which runs it safely against
a tree someone else wrote (the repository named explicitly, fsmonitor and hooks off, no
inherited GIT_* variables): no other module of the product starts a process with git."""

import ast
from pathlib import Path

import retainlint
import retainlint.rules

PACKAGE = Path(retainlint.__file__).parent
RULES = Path(retainlint.rules.__path__[0])
THE_ONE = PACKAGE / "core" / "git.py"
STARTERS = {"run", "Popen", "call", "check_call", "check_output", "getoutput", "getstatusoutput",
            "system", "popen", "execv", "execvp", "execvpe", "execl", "execlp", "spawnv", "spawnvp",
            "spawnl", "spawnlp", "create_subprocess_exec", "create_subprocess_shell"}


def _names_git(node: ast.AST) -> bool:
    """A string in the call that is git, or a command line starting with it."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            word = sub.value.strip().split(" ")[0].replace("\\", "/").rsplit("/", 1)[-1].lower()
            if word in ("git", "git.exe"):
                return True
    return False


def git_calls(source: str) -> list[int]:
    """Lines of calls that start a process (subprocess, os, asyncio) naming git."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
            if name in STARTERS and _names_git(node):
                found.append(node.lineno)
    return found


def test_the_check_sees_a_git_call():
    assert git_calls('import subprocess\nsubprocess.run(["git", "ls-files"], cwd=d)\n') == [2]
    assert git_calls('from subprocess import check_output as co, run\nrun(["/usr/bin/git", "x"])\n') == [2]
    assert git_calls('import os\nos.system("git status")\n') == [2]
    assert git_calls('import subprocess\nsubprocess.run([python, "-m", "retainlint"])\n') == []


def test_no_module_but_core_git_starts_git():
    offenders = []
    for base in (PACKAGE, RULES):
        for path in sorted(base.rglob("*.py")):
            if path == THE_ONE:
                continue
            lines = git_calls(path.read_text(encoding="utf-8"))
            offenders += [f"{path.relative_to(base.parent)}:{line}" for line in lines]
    assert offenders == []
    assert git_calls(THE_ONE.read_text(encoding="utf-8")) == []  # it runs the absolute path found
