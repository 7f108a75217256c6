"""The result cache: a re-run reuses what cannot have changed, and never shows findings
that a run without the cache would not."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import run_cli
from retainlint.project import index as index_module
from retainlint.engine import runner
from retainlint.engine.cache import default_cache_dir, pack, unpack
from retainlint.engine.lint import lint_bytes
from retainlint.core.config import Settings
from retainlint.engine.registry import all_prefilters, all_rules
from retainlint.engine.workers import Workers

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
CODES = [r.code for r in all_rules()]


def _findings(cwd, *args):
    done = run_cli("check", ".", "--output-format", "json", *args, cwd=cwd)
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["filename"], f["location"]["row"], f["code"], f["message"])
                  for f in json.loads(done.stdout))


@pytest.mark.slow  # whole trees, several runs
def test_findings_identical_with_and_without_cache_and_at_any_process_count(tmp_path):
    tree = tmp_path / "fixtures"
    # The rule, incident and project fixtures; not the blind batches, which grow with each
    # batch collected and exercise no part of the cache the others do not.
    shutil.copytree(FIXTURES, tree, ignore=shutil.ignore_patterns("blind*"))
    fresh = _findings(tree, "--no-cache", "-j", "1")
    assert len(fresh) > 40
    assert _findings(tree, "--no-cache", "-j", "2") == fresh
    assert _findings(tree, "-j", "2") == fresh  # cold: fills the cache
    cache = default_cache_dir(tree)  # outside the checked tree
    assert (cache / "CACHEDIR.TAG").exists() and (cache / ".gitignore").read_text() == "*\n"
    assert not list(tree.rglob(".retainlint_cache")) and not list(tree.rglob("*.bin"))
    assert _findings(tree, "-j", "1") == fresh  # warm


def _multi_file_cases():
    return sorted(d for d in FIXTURES.glob("RL*/*") if d.is_dir() and not d.name.endswith(".fixed"))


@pytest.mark.parametrize("case", _multi_file_cases(), ids=lambda d: f"{d.parent.name}/{d.name}")
def test_deleting_a_file_another_depends_on_refreshes_the_others(tmp_path, case):
    """Each multi-file fixture's findings depend on its other files: delete each file in
    turn and the warm run must agree with a run without the cache."""
    for victim in sorted(p.relative_to(case) for p in case.rglob("*.py")):
        tree = tmp_path / victim.as_posix().replace("/", "_")
        shutil.copytree(case, tree)
        cache = tmp_path / f"cache-{tree.name}"
        assert _run(tree, cache).findings == _run(tree, None).findings
        (tree / victim).unlink()
        assert _run(tree, cache).findings == _run(tree, None).findings, victim


def _run(root: Path, cache: Path | None):
    return runner.run(sorted(str(p) for p in root.rglob("*.py")), CODES,
                      Settings(root=root), runner.Mode(), jobs=1, cache_dir=cache)


def test_warm_run_lints_only_what_changed_and_what_depends_on_it(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(textwrap.dedent("""\
        import functools

        @functools.lru_cache(maxsize=None)
        def signature_of(fn):
            return fn.__name__
        """))
    (pkg / "runner.py").write_text(textwrap.dedent("""\
        from pkg.helpers import signature_of

        class Runner:
            def __init__(self, model):
                self.model = model
                self.sig = signature_of(self.model.forward)
        """))
    for i in range(5):
        (pkg / f"other{i}.py").write_text(f"import torch\n\nVALUE_{i} = torch.zeros(3)\n")
    cache = tmp_path / "cache"
    linted: list[str] = []
    check_all = runner._check_all

    def spy(contents, paths, *args):
        linted.extend(Path(p).name for p in paths)
        return check_all(contents, paths, *args)

    monkeypatch.setattr(runner, "_check_all", spy)
    first = _run(tmp_path, cache)
    assert [(Path(f.path).name, f.start.line, f.code) for f in first.findings] == [
        ("helpers.py", 4, "RL101"), ("runner.py", 6, "RL101")]
    assert "runner.py" in linted

    linted.clear()
    assert _run(tmp_path, cache).findings == first.findings
    assert linted == []  # nothing changed: nothing parsed

    (pkg / "other3.py").write_text("import torch\n\nVALUE_3 = torch.ones(3)\n")
    linted.clear()
    assert _run(tmp_path, cache).findings == first.findings
    assert "runner.py" not in linted  # it does not depend on other3.py

    # The cached function is no longer cached: runner.py's finding must go.
    (pkg / "helpers.py").write_text("def signature_of(fn):\n    return fn.__name__\n")
    assert _run(tmp_path, cache).findings == []


def test_unreadable_or_corrupt_cache_is_a_miss(tmp_path):
    (tmp_path / "m.py").write_text(textwrap.dedent("""\
        import torch

        class Wrapper:
            def __init__(self, model):
                torch._dynamo.convert_frame.register_bytecode_hook(self.hook)
        """))
    first = run_cli("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert first.returncode == 1 and "m.py:5:9: RL501" in first.stdout
    [stored] = default_cache_dir(tmp_path).glob("run-*.bin")
    stored.write_bytes(stored.read_bytes()[:-7] + b"garbage")
    again = run_cli("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert again.returncode == 1 and again.stdout == first.stdout


def test_an_edit_the_index_does_not_see_relints_that_file_alone(tmp_path, monkeypatch):
    """A comment or a changed constant leaves the project index as it was: the re-run
    lints the edited file (and the files that consulted it), and reports what a run
    without the cache reports - including a new finding in the edited file."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "model.py").write_text("import torch\n\nclass Net(torch.nn.Module):\n    pass\n")
    (pkg / "registry.py").write_text(textwrap.dedent("""\
        from pkg.model import Net

        _by_model: dict[Net, int] = {}

        def remember(net: Net, n: int):
            _by_model[net] = n
        """))
    for i in range(4):
        (pkg / f"other{i}.py").write_text(f"VALUE_{i} = {i}\n")
    cache = tmp_path / "cache"
    linted: list[str] = []
    check_all = runner._check_all

    def spy(contents, paths, *args):
        linted.extend(Path(p).name for p in paths)
        return check_all(contents, paths, *args)

    monkeypatch.setattr(runner, "_check_all", spy)
    validated: list[int] = []  # runs that loaded the per-file cache to validate every file
    findings_cache = runner.FindingsCache
    monkeypatch.setattr(runner, "FindingsCache",
                        lambda *a: validated.append(1) or findings_cache(*a))
    first = _run(tmp_path, cache)
    assert [(Path(f.path).name, f.code) for f in first.findings] == [("registry.py", "RL301")]

    with open(pkg / "other2.py", "a") as f:
        f.write("# a comment\n")
    linted.clear()
    validated.clear()
    assert _run(tmp_path, cache).findings == first.findings
    assert linted == [] and validated == []  # other2.py: nothing can match it or depends on it

    (pkg / "model.py").write_text("import torch\n\nclass Net(torch.nn.Module):\n    pass  # edited\n")
    linted.clear()
    assert _run(tmp_path, cache).findings == first.findings
    # registry.py looked Net up there; model.py itself is one no rule can match
    assert linted == ["registry.py"] and validated == []
    assert _run(tmp_path, None).findings == first.findings

    # A finding appears in the edited file; the index still sees the same file.
    (pkg / "other1.py").write_text(textwrap.dedent("""\
        import gc
        VALUE_1 = 1

        def main():
            gc.freeze()
        """))
    _run(tmp_path, cache)
    (pkg / "other1.py").write_text(textwrap.dedent("""\
        import gc
        VALUE_1 = 2

        def main():
            gc.freeze()
        """))
    assert _run(tmp_path, cache).findings == _run(tmp_path, None).findings


