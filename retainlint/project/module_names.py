"""The dotted names a file is imported under, worked out from its path as Python would.

A folder with an `__init__.py` is a regular package, named up its chain of such folders
(`pkg/sub/mod.py` -> `pkg.sub.mod`). A folder without one is a namespace package (PEP 420)
when it lies under a source root - the project root (the nearest folder above holding
`pyproject.toml`, `setup.py`, `setup.cfg` or `.git`: where Python's packaging or the
repository says the project starts), or its `src/` - and its name is an identifier: `app/runner.py` is `app.runner`. Outside any
project, a folder without `__init__.py` is not a package (the file is named by itself).

A file may be imported under several names: the source root is on `sys.path`, and so is
a script's own folder when it runs (`tools/run.py` imports `from helpers import x` beside
`tools/helpers.py`). The first name is the one the file's own definitions are known by;
the others are aliases the project index also answers to."""

from __future__ import annotations

import keyword
import os
import sys
from functools import lru_cache
from pathlib import PurePath
from typing import Optional

PROJECT_MARKERS = ("pyproject.toml", "setup.py", "setup.cfg", ".git")
SOURCE_FOLDER = "src"


def module_name(path: str) -> str:
    """`pkg.sub.mod` for pkg/sub/mod.py: the name the file's definitions are known by."""
    return module_names(path)[0]


def module_names(path: str) -> tuple[str, ...]:
    """Every name the file may be imported under, `module_name` first."""
    directory, filename = os.path.split(os.path.abspath(path))
    stem = filename.rsplit(".", 1)[0]
    packages = _package_names(directory, _source_root(directory))
    if stem == "__init__":
        return tuple(p for p in packages if p) or (stem,)
    return tuple(f"{p}.{stem}" if p else stem for p in packages)


@lru_cache(maxsize=4096)
def _is_package_dir(directory: str) -> bool:
    return os.path.isfile(os.path.join(directory, "__init__.py"))


@lru_cache(maxsize=4096)
def _project_root(directory: str) -> Optional[str]:
    if any(os.path.exists(os.path.join(directory, m)) for m in PROJECT_MARKERS):
        return directory
    parent = os.path.dirname(directory)
    return None if parent == directory else _project_root(parent)


@lru_cache(maxsize=4096)
def _source_root(directory: str) -> Optional[str]:
    """The folder on `sys.path` that namespace packages are found from: the project root,
    or its `src/` for a file below it (unless `src` is itself a regular package)."""
    root = _project_root(directory)
    if root is None:
        return None
    source = os.path.join(root, SOURCE_FOLDER)
    if _inside(directory, source) and not _is_package_dir(source):
        return source
    return root


def _inside(directory: str, root: str) -> bool:
    return directory == root or directory.startswith(root + os.sep)


@lru_cache(maxsize=4096)
def _package_names(directory: str, source: Optional[str]) -> tuple[str, ...]:
    """The dotted names `directory` is imported under as a package, the preferred first;
    "" where the folder itself may be on `sys.path` (a script's folder, the source root)."""
    if _is_package_dir(directory):
        # A regular package keeps the name its chain of `__init__.py` folders gives it
        # (`python/sglang/` is `sglang`, the folder above being on `sys.path`); a namespace
        # folder around the chain adds a longer name (`vendor.lib`).
        chain = _regular_chain(directory)
        top = directory
        for _ in range(chain.count(".")):
            top = os.path.dirname(top)
        outer = os.path.dirname(top)
        above = _package_names(outer, source) if source and outer != top else ("",)
        return (chain, *(f"{a}.{chain}" for a in above if a))
    if source is None or not _inside(directory, source) or directory == source:
        return ("",)
    name = os.path.basename(directory)
    if not name.isidentifier() or keyword.iskeyword(name):
        return ("",)  # Python cannot import it: its files are named from below it
    own = tuple(f"{a}.{name}" if a else name for a in _package_names(os.path.dirname(directory), source)
                # a top-level `test/` or `logging/` loses to the standard library's
                if a or name not in sys.stdlib_module_names)
    return (*own, "")


@lru_cache(maxsize=4096)
def _regular_chain(directory: str) -> str:
    """The dotted package a directory is through `__init__.py` files alone ("" when it
    is not a package): one walk up per directory, however many files it holds."""
    if not _is_package_dir(directory):
        return ""
    parent, name = os.path.split(directory)
    if not name:
        return ""
    above = _regular_chain(parent)
    return f"{above}.{name}" if above else name


def is_test_code(path: str) -> bool:
    """A test module (`test_*.py`, `*_test.py`, `conftest.py`, or under `tests/`): how often
    it makes an object says how its cases run, not how the product does."""
    parts = PurePath(path).parts
    name = parts[-1] if parts else ""
    return (name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py"
            or any(p in ("tests", "test", "testing") for p in parts[:-1]))
