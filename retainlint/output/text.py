"""Findings for people: `full` (the consequence, code frames, fixes, related locations),
`concise` (a line each), statistics and the summary line. `full` shows a finding's
consequence (what it keeps, held by what, for how long, how it grows) on a line of its own."""

from __future__ import annotations

import json
from collections import Counter
from typing import Iterator, Sequence

from rich.console import Console
from rich.text import Text

from retainlint.core.finding import INTERNAL_ERROR, SOURCE_ERROR, Applicability, Consequence, Finding
from retainlint.engine.notebook import cell_span, place, shown_source
from retainlint.output.escape import printable


def applies(f: Finding, unsafe_fixes: bool) -> bool:
    """Whether `--fix` under the same flags applies the finding's fix: a safe one always, an
    unsafe one when unsafe fixes are allowed. `[*]` marks these, and the statistics count them."""
    if f.fix is None:
        return False
    return f.fix.applicability is Applicability.SAFE or (
        unsafe_fixes and f.fix.applicability is Applicability.UNSAFE)


def _marker(f: Finding, unsafe_fixes: bool) -> str:
    return " [*]" if applies(f, unsafe_fixes) else ""


def _header(f: Finding, unsafe_fixes: bool) -> Text:
    text = Text()
    text.append(printable(f.path), style="bold")
    text.append(f":{place(f.path, f.start.line)}:{f.start.column}: ", style="cyan")
    text.append(f.code, style="bold red" if f.severity.value == "error" else "bold yellow")
    text.append(_marker(f, unsafe_fixes) + " ")
    text.append(printable(f.message))
    return text


def _headline(f: Finding, unsafe_fixes: bool) -> Text:
    """`full`'s first line: where, the rule by code and name, its severity in words, and
    the message up to its first `: ` (the rest follows on the next line). A file that
    could not be checked (RL000, RL999: not rules) keeps its one line."""
    if f.code in (SOURCE_ERROR[0], INTERNAL_ERROR[0]):
        return _header(f, unsafe_fixes)
    text = Text()
    text.append(printable(f.path), style="bold")
    text.append(f":{place(f.path, f.start.line)}:{f.start.column}: ", style="cyan")
    text.append(f.code, style="bold red" if f.severity.value == "error" else "bold yellow")
    text.append(f" {f.name} ", style="bold")
    text.append(f"[{f.severity.value}]", style="red" if f.severity.value == "error" else "yellow")
    text.append(_marker(f, unsafe_fixes) + " ")
    text.append(printable(_split_message(f.message)[0]))
    return text


def _split_message(message: str) -> tuple[str, str]:
    """(what, why): the message cut at its first `: ` outside backquotes and parentheses
    (`x` (a heavy object: a model or tensor) is passed to ...: why)."""
    at = next(_cuts(message, ": "), None)
    return (message, "") if at is None else (message[:at], message[at + 2:])


def _cuts(message: str, separator: str) -> Iterator[int]:
    """Where `separator` occurs outside backquotes and parentheses, first to last."""
    for i, depth in _depths(message):
        if depth == 0 and message.startswith(separator, i):
            yield i


def _depths(message: str) -> Iterator[tuple[int, int]]:
    """(index, parentheses open there) of each character outside backquotes."""
    quoted, depth = False, 0
    for i, ch in enumerate(message):
        if ch == "`":
            quoted = not quoted
        elif not quoted:
            if ch == ")":
                depth = max(depth - 1, 0)
            yield i, depth
            if ch == "(":
                depth += 1


LINE_MAX = 160  # concise: characters a line may take besides its path


def headline(message: str, limit: int) -> str:
    """The message's first part, at most `limit` characters: up to its first `: `, else
    its first `; `; then, while too long, without its asides in parentheses (the last
    first), up to its last `, ` that fits; only what is still too long is cut between
    words (and ends with `…`)."""
    head = _split_message(message)[0]
    if len(head) > limit:
        head = head[:next(_cuts(head, "; "), len(head))]
    while len(head) > limit:
        aside = _last_aside(head)
        if aside is None:
            break
        head = head[:aside[0]].rstrip() + head[aside[1]:]
    if len(head) > limit:
        fitting = [i for i in _cuts(head, ", ") if i <= limit]
        if fitting:
            head = head[:fitting[-1]]
    if len(head) > limit:
        space = head.rfind(" ", 0, limit)
        head = head[:space if space > 0 else limit - 1] + "…"
    return head