def _fixtures_as_one_project():
    """Every fixture file, their summaries by path, and the index over all of them."""
    paths = sorted(str(p) for p in FIXTURES.rglob("*.py") if ".fixed" not in str(p))
    summaries = {os.path.abspath(p): s for p in paths
                 if (s := index_module.summarize(p, Path(p).read_bytes(), all_prefilters())) is not None}
    return paths, summaries, index_module.ProjectIndex(summaries.values())


def _lint_findings(path, index):
    result = lint_bytes(path, Path(path).read_bytes(), list(all_rules()), Settings(), index=index)
    return [(f.code, f.start, f.message) for f in result.findings]


@pytest.mark.slow  # whole trees, several runs
def test_an_index_restored_from_its_snapshot_gives_the_same_findings():
    paths, summaries, full = _fixtures_as_one_project()
    snapshot = pack(full.snapshot())
    reads = []
    for p in paths:
        read: list[str] = []
        restored = index_module.ProjectIndex.restore(
            unpack(snapshot), lambda path: read.append(path) or summaries.get(path))
        assert restored.fingerprint() == full.fingerprint()
        assert _lint_findings(p, restored) == _lint_findings(p, full), p
        reads.append(len(read))
    # summaries are read when looked up (a project-wide question reads them all)
    assert min(reads) < len(summaries)


