"""`--output-format json`: findings as a list of plain objects, and back (the Action reads the CLI's output)."""

from __future__ import annotations

from typing import Iterable, Optional, Sequence

from retainlint.core.finding import (
    Applicability,
    Consequence,
    Finding,
    Fix,
    Position,
    Related,
    Severity,
)
from retainlint.core.urls import rule_url
from retainlint.engine.notebook import locate
from retainlint.engine.registry import catalog


def _rule_url(code: str) -> Optional[str]:
    name = dict(catalog()).get(code)
    return rule_url(code, name) if name else None


def _location(r: Related) -> dict:
    return {
        "message": r.message,
        "filename": r.path,
        "location": {"row": r.start.line, "column": r.start.column},
        "end_location": {"row": r.end.line, "column": r.end.column},
    }


def _consequence(c: Optional[Consequence]) -> Optional[dict]:
    if c is None:
        return None
    return {"kept": c.kept, "holder": c.holder, "lifetime": c.lifetime, "growth": c.growth,
            "evidence": [_location(r) for r in c.evidence]}


def to_json(findings: Sequence[Finding]) -> list[dict]:
    out = []
    for f in findings:
        fix = None
        if f.fix is not None:
            fix = {
                "applicability": f.fix.applicability.value,
                "message": f.fix.message,
                "edits": [
                    {
                        "content": content,
                        "location": {"row": start.line, "column": start.column},
                        "end_location": {"row": end.line, "column": end.column},
                    }
                    for start, end, content in (f.fix.edits or [])
                ],
            }
        out.append(
            {
                "code": f.code,
                "name": f.name,
                "message": f.message,
                "severity": f.severity.value,
                "filename": f.path,
                "location": {"row": f.start.line, "column": f.start.column},
                "end_location": {"row": f.end.line, "column": f.end.column},
                "noqa_row": f.noqa_line or f.start.line,
                "fix": fix,
                "related": [_location(r) for r in f.related],
                "consequence": _consequence(f.consequence),
                "url": _rule_url(f.code),
            }
        )
        if f.confirmed is not None:  # only when asked (--confirmed-by): the format is unchanged otherwise
            out[-1]["confirmed"] = f.confirmed
        cell = locate(f.path, f.start.line)
        if cell is not None:  # a notebook: `location.row` is the line of its virtual module
            out[-1]["cell"] = {"number": cell[0], "row": cell[1]}
    return out


def _pos(d: dict) -> Position:
    return Position(int(d["row"]), int(d["column"]))


def _related(d: dict) -> Related:
    return Related(d["message"], d["filename"], _pos(d["location"]), _pos(d["end_location"]))


def _consequence_from(d: Optional[dict]) -> Optional[Consequence]:
    if not d:
        return None
    return Consequence(kept=d["kept"], holder=d["holder"], lifetime=d["lifetime"],
                       growth=d.get("growth") or "",
                       evidence=tuple(_related(r) for r in d.get("evidence") or []))


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
            related=[_related(r) for r in d.get("related") or []],
            noqa_line=int(d.get("noqa_row") or 0),
            consequence=_consequence_from(d.get("consequence")),
            confirmed=d.get("confirmed"),
        ))
    return out