def _last_aside(message: str) -> tuple[int, int] | None:
    """(start, end) of the last parenthesised aside outside backquotes: ` (...)`."""
    opened, last = None, None
    for i, depth in _depths(message):
        if message[i] == "(" and depth == 0:
            opened = i
        elif message[i] == ")" and depth == 0 and opened is not None:
            last = (opened, i + 1)
    return last


def _about(code: str) -> str | None:
    """A rule's one-line summary (None for RL000/RL999/RL100, which are not rules)."""
    from retainlint.engine.registry import catalog, summary_of

    name = dict(catalog()).get(code)
    summary = summary_of(code) if name is not None else None
    return f"{summary} (`retainlint rule {name}` explains it)" if summary is not None else None


CONSEQUENCE_MAX = 144  # characters of the consequence line: with its label, as concise's 160


def consequence_line(c: Consequence) -> str:
    """What the finding costs, in one short line: what stays, who holds it, for how long,
    how it grows (`keeps `request` of every `handle()` call, held by `_seen` (module-level),
    for the process; one more item per call`). Too long, a part's closing aside goes first
    (`(a `Server` lives for the process)`: the holder says whose), then the longest part is
    cut, so that the others stay whole and readable."""
    parts = [f"keeps {c.kept}", f"held by {c.holder}", f"for {c.lifetime}"]
    tail = f"; {_shortened(c.growth, CONSEQUENCE_MAX // 3)}" if c.growth else ""
    room = CONSEQUENCE_MAX - len(tail)
    if len(", ".join(parts)) > room:
        parts = [_without_aside(part) for part in parts]
    while (excess := len(", ".join(parts)) - room) > 0:
        longest = max(range(len(parts)), key=lambda i: len(parts[i]))
        cut = _shortened(parts[longest], max(len(parts[longest]) - excess, 24))
        if cut == parts[longest]:
            break
        parts[longest] = cut
    return _shortened(", ".join(parts) + tail, CONSEQUENCE_MAX)


def _without_aside(text: str) -> str:
    aside = text.rfind(" (")
    return text[:aside] if aside > 0 and text.endswith(")") else text


