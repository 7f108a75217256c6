"""Every rule's own valid/invalid examples: findings on exactly the expected lines, and
the fixed source exactly as the example says."""

import textwrap

import pytest

from retainlint.core.config import Settings
from retainlint.engine.lint import lint_bytes
from retainlint.engine.registry import DEFAULT_OFF, all_rules, catalog
from retainlint.engine.runner import FileOutcome, Mode, fix_bytes

CASES = [
    pytest.param(rule, kind, i, ex, id=f"{rule.code}-{kind}-{i}")
    for rule in all_rules()
    for kind, examples in (("valid", rule.valid), ("invalid", rule.invalid))
    for i, ex in enumerate(examples)
]


def _settings(example) -> Settings:
    return Settings(**getattr(example, "settings", {}))


def _code(example) -> str:
    return textwrap.dedent(example if isinstance(example, str) else example.code)


@pytest.mark.parametrize("rule,kind,index,example", CASES)
def test_example(rule, kind, index, example):
    source = _code(example).encode()
    settings = _settings(example)
    result = lint_bytes("example.py", source, [rule], settings)
    assert not result.has_errors, [f.message for f in result.findings]
    lines = [f.start.line for f in result.findings if f.code == rule.code]
    if kind == "valid":
        assert lines == [], f"{rule.code} flagged a valid example at lines {lines}"
        return
    assert lines, f"{rule.code} did not flag an invalid example"
    if example.lines:
        assert sorted(lines) == sorted(example.lines)
    fixed, _ = _fix(rule, source, settings)
    expected = textwrap.dedent(example.fixed) if example.fixed is not None else _code(example)
    assert fixed.decode() == expected


def _fix(rule, source, settings):
    outcome = FileOutcome("example.py")
    result, data = fix_bytes("example.py", source, [rule], settings,
                             Mode(fix=True, unsafe_fixes=True), outcome)
    assert not outcome.fix_errors, [f.message for f in outcome.fix_errors]
    return data, result


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_fixed_examples_are_clean_and_fixes_are_idempotent(rule):
    for example in rule.invalid:
        if example.fixed is None:
            continue
        settings = _settings(example)
        fixed, result = _fix(rule, _code(example).encode(), settings)
        assert not [f for f in result.findings if f.fixable], "a fix left something fixable"
        again, _ = _fix(rule, fixed, settings)
        assert again == fixed


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_rule_metadata(rule):
    assert rule.code.startswith("RL") and len(rule.code) == 5
    assert rule.name == rule.name.lower() and " " not in rule.name
    for section in ("## What it does", "## Why it leaks", "## Example"):
        assert section in rule.docs, f"{rule.code} docs lack {section}"
    assert rule.prefilter.triggers, "every rule declares trigger tokens"
    # selection reads codes and names from module file names, and defaults from DEFAULT_OFF
    assert (rule.code, rule.name) in catalog()
    assert (rule.code in DEFAULT_OFF) == (not rule.default_enabled)
    assert rule.valid and rule.invalid
