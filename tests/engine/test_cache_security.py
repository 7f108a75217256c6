"""The cache can neither run code nor lie: a pull request that commits cache files, or
plants symbolic links among them, gains nothing; runs killed at any point or running
side by side never report what a run without the cache would not."""

import hashlib
import hmac
import json
import marshal
import os
import pickle
import random
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import run_cli
from retainlint import __version__
from retainlint.engine.cache import SCHEMA, default_cache_dir

RUNNER = textwrap.dedent("""\
    from pkg.helpers import signature_of

    class Runner:
        def __init__(self, model):
            self.model = model
            self.sig = signature_of(self.model.forward)
    """)
CACHED_HELPER = textwrap.dedent("""\
    import functools

    @functools.lru_cache(maxsize=None)
    def signature_of(fn):
        return fn.__name__
    """)
PLAIN_HELPER = "def signature_of(fn):\n    return fn.__name__\n"


def _project(root: Path) -> Path:
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "helpers.py").write_text(CACHED_HELPER)
    (pkg / "runner.py").write_text(RUNNER)
    (pkg / "registry.py").write_text(textwrap.dedent("""\
        import torch

        _by_model: dict[torch.nn.Module, int] = {}

        def remember(net: torch.nn.Module, n: int):
            _by_model[net] = n
        """))
    for i in range(6):
        (pkg / f"other{i}.py").write_text(f"VALUE_{i} = {i}\n")
    return root


def _findings(cwd: Path, *args: str, env=None) -> list:
    done = run_cli("check", ".", "--output-format", "json", *args, cwd=cwd, env=env)
    assert done.returncode in (0, 1), done.stderr
    return sorted((f["filename"], f["location"]["row"], f["code"]) for f in json.loads(done.stdout))


class _Payload:
    """What an attacker pickles: creating `marker` when unpickled."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


def test_committed_cache_files_are_never_unpickled_nor_trusted(tmp_path):
    root = _project(tmp_path / "checkout")
    marker = tmp_path / "pwned"
    planted = root / ".retainlint_cache"
    planted.mkdir()
    for name in ("run-0.1.0-3.pickle", "index-0.1.0-3.pickle", "findings-0.1.0-3.pickle",
                 "run-0.1.0-4.bin"):
        (planted / name).write_bytes(pickle.dumps(_Payload(marker)))
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-f", "."], cwd=root, check=True)

    expected = _findings(root, "--no-cache")
    assert ("pkg/runner.py", 6, "RL101") in expected
    assert _findings(root) == expected  # the default cache: outside the checkout
    assert _findings(root, "--cache-dir", ".retainlint_cache") == expected  # even pointed at it
    assert not marker.exists()


def test_a_cache_file_signed_elsewhere_is_a_miss(tmp_path):
    """A forged "last run" that says the tree is clean, in the right format, signed with
    any key but this machine's (the attacker's own machine, say)."""
    root = _project(tmp_path / "checkout")
    expected = _findings(root)
    assert expected
    [stored] = default_cache_dir(root).glob("run-*.bin")
    data = stored.read_bytes()
    code, data_sha, last = marshal.loads(data[8 + 32:])
    assert last["findings"]
    last["findings"] = {}
    payload = marshal.dumps((code, data_sha, last))
    forged = data[:8] + hmac.new(os.urandom(32), payload, hashlib.sha256).digest() + payload
    stored.write_bytes(forged)
    assert _findings(root) == expected

    # The same file signed with the real key would be believed: the key is what protects.
    key = (Path(os.environ["XDG_CACHE_HOME"]) / "retainlint" / "key").read_bytes()
    stored.write_bytes(data[:8] + hmac.new(key, payload, hashlib.sha256).digest() + payload)
    assert _findings(root) == []


def test_symbolic_links_in_the_cache_directory_are_never_followed(tmp_path):
    root = _project(tmp_path / "checkout")
    outside = tmp_path / "outside"
    outside.mkdir()
    cache = root / ".retainlint_cache"
    cache.mkdir()
    _findings(root, "--cache-dir", str(tmp_path / "real"))  # the files it will write
    written = sorted(p.name for p in (tmp_path / "real").iterdir())
    assert {"CACHEDIR.TAG", ".gitignore", f"head-{__version__}-{SCHEMA}.bin"} < set(written)
    assert [n for n in written if n.startswith("run-")] and [n for n in written if n.startswith("data-")]
    for name in written:
        (cache / name).symlink_to(outside / name)
    expected = _findings(root, "--no-cache")
    assert _findings(root, "--cache-dir", str(cache)) == expected
    assert _findings(root, "--cache-dir", str(cache)) == expected
    assert list(outside.iterdir()) == []

    # A cache directory that is itself a link is not used at all.
    linked = root / "linked_cache"
    linked.symlink_to(outside, target_is_directory=True)
    assert _findings(root, "--cache-dir", str(linked)) == expected
    assert list(outside.iterdir()) == []


def _start(root: Path, cache: Path) -> subprocess.Popen:
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "retainlint", "check", ".", "--output-format", "json",
         "--cache-dir", str(cache), "-j", "1"],
        cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _parsed(out: bytes) -> list:
    return sorted((f["filename"], f["location"]["row"], f["code"]) for f in json.loads(out))


def _edit(root: Path, rng: random.Random) -> None:
    """Edits that change other files' findings (helpers.py decides runner.py's) or only
    the edited file's."""
    pkg = root / "pkg"
    choice = rng.randrange(3)
    if choice == 0:
        helper = pkg / "helpers.py"
        helper.write_text(PLAIN_HELPER if helper.read_text() == CACHED_HELPER else CACHED_HELPER)
    elif choice == 1:
        other = pkg / f"other{rng.randrange(6)}.py"
        other.write_text(other.read_text() + f"# edit {rng.random()}\n")
    else:
        other = pkg / f"other{rng.randrange(6)}.py"
        text = other.read_text()
        other.write_text(text.replace("import gc\n\ndef main():\n    gc.freeze()\n", "")
                         if "gc.freeze" in text else text + "import gc\n\ndef main():\n    gc.freeze()\n")


