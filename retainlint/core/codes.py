"""Codes that became several checks. An umbrella rule that reported several shapes under
one code was split so that each shape has a code of its own (a user can switch one off);
the old code and name still select, ignore, silence (`# noqa: RL603`) and match baseline
entries for every check split from it, and a run that names one says which codes to name
instead."""

from __future__ import annotations

from typing import Iterable, Optional

# old code -> (old name, the codes of the checks split from it)
SPLIT: dict[str, tuple[str, tuple[str, ...]]] = {
    "RL602": ("release-keeps-heavy-attribute", ("RL610", "RL611", "RL612", "RL613", "RL614", "RL615", "RL616")),
    "RL603": ("ineffective-release", ("RL604", "RL605", "RL606", "RL607", "RL608", "RL609")),
}


def _old(entry: str) -> Optional[str]:
    """The old code `entry` (a code or name, any case) names, or None."""
    token = entry.strip()
    if token.upper() in SPLIT:
        return token.upper()
    return next((old for old, (name, _) in SPLIT.items() if name == token.lower()), None)


def split_codes(entry: str) -> Optional[tuple[str, ...]]:
    """The codes split from `entry` (an old code or name, any case), or None."""
    old = _old(entry)
    return None if old is None else SPLIT[old][1]


def split_from(code: str) -> Optional[str]:
    """The old code `code` was split from, or None."""
    return next((old for old, (_, codes) in SPLIT.items() if code in codes), None)


def split_named(selectors: Iterable[str]) -> list[str]:
    """The old codes a list of selectors names (by code or name), each once, in order."""
    return list(dict.fromkeys(old for old in map(_old, selectors) if old is not None))


def split_note(old: str) -> str:
    """What a run that names `old` says about it."""
    name, codes = SPLIT[old]
    return (f"{old} ({name}) is split into {', '.join(codes)}, one per check; it still "
            f"stands for all of them, but name the ones you mean (`retainlint rule {old}` "
            "explains each)")
