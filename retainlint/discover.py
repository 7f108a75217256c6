"""Which files to check: explicit files always (unless --force-exclude), directories
recursively, minus default and configured excludes, minus .gitignore inside git repos."""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from pathlib import Path
from typing import Iterable, Optional

from retainlint.config import DEFAULT_EXCLUDES, ConfigError

PYTHON_SUFFIXES = (".py", ".pyi")


def _real(path: Path) -> Path:
    # Not Path.resolve(): on a symlink loop it raises; realpath returns a path regardless.
    return Path(os.path.realpath(path))


class _Excludes:
    """Exclude patterns, compiled once: a pattern matches a path component (`build`,
    `*.egg-info`), or a glob on the path relative to the config root (`tests/fixtures/*`)."""

    def __init__(self, root: Path, patterns: Iterable[str]) -> None:
        self.root = root
        names, name_globs, path_globs = set(), [], []
        for pattern in (p.rstrip("/") for p in patterns):
            if "/" in pattern:
                path_globs += [fnmatch.translate(pattern), fnmatch.translate(pattern + "/*")]
            elif any(c in pattern for c in "*?["):
                name_globs.append(fnmatch.translate(pattern))
            else:
                names.add(pattern)
        self.names = names
        self.name_glob = re.compile("|".join(name_globs)) if name_globs else None
        self.path_glob = re.compile("|".join(path_globs)) if path_globs else None

    def relative(self, path: Path) -> str:
        try:
            return _real(path).relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()

    def path(self, path: Path) -> bool:
        relative = self.relative(path)
        return any(self.name(part) for part in relative.split("/")) or self.glob(relative)

    def name(self, component: str) -> bool:
        return component in self.names or (
            self.name_glob is not None and self.name_glob.match(component) is not None)

    def glob(self, relative: str) -> bool:
        return self.path_glob is not None and self.path_glob.match(relative) is not None


def _git_visible(directory: Path) -> Optional[set[Path]]:
    """Files git does not ignore under `directory`, or None outside a git work tree."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", "."],
            cwd=directory, capture_output=True, timeout=60,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return {_real(directory / p.decode("utf-8", "surrogateescape"))
            for p in out.stdout.split(b"\0") if p}


def discover(
    paths: Iterable[str], root: Path, exclude: Iterable[str], force_exclude: bool
) -> list[str]:
    excludes = _Excludes(root, (*DEFAULT_EXCLUDES, *exclude))
    found: dict[str, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise ConfigError(f"{raw}: no such file or directory")
        if not path.is_dir():  # a file, a dangling link, a FIFO: reading it tells
            if not (force_exclude and excludes.path(path)):
                found[os.path.normpath(raw)] = None
            continue
        visible = _git_visible(path)
        for file in _walk(path, excludes):
            if visible is None or _real(file) in visible:
                found[os.path.normpath(str(file))] = None
    return list(found)


def _walk(top: Path, excludes: _Excludes) -> Iterable[Path]:
    # Symlinked directories are not followed: no loops, nothing outside the tree.
    # Every directory on the way was checked whole, so a file needs only its own name
    # and its relative path checked.
    if excludes.path(top):
        return
    for dirpath, dirnames, filenames in os.walk(top):
        base = Path(dirpath)
        relative = excludes.relative(base)
        prefix = "" if relative == "." else relative + "/"
        dirnames[:] = sorted(d for d in dirnames
                             if not excludes.name(d) and not excludes.glob(prefix + d))
        for name in sorted(filenames):
            if (name.endswith(PYTHON_SUFFIXES) and not excludes.name(name)
                    and not excludes.glob(prefix + name)):
                yield base / name
