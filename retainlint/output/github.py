"""GitHub Actions workflow commands (`::error file=...::message`), one per finding; paths relative to the repository root."""

from __future__ import annotations

from typing import Iterable

from retainlint.core.finding import (
    Applicability,
    Finding,
    Severity,
)
from retainlint.core.paths import display_path
from retainlint.output.escape import printable

GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def gh_escape_data(s: str) -> str:
    """The message of a workflow command, escaped as actions/toolkit's escapeData does."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_escape_prop(s: str) -> str:
    """A property value, escaped as actions/toolkit's escapeProperty does."""
    return gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def gh_command(level: str, message: str, title: str = "retainlint") -> str:
    """A workflow command with no location (`::error title=retainlint::message`): the
    message's control characters escaped, its newlines the command's own (%0A)."""
    text = printable(message, keep="\n")
    return f"::{level} title={gh_escape_prop(title)}::{gh_escape_data(text)}"


def gh_text(line: str) -> str:
    """One line of log text that the runner shows as text and never runs: control
    characters escaped (a newline or a carriage return would start a line of its own), and
    when the line would read as a workflow command (`::name::`, or the older `##[name]`,
    after any blanks, which the runner skips), its first character written as `\\x3a` or
    `\\x23`. Text from the checked tree could otherwise stop the Action's commands
    (`::stop-commands::`), mask values or forge annotations."""
    line = printable(line)
    body = line.lstrip()
    if body.startswith(("::", "##[")):
        at = len(line) - len(body)
        line = f"{line[:at]}\\x{ord(body[0]):02x}{body[1:]}"
    return line


def github_line(f: Finding, root: str) -> str:
    """One `::error file=...,line=...::message` command for a finding. `col`/`endColumn`
    only when the finding starts and ends on one line (GitHub rejects them otherwise)."""
    end_line = max(f.end.line, f.start.line)
    props = [("file", printable(display_path(f.path, root))), ("line", str(f.start.line)),
             ("endLine", str(end_line))]
    if end_line == f.start.line:
        props.append(("col", str(f.start.column)))
        props.append(("endColumn", str(max(f.end.column, f.start.column))))
    props.append(("title", f"retainlint {f.code} {f.name}"))
    message = f.message
    if f.consequence is not None:
        message += f" — keeps {_clipped(f.consequence.kept)} for {_clipped(f.consequence.lifetime)}"
    if f.fix is not None and f.fix.message and f.fix.applicability is not Applicability.NONE:
        kind = "fix" if f.fix.applicability is Applicability.SAFE else "unsafe fix"
        message += f"\n  help ({kind}): {f.fix.message}"
    level = GITHUB_LEVEL.get(f.severity, "error")
    body = ",".join(f"{key}={gh_escape_prop(value)}" for key, value in props)
    message = printable(message, keep="\n")  # newlines are the command's own (%0A)
    return f"::{level} {body}::{gh_escape_data(message)}"


CONSEQUENCE_PART_MAX = 120  # characters of `kept` and of `lifetime` in an annotation


def _clipped(text: str) -> str:
    return text if len(text) <= CONSEQUENCE_PART_MAX else text[:CONSEQUENCE_PART_MAX - 1] + "…"


def github(findings: Iterable[Finding], root: str) -> list[str]:
    return [github_line(f, root) for f in findings]
