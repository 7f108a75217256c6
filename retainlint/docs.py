"""Rule documentation generated from the registry: the README table and docs/rules.md.

`python -m retainlint.docs` rewrites both; a test fails when either has drifted."""

from __future__ import annotations

import re
import sys
from pathlib import Path

from retainlint.core.codes import SPLIT
from retainlint.engine.registry import all_rules

TABLE_START, TABLE_END = "<!-- rules-table:start -->", "<!-- rules-table:end -->"


def rules_table() -> str:
    rows = {r.code: f"| [{r.code}](docs/rules.md#{r.code.lower()}-{r.name}) | `{r.name}` | {r.summary} | "
                    f"{'on' if r.default_enabled else 'off'} | {r.fix_applicability.value} |"
            for r in all_rules()}
    rows.update({old: f"| [{old}](docs/rules.md#{old.lower()}-{name}) | `{name}` | split into "
                      f"{', '.join(codes)}; still stands for all of them (deprecated) | - | - |"
                 for old, (name, codes) in SPLIT.items()})
    head = ["| code | name | what it finds | default | fix |", "|---|---|---|---|---|"]
    return "\n".join(head + [rows[code] for code in sorted(rows)])


def rules_markdown() -> str:
    parts = {r.code: [
        f"## {r.code} {r.name}",
        "",
        f"{r.summary}. Severity: {r.severity.value}. Fix: {r.fix_applicability.value}. "
        f"Default: {'on' if r.default_enabled else 'off'}.",
        "",
        _demote(r.docs.strip()),
        "",
    ] for r in all_rules()}
    parts.update({old: [
        f"## {old} {name}",
        "",
        f"Split into one check per code: {', '.join(codes)}. As a selector (`--select`, "
        f"`ignore`, `per-file-ignores`), in `# noqa: {old}` and in a baseline, `{old}` (or "
        f"`{name}`) still stands for all of them, and a run that names it says which codes to "
        "name instead.",
        "",
    ] for old, (name, codes) in SPLIT.items()})
    head = ["# retainlint rules", "", "Generated from the rule modules by `python -m retainlint.docs`.", ""]
    return "\n".join(head + [line for code in sorted(parts) for line in parts[code]])


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
