"""RL304's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl304_weak_key_value_refs_key.py` (from the file's bytes and its `ast`; no libcst here)."""

from __future__ import annotations

import re

from retainlint.project.prefilter import Prefilter


# Calls that keep their arguments (in what they return).

_WEAK_CACHE_BYTES = re.compile(rb"@[\w.]*(?:weak\w*(?:cache|memo)|(?:cache|memo)\w*weak)", re.IGNORECASE)


class WeakKeyValueRefsKeyPrefilter(Prefilter):
    code = "RL304"

    triggers = ("WeakKeyDictionary", "WeakIdKeyDictionary", "weak")

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        if b"WeakKeyDictionary" in data or b"WeakIdKeyDictionary" in data:
            return True
        # a weak-keyed cache decorator named so (`@weak_lru_cache`, `@utils.cache_weakly`)
        return (b"weak" in data or b"Weak" in data) and _WEAK_CACHE_BYTES.search(data) is not None
