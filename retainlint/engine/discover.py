"""Which files to check: explicit files always (unless --force-exclude), directories
recursively, minus the excludes given (`Settings.excludes`: defaults or configured), minus .gitignore inside git repos.
A linked directory is not walked; a linked file that leads out of the project is listed,
and refused when read (`source.read_source`)."""

from __future__ import annotations

import os
import posixpath
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from retainlint.core import git
from retainlint.core.errors import ConfigError
from retainlint.core.globs import GitIgnore
from retainlint.core.source import leaves_project

PYTHON_SUFFIXES = (".py", ".pyi", ".ipynb")  # a notebook: its code cells (engine/notebook.py)


def _real(path: Path) -> Path:
    # Not Path.resolve(): on a symlink loop it raises; realpath returns a path regardless.
    return Path(os.path.realpath(path))


class _Excludes:
    """Exclude patterns with .gitignore's meaning (core/globs.py: pathspec's reading, matched
    in near-linear time, as a pull request's configuration may choose them), relative to the config root:
    a pattern without a slash matches a name at any depth (`build`, `*.egg-info`), one
    with a slash is anchored (`tests/fixtures/*`: `*` stays within one folder, `**`
    crosses them); a folder matched excludes everything below it."""

    def __init__(self, root: Path, patterns: Iterable[str]) -> None:
        self.root = root
        self.spec = GitIgnore(patterns)

    def relative(self, path: Path) -> str:
        try:
            return _real(path).relative_to(self.root).as_posix()
        except ValueError:  # outside the root: its own parts, as if the root were its anchor
            return path.as_posix().lstrip("/")

    def path(self, path: Path) -> bool:
        relative = self.relative(path)
        return relative != "." and self.glob(relative, path.is_dir())

    def glob(self, relative: str, directory: bool = False) -> bool:
        return self.spec.match_file(relative + "/" if directory else relative)


def excluded(path: str, root: Path, patterns: Iterable[str]) -> bool:
    """Is `path` excluded by `patterns`, read relative to `root`?"""
    return _excludes(root, tuple(patterns)).path(Path(path))


@lru_cache(maxsize=32)
def _excludes(root: Path, patterns: tuple[str, ...]) -> _Excludes:
    return _Excludes(root, patterns)


def _git_visible(directory: Path) -> Optional[set[str]]:
    """Files git does not ignore under `directory`, or None outside a git work tree."""
    repo = git.find_repository(directory)
    if repo is None:
        return None
    try:
        out = git.run(repo, ["ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
                      cwd=directory, timeout=60)
    except git.GitError:
        return None
    if out.returncode != 0:
        return None
    # git lists no file through a linked directory: joined to the real directory, a path
    # is real unless it is itself a link (one lstat, not a realpath per file).
    real_directory = _real(directory)
    visible = set()
    for p in out.stdout.split(b"\0"):
        if p:
            path = os.path.join(real_directory, os.fsdecode(p))
            visible.add(os.path.realpath(path) if os.path.islink(path) else path)
    return visible


def discover(
    paths: Iterable[str], root: Path, exclude: Iterable[str], force_exclude: bool
) -> list[str]:
    return list(_discover(paths, root, exclude, force_exclude).values())


def _discover(
    paths: Iterable[str], root: Path, exclude: Iterable[str], force_exclude: bool
) -> dict[str, str]:
    """real path -> the name it is checked under."""
    excludes = _Excludes(root, exclude)
    found: dict[str, str] = {}  # real path -> the name it is checked under

    def add(name: str, real: str) -> None:
        # One file reached under several names (links to it) is checked, and fixed, once:
        # under its own name when that is one of them.
        kept = found.get(real)
        if kept is None or os.path.islink(kept) and not os.path.islink(name):
            found[real] = name

    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise ConfigError(f"{raw}: no such file or directory")
        if not path.is_dir():  # a file, a dangling link, a FIFO: reading it tells
            if not (force_exclude and excludes.path(path)):
                add(os.path.normpath(raw), str(_real(path)))
            continue
        if leaves_project(raw, str(_real(path)), str(root)):
            raise ConfigError(f"{raw}: symlink leaves the project")
        visible = _git_visible(path)
        for file, real in _walk(path, excludes):
            if visible is None or real in visible:
                add(os.path.normpath(file), real)
    return found


def git_toplevel(directory: Path) -> Optional[Path]:
    """The work tree `directory` is in, or None outside git."""
    repo = git.find_repository(directory)
    return None if repo is None else repo.work_tree


def project_root(paths: Iterable[str], settings_source: Optional[Path],
                 settings_root: Path) -> Optional[Path]:
    """The project the named paths belong to: the configuration file's directory, else
    the git work tree around the first of them; None when there is neither (then the
    named paths are all there is)."""
    if settings_source is not None:
        return _real(settings_root)
    for raw in paths:
        path = Path(raw)
        return git_toplevel(path if path.is_dir() else path.parent)
    return None


def project_context(paths: Iterable[str], files: list[str], root: Optional[Path],
                    exclude: Iterable[str]) -> list[str]:
    """The files of the project at `root` that are not among `files`: the project index
    covers them (cross-file rules see the whole project when only a few files are named,
    as pre-commit does), but nothing in them is reported. Excludes and .gitignore apply
    as in a walk of the root; a named directory that is the root makes this empty."""
    paths = list(paths)
    if root is None or any(Path(p).is_dir() and _real(Path(p)) == root for p in paths):
        return []
    top = os.path.relpath(root) if _inside(os.getcwd(), root) else str(root)
    named = {os.path.realpath(f) for f in files}
    return [name for real, name in _discover([top], root, exclude, False).items()
            if real not in named]


def _inside(path: str, root: Path) -> bool:
    return _real(Path(path)) == root or str(_real(Path(path))).startswith(str(root) + os.sep)


def _walk(top: Path, excludes: _Excludes) -> Iterable[tuple[str, str]]:
    """Each file, with its real path (strings: a tree has thousands)."""
    # Symlinked directories are not followed: no loops, nothing outside the tree.
    # Every directory on the way was checked whole, so a file needs only its own name
    # and its relative path checked.
    if excludes.path(top):
        return
    # No linked directory on the way: a file that is not a link is where the walk says,
    # below the real top (cheaper than asking realpath, a system call per component).
    real_top = str(_real(top))
    top_relative = excludes.relative(top)
    for dirpath, dirnames, filenames in os.walk(top):
        below = os.path.relpath(dirpath, top)
        real_base = os.path.normpath(os.path.join(real_top, below))
        relative = posixpath.normpath(posixpath.join(top_relative, below.replace(os.sep, "/")))
        prefix = "" if relative == "." else relative + "/"
        dirnames[:] = sorted(d for d in dirnames if not excludes.glob(prefix + d, directory=True))
        for name in sorted(filenames):
            if name.endswith(PYTHON_SUFFIXES) and not excludes.glob(prefix + name):
                file = os.path.join(dirpath, name)
                yield file, os.path.realpath(file) if os.path.islink(file) else os.path.join(real_base, name)