def _settled(root: Path, cache: Path) -> None:
    """Whatever the runs before left in the cache, a run now agrees with one without it."""
    done = _start(root, cache)
    out, err = done.communicate(timeout=120)
    assert done.returncode in (0, 1), err.decode()
    assert _parsed(out) == _findings(root, "--no-cache")


def test_runs_killed_at_any_point_leave_a_cache_that_never_lies(tmp_path):
    root = _project(tmp_path / "checkout")
    cache = tmp_path / "cache"
    rng = random.Random(15)
    for _ in range(10):
        victims = [_start(root, cache) for _ in range(2)]
        time.sleep(rng.uniform(0.05, 1.0))
        _edit(root, rng)  # while they run
        time.sleep(rng.uniform(0.0, 1.0))
        for victim in victims:
            victim.kill()  # SIGKILL: no cleanup of any kind, wherever it is
            victim.wait()
        _settled(root, cache)


def test_concurrent_runs_over_edits_never_crash_nor_lie(tmp_path):
    root = _project(tmp_path / "checkout")
    cache = tmp_path / "cache"
    rng = random.Random(4)
    for _ in range(6):
        runs = [_start(root, cache) for _ in range(4)]
        for _ in range(5):  # 30 edits in all, landing while the runs read and write
            time.sleep(rng.uniform(0.0, 0.3))
            _edit(root, rng)
        for run in runs:
            out, err = run.communicate(timeout=120)
            assert run.returncode in (0, 1), err.decode()
            json.loads(out)
        _settled(root, cache)
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


def test_any_mix_of_two_runs_files_never_lies(tmp_path):
    """Two runs over two states of the tree, each writing its cache files atomically:
    interleaved, the directory can hold any file from either run. Every such mix must
    give what a run without the cache gives (a reader never mixes generations)."""
    import itertools
    import shutil

    root = _project(tmp_path / "checkout")
    (root / "pkg" / "other0.py").write_text("class Holder:\n    pass\n")
    cache = tmp_path / "cache"
    assert _findings(root, "--cache-dir", str(cache)) == _findings(root, "--no-cache")
    first = {p.name: p.read_bytes() for p in cache.iterdir()}
    (root / "pkg" / "helpers.py").write_text(PLAIN_HELPER)  # runner.py's RL101 goes
    (root / "pkg" / "other0.py").write_text("VALUE = 0\n")  # a class the index knew goes
    _findings(root, "--cache-dir", str(cache))
    second = {p.name: p.read_bytes() for p in cache.iterdir()}
    (root / "pkg" / "other1.py").write_text("VALUE_1 = 1  # edited\n")  # the next run's edit
    expected = _findings(root, "--no-cache")
    names = sorted(set(first) & set(second))
    for picks in itertools.product((first, second), repeat=len(names)):
        shutil.rmtree(cache)
        cache.mkdir()
        for name, pick in zip(names, picks):
            (cache / name).write_bytes(pick[name])
        assert _findings(root, "--cache-dir", str(cache)) == expected, picks
