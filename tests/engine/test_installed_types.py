"""Heavy types of installed packages: a real package, built and pip-installed here, is
read with astroid (never imported), and its answers are kept as signed facts of its
version, so a warm run imports neither astroid nor libcst."""

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import run_cli

PACKAGE = {
    # importing the package would leave a mark: it must never happen
    "netpkg/__init__.py": """\
        import pathlib, os
        pathlib.Path(os.environ["NETPKG_MARK"]).write_text("imported")

        from .models import *
        from .cache import memo as memo
        """,
    "netpkg/models.py": """\
        import torch
        from torch import nn

        __all__ = ["Net", "make_net", "Plain", "make_plain"]


        class _Base(torch.nn.Module):
            @classmethod
            def from_file(cls, path):
                model = cls()
                return model


        class Net(_Base):
            def __init__(self):
                super().__init__()
                self.fc = nn.Linear(4, 4)


        class Plain:
            pass


        def make_net() -> nn.Module:
            return Net()


        def make_plain():
            return Plain()
        """,
    # a lazy package, as diffusers and transformers are: names bound for type checkers,
    # loaded on first use at runtime
    "netpkg/zoo/__init__.py": """\
        import sys
        from typing import TYPE_CHECKING

        if TYPE_CHECKING:
            from .big import *
        else:
            sys.modules[__name__] = object()  # stands in for a _LazyModule
        """,
    "netpkg/zoo/big.py": """\
        from torch import nn


        class BigNet(nn.Sequential):
            pass


        def build(depth):
            model = BigNet(*[nn.Linear(8, 8) for _ in range(depth)])
            return model
        """,
    "netpkg/cache.py": """\
        import functools


        def memo(fn):
            return functools.lru_cache(maxsize=None)(fn)
        """,
    "pyproject.toml": """\
        [build-system]
        requires = ["setuptools"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "netpkg"
        version = "1.0"
        dependencies = ["torch"]
        """,
}

USER = """\
import weakref

from netpkg import Net, Plain, make_net, make_plain, memo
from netpkg.zoo import build

_by_net: dict[Net, int] = {}
_by_plain: dict[Plain, int] = {}


def remember(net, plain, n: int) -> None:
    _by_net[net] = n
    _by_plain[plain] = n


def cleanup(*objects):
    pass


class Holder:
    def __init__(self):
        self.net = make_net()
        self.plain = make_plain()
        weakref.finalize(self, cleanup, self.net)
        weakref.finalize(self, cleanup, self.plain)


class Service:
    @memo
    def predict(self, x):
        return x


class Owner:
    def __init__(self):
        self.model = build(4)  # unannotated: judged by what it returns
        weakref.finalize(self, cleanup, self.model)
        self.loaded = Net.from_file("w.pt")  # a classmethod making `cls()`
        weakref.finalize(self, cleanup, self.loaded)
"""

FOUND = ["user.py:6:1: RL301", "user.py:23:41: RL201", "user.py:28:5: RL102", "user.py:36:41: RL201",
         "user.py:38:41: RL201"]


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """netpkg 1.0, built from source and installed by pip into a folder of its own."""
    base = tmp_path_factory.mktemp("netpkg")
    _write(base / "src", PACKAGE)
    target = base / "site"
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--no-index", "--no-build-isolation", "--target", str(target),
                           str(base / "src")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert (target / "netpkg-1.0.dist-info").is_dir()
    return target


@pytest.fixture
def project(tmp_path) -> Path:
    root = tmp_path / "project"
    _write(root, {"user.py": USER})
    return root


def _env(tmp_path: Path, site: Path | None) -> dict[str, str]:
    env = {"XDG_CACHE_HOME": str(tmp_path / "user-cache"), "NETPKG_MARK": str(tmp_path / "mark"),
           "RETAINLINT_CACHE_DIR": str(tmp_path / "results")}
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return env


def _codes(stdout: str) -> list[str]:
    return [line.rsplit(" RL", 1)[0] + " RL" + line.split(" RL", 1)[1][:3]
            for line in stdout.splitlines() if " RL" in line and line.startswith("user.py:")]


