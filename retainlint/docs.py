"""Rule documentation generated from the registry: the README table and docs/rules.md.

`python -m retainlint.docs` rewrites both; a test fails when either has drifted."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from retainlint.engine.registry import all_rules

TABLE_START, TABLE_END = "<!-- rules-table:start -->", "<!-- rules-table:end -->"


def rules_table() -> str:
    rows = ["| code | name | what it finds | default | fix |", "|---|---|---|---|---|"]
    for r in all_rules():
        anchor = f"{r.code.lower()}-{r.name}"
        rows.append(
            f"| [{r.code}](docs/rules.md#{anchor}) | `{r.name}` | {r.summary} | "
            f"{'on' if r.default_enabled else 'off'} | {r.fix_applicability.value} |"
        )
    return "\n".join(rows)


def rules_markdown() -> str:
    parts = ["# retainlint rules", "", "Generated from the rule modules by `python -m retainlint.docs`.", ""]
    for r in all_rules():
        parts += [
            f"## {r.code} {r.name}",
            "",
            f"{r.summary}. Severity: {r.severity.value}. Fix: {r.fix_applicability.value}. "
            f"Default: {'on' if r.default_enabled else 'off'}.",
            "",
            _demote(r.docs.strip()),
            "",
        ]
    return "\n".join(parts)


def _demote(markdown: str) -> str:
    return re.sub(r"^## ", "### ", markdown, flags=re.MULTILINE)


def readme_with_table(readme: str) -> str:
    start, end = readme.index(TABLE_START), readme.index(TABLE_END)
    return readme[: start + len(TABLE_START)] + "\n" + rules_table() + "\n" + readme[end:]


def main(root: Path) -> None:
    readme = root / "README.md"
    readme.write_text(readme_with_table(readme.read_text()))
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "rules.md").write_text(rules_markdown())


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())
