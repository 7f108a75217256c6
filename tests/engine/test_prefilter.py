"""The prefilter (bytes, then the `ast` facts of its `scan`) decides which files are
parsed at all: it must never hide a finding. Every rule's invalid examples pass it, and
over every fixture folder a run with the prefilter reports exactly what linting every
file without it reports."""

import sys
import textwrap
from pathlib import Path

import pytest

from retainlint.core.config import Settings, settings_from_table
from retainlint.project.index import ProjectIndex, summarize
from retainlint.engine.lint import FileResult, lint_module, parse
from retainlint.project.prefilter import rules_triggered
from retainlint.engine.registry import all_prefilters, all_rules
from retainlint.engine.runner import Mode, build_index, run
from retainlint.engine.workers import Workers

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RULES = {r.code: r for r in all_rules()}

EXAMPLES = [
    pytest.param(rule, i, ex, id=f"{rule.code}-invalid-{i}")
    for rule in all_rules() for i, ex in enumerate(rule.invalid)
]


@pytest.mark.parametrize("rule,i,example", EXAMPLES)
def test_invalid_examples_pass_the_prefilter(rule, i, example):
    source = textwrap.dedent(example if isinstance(example, str) else example.code).encode()
    settings = Settings(**getattr(example, "settings", {}))
    summary = summarize("example.py", source, all_prefilters())
    assert summary is not None
    index = ProjectIndex([summary], settings.heavy_types)
    assert rule.prefilter in rules_triggered(source, [rule.prefilter], settings, index, "example.py")


def _unfiltered(path: str, rule, settings: Settings, index):
    """The rule's findings with no prefilter at all (`lint_bytes` applies it)."""
    data = Path(path).read_bytes()
    module, error = parse(path, data)
    assert error is None
    result = FileResult(path)
    lint_module(result, module, data.decode(module.encoding), [rule], settings, index)
    return result.findings


def _groups(folder: Path):
    """(settings, files) checked together: the plain files, and each case with a .toml."""
    plain, own = [], []
    for path in sorted(folder.rglob("*.py")):
        if ".fixed" in path.name or any(".fixed" in part for part in path.parts):
            continue
        toml = path.with_suffix(".toml")
        if toml.exists():
            own.append((settings_from_table(tomllib.loads(toml.read_text()), toml), [path]))
        else:
            plain.append(path)
    return ([(Settings(), plain)] if plain else []) + own


@pytest.mark.parametrize("folder", sorted(p for p in FIXTURES.glob("RL*") if p.is_dir()),
                         ids=lambda p: p.name)
def test_prefilter_hides_no_fixture_finding(folder):
    rule = RULES[folder.name]
    for settings, files in _groups(folder):
        paths = [str(p) for p in files]
        index = build_index(paths, settings, Workers(1))
        everything = sorted((f.path, f.start.line, f.code)
                            for p in paths for f in _unfiltered(p, rule, settings, index))
        prefiltered = run(paths, [rule.code], settings, Mode(), jobs=1).findings
        assert sorted((f.path, f.start.line, f.code) for f in prefiltered) == everything


def test_a_scan_that_raises_lets_the_file_through(monkeypatch):
    rule = RULES["RL401"]
    source = b"import gc\n\nclass Engine:\n    def start(self):\n        gc.freeze()\n"
    monkeypatch.setattr(rule.prefilter, "scan", classmethod(lambda cls, nodes: 1 / 0))
    summary = summarize("example.py", source, all_prefilters())
    assert summary is not None and summary.classes  # the summary itself survives
    index = ProjectIndex([summary])
    assert rule.prefilter in rules_triggered(source, [rule.prefilter], Settings(), index, "example.py")