def _shortened(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    space = text.rfind(" ", 0, limit)
    return text[:space if space > 0 else limit - 1] + "…"


def _print_consequence(console: Console, f: Finding) -> None:
    if f.consequence is not None:
        console.print(Text("  consequence: ", style="bold") + Text(printable(consequence_line(f.consequence))),
                      highlight=False, soft_wrap=True)


def concise(console: Console, findings: Sequence[Finding], unsafe_fixes: bool) -> None:
    """A short line each, as ruff's: where, the code, the message's headline (what `full`
    puts on its first line; the why and the advice are `full`'s), the rule's name. A file
    that could not be checked (RL000, RL999: not rules) keeps its whole message."""
    for f in findings:
        if f.code in (SOURCE_ERROR[0], INTERNAL_ERROR[0]):
            console.print(_header(f, unsafe_fixes), highlight=False, soft_wrap=True)
            continue
        where = f":{place(f.path, f.start.line)}:{f.start.column}: "
        code = f.code + _marker(f, unsafe_fixes) + " "
        name = f"  [{f.name}]"
        room = LINE_MAX - len(where) - len(code) - len(name)
        text = Text()
        text.append(printable(f.path), style="bold")
        text.append(where, style="cyan")
        text.append(f.code, style="bold red" if f.severity.value == "error" else "bold yellow")
        text.append(code[len(f.code):])
        text.append(headline(printable(f.message), room))
        text.append(name, style="dim")
        console.print(text, highlight=False, soft_wrap=True)


_BUFFERS: dict[str, bytes] = {}


def shown_from(path: str, data: bytes) -> None:
    """Code frames of `path` are cut from `data` (a source checked from standard input,
    after its fixes), not from the file on disk. A notebook's buffer is the notebook
    module's to keep (`notebook.checked_from_buffer`)."""
    _BUFFERS[path] = data


def forget_buffers() -> None:
    """A new run: code frames come from disk again (`notebook.forget_buffers`)."""
    _BUFFERS.clear()


class _Sources:
    def __init__(self) -> None:
        self._lines: dict[str, list[str]] = {}

    def lines(self, path: str) -> list[str]:
        if path not in self._lines:
            try:
                data = _BUFFERS[path] if path in _BUFFERS else shown_source(path)
                # Lines as Python counts them: str.splitlines also splits at a form feed,
                # \x1c-\x1e, \x85, U+2028..., bytes.splitlines only at \n, \r\n and \r.
                self._lines[path] = [line.decode("utf-8", "replace") for line in data.splitlines()]
            except (OSError, ValueError):  # unreadable, or a broken notebook
                self._lines[path] = []
        return self._lines[path]


def full(console: Console, findings: Sequence[Finding], unsafe_fixes: bool) -> None:
    sources = _Sources()
    explained: set[str] = set()
    for f in findings:
        console.print(_headline(f, unsafe_fixes), highlight=False, soft_wrap=True)
        why = _split_message(f.message)[1] if f.code not in (SOURCE_ERROR[0], INTERNAL_ERROR[0]) else ""
        if why:
            console.print(Text("  " + printable(why)), highlight=False, soft_wrap=True)
        _print_consequence(console, f)
        lines = sources.lines(f.path)
        if lines and f.start.line <= len(lines):
            _frame(console, lines, f)
        if f.fix is not None:
            note = {
                Applicability.SAFE: "",
                Applicability.UNSAFE: " (unsafe fix: may change behaviour; apply with --fix --unsafe-fixes)",
                Applicability.NONE: "",
            }[f.fix.applicability]
            if f.fix.message:
                console.print(Text("  help: ", style="bold cyan")
                              + Text(printable(f.fix.message) + note),
                              highlight=False, soft_wrap=True)
        for rel in f.related:
            console.print(
                Text("  note: ", style="bold") + Text(printable(
                    f"{rel.message} ({rel.path}:{place(rel.path, rel.start.line)}:{rel.start.column})")),
                highlight=False, soft_wrap=True,
            )
        about = _about(f.code) if f.code not in explained else None
        explained.add(f.code)
        if about:  # once per rule: the findings after it need not repeat it
            console.print(Text("  about the rule: ", style="bold") + Text(printable(about)),
                          highlight=False, soft_wrap=True)
        console.print()


def _frame(console: Console, lines: list[str], f: Finding) -> None:
    first = max(1, f.start.line - 1)
    last = min(len(lines), max(f.end.line, f.start.line) + 1, f.start.line + 6)
    shift = 0  # a notebook: the frame stays in the finding's cell, numbered as the cell's lines
    cell = cell_span(f.path, f.start.line)
    if cell is not None:
        first, last, shift = max(first, cell[0]), min(last, cell[1]), cell[0] - 1
    width = len(str(last - shift))
    for number in range(first, last + 1):
        line = lines[number - 1].expandtabs(1)
        console.print(Text(f"  {number - shift:>{width}} | ", style="blue") + Text(printable(line)),
                      highlight=False, soft_wrap=True)
        if f.start.line <= number <= f.end.line:
            start = f.start.column - 1 if number == f.start.line else len(line) - len(line.lstrip())
            end = f.end.column - 1 if number == f.end.line else len(line)
            # Columns in the line as shown, where an escaped character takes several.
            start, end = len(printable(line[:start])), len(printable(line[:end]))
            if end > start:
                console.print(
                    Text(f"  {'':>{width}} | ", style="blue") + Text(" " * start + "^" * (end - start), style="bold red"),
                    highlight=False, soft_wrap=True,
                )


def statistics(findings: Sequence[Finding], unsafe_fixes: bool) -> list[dict]:
    """Findings per rule; `fixable`: those whose fix --fix would apply, as `[*]` marks them."""
    counts = Counter((f.code, f.name) for f in findings)
    fixable = Counter(f.code for f in findings if applies(f, unsafe_fixes))
    return [
        {"code": code, "name": name, "count": n, "fixable": fixable[code] > 0,
         "fixable_count": fixable[code]}
        for (code, name), n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0]))
    ]


