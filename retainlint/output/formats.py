"""Machine formats for CI: GitHub Actions workflow commands and SARIF 2.1.0.

Paths in both are relative to the repository root (the git top level of the current
directory, or the current directory outside git), with forward slashes.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Iterable, Optional, Sequence
from urllib.parse import quote

from retainlint import __version__
from retainlint.core.paths import relative_to_root
from retainlint.output.escape import printable
from retainlint.core.finding import (
    INTERNAL_ERROR,
    SOURCE_ERROR,
    Applicability,
    Finding,
    Fix,
    Position,
    Related,
    Severity,
)
from retainlint.engine.registry import all_rules
from retainlint.core.urls import DOCS_URL
from retainlint.core.source import read_source

INFORMATION_URI = DOCS_URL.split("/blob/")[0]
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
FINGERPRINT_KEY = "retainlint/v1"

GITHUB_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


# --- GitHub Actions workflow commands ---------------------------------------------------

def gh_escape_data(s: str) -> str:
    """The message of a workflow command, escaped as actions/toolkit's escapeData does."""
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_escape_prop(s: str) -> str:
    """A property value, escaped as actions/toolkit's escapeProperty does."""
    return gh_escape_data(s).replace(":", "%3A").replace(",", "%2C")


def display_path(path: str, root: str) -> str:
    """`path` relative to `root` with forward slashes; outside `root`, absolute."""
    rel = relative_to_root(path, root)
    return rel if rel is not None else os.path.abspath(path).replace(os.sep, "/")


def uri_path(rel: str) -> str:
    """A relative path percent-encoded for a URI (RFC 3986) from its bytes, so a file name
    that is not UTF-8 keeps its exact bytes."""
    return quote(os.fsencode(rel))


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
    if f.fix is not None and f.fix.message and f.fix.applicability is not Applicability.NONE:
        kind = "fix" if f.fix.applicability is Applicability.SAFE else "unsafe fix"
        message += f"\n  help ({kind}): {f.fix.message}"
    level = GITHUB_LEVEL.get(f.severity, "error")
    body = ",".join(f"{key}={gh_escape_prop(value)}" for key, value in props)
    message = printable(message, keep="\n")  # newlines are the command's own (%0A)
    return f"::{level} {body}::{gh_escape_data(message)}"


def github(findings: Iterable[Finding], root: str) -> list[str]:
    return [github_line(f, root) for f in findings]


# --- SARIF 2.1.0 -------------------------------------------------------------------------

_PSEUDO_RULES = {
    SOURCE_ERROR[0]: (SOURCE_ERROR[1], "A file could not be read, parsed or written",
                      "retainlint reports a file it needed but could not read, parse or write "
                      "(a syntax error, a permission problem) under this code. It cannot be "
                      "silenced."),
    INTERNAL_ERROR[0]: (INTERNAL_ERROR[1], "retainlint itself failed on a file",
                        "A rule crashed on this file: a bug in retainlint. The run still covers "
                        "the other files and rules. Please report it."),
}


def _first_paragraph(markdown: str) -> str:
    """The first prose paragraph of a rule's docs, without headings."""
    for block in re.split(r"\n\s*\n", markdown.strip()):
        lines = [ln for ln in block.strip().splitlines() if not ln.lstrip().startswith("#")]
        text = " ".join(ln.strip() for ln in lines).strip()
        if text and not text.startswith("```"):
            return text
    return ""


def _rule_descriptor(code: str, name: str) -> dict:
    rule = {r.code: r for r in all_rules()}.get(code)
    if rule is None:
        pname, short, full = _PSEUDO_RULES.get(code, (name, name, name))
        return {
            "id": code,
            "name": pname,
            "shortDescription": {"text": short},
            "fullDescription": {"text": full},
            "help": {"text": full, "markdown": full},
            "helpUri": INFORMATION_URI,
            "defaultConfiguration": {"level": "error"},
            "properties": {"tags": ["retainlint"]},
        }
    docs = rule.docs.strip()
    full = _first_paragraph(docs) or rule.summary
    if len(full) > 1000:
        full = full[:997] + "..."
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": full},
        "help": {"text": f"{rule.summary}.\n\n{docs}\n\nMore: {rule.url()}",
                 "markdown": f"{docs}\n\n[Documentation]({rule.url()})"},
        "helpUri": rule.url(),
        "defaultConfiguration": {"level": SARIF_LEVEL[rule.severity]},
        "properties": {
            "tags": ["memory", "reference-retention"],
            "precision": "high",
            "fix": rule.fix_applicability.value,
        },
    }


def _artifact(path: str, root: str) -> dict:
    rel = relative_to_root(path, root)
    if rel is None:
        return {"uri": Path(os.path.abspath(path)).as_uri()}
    return {"uri": uri_path(rel), "uriBaseId": "%SRCROOT%"}


