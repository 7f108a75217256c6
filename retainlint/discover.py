"""Which files to check: explicit files always (unless --force-exclude), directories
recursively, minus default and configured excludes, minus .gitignore inside git repos."""

from __future__ import annotations

import fnmatch
import os
import subprocess
from pathlib import Path
from typing import Iterable, Optional

from retainlint.config import DEFAULT_EXCLUDES, ConfigError

PYTHON_SUFFIXES = (".py", ".pyi")


def _real(path: Path) -> Path:
    # Not Path.resolve(): on a symlink loop it raises; realpath returns a path regardless.
    return Path(os.path.realpath(path))


def _excluded(path: Path, root: Path, patterns: Iterable[str]) -> bool:
    """A pattern matches a path component (`build`), or a glob on the path relative to
    the config root (`tests/fixtures/*`)."""
    try:
        relative = _real(path).relative_to(root).as_posix()
    except ValueError:
        relative = path.as_posix()
    parts = relative.split("/")
    for pattern in patterns:
        pattern = pattern.rstrip("/")
        if "/" in pattern or any(c in pattern for c in "*?["):
            if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(relative, pattern + "/*"):
                return True
            if "/" not in pattern and any(fnmatch.fnmatch(p, pattern) for p in parts):
                return True
        elif pattern in parts:
            return True
    return False


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
    patterns = (*DEFAULT_EXCLUDES, *exclude)
    found: dict[str, None] = {}
    for raw in paths:
        path = Path(raw)
        if not path.exists() and not path.is_symlink():
            raise ConfigError(f"{raw}: no such file or directory")
        if not path.is_dir():  # a file, a dangling link, a FIFO: reading it tells
            if not (force_exclude and _excluded(path, root, patterns)):
                found[os.path.normpath(raw)] = None
            continue
        visible = _git_visible(path)
        for file in _walk(path, root, patterns):
            if visible is None or _real(file) in visible:
                found[os.path.normpath(str(file))] = None
    return list(found)


def _walk(top: Path, root: Path, patterns) -> Iterable[Path]:
    # Symlinked directories are not followed: no loops, nothing outside the tree.
    for dirpath, dirnames, filenames in os.walk(top):
        base = Path(dirpath)
        dirnames[:] = sorted(d for d in dirnames if not _excluded(base / d, root, patterns))
        for name in sorted(filenames):
            if name.endswith(PYTHON_SUFFIXES):
                file = base / name
                if not _excluded(file, root, patterns):
                    yield file
