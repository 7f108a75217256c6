"""Which files are checked under which settings: the closest configuration to each file
applies (as in ruff), so a tree with nested pyproject.toml / retainlint.toml files is one
run of several projects, each with its own rules, excludes and project index."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Optional

from retainlint.core.config import (Found, Settings, find_config, glob_matches, load_settings,
                                     settings_from_table)
from retainlint.engine.discover import discover, excluded, project_context, project_root
from retainlint.engine.registry import codes_for, select_rules, validate_selectors
from retainlint.engine.suppress import UNUSED_NOQA

UNUSED_NOQA_SELECTORS = (UNUSED_NOQA[0], UNUSED_NOQA[1].upper())


@dataclass(frozen=True)
class Overrides:
    """What the command line adds to every configuration."""
    select: tuple[str, ...] = ()
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    adjust: Callable[[Settings], Settings] = lambda s: s  # flags that set a field


@dataclass
class Project:
    settings: Settings
    codes: tuple[str, ...]
    files: list[str] = field(default_factory=list)  # checked and reported
    context: list[str] = field(default_factory=list)  # the rest of its index

    @property
    def excludes(self) -> tuple[str, ...]:
        return self.settings.excludes


class _Configs:
    """The settings of the configuration closest to a directory, read once each."""

    def __init__(self, overrides: Overrides) -> None:
        self.overrides = overrides
        self.by_directory: dict[str, Settings] = {}
        self.by_source: dict[Optional[Path], Settings] = {}
        self.found: dict[Path, Found] = {}  # directory -> the configuration that applies

    def closest(self, directory: str) -> Settings:
        settings = self.by_directory.get(directory)
        if settings is None:
            found = find_config(Path(directory), self.found)
            source = found[0] if found else None
            settings = self.by_source.get(source)
            if settings is None:
                settings = settings_from_table(found[1], found[0]) if found else Settings()
                settings = self.by_source[source] = self.overrides.adjust(settings)
            self.by_directory[directory] = settings
        return settings


def plan(paths: Iterable[str], overrides: Overrides, explicit: Optional[Path] = None,
         force_exclude: bool = False, whole_project: bool = True) -> list[Project]:
    """The projects the named paths hold, each with its files. `explicit`: one
    configuration for everything (--config), as before hierarchies. `whole_project`
    False (--no-project): the named files are all the index covers."""
    paths = list(paths)
    first = Path(paths[0])
    top = overrides.adjust(load_settings(first if first.is_dir() else first.parent, explicit))
    files = discover(paths, top.root, (*top.excludes, *overrides.exclude), force_exclude)
    groups: dict[Optional[Path], tuple[Settings, list[str]]] = {}
    configs = _Configs(overrides)
    named = {os.path.normpath(p) for p in paths}
    for file in files:
        settings = top if explicit is not None else configs.closest(
            os.path.dirname(os.path.abspath(file)))
        # A nested configuration's excludes apply below it (the walk knew only the top's);
        # a file named on the command line is checked unless --force-exclude.
        if settings.source != top.source and (force_exclude or file not in named) and excluded(
                file, settings.root, (*settings.excludes, *overrides.exclude)):
            continue
        groups.setdefault(settings.source, (settings, []))[1].append(file)
    if not groups:
        groups[top.source] = (top, [])
    projects = []
    for settings, group in groups.values():
        settings, codes = selection(settings, overrides)
        excludes = (*settings.excludes, *overrides.exclude)
        # Named files are checked as part of their project: its other files feed the index.
        root = project_root(group or paths, settings.source, settings.root)
        context = project_context(paths, group, root, excludes) if group and whole_project else []
        projects.append(Project(settings, codes, group, context))
    return projects


def selection(settings: Settings, overrides: Overrides) -> tuple[Settings, tuple[str, ...]]:
    """The codes of the rules selected, and the settings with `report_unused_noqa` set when
    RL100 (`unused-noqa`, reported by the engine, not a rule) is among them."""
    select = overrides.select or settings.select
    extend = (*settings.extend_select, *overrides.extend_select)
    ignore = (*settings.ignore, *overrides.ignore)
    wanted = any(_unused_noqa(s) for s in (*(select or ()), *extend)) \
        and not any(_unused_noqa(s) for s in ignore)
    settings = replace(settings, report_unused_noqa=wanted,
                       select=_without_rl100(settings.select),
                       extend_select=_without_rl100(settings.extend_select) or (),
                       ignore=_without_rl100(settings.ignore) or ())
    validate_selectors(settings)
    codes = select_rules(_without_rl100(overrides.select) or settings.select,
                         _without_rl100(extend) or (), _without_rl100(ignore) or ())
    return settings, codes


def _unused_noqa(selector: str) -> bool:
    return selector.strip().upper() in UNUSED_NOQA_SELECTORS


def _without_rl100(selectors: Optional[tuple[str, ...]]) -> Optional[tuple[str, ...]]:
    if selectors is None:
        return None
    return tuple(s for s in selectors if not _unused_noqa(s))


def project_of(name: str, overrides: Overrides, explicit: Optional[Path] = None) -> Project:
    """The project one file belongs to, with that file alone to check (standard input, an
    editor's buffer): its closest settings, the rest of its project as context."""
    settings, codes = selection(settings_for(name, overrides, explicit), overrides)
    excludes = (*settings.excludes, *overrides.exclude)
    root = project_root([name], settings.source, settings.root)
    return Project(settings, codes, [name], project_context([name], [name], root, excludes))


def settings_for(file: str, overrides: Overrides, explicit: Optional[Path] = None) -> Settings:
    """The settings `file` is checked under (--show-settings)."""
    if explicit is not None:
        return overrides.adjust(load_settings(Path(file).parent, explicit))
    return _Configs(overrides).closest(os.path.dirname(os.path.abspath(file)))


def ignored_here(path: str, settings: Settings) -> set[str]:
    """The codes `per-file-ignores` turns off for `path`."""
    if not settings.per_file_ignores:
        return set()
    try:
        relative = Path(os.path.realpath(path)).relative_to(settings.root).as_posix()
    except ValueError:
        relative = Path(path).as_posix()
    ignored: set[str] = set()
    for glob, codes in settings.per_file_ignores:
        if glob_matches(glob, relative):
            ignored |= codes_for(codes)
    return ignored
