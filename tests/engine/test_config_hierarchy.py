"""Configuration as ruff users expect it, through the real CLI: the closest configuration
per file, extend-* keys, `exclude` replacing the defaults, .gitignore-style globs,
"did you mean", --show-settings, and the published JSON schema."""

import json
import re
import subprocess
import sys
from pathlib import Path

from conftest import BUGGY, run_cli

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "retainlint" / "core" / "schema.json"


def reported(r):
    return sorted(line.split(":")[0] for line in r.stdout.splitlines() if ": RL" in line)


def test_closest_configuration_applies_to_each_file(tree):
    root = tree({
        "a.py": BUGGY, "sub/b.py": BUGGY, "sub/deep/c.py": BUGGY, "sub/gen/d.py": BUGGY,
        "other/e.py": BUGGY,
        "pyproject.toml": '[tool.retainlint]\n[tool.retainlint.per-file-ignores]\n"sub/*.py" = ["RL501"]\n'
                          '"other/*.py" = ["RL501"]\n',
        # The closest file wins whole: sub/b.py is not covered by the parent's "sub/*.py".
        "sub/retainlint.toml": 'extend-exclude = ["gen"]\n[extend-per-file-ignores]\n"deep/**" = ["RL5"]\n',
    })
    r = run_cli("check", "--output-format", "concise", ".", cwd=root)
    assert reported(r) == ["a.py", "sub/b.py"], r.stdout + r.stderr
    # Named one by one (as pre-commit does), each still gets its own configuration.
    r = run_cli("check", "--output-format", "concise", "sub/deep/c.py", "sub/b.py", "other/e.py",
                cwd=root)
    assert reported(r) == ["sub/b.py"], r.stdout + r.stderr
    # --config names one file for everything.
    r = run_cli("check", "--output-format", "concise", "--config", "pyproject.toml", ".", cwd=root)
    assert reported(r) == ["a.py", "sub/deep/c.py", "sub/gen/d.py"], r.stdout + r.stderr


def test_exclude_replaces_the_defaults_and_extend_exclude_adds(tree):
    root = tree({"a.py": BUGGY, "build/gen.py": BUGGY, "legacy/old.py": BUGGY})
    r = run_cli("check", "--output-format", "concise", cwd=root)
    assert reported(r) == ["a.py", "legacy/old.py"]  # build/ is a default exclude
    (root / "retainlint.toml").write_text('extend-exclude = ["legacy"]\n')
    assert reported(run_cli("check", "--output-format", "concise", cwd=root)) == ["a.py"]
    (root / "retainlint.toml").write_text('exclude = ["legacy"]\n')
    assert reported(run_cli("check", "--output-format", "concise", cwd=root)) == ["a.py", "build/gen.py"]


def test_globs_read_as_gitignore_does(tree):
    root = tree({"tests/a.py": BUGGY, "tests/unit/b.py": BUGGY, "pkg/tests/c.py": BUGGY,
                 "pkg/d.py": BUGGY,
                 # `*` stays within one folder, `**` crosses them, a leading name is anchored.
                 "retainlint.toml": '[per-file-ignores]\n"tests/*.py" = ["RL501"]\n'
                                    '"pkg/**/c.py" = ["RL501"]\n'})
    r = run_cli("check", "--output-format", "concise", cwd=root)
    assert reported(r) == ["pkg/d.py", "tests/unit/b.py"], r.stdout


def test_unknown_keys_and_codes_say_what_was_meant(tree):
    root = tree({"a.py": BUGGY, "retainlint.toml": 'extend-exlude = ["x"]\n'})
    r = run_cli("check", cwd=root)
    assert r.returncode == 2
    assert r.stderr.strip().endswith("extend-exlude: unknown option (did you mean `extend-exclude`?)")
    (root / "retainlint.toml").write_text('ignore = ["RL5011"]\n')
    r = run_cli("check", cwd=root)
    assert r.returncode == 2 and "unknown rule selector `RL5011` (did you mean `RL501`?)" in r.stderr
    (root / "retainlint.toml").write_text("")
    r = run_cli("check", "--select", "discarded-hook-handles", cwd=root)
    assert r.returncode == 2 and "(did you mean `discarded-hook-handle`?)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_show_settings_names_the_file_and_what_applies(tree):
    root = tree({"sub/b.py": BUGGY, "pyproject.toml": "[tool.retainlint]\nignore = ['RL1']\n",
                 "sub/retainlint.toml": 'ignore = ["RL2"]\n[per-file-ignores]\n"b.py" = ["RL501"]\n'})
    r = run_cli("check", "--show-settings", "sub/b.py", cwd=root)
    assert r.returncode == 0, r.stderr
    shown = {k: json.loads(v) for k, v in (line.split(" = ", 1) for line in r.stdout.splitlines())}
    assert shown["configuration"] == str(root / "sub" / "retainlint.toml")
    assert "RL101" in shown["rules"] and "RL201" not in shown["rules"]
    assert shown["ignored-here"] == ["RL501"]
    assert "build" in shown["exclude"]


def readme_tables():
    """Every [tool.retainlint] example of the README, as the table a user would write."""
    text = (ROOT / "README.md").read_text()
    for block in re.findall(r"```toml\n(.*?)```", text, re.S):
        data = tomllib.loads(block)
        if "tool" in data and "retainlint" in data["tool"]:
            yield data["tool"]["retainlint"]


def validate(tmp_path, table):
    instance = tmp_path / "config.json"
    instance.write_text(json.dumps(table))
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--schemafile", str(SCHEMA),
                           str(instance)], capture_output=True, text=True)


def test_schema_accepts_every_readme_example_and_rejects_a_typo(tmp_path):
    tables = list(readme_tables())
    assert tables
    for table in tables:
        r = validate(tmp_path, table)
        assert r.returncode == 0, r.stdout + r.stderr
    r = validate(tmp_path, {"selct": ["RL1"]})
    assert r.returncode == 1 and "selct" in r.stdout + r.stderr
    r = validate(tmp_path, {"unsafe-fixes": "yes"})
    assert r.returncode == 1


def test_schema_knows_exactly_the_keys_the_loader_knows():
    from retainlint.core.config import KNOWN_KEYS

    assert set(json.loads(SCHEMA.read_text())["properties"]) == set(KNOWN_KEYS)


def test_schema_ships_in_the_package():
    import importlib.resources

    assert json.loads(importlib.resources.files("retainlint.core").joinpath("schema.json")
                      .read_text())["type"] == "object"


def test_the_leak_mode_table_is_the_pytest_plugins_and_check_runs_beside_it(tree, tmp_path):
    """A project that sets `[tool.retainlint.leaks]` for `pytest --retainlint-leaks` is still
    checked as configured; the schema accepts the table and rejects a misspelt mode."""
    root = tree({
        "a.py": BUGGY,
        "pyproject.toml": '[tool.retainlint]\nignore = ["RL501"]\n'
                          '[tool.retainlint.leaks]\nmode = "fail"\nmin-bytes = 4096\n',
    })
    r = run_cli("check", ".", "--no-cache", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert validate(tmp_path, {"leaks": {"mode": "fail", "min-bytes": 4096}}).returncode == 0
    assert validate(tmp_path, {"leaks": "report"}).returncode == 0
    assert validate(tmp_path, {"leaks": {"mode": "fial"}}).returncode == 1