def print_statistics(console: Console, findings: Sequence[Finding], as_json: bool,
                     unsafe_fixes: bool) -> None:
    rows = statistics(findings, unsafe_fixes)
    if as_json:
        console.out(json.dumps(rows, indent=2), highlight=False)
        return
    width = max((len(str(r["count"])) for r in rows), default=1)
    for r in rows:
        mark = "[*]" if r["fixable"] else "[ ]"
        console.print(f"{r['count']:>{width}}\t{r['code']}\t{mark} {r['name']}", highlight=False)


def show_fixes(console: Console, fixed_codes: dict[str, list[str]], findings: Sequence[Finding],
               applied: bool, unsafe_fixes: bool) -> None:
    """--show-fixes: per file, the fixes applied (`applied`), or the fixes --fix would
    apply under the same flags (the safe ones, and the unsafe ones with --unsafe-fixes)."""
    per_file = fixed_codes if applied else {}
    if not applied:
        for f in findings:
            if applies(f, unsafe_fixes):
                per_file.setdefault(f.path, []).append(f.code)
    if not per_file:
        none = "No fixes applied." if applied else "No fixes available." if unsafe_fixes \
            else "No safe fixes available."
        console.print(none, highlight=False)
        return
    total = sum(len(c) for c in per_file.values())
    console.print(f"{'Fixed' if applied else 'Would fix'} {total} finding{'s' if total != 1 else ''}:",
                  highlight=False)
    names = {f.code: f.name for f in findings}
    for path in sorted(per_file):
        console.print(Text(f"- {printable(path)}:", style="bold"), highlight=False)
        for code, count in sorted(Counter(per_file[path]).items()):
            name = names.get(code) or _name(code)
            console.print(f"    {count} x {code} ({name})", highlight=False)


def _name(code: str) -> str:
    from retainlint.engine.registry import catalog

    return dict(catalog()).get(code, "")


def summary(findings: Sequence[Finding], fixed: int, unsafe_enabled: bool,
            before: int | None = None) -> str:
    """`before`: how many findings there were before --fix (the fixes applied may have
    resolved more findings than one each: a facade that frees every caller)."""
    n = len(findings)
    if n == 0 and fixed == 0:
        return "All checks passed!"
    noun = "finding" if n == 1 else "findings"
    if fixed:
        total = max(before if before is not None else n + fixed, n)
        resolved = total - n
        applied = f" by {fixed} fix{'es' if fixed != 1 else ''}" if fixed != resolved else ""
        return (f"Found {total} finding{'s' if total != 1 else ''} "
                f"({resolved} fixed{applied}, {n} remaining).")
    safe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.SAFE)
    unsafe = sum(1 for f in findings if f.fix and f.fix.applicability is Applicability.UNSAFE)
    return f"Found {n} {noun}{_fixable(safe, unsafe, unsafe_enabled)}."


def not_shown(below: Sequence[Finding]) -> str:
    """How many findings the severity floor left out, and the flag that shows them:
    `3 info findings not shown (--min-severity info shows them)`."""
    n = len(below)
    counts = Counter(f.severity for f in below)
    levels = sorted(counts, key=lambda level: level.rank)
    lowest = levels[-1].value
    them = "it" if n == 1 else "them"
    if len(levels) == 1:
        return f"{n} {lowest} finding{'s' if n != 1 else ''} not shown (--min-severity {lowest} shows {them})"
    each = ", ".join(f"{counts[level]} {level.value}" for level in levels)
    return f"{n} findings not shown ({each}; --min-severity {lowest} shows them)"


def _fixable(safe: int, unsafe: int, unsafe_enabled: bool) -> str:
    """What --fix would do, counted in the findings just reported (never read as more
    findings): ` (3 fixable with --fix, 2 more with --fix --unsafe-fixes)`."""
    if unsafe_enabled and safe + unsafe:  # --fix applies both kinds
        which = "" if not unsafe else ", all unsafe" if not safe else f", {unsafe} of them unsafe"
        return f" ({safe + unsafe} fixable with --fix{which})"
    parts = [f"{safe} fixable with --fix"] if safe else []
    if unsafe:
        parts.append(f"{unsafe} {'more' if safe else 'fixable'} with --fix --unsafe-fixes")
    return f" ({', '.join(parts)})" if parts else ""