def test_a_run_answered_from_the_cache_imports_neither_libcst_nor_the_rules(tmp_path):
    (tmp_path / "m.py").write_text(textwrap.dedent("""\
        import torch

        class Wrapper:
            def __init__(self, model):
                torch._dynamo.convert_frame.register_bytecode_hook(self.hook)
        """))
    first = run_cli("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert first.returncode == 1 and "m.py:5:9: RL501" in first.stdout
    probe = ("import sys\nfrom retainlint.cli import main\n"
             "try:\n    main(['check', '--output-format', 'concise', '.'])\n"
             "except SystemExit as e:\n    code = e.code\n"
             "print(code, 'libcst' in sys.modules, any(m.startswith('retainlint.rules.rl') for m in sys.modules))\n")
    again = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                           text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    assert "m.py:5:9: RL501" in again.stdout
    assert again.stdout.splitlines()[-1] == "1 False False", again.stdout + again.stderr
    # The full text output says what each code it shows is about, read from the rule's source.
    full = subprocess.run([sys.executable, "-c", probe.replace("'concise'", "'full'")], cwd=tmp_path,
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    assert "The removal handle of a registered hook is thrown away" in " ".join(full.stdout.split())
    assert full.stdout.splitlines()[-1] == "1 False False", full.stdout + full.stderr

    # An edit no rule can match (the pre-commit case): the prefilters decide it from the
    # file's `ast` without importing libcst or the rules; the other file's finding stays.
    (tmp_path / "util.py").write_text("def scale(x):\n    return x * 2\n")
    run_cli("check", ".", cwd=tmp_path)
    (tmp_path / "util.py").write_text("def scale(x):\n    return x * 3\n")
    edited = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True,
                            text=True, env={**os.environ, "NO_COLOR": "1"}, timeout=120)
    assert "m.py:5:9: RL501" in edited.stdout
    assert edited.stdout.splitlines()[-1] == "1 False False", edited.stdout + edited.stderr


@pytest.mark.slow  # whole trees, several runs
def test_project_wide_answers_travel_with_the_snapshot():
    """A file edited since the last run asks the project-wide questions it asked then
    (`is this name used anywhere?`): the snapshot carries the answers, so the re-run
    reads only the summaries it looks up, never every file's."""
    paths, summaries, full = _fixtures_as_one_project()
    before = {p: _lint_findings(p, full) for p in paths}  # the last run: questions asked here
    assert len(full.answers) > 10
    snapshot = pack(full.snapshot())
    for p in paths:
        read: list[str] = []
        restored = index_module.ProjectIndex.restore(
            unpack(snapshot), lambda path: read.append(path) or summaries.get(path))
        assert _lint_findings(p, restored) == before[p], p
        assert len(read) < len(summaries) / 2, p


def test_files_edited_while_a_run_reads_them_are_indexed_and_checked_as_first_read(tmp_path):
    """A run caches what it found under the digest of the content it read; an edit saved
    on disk in between (an editor, another run's --fix) must not be what it analysed,
    or a later run would meet the edit's findings under the old content's key."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    helper = pkg / "helpers.py"
    runner_py = pkg / "runner.py"
    cached = "import functools\n\n@functools.lru_cache(maxsize=None)\ndef signature_of(fn):\n    return fn.__name__\n"
    runner_py.write_text("from pkg.helpers import signature_of\n\nclass Runner:\n"
                         "    def __init__(self, model):\n        self.sig = signature_of(model.forward)\n")
    helper.write_text("def signature_of(fn):\n    return fn.__name__\n")  # what is on disk now
    paths = [str(pkg / "__init__.py"), str(helper), str(runner_py)]
    read = {p: Path(p).read_bytes() for p in paths}
    read[str(helper)] = cached.encode()  # what the run read before the edit
    settings = Settings(root=tmp_path)
    index = runner.build_index(paths, settings, Workers(1), read)
    outcomes = runner._check_all(read, paths, CODES, settings, runner.Mode(), index, Workers(1))
    found = sorted((Path(o.path).name, f.start.line, f.code) for o in outcomes for f in o.findings)
    assert found == [("helpers.py", 4, "RL101"), ("runner.py", 5, "RL101")]
