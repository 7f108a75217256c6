"""Fixture files: `fixtures/<CODE>/<case>.py` marks every line the rule must report with
`# expect: <CODE>`; no other line may be reported. `<case>.fixed.py`, when present, is the
exact result of `--fix --unsafe-fixes`. A `<case>.toml` holds settings overrides."""

import re
import sys
from pathlib import Path

import pytest

from retainlint.core.config import settings_from_table
from retainlint.core.config import Settings
from retainlint.engine.lint import lint_bytes
from retainlint.engine.registry import all_rules
from retainlint.engine.runner import FileOutcome, Mode, fix_bytes

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
RULES = {r.code: r for r in all_rules()}
CASES = sorted(
    p for p in FIXTURES.glob("RL*/*.py") if not p.name.endswith(".fixed.py")
)


def _settings(case: Path) -> Settings:
    toml = case.with_suffix(".toml")
    if toml.exists():
        return settings_from_table(tomllib.loads(toml.read_text()), toml)
    return Settings()


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_fixture(case):
    rule = RULES[case.parent.name]
    source = case.read_bytes()
    expected = [
        i for i, line in enumerate(source.decode().splitlines(), 1)
        if re.search(rf"#.*expect: {rule.code}\b", line)
    ]
    settings = _settings(case)
    result = lint_bytes(str(case), source, [rule], settings)
    assert not result.has_errors, [f.message for f in result.findings]
    assert sorted(f.start.line for f in result.findings) == expected
    fixed_file = case.with_name(case.stem + ".fixed.py")
    if fixed_file.exists():
        outcome = FileOutcome(str(case))
        _, data = fix_bytes(str(case), source, [rule], settings,
                            Mode(fix=True, unsafe_fixes=True), outcome)
        assert data.decode() == fixed_file.read_text()


PROJECTS = sorted(p for p in FIXTURES.glob("RL*/*") if p.is_dir() and not p.name.endswith(".fixed"))


@pytest.mark.parametrize("project", PROJECTS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_multi_file_fixture(project, tmp_path):
    """A directory is one project (packages, re-exports, relative imports): every line
    marked `# expect: <CODE>` in any file is reported, nothing else; `<dir>.fixed/`, when
    present, is the exact tree after `--fix --unsafe-fixes`."""
    import shutil

    from retainlint.engine.runner import run

    code = project.parent.name
    work = tmp_path / project.name
    shutil.copytree(project, work)
    files = sorted(str(p) for p in work.rglob("*.py"))
    expected = sorted(
        (str(Path(f).relative_to(work)), i)
        for f in files
        for i, line in enumerate(Path(f).read_text().splitlines(), 1)
        if re.search(rf"#.*expect: {code}\b", line)
    )
    result = run(files, [code], Settings(), Mode(), jobs=1)
    assert sorted((str(Path(f.path).relative_to(work)), f.start.line) for f in result.findings) == expected
    fixed = project.with_name(project.name + ".fixed")
    if fixed.is_dir():
        run(files, [code], Settings(), Mode(fix=True, unsafe_fixes=True), jobs=1)
        for want in fixed.rglob("*.py"):
            got = work / want.relative_to(fixed)
            assert got.read_text() == want.read_text(), str(want.relative_to(fixed))