def test_a_class_and_a_factory_of_an_installed_package_are_heavy(site, project, tmp_path):
    done = run_cli("check", "--output-format", "concise", ".", cwd=project, env=_env(tmp_path, site))
    assert done.returncode == 1, done.stdout + done.stderr
    # Net derives from torch.nn.Module through a private base, re-exported by a star
    # import; make_net is annotated `-> nn.Module`; memo applies functools.lru_cache;
    # build, bound only for type checkers in a lazy package, returns a BigNet it made;
    # Net.from_file, a classmethod of its base, returns `cls()`.
    # Plain and make_plain are not heavy: nothing about them is reported.
    assert _codes(done.stdout) == FOUND
    assert done.stderr == ""  # nothing said without -v
    assert not (tmp_path / "mark").exists()  # read, never imported


def test_without_the_package_installed_nothing_is_reported(project, tmp_path):
    done = run_cli("check", "--output-format", "concise", ".", cwd=project, env=_env(tmp_path, None))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All checks passed" in done.stdout


def test_the_flag_and_the_setting_turn_it_off(site, project, tmp_path):
    off = run_cli("check", "--no-installed-types", "--output-format", "concise", ".", cwd=project,
                  env=_env(tmp_path, site))
    assert off.returncode == 0 and _codes(off.stdout) == [], off.stdout
    (project / "pyproject.toml").write_text("[tool.retainlint]\ninstalled-types = false\n")
    off = run_cli("check", "--output-format", "concise", ".", cwd=project, env=_env(tmp_path, site))
    assert off.returncode == 0 and _codes(off.stdout) == [], off.stdout
    (project / "pyproject.toml").write_text("[tool.retainlint]\ninstalled-types = 1\n")
    bad = run_cli("check", ".", cwd=project, env=_env(tmp_path, site))
    assert bad.returncode == 2
    assert bad.stderr.strip().endswith("[tool.retainlint] installed-types: expected true or false, got 1")


def test_installing_the_package_after_a_run_is_noticed_without_a_file_change(site, project, tmp_path):
    """The last run is not reused across an install: the folder packages are found in
    changed, so the same unchanged tree is checked again and the new heavy types count."""
    later = tmp_path / "later-site"
    later.mkdir()
    env = _env(tmp_path, later)
    before = run_cli("check", "--output-format", "concise", ".", cwd=project, env=env)
    assert before.returncode == 0 and _codes(before.stdout) == [], before.stdout
    time.sleep(0.01)  # a distinct modification time on coarse file systems
    shutil.copytree(site, later, dirs_exist_ok=True)
    after = run_cli("check", "--output-format", "concise", ".", cwd=project, env=env)
    assert after.returncode == 1 and _codes(after.stdout) == FOUND, after.stdout


def test_a_warm_run_imports_neither_astroid_nor_libcst(site, project, tmp_path):
    env = {**os.environ, "NO_COLOR": "1", **_env(tmp_path, site)}
    probe = ("import sys\nfrom retainlint.cli import main\n"
             "try:\n    main(['check', '--output-format', 'concise', *sys.argv[1:], '.'])\n"
             "except SystemExit as e:\n    code = e.code\n"
             "print(code, 'astroid' in sys.modules, 'libcst' in sys.modules)\n")

    def probed(*args: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", probe, *args], cwd=project, env=env,
                              capture_output=True, text=True, timeout=120)
        return done.stdout.splitlines()

    cold = probed()
    assert _codes("\n".join(cold)) == FOUND and cold[-1] == "1 True True"
    warm = probed()
    assert _codes("\n".join(warm)) == FOUND and warm[-1] == "1 False False"
    # Without the cache nothing kept is believed: every file is linted again (libcst), and
    # netpkg's names are read again (astroid), as `--no-cache` promises.
    relinted = probed("--no-cache")
    assert _codes("\n".join(relinted)) == FOUND and relinted[-1] == "1 True True"


def test_verbose_says_what_was_read_and_a_forged_fact_is_not_believed(site, project, tmp_path):
    env = _env(tmp_path, site)
    first = run_cli("check", "-v", ".", cwd=project, env=env)
    assert "retainlint: installed types: " in first.stderr
    assert "names read with astroid" in first.stderr
    facts = list((tmp_path / "user-cache" / "retainlint" / "installed-types").glob("netpkg-1.0-*.bin"))
    assert len(facts) == 1
    # A facts file not signed with this machine's key (copied from elsewhere, or edited)
    # is a miss: the package is read again, and its forged verdicts are not used.
    data = bytearray(facts[0].read_bytes())
    data[-1] ^= 1
    facts[0].write_bytes(bytes(data))
    # (a result cache of its own: the files are linted again, the facts file is asked)
    again = run_cli("check", "-v", "--cache-dir", str(tmp_path / "other-results"),
                    "--output-format", "concise", ".", cwd=project, env=env)
    assert _codes(again.stdout) == FOUND
    assert "names read with astroid" in again.stderr


