"""The output formats, in one table: `retainlint check --output-format NAME`."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Callable, Sequence

from rich.console import Console

from retainlint.core.finding import Finding
from retainlint.output import github, json_report, machine, sarif, text


@dataclass(frozen=True)
class Format:
    # Writes the findings; `root`: the repository root, which paths are relative to; the
    # flag: whether unsafe fixes are allowed (`[*]` then marks them too).
    show: Callable[[Console, Sequence[Finding], str, bool], None]
    machine: bool = False  # for programs: no colour, no summary line, no progress bar
    line_edits: bool = False  # needs each fix's line edits


def _print_lines(out: Console, lines: Sequence[str]) -> None:
    for line in lines:
        out.out(line, highlight=False)


def _print_json(out: Console, data) -> None:
    out.out(json.dumps(data, indent=2), highlight=False)


FORMATS: dict[str, Format] = {
    "full": Format(lambda out, findings, root, unsafe: text.full(out, findings, unsafe)),
    "concise": Format(lambda out, findings, root, unsafe: text.concise(out, findings, unsafe)),
    "json": Format(lambda out, findings, root, unsafe: _print_json(out, json_report.to_json(findings)),
                   machine=True, line_edits=True),
    "github": Format(lambda out, findings, root, unsafe: _print_lines(out, github.github(findings, root)),
                     machine=True),
    "sarif": Format(lambda out, findings, root, unsafe: _print_json(out, sarif.sarif(findings, root)),
                    machine=True, line_edits=True),  # SARIF fixes carry the line edits
    "json-lines": Format(lambda out, findings, root, unsafe: _print_lines(out, machine.json_lines(findings)),
                         machine=True, line_edits=True),
    "junit": Format(lambda out, findings, root, unsafe: out.out(machine.junit(findings), highlight=False),
                    machine=True),
    "gitlab": Format(lambda out, findings, root, unsafe: _print_json(out, machine.gitlab(findings, root)),
                     machine=True),
    "pylint": Format(lambda out, findings, root, unsafe: _print_lines(out, machine.pylint(findings)),
                     machine=True),
}
