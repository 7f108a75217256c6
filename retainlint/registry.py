"""Finds every rule in `retainlint.rules` by itself, and turns selectors into rules."""

from __future__ import annotations

import functools
import importlib
import pkgutil
from typing import Iterable

from retainlint.config import ConfigError
from retainlint.rule import Rule


@functools.lru_cache(maxsize=1)
def all_rules() -> tuple[type[Rule], ...]:
    import retainlint.rules as package

    found: dict[str, type[Rule]] = {}
    for info in pkgutil.iter_modules(package.__path__):
        module = importlib.import_module(f"{package.__name__}.{info.name}")
        for obj in vars(module).values():
            if (
                isinstance(obj, type)
                and issubclass(obj, Rule)
                and obj is not Rule
                and obj.__module__ == module.__name__
            ):
                if obj.code in found:
                    raise RuntimeError(f"duplicate rule code {obj.code}")
                found[obj.code] = obj
    return tuple(sorted(found.values(), key=lambda r: r.code))


def lookup(selector: str) -> list[type[Rule]]:
    """Rules matching a code, a code prefix (`RL2`), a rule name, or `ALL`."""
    rules = all_rules()
    token = selector.strip()
    if token.upper() == "ALL":
        return list(rules)
    by_name = [r for r in rules if r.name == token.lower()]
    if by_name:
        return by_name
    matched = [r for r in rules if r.code.startswith(token.upper())] if token.upper().startswith("RL") else []
    if not matched:
        raise ConfigError(f"unknown rule selector `{selector}`")
    return matched


def select_rules(
    select: Iterable[str] | None, extend_select: Iterable[str], ignore: Iterable[str]
) -> tuple[type[Rule], ...]:
    if select is None:
        chosen = {r.code for r in all_rules() if r.default_enabled}
    else:
        chosen = {r.code for s in select for r in lookup(s)}
    chosen |= {r.code for s in extend_select for r in lookup(s)}
    chosen -= {r.code for s in ignore for r in lookup(s)}
    return tuple(r for r in all_rules() if r.code in chosen)


def codes_for(selectors: Iterable[str]) -> set[str]:
    return {r.code for s in selectors for r in lookup(s)}
