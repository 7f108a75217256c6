"""Where each rule is documented."""

DOCS_URL = "https://github.com/retainlint/retainlint/blob/main/docs/rules.md"


def rule_url(code: str, name: str) -> str:
    return f"{DOCS_URL}#{code.lower()}-{name}"
