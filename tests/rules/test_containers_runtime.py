"""The container rules' new shapes, run for real: the retention each finding names is
observed in a real interpreter (torch included) before the fix, and gone after it.

- RL301 instance memo keyed by models: `--fix` makes the memo a
  `WeakKeyDictionary`; the model a caller dropped is then collected.
- RL301 instance memo whose values keep their key (loopy's shape): no fix is offered,
  because a weak key would never die - checked by running upstream's weak-keyed version.
- RL303 cached function: its result outlives every user until `cache_clear()`."""

import subprocess
import sys
import textwrap

import pytest

from conftest import check_here

MEMO = """
import torch.nn as nn


class Profiler:
    def __init__(self):
        self._params = {}

    def count(self, model: nn.Module) -> int:
        if model not in self._params:
            self._params[model] = sum(p.numel() for p in model.parameters())
        return self._params[model]
"""

ALIVE_AFTER_DROP = """
import gc, weakref
import torch.nn as nn
from mod import Profiler

profiler = Profiler()
model = nn.Linear(64, 64)
assert profiler.count(model) == 64 * 64 + 64
ref = weakref.ref(model)
del model
gc.collect()
print("alive" if ref() is not None else "freed")
"""


def _python(root, script: str) -> str:
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_instance_memo_fix_frees_the_model(tree):
    root = tree({"mod.py": textwrap.dedent(MEMO)})
    assert _python(root, ALIVE_AFTER_DROP) == "alive"  # the leak, before the fix
    r = check_here("check", "mod.py", "--fix", "--no-cache", "--select", "RL301",
                "--output-format", "concise", cwd=root)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "self._params = weakref.WeakKeyDictionary()" in (root / "mod.py").read_text()
    assert _python(root, ALIVE_AFTER_DROP) == "freed"
    again = check_here("check", "mod.py", "--no-cache", "--select", "RL301", cwd=root)
    assert again.returncode == 0, again.stdout


EXECUTORS = """
class Executor:
    def __init__(self, context, unit):
        self.context = context


class Unit:
    def __init__(self):
        self._executors = {}

    def executor(self, context):
        if context not in self._executors:
            self._executors[context] = Executor(context, self)
        return self._executors[context]
"""


def test_memo_whose_values_keep_the_key_gets_no_weak_key_fix(tree):
    root = tree({"mod.py": textwrap.dedent(EXECUTORS)})
    r = check_here("check", "mod.py", "--fix", "--unsafe-fixes", "--no-cache", "--select", "RL301",
                "--output-format", "concise", cwd=root)
    assert r.returncode == 1, r.stdout + r.stderr
    line = next(l for l in r.stdout.splitlines() if l.startswith("mod.py:"))
    assert line.split(":")[1] == "9" and " RL301 " in line and "[*]" not in line, line
    assert (root / "mod.py").read_text() == textwrap.dedent(EXECUTORS)
    # why no fix: with the weak key upstream chose, the entry still never dies
    weak = textwrap.dedent(EXECUTORS).replace("self._executors = {}",
                                              "import weakref; self._executors = weakref.WeakKeyDictionary()")
    (root / "weak_mod.py").write_text(weak)
    assert _python(root, """
        import gc, weakref
        from weak_mod import Unit

        class Context:
            pass

        unit, context = Unit(), Context()
        unit.executor(context)
        ref = weakref.ref(context)
        del context
        gc.collect()
        print("alive" if ref() is not None else "freed")
    """) == "alive"


CACHED = """
import functools
import torch


class Workspace:
    def __init__(self, n):
        self.buf = torch.empty(n)


@functools.cache
def get_workspace(n):
    return Workspace(n)
"""


def test_cached_workspace_outlives_its_users_until_cache_clear(tree):
    root = tree({"mod.py": textwrap.dedent(CACHED)})
    r = check_here("check", "mod.py", "--no-cache", "--select", "RL303",
                "--output-format", "full", cwd=root)
    assert r.returncode == 1 and "mod.py:13:" in r.stdout and "get_workspace.cache_clear()" in r.stdout, r.stdout
    assert _python(root, """
        import gc, weakref
        from mod import get_workspace

        ref = weakref.ref(get_workspace(1 << 20))
        gc.collect()
        before = ref() is not None
        get_workspace.cache_clear()
        gc.collect()
        print(before, ref() is not None)
    """) == "True False"
