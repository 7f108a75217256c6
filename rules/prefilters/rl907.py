"""RL907's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl907_shared_exception_raised.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

import re

from retainlint.project.prefilter import Prefilter

# `NAME = Something(` at the start of a line (an exception class need not say so in its
# name), then `raise NAME` or `raise <x>.NAME`.
_MADE = re.compile(rb"^[ \t]*([A-Za-z_]\w*)[ \t]*=[ \t]*[\w.]+\(", re.MULTILINE)
_RAISED = re.compile(rb"\braise[ \t]+(?:[\w.]+\.)?(\w+)\b(?![\w(.])")


class SharedExceptionRaisedPrefilter(Prefilter):
    code = "RL907"

    triggers = ("raise",)

    @classmethod
    def might_match(cls, data: bytes, settings, index) -> bool:
        raised = set(_RAISED.findall(data))
        return bool(raised) and any(m.group(1) in raised for m in _MADE.finditer(data))
