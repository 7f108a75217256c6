"""The README's rule table and docs/rules.md are generated from the registry and must
not drift from it (`python -m retainlint.docs` regenerates both)."""

from pathlib import Path

from retainlint.docs import readme_with_table, rules_markdown
from retainlint.engine.registry import all_rules

ROOT = Path(__file__).resolve().parents[2]


def test_readme_rule_table_matches_registry():
    readme = (ROOT / "README.md").read_text()
    assert readme == readme_with_table(readme), "run `python -m retainlint.docs`"
    for rule in all_rules():
        assert f"| `{rule.name}` |" in readme


def test_rules_doc_matches_registry():
    assert (ROOT / "docs" / "rules.md").read_text() == rules_markdown(), "run `python -m retainlint.docs`"
