"""Text from the checked tree (file names, lines of code, messages quoting them) made safe
to print: it must neither drive a terminal nor fail to encode."""

from __future__ import annotations

import re

# Control characters, C1 included (ESC starts an escape sequence, CR rewrites the line),
# and the lone surrogates that stand for the bytes of a file name that was not UTF-8.
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def printable(text: str, keep: str = "\t") -> str:
    """`text` with each control character not in `keep` written escaped (`\\x1b`, `\\n`),
    and each byte of a name that was not UTF-8 (`\\udcff` after surrogateescape) as `\\xff`."""
    def escape(m: re.Match) -> str:
        char = m.group()
        if char in keep:
            return char
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:
            code -= 0xDC00  # the byte surrogateescape stands for
        return _NAMED.get(char) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")
    return _UNPRINTABLE.sub(escape, text)


def code_span(text: str) -> str:
    """`text` from the checked tree as a Markdown code span (job summaries, editor hover
    text). A backslash does not escape inside a code span, so the fence is one backtick
    longer than the longest run of backticks in `text`: nothing in it can close the span
    and turn the rest into a link, an image or HTML. Control characters are escaped first,
    so the span stays on one line. In a table cell, `|` still needs escaping by the caller:
    GFM splits cells before it reads code spans."""
    text = printable(text)
    fence = "`" * (max(map(len, re.findall("`+", text)), default=0) + 1)
    if not text:
        return "` `"  # two backticks alone would be no span at all
    # A span starting or ending with a backtick needs a space there; CommonMark drops one
    # space on each side when both are present.
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
