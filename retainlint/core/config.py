"""`[tool.retainlint]` in the nearest pyproject.toml, or retainlint.toml / .retainlint.toml."""

from __future__ import annotations

import difflib
import os
import reprlib
import sys
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional


from retainlint.core.errors import ConfigError
from retainlint.core.finding import Severity
from retainlint.core.globs import GitIgnore
from retainlint.core.source import leaves_project

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULT_RELEASE_METHODS = (
    "shutdown", "close", "cleanup", "release", "teardown", "free", "stop",
    "__exit__", "__aexit__", "__del__",
)

DEFAULT_EXCLUDES = (
    ".bzr", ".direnv", ".eggs", ".git", ".git-rewrite", ".hg", ".ipynb_checkpoints",
    ".mypy_cache", ".nox", ".pants.d", ".pyenv", ".pytest_cache", ".pytype",
    ".retainlint_cache", ".ruff_cache", ".svn", ".tox", ".venv", ".vscode",
    "__pycache__", "__pypackages__", "_build", "buck-out", "build", "dist",
    "node_modules", "site-packages", "venv",
)


@dataclass(frozen=True)
class Settings:
    select: Optional[tuple[str, ...]] = None
    ignore: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    exclude: Optional[tuple[str, ...]] = None  # None: DEFAULT_EXCLUDES
    extend_exclude: tuple[str, ...] = ()
    heavy_types: tuple[str, ...] = ()
    release_methods: tuple[str, ...] = DEFAULT_RELEASE_METHODS
    unsafe_fixes: bool = False
    # RL501: also report discarded handles of per-object hooks (lower severity).
    per_object_hooks: bool = False
    # Read heavy types of installed packages (the imports of the checked code) with astroid.
    installed_types: bool = True
    # RL100: report noqa directives that silence nothing (selected as RL100/unused-noqa).
    report_unused_noqa: bool = False
    # The lowest severity reported (`info` findings are real but negligible). It decides
    # what is shown, not what is found: left out of repr, which keys the result cache.
    min_severity: Severity = field(default=Severity.WARNING, repr=False)
    root: Path = field(default_factory=Path.cwd)  # directory of the config file
    source: Optional[Path] = None  # the config file read, if any

    @property
    def excludes(self) -> tuple[str, ...]:
        """`exclude` (it replaces the defaults, as in ruff), then `extend-exclude`."""
        return (*(DEFAULT_EXCLUDES if self.exclude is None else self.exclude), *self.extend_exclude)

    def with_overrides(self, **changes: Any) -> "Settings":  # field values, as for replace()
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


_LIST_KEYS = {
    "select": "select",
    "ignore": "ignore",
    "extend-select": "extend_select",
    "exclude": "exclude",
    "extend-exclude": "extend_exclude",
    "heavy-types": "heavy_types",
    "release-methods": "release_methods",
}


Found = Optional[tuple[Path, dict[str, Any]]]


def find_config(start: Path, known: Optional[dict[Path, Found]] = None) -> Found:
    """Walk up from `start`; a pyproject.toml without [tool.retainlint] is skipped.
    `known`: what earlier walks found for each directory (read and filled in), so that a
    tree's directories are each searched once."""
    start = start.resolve()
    walked: list[Path] = []
    found: Found = None
    for directory in (start, *start.parents):
        if known is not None and directory in known:
            found = known[directory]
            break
        walked.append(directory)
        found = _config_in(directory)
        if found is not None:
            break
    if known is not None:
        known.update(dict.fromkeys(walked, found))
    return found


def _config_in(directory: Path) -> Found:
    for name in ("retainlint.toml", ".retainlint.toml"):
        candidate = directory / name
        if _is_config(candidate):
            return candidate, _read_toml(candidate)
    candidate = directory / "pyproject.toml"
    if _is_config(candidate):
        table = _retainlint_table(_read_toml(candidate), candidate)
        if table is not None:
            return candidate, table
    return None


def _is_config(path: Path) -> bool:
    # A directory (or a FIFO, which would block) under a config file's name is not passed
    # over in silence: a configuration further up would apply instead.
    try:
        if not path.exists():
            return False
    except OSError as e:  # a folder on the way that cannot be searched
        raise ConfigError(f"{path}: cannot read configuration: {e.strerror or e}") from None
    if not path.is_file():
        raise ConfigError(f"{path}: not a regular file")
    # A link out of the tree could be any file of the machine (a token, a key), and what
    # it holds would reach error messages and the CI log: never read.
    if leaves_project(str(path), os.path.realpath(path)):
        raise ConfigError(f"{path}: configuration is a symlink that leads out of the project (not read)")
    return True


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with open(path, "rb") as f:
            data: dict[str, Any] = tomllib.load(f)  # Any only where tomli has no types
            return data
    except OSError as e:
        problem = e.strerror or str(e)
    except tomllib.TOMLDecodeError as e:
        problem = str(e)
    except UnicodeDecodeError as e:
        problem = f"not valid UTF-8 (byte {e.start + 1})"
    except RecursionError:
        problem = "values nested too deeply"
    raise ConfigError(f"{path}: cannot read configuration: {problem}")


