"""`json-lines`, `junit`, `gitlab` (Code Quality) and `pylint`: the formats other tools
read, one function each, from the findings and the repository root."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from typing import Sequence
from xml.etree import ElementTree as ET

from retainlint.core.finding import Finding, Severity
from retainlint.core.paths import display_path
from retainlint.output.escape import printable
from retainlint.output.json_report import to_json
from retainlint.output.sarif import fingerprints

# GitLab Code Quality severities: info, minor, major, critical, blocker.
GITLAB_SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def json_lines(findings: Sequence[Finding]) -> list[str]:
    """One JSON object a line (the `json` format's objects), for streaming readers."""
    return [json.dumps(entry, separators=(",", ":")) for entry in to_json(findings)]


def pylint(findings: Sequence[Finding]) -> list[str]:
    """`path:line: [CODE] message`, as pylint's parseable format."""
    return [f"{printable(f.path)}:{f.start.line}: [{f.code}({f.name})] {printable(f.message)}"
            for f in findings]


# What XML 1.0 cannot hold even escaped, once printable() has written control characters
# as text: the two non-characters.
_NOT_XML = re.compile("[\ufffe\uffff]")


def _xml(text: str, keep: str = "\t\n") -> str:
    """`text` from the checked tree as XML text: control characters (forbidden in XML 1.0,
    `&#27;` included) and bytes of names that were not UTF-8 written escaped, as everywhere."""
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", printable(text, keep))


def junit(findings: Sequence[Finding]) -> str:
    """JUnit XML: a test suite per file, a failing test case per finding."""
    by_file: dict[str, list[Finding]] = defaultdict(list)
    for f in findings:
        by_file[f.path].append(f)
    suites = ET.Element("testsuites", name="retainlint", tests=str(len(findings)),
                        failures=str(len(findings)), errors="0")
    if not findings:  # a report with no failure still says what ran
        ET.SubElement(suites, "testsuite", name="retainlint", tests="0", failures="0", errors="0")
    for raw_path, found in sorted(by_file.items()):
        path = _xml(raw_path, keep="")
        suite = ET.SubElement(suites, "testsuite", name=path, tests=str(len(found)),
                              failures=str(len(found)), errors="0")
        for f in found:
            case = ET.SubElement(suite, "testcase", name=f"retainlint.{f.code}.{f.name}",
                                 classname=path, file=path, line=str(f.start.line))
            message = _xml(f.message)
            failure = ET.SubElement(case, "failure", message=message, type=f.severity.value)
            failure.text = f"line {f.start.line}, col {f.start.column}, {message}"
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode")


def gitlab(findings: Sequence[Finding], root: str) -> list[dict]:
    """GitLab Code Quality: paths relative to the repository, a stable fingerprint each."""
    return [
        {
            "description": f"{f.code} {f.name}: {f.message}",
            "check_name": f.code,
            "fingerprint": fingerprint,
            "severity": GITLAB_SEVERITY.get(f.severity, "major"),
            "location": {"path": display_path(f.path, root),
                         "lines": {"begin": f.start.line, "end": max(f.end.line, f.start.line)}},
        }
        for f, fingerprint in zip(findings, fingerprints(findings, root))
    ]
