"""Finds every rule in `retainlint.rules` by itself, and turns selectors into rules.

Selecting rules reads only the rule modules' file names (`rl101_cache_key_bound_method.py`
is RL101, `cache-key-bound-method`): a run answered from the cache never imports the
rules, nor libcst (a third of a second). Deciding which files to parse needs only the
prefilters (`rules/prefilters/`), which do not import libcst either."""

from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import pkgutil
import re
from types import ModuleType
from typing import TYPE_CHECKING, Iterable, Optional

from retainlint.core.codes import split_codes
from retainlint.core.config import did_you_mean
from retainlint.core.errors import ConfigError

if TYPE_CHECKING:
    from retainlint.core.config import Settings
    from retainlint.project.prefilter import Prefilter
    from retainlint.analysis.rule import Rule

# Rules off unless selected (a test keeps this in step with their `default_enabled`).
DEFAULT_OFF: frozenset[str] = frozenset()


def _rule_modules(package: ModuleType) -> list[pkgutil.ModuleInfo]:
    """The rule modules (`rl101_cache_key_bound_method`), not the prefilters' package. A
    rule too large for one module is a package of that name: its `__init__` holds the
    rule's class, its other modules the parts only that rule uses."""
    return [info for info in pkgutil.iter_modules(package.__path__)
            if re.fullmatch(r"rl\d+_\w+", info.name)]


@functools.lru_cache(maxsize=1)
def catalog() -> tuple[tuple[str, str], ...]:
    """(code, name) of every rule, from its module's file name."""
    import retainlint.rules as package

    found: list[tuple[str, str]] = []
    for info in _rule_modules(package):
        code, _, name = info.name.partition("_")
        found.append((code.upper(), name.replace("_", "-")))
    return tuple(sorted(found))


@functools.lru_cache(maxsize=None)
def summary_of(code: str) -> Optional[str]:
    """A rule's one-line summary, read from its module's source (the class body's
    `summary = "..."`) instead of importing the module: a run answered from the cache that
    prints findings imports neither the rules nor libcst. None when it is not written so
    (the house tests check every rule's against its class)."""
    import retainlint.rules as package

    for info in _rule_modules(package):
        if info.name.partition("_")[0].upper() != code:
            continue
        spec = importlib.util.find_spec(f"{package.__name__}.{info.name}")
        if spec is None or spec.origin is None:
            return None
        with open(spec.origin, "rb") as source:
            text = source.read().decode("utf-8")
        # Only the statement is parsed (the whole module would take most of a warm run's
        # output time): from its line to the first line where it is complete.
        found = _CLASS_SUMMARY.search(text)
        if found is None:
            return None
        lines = text[found.start():].splitlines()
        for end in range(1, min(len(lines), 12) + 1):
            try:
                [stmt] = ast.parse("\n".join(lines[:end]).strip()).body
            except SyntaxError:
                continue
            if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Constant) \
                    and isinstance(stmt.value.value, str):
                return stmt.value.value
            return None
    return None


_CLASS_SUMMARY = re.compile(r"^    summary = ", re.MULTILINE)  # in a class body, at the top level


@functools.lru_cache(maxsize=1)
def all_prefilters() -> tuple[type[Prefilter], ...]:
    """Every rule's prefilter (`rules/prefilters/rlNNN.py`), by code: what deciding
    which files to parse needs, without importing libcst or the rules."""
    import retainlint.rules.prefilters as package
    from retainlint.project.prefilter import Prefilter

    found: list[type[Prefilter]] = []
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        [prefilter] = [obj for obj in vars(module).values()
                       if isinstance(obj, type) and issubclass(obj, Prefilter)
                       and obj.__module__ == module.__name__]
        if prefilter.code.lower() != info.name:
            raise RuntimeError(f"{info.name}: a prefilter module is named after its rule's code")
        found.append(prefilter)
    return tuple(sorted(found, key=lambda p: p.code))


@functools.lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    import retainlint.rules as package
    from retainlint.analysis.rule import Rule

    found: dict[str, type[Rule]] = {}
    for info in _rule_modules(package):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Rule)
                and obj is not Rule
                and obj.__module__ == module.__name__
            ):
                if "prefilter" not in vars(obj):
                    raise ConfigError(f"rule {info.name} has no prefilter: set `prefilter = ...` "
                                      "to its class from rules/prefilters/")
                if obj.code in found:
                    raise RuntimeError(f"duplicate rule code {obj.code}")
                if info.name.partition("_")[0].upper() != obj.code:
                    raise RuntimeError(f"{info.name}: a rule module is named after its code")
                found[obj.code] = obj
    return tuple(sorted(found.values(), key=lambda r: r.code))


def lookup_codes(selector: str) -> list[str]:
    """Codes matching a code, a code prefix (`RL2`), a rule name, `ALL`, or the code or
    name of a rule split into several checks (all of them: `retainlint.core.codes`)."""
    rules = catalog()
    token = selector.strip()
    if token.upper() == "ALL":
        return [code for code, _ in rules]
    split = split_codes(token)
    if split is not None:
        return list(split)
    by_name = [code for code, name in rules if name == token.lower()]
    if by_name:
        return by_name
    matched = [code for code, _ in rules if code.startswith(token.upper())] \
        if token.upper().startswith("RL") else []
    if not matched:
        known = [word for code, name in rules for word in (code, name)]
        raise ConfigError(f"unknown rule selector `{selector}`"
                          f"{did_you_mean(token.upper() if token[:2].upper() == 'RL' else token, known)}")
    return matched


def lookup(selector: str) -> list[type[Rule]]:
    """Rules matching a selector (see `lookup_codes`)."""
    codes = set(lookup_codes(selector))
    return [r for r in all_rules() if r.code in codes]


def select_rules(
    select: Iterable[str] | None, extend_select: Iterable[str], ignore: Iterable[str]
) -> tuple[str, ...]:
    """The codes of the selected rules, in order."""
    if select is None:
        chosen = {code for code, _ in catalog() if code not in DEFAULT_OFF}
    else:
        chosen = {code for s in select for code in lookup_codes(s)}
    chosen |= {code for s in extend_select for code in lookup_codes(s)}
    chosen -= {code for s in ignore for code in lookup_codes(s)}
    _refuse_without_prefilter(chosen)
    return tuple(code for code, _ in catalog() if code in chosen)


def _refuse_without_prefilter(codes: Iterable[str]) -> None:
    """A rule whose prefilter is missing would never be run (no file passes it): say so
    rather than report "All checks passed!"."""
    import retainlint.rules.prefilters as package

    have = {info.name.upper() for info in pkgutil.iter_modules(package.__path__)}
    names = dict(catalog())
    for code in sorted(set(codes) - have):
        raise ConfigError(f"rule {code} ({names[code]}) has no prefilter: add "
                          f"rules/prefilters/{code.lower()}.py and set `prefilter = ...` on the rule")


def codes_for(selectors: Iterable[str]) -> set[str]:
    return {code for s in selectors for code in lookup_codes(s)}


def validate_selectors(settings: Settings) -> None:
    """Every selector of a configuration names a rule (ConfigError naming the file if not)."""
    groups = {"select": settings.select or (), "ignore": settings.ignore,
              "extend-select": settings.extend_select}
    groups.update({f"per-file-ignores.{glob}": codes for glob, codes in settings.per_file_ignores})
    for key, selectors in groups.items():
        for selector in selectors:
            try:
                lookup_codes(selector)
            except ConfigError as e:
                raise ConfigError(f"{settings.source}: [tool.retainlint] {key}: {e}") from None
