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


def split_codes(entry: str) -> Optional[tuple[str, ...]]:
    """The codes split from `entry` (an old code or name, any case), or None."""
    token = entry.strip()
    found = SPLIT.get(token.upper())
    if found is not None:
        return found[1]
    return next((codes for name, codes in SPLIT.values() if name == token.lower()), None)


def split_from(code: str) -> Optional[str]:
    """The old code `code` was split from, or None."""
    return next((old for old, (_, codes) in SPLIT.items() if code in codes), None)


def split_named(selectors: Iterable[str]) -> list[str]:
    """The old codes a list of selectors names (by code or name), each once, in order."""
    found: list[str] = []
    for selector in selectors:
        codes = split_codes(selector)
        old = split_from(codes[0]) if codes else None
        if old is not None and old not in found:
            found.append(old)
    return found


def split_note(old: str) -> str:
    """What a run that names `old` says about it."""
    name, codes = SPLIT[old]
    return (f"{old} ({name}) is split into {', '.join(codes)}, one per check; it still "
            f"stands for all of them, but name the ones you mean (`retainlint rule {old}` "
            "explains each)")
