"""SARIF 2.1.0 for code scanning: rules, results with stable fingerprints and fixes; paths relative to the repository root."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Optional, Sequence

from retainlint import __version__
from retainlint.engine.suppress import UNUSED_NOQA
from retainlint.core.finding import (
    INTERNAL_ERROR,
    SOURCE_ERROR,
    Applicability,
    Consequence,
    Finding,
    Fix,
    Position,
    Severity,
)
from retainlint.core.paths import relative_to_root, uri_path
from retainlint.engine.notebook import read_python
from retainlint.core.urls import DOCS_URL
from retainlint.engine.registry import all_rules

INFORMATION_URI = DOCS_URL.split("/blob/")[0]


SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


FINGERPRINT_KEY = "retainlint/v1"


SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


_PSEUDO_RULES = {
    SOURCE_ERROR[0]: (SOURCE_ERROR[1], "A file could not be read, parsed or written",
                      "retainlint reports a file it needed but could not read, parse or write "
                      "(a syntax error, a permission problem) under this code. It cannot be "
                      "silenced."),
    INTERNAL_ERROR[0]: (INTERNAL_ERROR[1], "retainlint itself failed on a file",
                        "A rule crashed on this file: a bug in retainlint. The run still covers "
                        "the other files and rules. Please report it."),
    UNUSED_NOQA[0]: (UNUSED_NOQA[1], "A `# noqa` directive names a rule that reported nothing there",
                     "Selected with RL100 (or unused-noqa): a suppression that no longer "
                     "suppresses anything hides the next real finding on that line. Remove "
                     "the code from the directive."),
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
                                     for line in read_python(path).splitlines()]
            except (OSError, ValueError):  # unreadable, or a broken notebook
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


def _consequence(c: Consequence, root: str) -> dict:
    """The finding's consequence, in the result's property bag; its evidence as locations."""
    return {"kept": c.kept, "holder": c.holder, "lifetime": c.lifetime, "growth": c.growth,
            "evidence": [{"message": {"text": r.message}, "physicalLocation": {
                "artifactLocation": _artifact(r.path, root), "region": _region(r.start, r.end)}}
                for r in c.evidence[:100]]}


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
        if f.consequence is not None:
            result["properties"] = {"consequence": _consequence(f.consequence, root)}
        if f.confirmed is not None:  # the test of a leak-mode run that saw it happen
            result.setdefault("properties", {})["confirmed"] = f.confirmed
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
