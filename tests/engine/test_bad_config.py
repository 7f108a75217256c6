"""A bad configuration is one line on stderr naming the file, and exit 2: never a traceback."""

import os

import pytest

from conftest import run_cli

TABLE = b"[tool.retainlint]\n"
NESTED = b"select = " + b"[" * 5000 + b"]" * 5000 + b"\n"

# name -> (files to write, the file the error names, extra arguments)
CASES = {
    "tool is not a table": ({"pyproject.toml": b"tool = 5\n"}, "pyproject.toml", ()),
    "tool.retainlint is not a table": ({"pyproject.toml": b"[tool]\nretainlint = 5\n"},
                                       "pyproject.toml", ()),
    "tool.retainlint is an array of tables": ({"pyproject.toml": b"[[tool.retainlint]]\nselect = []\n"},
                                              "pyproject.toml", ()),
    "select is a number": ({"pyproject.toml": TABLE + b"select = 5\n"}, "pyproject.toml", ()),
    "exclude is a string": ({"pyproject.toml": TABLE + b'exclude = "x"\n'}, "pyproject.toml", ()),
    "exclude holds a number": ({"pyproject.toml": TABLE + b"exclude = [1]\n"}, "pyproject.toml", ()),
    "heavy-types is a table": ({"pyproject.toml": TABLE + b"heavy-types = {a = 1}\n"},
                               "pyproject.toml", ()),
    "per-file-ignores is a number": ({"pyproject.toml": TABLE + b"per-file-ignores = 5\n"},
                                     "pyproject.toml", ()),
    "per-file-ignores is a list": ({"pyproject.toml": TABLE + b'per-file-ignores = ["RL301"]\n'},
                                   "pyproject.toml", ()),
    "per-file-ignores maps to a string": (
        {"pyproject.toml": TABLE + b'per-file-ignores = {"a.py" = "RL301"}\n'}, "pyproject.toml", ()),
    "per-file-ignores maps to numbers": (
        {"pyproject.toml": TABLE + b'per-file-ignores = {"a.py" = [1]}\n'}, "pyproject.toml", ()),
    "per-file-ignores maps to a table": (
        {"pyproject.toml": TABLE + b'per-file-ignores = {"a.py" = {b = ["RL301"]}}\n'},
        "pyproject.toml", ()),
    "invalid TOML": ({"pyproject.toml": b"[tool.retainlint\n"}, "pyproject.toml", ()),
    "invalid UTF-8": ({"pyproject.toml": TABLE + b'select = ["\xff"]\n'}, "pyproject.toml", ()),
    "invalid UTF-8 in retainlint.toml": ({"retainlint.toml": b"\xff\xfe"}, "retainlint.toml", ()),
    "nested too deep": ({"pyproject.toml": TABLE + NESTED}, "pyproject.toml", ()),
    "a directory named pyproject.toml": ({"pyproject.toml/x": b""}, "pyproject.toml", ()),
    "a directory named retainlint.toml": ({"retainlint.toml/x": b""}, "retainlint.toml", ()),
    "--config: tool.retainlint is not a table": (
        {"conf/pyproject.toml": b"[tool]\nretainlint = 5\n"}, "conf/pyproject.toml",
        ("--config", "conf/pyproject.toml")),
    "--config: a directory": ({"conf/x": b""}, "conf", ("--config", "conf")),
    "--config: invalid UTF-8": ({"my.toml": b"select = 5\xff\n"}, "my.toml", ("--config", "my.toml")),
}


@pytest.mark.parametrize("case", CASES)
def test_bad_config_is_one_line_and_exit_2(tmp_path, case):
    files, named, args = CASES[case]
    for name, data in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_bytes(data)
    (tmp_path / "a.py").write_text("x = 1\n")
    # Found by searching: the absolute path; given with --config: as given.
    shown = named if args else str(tmp_path.resolve() / named)

    proc = run_cli("check", "--no-cache", *args, "a.py", cwd=tmp_path)

    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"retainlint: error: {shown}: "), line
    assert proc.returncode == 2, proc.stderr


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root reads a file whatever its mode")
def test_unreadable_config_is_one_line_and_exit_2(tmp_path):
    config = tmp_path / "pyproject.toml"
    config.write_text("[tool.retainlint]\n")
    (tmp_path / "a.py").write_text("x = 1\n")
    config.chmod(0)
    try:
        proc = run_cli("check", "--no-cache", "a.py", cwd=tmp_path)
    finally:
        config.chmod(0o644)
    assert "Traceback" not in proc.stderr
    [line] = proc.stderr.splitlines()
    assert line.startswith(f"retainlint: error: {config.resolve()}: "), line
    assert proc.returncode == 2