def test_the_shipped_table_knows_major_libraries_that_are_not_installed(tmp_path):
    root = tmp_path / "project"
    _write(root, {"user.py": """\
        import timm
        from diffusers import ModelMixin

        _by_model: dict[ModelMixin, int] = {}


        def remember(model, n):
            _by_model[model] = n


        class Denoiser(ModelMixin):
            pass


        _denoisers: dict[Denoiser, str] = {}


        def name(d):
            _denoisers[d] = "x"


        _features = {}


        def features(name):
            _features[name] = timm.create_model(name)
        """})
    done = run_cli("check", "--output-format", "concise", "--select", "RL301,RL303", ".", cwd=root,
                   env=_env(tmp_path, None))
    assert [c for c in _codes(done.stdout)][:2] == ["user.py:4:1: RL301", "user.py:15:1: RL301"], done.stdout


@pytest.mark.slow  # reads every package installed beside retainlint, torch included, afresh
def test_the_bench_project_is_clean_where_its_libraries_are_not_installed(tmp_path):
    """fixtures/installed_types/imagegen derives from diffusers/timm/peft classes that are
    not in the table: its findings need those packages installed (a bench venv, not CI)."""
    project = Path(__file__).resolve().parents[2] / "fixtures" / "installed_types" / "imagegen"
    done = run_cli("check", "--no-cache", "--output-format", "concise", ".", cwd=project,
                   env=_env(tmp_path, None))
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_package_edited_in_place_is_read_again(site, project, tmp_path):
    """An editable install (or an edited site-packages) keeps its name and version while
    its source changes: the verdicts kept for it follow the files, with or without the
    result cache."""
    edited = tmp_path / "site"
    shutil.copytree(site, edited)
    env = _env(tmp_path, edited)
    before = run_cli("check", "--output-format", "concise", ".", cwd=project, env=env)
    assert _codes(before.stdout) == FOUND, before.stdout
    models = edited / "netpkg" / "models.py"
    models.write_text(models.read_text().replace("class Plain:", "class Plain(torch.nn.Module):"))
    plain = "user.py:7:1: RL301"  # `_by_plain`, keyed by a model now
    after = run_cli("check", "--no-cache", "--output-format", "concise", ".", cwd=project, env=env)
    assert plain in _codes(after.stdout), after.stdout
    # With a cache: the verdicts kept in the user cache directory are not believed either
    # (a result cache of its own, so that the files are linted and the facts asked).
    after = run_cli("check", "--cache-dir", str(tmp_path / "other-results"), "--output-format",
                    "concise", ".", cwd=project, env=env)
    assert plain in _codes(after.stdout), after.stdout


DIAMOND_MODULES = 61


@pytest.fixture(scope="module")
def diamond(tmp_path_factory) -> Path:
    """An installed package of 61 modules, each star-importing the four after it: a name
    looked up through them has some 4**12 ways to go. One of them defines a model."""
    site = tmp_path_factory.mktemp("diamond") / "site"
    for i in range(DIAMOND_MODULES):
        stars = "".join(f"from diamond.m{j} import *\n" for j in range(i + 1, i + 5)
                        if j < DIAMOND_MODULES)
        body = "import torch\n\n\nclass Deep(torch.nn.Module):\n    pass\n" if i == 8 else \
            f"class Base{i}:\n    pass\n"
        _write(site, {f"diamond/m{i}.py": stars + "\n\n" + body})
    _write(site, {"diamond/__init__.py": "from diamond.m0 import *\n",
                  "diamond-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: diamond\n"
                                                    "Version: 1.0\nRequires-Dist: torch\n",
                  "diamond-1.0.dist-info/top_level.txt": "diamond\n"})
    return site


def test_star_import_diamonds_are_read_once_per_module(diamond, tmp_path):
    root = tmp_path / "project"
    _write(root, {"user.py": """\
        from diamond import Deep, Nowhere

        _by_deep: dict[Deep, int] = {}


        class Missing(Nowhere):  # looked up through every module, in vain
            pass


        def remember(model, n):
            _by_deep[model] = n
        """})
    done = run_cli("check", "--no-cache", "--output-format", "concise", ".", cwd=root,
                   env=_env(tmp_path, diamond))
    assert _codes(done.stdout) == ["user.py:3:1: RL301"], done.stdout + done.stderr