def _retainlint_table(data: dict[str, Any], path: Path) -> Optional[dict[str, Any]]:
    """A pyproject.toml's [tool.retainlint], None when it has none."""
    tool: object = data.get("tool", {})
    if not isinstance(tool, dict):
        raise ConfigError(f"{path}: [tool] must be a table, got {_shown(tool)}")
    table: object = tool.get("retainlint")
    if table is not None and not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.retainlint] must be a table, got {_shown(table)}")
    return table


def _shown(value: object) -> str:
    return reprlib.repr(value)  # a long value does not flood the one-line error


def load_settings(start: Path, explicit: Optional[Path] = None) -> Settings:
    if explicit is not None:
        if not _is_config(explicit):
            raise ConfigError(f"{explicit}: configuration file not found")
        data = _read_toml(explicit)
        if explicit.name == "pyproject.toml":
            data = _retainlint_table(data, explicit) or {}
        return settings_from_table(data, explicit)
    found = find_config(start)
    if found is None:
        return Settings()
    return settings_from_table(found[1], found[0])


def settings_from_table(table: dict[str, Any], path: Path) -> Settings:
    values: dict[str, Any] = {"root": path.parent.resolve(), "source": path}
    for key, value in table.items():
        where = f"{path}: [tool.retainlint] {key}"
        if key in _LIST_KEYS:
            if isinstance(value, str) or not isinstance(value, list) or not all(
                isinstance(v, str) for v in value
            ):
                raise ConfigError(f"{where}: expected a list of strings, got {_shown(value)}")
            values[_LIST_KEYS[key]] = tuple(value)
        elif key in _BOOL_KEYS:
            if not isinstance(value, bool):
                raise ConfigError(f"{where}: expected true or false, got {_shown(value)}")
            values[key.replace("-", "_")] = value
        elif key in _LEVEL_KEYS:
            if not isinstance(value, str) or value not in LEVELS:
                levels = ", ".join(f'"{level}"' for level in LEVELS)
                raise ConfigError(f"{where}: expected one of {levels}, got {_shown(value)}")
            values[key.replace("-", "_")] = Severity(value)
        elif key in _TABLE_KEYS:
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: expected a table of glob = [codes]")
            pairs = []
            for glob, codes in value.items():
                if not isinstance(codes, list) or not all(isinstance(c, str) for c in codes):
                    raise ConfigError(f"{where}: {glob!r} must map to a list of codes")
                pairs.append((glob, tuple(codes)))
            # Both are kept: `per-file-ignores` first (there is no inherited table to extend).
            values["per_file_ignores"] = (*values.get("per_file_ignores", ()), *pairs) \
                if key.startswith("extend") else (*pairs, *values.get("per_file_ignores", ()))
        elif key in _PLUGIN_KEYS:
            continue  # read and checked by the pytest plugin, not by `retainlint check`
        else:
            raise ConfigError(f"{where}: unknown option{did_you_mean(key, KNOWN_KEYS)}")
    settings = Settings(**values)
    return settings


_BOOL_KEYS = ("unsafe-fixes", "per-object-hooks", "installed-types")
_LEVEL_KEYS = ("min-severity",)
_TABLE_KEYS = ("per-file-ignores", "extend-per-file-ignores")
_PLUGIN_KEYS = ("leaks",)  # `pytest --retainlint-leaks` (retainlint/verify/pytest_plugin.py)
KNOWN_KEYS = (*_LIST_KEYS, *_BOOL_KEYS, *_LEVEL_KEYS, *_TABLE_KEYS, *_PLUGIN_KEYS)
LEVELS = tuple(level.value for level in Severity)  # most severe first: error, warning, info  # also the keys of schema.json


@lru_cache(maxsize=256)
def _spec(pattern: str) -> GitIgnore:
    # globs.GitIgnore, not pathspec's regex: a per-file-ignores key comes from the checked
    # tree, and `*a*a*...*b` backtracks exponentially in a regular expression.
    return GitIgnore([pattern])


def glob_matches(pattern: str, relative: str) -> bool:
    """Does `pattern` (as in .gitignore: `*` within a folder, `**` across them, no slash:
    any depth) match the path `relative` to the configuration's directory?"""
    return _spec(pattern).match_file(relative)


def did_you_mean(word: str, choices: Any) -> str:
    """` (did you mean `x`?)` when one choice is close to `word`, else ""."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""
