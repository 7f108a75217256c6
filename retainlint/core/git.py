"""Every git command retainlint runs, against a tree someone else may have written (a pull
request, a checkout in CI).

git reads configuration from the repository it discovers, and configuration can run
commands (core.fsmonitor, hooks, drivers). A folder of the tree holding `HEAD`, `objects/`,
`refs/` and a `config` is discovered as a bare repository of its own, and its config is
then the attacker's. So:

- the repository is found by looking for `.git` alone (`find_repository`): a folder that
  only looks like a repository is an ordinary folder of the one around it;
- git is then told which repository and work tree to use (--git-dir, --work-tree), never
  left to discover one, with bare repositories refused, fsmonitor off, hooks and the
  user's attributes file pointed at nothing (command-line configuration wins over any
  file's);
- git itself is found by absolute path on PATH (never the working directory, where
  Windows would look first), in an environment without inherited `GIT_*` variables, the
  system configuration, prompts or a pager.

tests/house/test_git_calls.py checks that no other module starts git.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional, Sequence

TIMEOUT = 300.0  # seconds; a diff of a large tree


class GitError(Exception):
    """git is missing, failed to start, or ran past its time."""


@dataclass(frozen=True)
class Repository:
    work_tree: Path  # real path
    git_dir: Path  # its `.git`: a folder, or a file naming one (a submodule, a linked work tree)


@lru_cache(maxsize=1)
def executable() -> Optional[str]:
    """git's absolute path from the absolute entries of PATH; None when there is none."""
    names = ("git.exe",) if sys.platform == "win32" else ("git",)
    for entry in os.environ.get("PATH", "").split(os.pathsep):
        if not entry or not os.path.isabs(entry):  # "" and "." mean the working directory
            continue
        for name in names:
            candidate = os.path.join(entry, name)
            if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
                return candidate
    return None


def environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.upper().startswith("GIT_")}
    env.update(GIT_CONFIG_NOSYSTEM="1", GIT_ATTR_NOSYSTEM="1", GIT_TERMINAL_PROMPT="0",
               GIT_PAGER="cat", GIT_OPTIONAL_LOCKS="0")  # read-only: never take index.lock
    return env


def _options(repo: Repository) -> list[str]:
    return ["--no-pager", f"--git-dir={repo.git_dir}", f"--work-tree={repo.work_tree}",
            "-c", "safe.bareRepository=explicit", "-c", "core.fsmonitor=false",
            "-c", f"core.hooksPath={os.devnull}", "-c", f"core.attributesFile={os.devnull}"]


def run(repo: Repository, args: Sequence[str], cwd: Optional[Path] = None,
        timeout: float = TIMEOUT, stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    """`git ARGS` in `repo` (run from `cwd`, a folder of its work tree, for relative
    pathspecs), given `stdin`; its output as bytes. Raises GitError when git cannot be run."""
    git = executable()
    if git is None:
        raise GitError("git is not installed (no git on PATH)")
    try:
        return subprocess.run([git, *_options(repo), *args], cwd=cwd or repo.work_tree,
                              env=environment(), input=stdin, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise GitError(f"git {' '.join(args[:1])} ran past {timeout:.0f} s") from None
    except OSError as e:
        raise GitError(f"git failed: {e}") from None


def find_repository(path: str | os.PathLike[str]) -> Optional[Repository]:
    """The repository whose work tree holds `path` (a file or a folder): the closest
    folder around it with a valid `.git`, as git finds it, but never a bare repository
    (a folder that is one is taken for an ordinary folder). None outside git, or without
    git."""
    folder = Path(os.path.realpath(path))
    if not folder.is_dir():
        folder = folder.parent
    while True:
        dot_git = folder / ".git"
        if dot_git.exists() and _valid(Repository(folder, dot_git)):
            return Repository(folder, dot_git)
        if folder.parent == folder:
            return None
        folder = folder.parent


def _valid(repo: Repository) -> bool:
    try:
        return run(repo, ["rev-parse", "--git-dir"], timeout=60).returncode == 0
    except GitError:
        return False
