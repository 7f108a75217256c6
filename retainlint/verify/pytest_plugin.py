"""pytest plugin (entry point `pytest11`, active wherever retainlint is installed).

- The `assert_released` fixture, so that a project's own tests can assert that a release
  frees what it should, with the holder chain and the retainlint rule in the failure:

      def test_shutdown_frees_the_model(assert_released):
          engine = make_engine()
          with assert_released(engine.model):
              engine.shutdown()

- Leak mode, `pytest --retainlint-leaks` (or `leaks = "report"` in `[tool.retainlint]` of
  the project's pyproject.toml): what each test leaves alive (`leak_plugin.py`).

Loading the plugin imports neither torch nor the linter; leak mode loads its modules only
when it is on.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Optional

import pytest

from retainlint.verify.api import expect_released

MODES = ("report", "fail", "off")


@pytest.fixture
def assert_released():
    """`assert_released(*objs)`: a context manager; at the end of the block every object
    passed in (and every tensor it owns) must have been freed, else the test fails with
    `RetainedError` naming the reference chain that holds it."""
    return expect_released


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("retainlint", "retainlint leak mode")
    group.addoption("--retainlint-leaks", nargs="?", const="report", default=None, choices=MODES,
                    help="after each test, report the models, large tensors and arrays it made that are "
                         "still alive, with the chain that holds them and the rule that covers it; "
                         "=fail also makes the run fail when there is one")
    group.addoption("--retainlint-leaks-json", metavar="PATH", default=None,
                    help="write what leak mode found to PATH as JSON (for `retainlint check --confirmed-by`)")
    group.addoption("--retainlint-leak-types", action="append", default=[], metavar="CLASSES",
                    help="comma-separated dotted class names (pkg.mod.Class) whose instances are watched too")
    group.addoption("--retainlint-leak-min-bytes", type=int, default=None, metavar="N",
                    help="watch tensors and arrays of at least N bytes (default 1 MiB)")


def _read_table(root: Path) -> tuple[Optional[Path], dict]:
    """`leaks` of `[tool.retainlint]` in the rootdir's pyproject.toml: a mode ("report",
    "fail", "off") or a table {mode, types, min-bytes, growth-tests}."""
    path = root / "pyproject.toml"
    if not path.is_file():
        return None, {}
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise pytest.UsageError(f"{path}: cannot read it ({e})") from None
    value = data.get("tool", {}).get("retainlint", {}).get("leaks")
    if value is None:
        return path, {}
    if isinstance(value, str):
        value = {"mode": value}
    if not isinstance(value, dict):
        raise pytest.UsageError(f"{path}: [tool.retainlint] leaks: expected a mode or a table")
    return path, value


def _check(path: Optional[Path], key: str, value: Any, ok: bool, expected: str) -> Any:
    if not ok:
        raise pytest.UsageError(f"{path}: [tool.retainlint] leaks.{key}: expected {expected}, got {value!r}")
    return value


def leak_settings(config: Any):
    """The settings of leak mode: command-line options over the pyproject table."""
    from retainlint.verify.leaks import LeakSettings

    path, table = _read_table(Path(str(config.rootpath)))
    unknown = set(table) - {"mode", "types", "min-bytes", "growth-tests"}
    if unknown:
        raise pytest.UsageError(f"{path}: [tool.retainlint] leaks: unknown key {sorted(unknown)[0]!r}")
    mode = table.get("mode")
    _check(path, "mode", mode, mode is None or mode in MODES, "one of report, fail, off")
    types = table.get("types", [])
    _check(path, "types", types, isinstance(types, list) and all(isinstance(t, str) for t in types),
           "a list of dotted class names")
    min_bytes = table.get("min-bytes", 1024 * 1024)
    _check(path, "min-bytes", min_bytes, isinstance(min_bytes, int) and min_bytes >= 0, "a number of bytes")
    growth = table.get("growth-tests", 3)
    _check(path, "growth-tests", growth, isinstance(growth, int) and growth >= 2, "a number of tests (2 or more)")
    mode = config.getoption("retainlint_leaks") or mode
    types = [*types, *(t.strip() for arg in config.getoption("retainlint_leak_types") for t in arg.split(",")
                       if t.strip())]
    return LeakSettings(mode=None if mode in (None, "off") else mode, types=tuple(types),
                        min_bytes=config.getoption("retainlint_leak_min_bytes") or min_bytes,
                        growth_tests=growth, json_path=config.getoption("retainlint_leaks_json"))


def pytest_configure(config: Any) -> None:
    settings = leak_settings(config)
    if settings.mode is None:
        return
    from retainlint.verify.leak_plugin import LeakPlugin

    config.pluginmanager.register(LeakPlugin(settings, Path(str(config.rootpath))), "retainlint-leaks")