def _region(start: Position, end: Position) -> dict:
    start_line = max(1, start.line)
    start_col = max(1, start.column)
    end_line = max(end.line, start_line)
    end_col = max(1, end.column)
    if end_line == start_line:
        end_col = max(end_col, start_col)
    return {"startLine": start_line, "startColumn": start_col,
            "endLine": end_line, "endColumn": end_col}


def _normalized_line(lines: list[str], number: int) -> str:
    if 1 <= number <= len(lines):
        return " ".join(lines[number - 1].split())
    return ""


class _Lines:
    def __init__(self) -> None:
        self._cache: dict[str, list[str]] = {}

    def __call__(self, path: str) -> list[str]:
        if path not in self._cache:
            try:
                # bytes.splitlines: lines as Python counts them (str.splitlines also splits at \f)
                self._cache[path] = [line.decode("utf-8", "replace")
                                     for line in read_source(path).splitlines()]
            except OSError:
                self._cache[path] = []
        return self._cache[path]


def fingerprints(findings: Sequence[Finding], root: str) -> list[str]:
    """A stable id for each finding: a hash of the rule, the repo-relative path and the
    whitespace-normalised text of the flagged line (not its number), plus the rank of
    that triple among identical ones, so unrelated edits above it keep it."""
    lines = _Lines()
    seen: dict[str, int] = {}
    out = []
    for f in findings:
        rel = relative_to_root(f.path, root) or os.path.abspath(f.path)
        key = "\0".join((f.code, rel, _normalized_line(lines(f.path), f.start.line)))
        n = seen.get(key, 0)
        seen[key] = n + 1
        digest = hashlib.sha256(f"{key}\0{n}".encode("utf-8", "surrogateescape")).hexdigest()
        out.append(digest[:32])
    return out


def _fix(fix: Fix, path: str, root: str) -> Optional[dict]:
    if fix.applicability is Applicability.NONE or not fix.edits:
        return None
    return {
        "description": {"text": fix.message + ("" if fix.applicability is Applicability.SAFE
                                               else " (unsafe: may change behaviour)")},
        "artifactChanges": [{
            "artifactLocation": _artifact(path, root),
            "replacements": [
                {"deletedRegion": _region(start, end), "insertedContent": {"text": content}}
                for start, end, content in fix.edits
            ],
        }],
    }


def sarif(findings: Sequence[Finding], root: str) -> dict:
    """A SARIF 2.1.0 log with one run: the driver with the metadata of every rule that
    reported something, and one result per finding."""
    codes: dict[str, str] = {}
    for f in findings:
        codes.setdefault(f.code, f.name)
    ordered = sorted(codes)
    index = {code: i for i, code in enumerate(ordered)}
    results = []
    for f, fingerprint in zip(findings, fingerprints(findings, root)):
        result = {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": SARIF_LEVEL.get(f.severity, "error"),
            "message": {"text": f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(f.path, root),
                "region": _region(f.start, f.end),
            }}],
            "partialFingerprints": {FINGERPRINT_KEY: fingerprint},
        }
        if f.related:
            result["relatedLocations"] = [
                {"id": i, "message": {"text": r.message}, "physicalLocation": {
                    "artifactLocation": _artifact(r.path, root), "region": _region(r.start, r.end)}}
                for i, r in enumerate(f.related[:100])
            ]
        fix = _fix(f.fix, f.path, root) if f.fix is not None else None
        if fix is not None:
            result["fixes"] = [fix]
        results.append(result)
    root_uri = Path(root).resolve().as_uri()
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "retainlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": [_rule_descriptor(code, codes[code]) for code in ordered],
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root_uri.rstrip("/") + "/"}},
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


# --- reading findings back from `--output-format json` -------------------------------------

def _pos(d: dict) -> Position:
    return Position(int(d["row"]), int(d["column"]))


def from_json(items: Iterable[dict]) -> list[Finding]:
    """Findings from retainlint's own json output (the action runs the CLI once and
    derives annotations, the summary and SARIF from it)."""
    out = []
    for d in items:
        fix = None
        if d.get("fix"):
            fx = d["fix"]
            fix = Fix(
                applicability=Applicability(fx["applicability"]),
                message=fx.get("message") or "",
                edits=[(_pos(e["location"]), _pos(e["end_location"]), e["content"])
                       for e in fx.get("edits") or []],
            )
        out.append(Finding(
            code=d["code"], name=d["name"], message=d["message"], path=d["filename"],
            start=_pos(d["location"]), end=_pos(d["end_location"]),
            severity=Severity(d["severity"]), fix=fix,
            related=[Related(r["message"], r["filename"], _pos(r["location"]), _pos(r["end_location"]))
                     for r in d.get("related") or []],
            noqa_line=int(d.get("noqa_row") or 0),
        ))
    return out
