"""Module names for folders without `__init__.py` (PEP 420 namespace packages).

Under the project root (or its `src/`), Python imports `pkg/utils/introspect.py` as
`pkg.utils.introspect` whether or not the folders hold an `__init__.py`: cross-file
findings must not depend on those empty files. Each case runs the real CLI on a real
tree, the whole of it and one file at a time (as pre-commit names files)."""

from __future__ import annotations

import json
import subprocess
import textwrap
from pathlib import Path

import pytest
from conftest import run_cli

CACHED = textwrap.dedent(
    """\
    import functools
    import inspect


    @functools.lru_cache(maxsize=None)
    def takes_kwarg(fn, name: str) -> bool:
        return name in inspect.signature(fn).parameters
    """
)

PLAIN = textwrap.dedent(
    """\
    import inspect


    def takes_kwarg(fn, name: str) -> bool:
        return name in inspect.signature(fn).parameters
    """
)


def caller(module: str) -> str:
    return textwrap.dedent(
        f"""\
        from {module} import takes_kwarg


        class ModelRunner:
            def __init__(self, model):
                self.model = model
                self.uses_cache = takes_kwarg(self.model.forward, "kv_cache")
        """
    )


def make_tree(root: Path, files: dict[str, str], marker: str) -> Path:
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    if marker == "git":
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    else:
        (root / marker).write_text("[tool.retainlint]\n" if marker == "pyproject.toml" else "")
    return root


def with_inits(files: dict[str, str]) -> dict[str, str]:
    """The same tree with an empty `__init__.py` in every folder below the source root."""
    out = dict(files)
    for name in files:
        parts = Path(name).parts[:-1]
        start = 1 if parts[:1] == ("src",) else 0
        for i in range(start + 1, len(parts) + 1):
            out.setdefault(str(Path(*parts[:i], "__init__.py")), "")
    return out


def findings(root: Path, *paths: str) -> list[tuple]:
    result = run_cli("check", "--no-cache", "--select", "RL101", "--output-format", "json",
                     *paths, cwd=root)
    assert result.returncode in (0, 1), result.stderr
    return sorted(
        (f["filename"], f["location"]["row"], f["code"], f["message"],
         tuple(r["message"] for r in f["related"]))
        for f in json.loads(result.stdout))


LAYOUTS = {
    "flat": ({"app/runner.py": caller("pkg.utils.introspect"),
              "pkg/utils/introspect.py": CACHED}, "app/runner.py", "pkg/utils/introspect.py"),
    "src": ({"src/app/runner.py": caller("pkg.utils.introspect"),
             "src/pkg/utils/introspect.py": CACHED}, "src/app/runner.py", "src/pkg/utils/introspect.py"),
}


@pytest.mark.parametrize("marker", ["git", "pyproject.toml"])
@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_same_findings_with_and_without_init_files(tmp_path, layout, marker):
    files, runner, cached = LAYOUTS[layout]
    bare = make_tree(tmp_path / "bare", files, marker)
    regular = make_tree(tmp_path / "regular", with_inits(files), marker)
    expected = [
        (runner, 7, "RL101",
         "`self.model.forward` (a bound method) is passed to cached `takes_kwarg`: the cache keeps "
         "it - and the instance it belongs to - alive as long as the entry lives (for an "
         "unbounded cache, forever)",
         ("`pkg.utils.introspect.takes_kwarg` is cached here",)),
        (cached, 6, "RL101",
         "cached `takes_kwarg` keeps its arguments alive and it is called with bound methods "
         f"or instances ({runner}:7): every model or instance that reaches it stays allocated "
         "as long as its cache entry", ()),
    ]
    for root in (regular, bare):
        assert findings(root) == expected, root.name
        # pre-commit names only the changed files; the rest of the project is still read
        assert findings(root, runner) == expected[:1], root.name
        assert findings(root, cached) == expected[1:], root.name


def test_same_named_modules_in_two_namespace_folders_are_told_apart(tmp_path):
    """`fast/utils.py` and `slow/utils.py` are two modules, not one called `utils`."""
    root = make_tree(tmp_path, {
        "fast/utils.py": PLAIN,
        "slow/utils.py": CACHED,
        "app/cached_one.py": caller("slow.utils"),
        "app/plain_one.py": caller("fast.utils"),
    }, "git")
    reported = findings(root)
    assert [(f[0], f[1]) for f in reported] == [("app/cached_one.py", 7), ("slow/utils.py", 6)]
    assert reported[0][4] == ("`slow.utils.takes_kwarg` is cached here",)


def test_sibling_import_in_a_script_folder_still_resolves(tmp_path):
    """A script folder is also on `sys.path` when its scripts run: `from helpers import`
    beside `helpers.py` names the same file as `tools.helpers`."""
    root = make_tree(tmp_path, {
        "tools/helpers.py": CACHED,
        "tools/run.py": caller("helpers"),
    }, "git")
    assert [(f[0], f[1]) for f in findings(root)] == [("tools/helpers.py", 6), ("tools/run.py", 7)]
    assert [(f[0], f[1]) for f in findings(root, "tools/run.py")] == [("tools/run.py", 7)]


def test_a_regular_package_inside_a_namespace_folder(tmp_path):
    """`vendor/` has no `__init__.py`, `vendor/lib/` has one: `vendor.lib.introspect`."""
    root = make_tree(tmp_path, {
        "vendor/lib/__init__.py": "",
        "vendor/lib/introspect.py": CACHED,
        "app/runner.py": caller("vendor.lib.introspect"),
    }, "git")
    assert [(f[0], f[1]) for f in findings(root, "app/runner.py")] == [("app/runner.py", 7)]


def test_folders_python_cannot_import_are_not_packages(tmp_path):
    """A folder whose name is no identifier (`my-tools/`) cannot be a package: its files
    are named from there down, as when the folder itself is on `sys.path`."""
    root = make_tree(tmp_path, {
        "my-tools/pkg/introspect.py": CACHED,
        "my-tools/run.py": caller("pkg.introspect"),
    }, "git")
    assert [(f[0], f[1]) for f in findings(root)] == [
        ("my-tools/pkg/introspect.py", 6), ("my-tools/run.py", 7)]


def test_a_cached_run_after_an_edit_still_resolves_both_names(tmp_path):
    """The second run restores the project index from the cache (one file edited, the
    index unchanged): a module looked up under its other name is found there too."""
    root = make_tree(tmp_path / "project", {
        "tools/helpers.py": CACHED,
        "tools/run.py": caller("helpers"),
        "app/runner.py": caller("tools.helpers"),
    }, "git")
    cache = ["--cache-dir", str(tmp_path / "cache")]

    def cached_run() -> list[tuple]:
        result = run_cli("check", "--select", "RL101", "--output-format", "json", *cache, cwd=root)
        assert result.returncode == 1, result.stderr
        return sorted((f["filename"], f["location"]["row"]) for f in json.loads(result.stdout))

    expected = [("app/runner.py", 7), ("tools/helpers.py", 6), ("tools/run.py", 7)]
    assert cached_run() == expected
    with open(root / "tools" / "run.py", "a") as f:
        f.write("# edited\n")
    with open(root / "app" / "runner.py", "a") as f:
        f.write("# edited\n")
    assert cached_run() == expected
