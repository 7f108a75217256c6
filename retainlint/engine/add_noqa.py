"""`retainlint check --add-noqa`: a `# noqa: CODE` for every current finding, so a large
tree can adopt retainlint today and fix its findings later. Only line ends change (the
rest of the file keeps its formatting); a second run adds nothing (the findings are
silenced); a file is written only when the result still compiles, atomically."""

from __future__ import annotations

import io
import re
import tokenize
from collections import defaultdict
from typing import Iterable, Optional

from retainlint.core.finding import INTERNAL_ERROR, SOURCE_ERROR, Finding
from retainlint.core.source import WriteError, read_source, write_atomic
from retainlint.engine import notebook
from retainlint.engine.notebook import NotebookError
from retainlint.engine.suppress import UNUSED_NOQA

# Not silenceable (files not checked), or about the directives themselves.
_NEVER = {SOURCE_ERROR[0], INTERNAL_ERROR[0], UNUSED_NOQA[0]}
_CODES_NOQA = re.compile(r"(#\s*noqa:\s*[\w-]+(?:[ \t]*,[ \t]*[\w-]+)*)", re.IGNORECASE)


def add_noqa(findings: Iterable[Finding]) -> tuple[int, list[str]]:
    """Directives added, and one problem line per file that could not be changed."""
    wanted: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        if f.code not in _NEVER:
            wanted[f.path].append(f)
    added, problems = 0, []
    for path, found in sorted(wanted.items()):
        try:
            original = read_source(path)
            # A notebook: the directives go into its virtual module, then back into its cells.
            source = notebook.parse(original).source.encode("utf-8") \
                if notebook.is_notebook(path) else original
            data, count = _with_noqa(source, found)
        except (OSError, SyntaxError, UnicodeDecodeError, LookupError, NotebookError) as e:
            problems.append(f"{path}: cannot add noqa: {getattr(e, 'strerror', None) or e}")
            continue
        if count:
            try:
                compile(data, path, "exec", dont_inherit=True)
            except SyntaxError as e:  # never expected: the comment went after a code line
                problems.append(f"{path}: noqa not added: the result would not parse ({e.msg})")
                continue
            try:
                if notebook.is_notebook(path):
                    data = notebook.rebuild(original, data.decode("utf-8"))
                write_atomic(path, data, expected=original)
            except (WriteError, NotebookError) as e:
                problems.append(str(e))
                continue
            added += count
    return added, problems


def _with_noqa(data: bytes, findings: list[Finding]) -> tuple[bytes, int]:
    encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    text = data.decode(encoding)
    lines = text.splitlines(keepends=True)
    safe = _comment_safe_lines(text)
    codes: dict[int, set[str]] = defaultdict(set)
    for f in findings:
        line = _line_for(f, safe)
        if line is not None:
            codes[line].add(f.code)
    count = 0
    for number, new in sorted(codes.items()):
        body = lines[number - 1]
        ending = body[len(body.rstrip("\r\n")):]
        code_part = body[: len(body) - len(ending)]
        existing = _CODES_NOQA.search(code_part)
        if existing:  # merged into the directive already there
            listed = existing.group(1).split(":", 1)[1]
            have = {c.upper() for c in re.split(r"[\s,]+", listed) if c}
            missing = sorted(new - have)
            if not missing:
                continue
            code_part = code_part[: existing.end()] + "".join(f", {c}" for c in missing) \
                + code_part[existing.end():]
            count += len(missing)
        else:
            code_part = f"{code_part.rstrip()}  # noqa: {', '.join(sorted(new))}"
            count += len(new)
        lines[number - 1] = code_part + ending
    return "".join(lines).encode(encoding), count


def _line_for(f: Finding, safe: set[int]) -> Optional[int]:
    """The first line where a comment can go and silences `f`: its own lines, then its
    statement's first line."""
    candidates: list[int] = [*range(f.start.line, f.end.line + 1), f.noqa_line]
    for line in candidates:
        if line in safe:
            return line
    return None


def _comment_safe_lines(text: str) -> set[int]:
    """Lines whose end lies outside any string and not after a backslash: a comment
    appended there is a comment."""
    safe = set()
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NEWLINE, tokenize.NL, tokenize.COMMENT):
            safe.add(tok.start[0])
    return safe
