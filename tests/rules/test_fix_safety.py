"""Safe fixes whose preconditions do not hold: `retainlint check --fix` (a real
subprocess) must leave such code alone - the finding still reported - or fix it in a way
that still runs. Where the fixed module is meaningful it is imported and exercised in
another real interpreter, torch included."""

import subprocess
import sys
import textwrap

import pytest

from conftest import check_here


def fix(tree, files: dict, code: str, *extra: str):
    """Run `check --fix` on `files`: (result, the first file's new text, the folder)."""
    files = {name: textwrap.dedent(text) for name, text in files.items()}
    root = tree(files)
    name = next(iter(files))
    r = check_here("check", *files, "--fix", "--no-cache", "--select", code,
                "--output-format", "concise", *extra, cwd=root)
    return r, (root / name).read_text(), root


def assert_reported_not_fixed(r, text, source, code, line):
    """Reported on `line`, no fix applied even with --unsafe-fixes, file unchanged."""
    assert r.returncode == 1, r.stdout + r.stderr
    assert text == textwrap.dedent(source)
    reported = [l for l in r.stdout.splitlines() if l.startswith("mod.py:")]
    assert len(reported) == 1 and reported[0].split(":")[1] == str(line), r.stdout
    assert f" {code} " in reported[0] and "[*]" not in reported[0], reported[0]
    assert r.stdout.rstrip().endswith("\nFound 1 finding."), r.stdout  # none fixed


def run_python(root, script: str) -> subprocess.CompletedProcess:
    pytest.importorskip("torch")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=root,
                          capture_output=True, text=True, timeout=120)


# -- RL301: weakref.WeakKeyDictionary -----------------------------------------------------

RL301_BODY = """\
    _owners = {}


    class Block(nn.Module):
        def forward(self, x):
            _owners[self] = 1
            return x
"""


@pytest.mark.parametrize("header,line", [
    # imported for the type checker only: not there at run time
    ("from typing import TYPE_CHECKING\n\nimport torch.nn as nn\n\n"
     "if TYPE_CHECKING:\n    import weakref\n\n", 8),
    # imported only when run as a script
    ("import torch.nn as nn\n\nif __name__ == '__main__':\n    import weakref\n\n", 6),
    # the name means something else somewhere in this module (a parameter is harmless
    # to the module-level fix, but not worth proving so)
    ("import torch.nn as nn\n\nweakref = 'strong'\n\n", 5),
    ("import torch.nn as nn\nfrom mylib import weakref\n\n", 4),
    ("import torch.nn as nn\n\n\ndef log(weakref=None):\n    pass\n\n", 7),
], ids=["type-checking", "main-guard", "variable", "from-import", "parameter"])
def test_rl301_no_fix_when_weakref_is_not_provably_the_module(tree, header, line):
    source = header + textwrap.dedent(RL301_BODY)
    r, text, _ = fix(tree, {"mod.py": source}, "RL301", "--unsafe-fixes", "--output-format", "full")  # the reason is in the detail
    assert_reported_not_fixed(r, text, source, "RL301", line)
    assert "`weakref`" in r.stdout  # the message says why there is no fix


@pytest.mark.parametrize("use", [
    '_owners["last"] = 2',
    "_owners[0] = 2",
    "_owners[(1, 2)] = 2",
    '_owners[f"block-{x}"] = 2',
    "_owners[id(self)] = 2",
    'return _owners.get("last")',
    'return _owners["last"]',
    "_owners.update(x)",
])
def test_rl301_no_fix_when_a_key_cannot_be_weakly_referenced(tree, use):
    source = textwrap.dedent(f"""\
        import torch.nn as nn

        _owners = {{}}


        class Block(nn.Module):
            def forward(self, x):
                _owners[self] = 1
                {use}
    """)
    r, text, _ = fix(tree, {"mod.py": source}, "RL301", "--unsafe-fixes", "--output-format", "full")
    assert_reported_not_fixed(r, text, source, "RL301", 3)
    assert "weak reference" in r.stdout


def test_rl301_fix_with_module_keys_only_still_applies_and_runs(tree):
    source = "import torch.nn as nn\n\n" + textwrap.dedent(RL301_BODY)
    r, text, root = fix(tree, {"mod.py": source}, "RL301")
    assert r.returncode == 0, r.stdout + r.stderr
    assert text == textwrap.dedent("""\
        import torch.nn as nn
        import weakref

        _owners = weakref.WeakKeyDictionary()


        class Block(nn.Module):
            def forward(self, x):
                _owners[self] = 1
                return x
    """)
    done = run_python(root, """\
        import gc, mod
        b = mod.Block()
        b(1)
        assert len(mod._owners) == 1
        del b
        gc.collect()
        assert len(mod._owners) == 0
    """)
    assert done.returncode == 0, done.stderr


# -- RL501: keep the hook handle on self ---------------------------------------------------

HOOKED = """\
    import torch


    class Tracer:
        def __init__(self):
            torch.nn.modules.module.register_module_forward_hook(self.on_forward)

        def on_forward(self, module, args, output):
            pass
"""


@pytest.mark.parametrize("decorator,signature", [
    ("@classmethod", "close(cls)"), ("@staticmethod", "close()")])
def test_rl501_removal_not_put_into_a_class_or_static_release_method(tree, decorator, signature):
    source = textwrap.dedent(HOOKED) + textwrap.indent(
        f"\n{decorator}\ndef {signature}:\n    pass\n", "    ")
    # nothing can go into a method that has no `self`, and a handle kept but never
    # removed frees nothing (RL502 would report it): no fix
    r, text, _ = fix(tree, {"mod.py": source}, "RL501", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, source, "RL501", 6)


@pytest.mark.parametrize("shape", [
    "    __slots__ = ('model',)\n",
    "@dataclasses.dataclass(slots=True)\n",
    "@dataclasses.dataclass(frozen=True)\n",
], ids=["slots", "dataclass-slots", "dataclass-frozen"])
def test_rl501_no_fix_on_a_class_that_cannot_take_a_new_attribute(tree, shape):
    decorator, body = (shape, "") if shape.startswith("@") else ("", shape + "\n")
    source = (
        "import dataclasses\n\nimport torch\n\n\n"
        f"{decorator}class Tracer:\n{body}"
        "    def __post_init__(self):\n"
        "        torch.nn.modules.module.register_module_forward_hook(self.on_forward)\n\n"
        "    def on_forward(self, module, args, output):\n        pass\n\n"
        "    def close(self):\n        pass\n"
    )
    line = source.splitlines().index(
        "        torch.nn.modules.module.register_module_forward_hook(self.on_forward)") + 1
    r, text, _ = fix(tree, {"mod.py": source}, "RL501", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, source, "RL501", line)


RL501_BASE = """\
    import torch


    class Base:
        def __init__(self):
            self._module_forward_hook_handle = torch.nn.modules.module.register_module_forward_hook(self.on_forward)

        def on_forward(self, module, args, output):
            pass

        def close(self):
            self._module_forward_hook_handle.remove()
"""
RL501_CHILD = """\
    class Child(Base):
        def __init__(self):
            super().__init__()
            torch.nn.modules.module.register_module_forward_hook(self.on_forward)

        def shutdown(self):
            pass
"""
CHILD_FIXED = """\
    class Child(Base):
        def __init__(self):
            super().__init__()
            self._module_forward_hook_handle_2 = torch.nn.modules.module.register_module_forward_hook(self.on_forward)

        def shutdown(self):
            self._module_forward_hook_handle_2.remove()
"""
ALL_REMOVED = """\
    import torch.nn.modules.module as mm
    from mod import Child
    c = Child()
    c.shutdown()
    c.close()
    assert not mm._global_forward_hooks, mm._global_forward_hooks
"""


def test_rl501_does_not_reuse_a_same_file_base_class_handle_name(tree):
    source = textwrap.dedent(RL501_BASE) + "\n\n" + textwrap.dedent(RL501_CHILD)
    r, text, root = fix(tree, {"mod.py": source}, "RL501", "--unsafe-fixes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert text == textwrap.dedent(RL501_BASE) + "\n\n" + textwrap.dedent(CHILD_FIXED)
    done = run_python(root, ALL_REMOVED)
    assert done.returncode == 0, done.stderr


def test_rl501_does_not_reuse_a_project_base_class_handle_name(tree):
    child = "import torch\n\nfrom base import Base\n\n\n" + textwrap.dedent(RL501_CHILD)
    r, text, root = fix(tree, {"mod.py": child, "base.py": RL501_BASE}, "RL501", "--unsafe-fixes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert text == "import torch\n\nfrom base import Base\n\n\n" + textwrap.dedent(CHILD_FIXED)
    done = run_python(root, ALL_REMOVED)
    assert done.returncode == 0, done.stderr


# -- per-item "release" methods (`free(self, block_id)`) get no whole-object cleanup --------

PER_ITEM = """\
    def free(self, block_id):
        del self.blocks[block_id]
"""


def test_rl501_removal_not_put_into_a_per_item_method(tree):
    source = textwrap.dedent(HOOKED) + "\n" + textwrap.indent(textwrap.dedent(PER_ITEM), "    ")
    # `free(self, block_id)` runs per block: no whole-object release, so no fix at all
    r, text, _ = fix(tree, {"mod.py": source}, "RL501", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, source, "RL501", 6)


def test_rl501_removal_goes_into_the_whole_object_release_method(tree):
    source = (textwrap.dedent(HOOKED) + "\n"
              + "    def release(self, request_id):\n        pass\n\n"
              + "    def stop(self):\n        pass\n")
    r, text, _ = fix(tree, {"mod.py": source}, "RL501", "--unsafe-fixes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert text.endswith(
        "    def release(self, request_id):\n        pass\n\n"
        "    def stop(self):\n        self._module_forward_hook_handle.remove()\n")


RL502_SOURCE = """\
    import torch


    class Scheduler:
        def __init__(self):
            self.requests = {}
            self._handle = torch.nn.modules.module.register_module_forward_hook(self.on_forward)

        def on_forward(self, module, args, output):
            pass

        def release(self, request_id):
            del self.requests[request_id]
"""


def test_rl502_no_fix_into_a_per_item_method(tree):
    r, text, _ = fix(tree, {"mod.py": RL502_SOURCE}, "RL502", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, RL502_SOURCE, "RL502", 7)


def test_rl502_removal_goes_into_the_whole_object_release_method(tree):
    source = textwrap.dedent(RL502_SOURCE) + "\n    def stop(self):\n        pass\n"
    r, text, _ = fix(tree, {"mod.py": source}, "RL502", "--unsafe-fixes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert text == source.replace(
        "    def stop(self):\n        pass\n", "    def stop(self):\n        self._handle.remove()\n")


RL203_SOURCE = """\
    import atexit
    import torch


    class Scheduler:
        def __init__(self):
            self.requests: dict[str, torch.Tensor] = {}  # heavy: the fix is worth offering
            atexit.register(self.dump)

        def dump(self):
            pass

        def release(self, request_id):
            del self.requests[request_id]
"""


def test_rl203_no_fix_into_a_per_item_method(tree):
    r, text, _ = fix(tree, {"mod.py": RL203_SOURCE}, "RL203", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, RL203_SOURCE, "RL203", 8)


def test_rl203_unregister_goes_into_the_whole_object_release_method(tree):
    # `stop()` does what the exit call would (`self.dump()`): unregistering keeps it done
    source = textwrap.dedent(RL203_SOURCE) + "\n    def stop(self):\n        self.dump()\n"
    r, text, _ = fix(tree, {"mod.py": source}, "RL203", "--unsafe-fixes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert text == source.replace(
        "    def stop(self):\n        self.dump()\n",
        "    def stop(self):\n        self.dump()\n        atexit.unregister(self.dump)\n")


def test_rl203_unregister_is_unsafe_unless_a_second_call_returns_at_once(tree):
    """After an explicit `stop()` the exit-time `dump()` no longer runs: safe only when
    `dump()` proves a second call does nothing (an early return on a flag it sets)."""
    source = textwrap.dedent(RL203_SOURCE) + "\n    def stop(self):\n        self.dump()\n"
    r, text, _ = fix(tree, {"mod.py": source}, "RL203", "--output-format", "full")
    assert r.returncode == 1 and text == source, r.stdout  # unsafe: not applied by --fix
    assert "`self.dump()` no longer runs again at exit after an explicit `stop()`" in r.stdout
    guarded = source.replace("    def dump(self):\n        pass\n",
                             "    def dump(self):\n        if self.dumped:\n            return\n"
                             "        self.dumped = True\n")
    r, text, _ = fix(tree, {"mod.py": guarded}, "RL203")
    assert r.returncode == 0, r.stdout + r.stderr
    assert text.endswith("        self.dump()\n        atexit.unregister(self.dump)\n")


def test_rl203_no_unregister_of_work_the_release_does_not_do(tree):
    """`stop()` never calls `dump()`: unregistering it there would lose the exit-time dump."""
    source = textwrap.dedent(RL203_SOURCE) + "\n    def stop(self):\n        pass\n"
    r, text, _ = fix(tree, {"mod.py": source}, "RL203", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, source, "RL203", 8)


def test_rl203_no_unregister_while_a_signal_handler_keeps_the_instance(tree):
    source = textwrap.dedent("""\
        import atexit
        import signal

        import torch


        class Server:
            def __init__(self):
                self.model = torch.nn.Linear(4, 4)
                atexit.register(self.stop)
                signal.signal(signal.SIGTERM, lambda *_: self.stop())

            def stop(self):
                pass
        """)
    r, text, _ = fix(tree, {"mod.py": source}, "RL203", "--unsafe-fixes", "--output-format", "full")
    assert text == source and "[*]" not in r.stdout, r.stdout
    assert "mod.py:10:" in r.stdout and "also keeps the instance" in r.stdout, r.stdout


def test_rl203_no_unregister_after_a_try_that_returns(tree):
    source = textwrap.dedent("""\
        import atexit

        import torch


        class Server:
            def __init__(self):
                self.model = torch.nn.Linear(4, 4)
                atexit.register(self.stop)

            def stop(self):
                try:
                    self.flush()
                    return
                except OSError:
                    pass

            def flush(self):
                pass
        """)
    r, text, _ = fix(tree, {"mod.py": source}, "RL203", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, source, "RL203", 9)


# -- RL601: `self.alias = None` after the release ----------------------------------------

RL601_LOOP = """\
    import torch.nn as nn


    class Engine:
        def __init__(self, model: nn.Module):
            self.model = model
            self._runner = Runner(self.model)

        def shutdown(self):
            {loop}
                if attempt == 0:
                    self.model = None


    class Runner:
        def __init__(self, model):
            self.model = model
            self.calls = 3

        def flush(self, attempt):
            self.calls -= 1
            return self.calls > 0
"""


@pytest.mark.parametrize("loop,line", [
    ("for attempt in range(3):\n            self._runner.flush(attempt)", 13),
    ("attempt = 0\n        while self._runner.flush(attempt):", 13),
], ids=["for-body", "while-condition"])
def test_rl601_no_fix_inside_a_loop_that_uses_the_alias_again(tree, loop, line):
    source = textwrap.dedent(RL601_LOOP).replace("{loop}", loop)
    r, text, root = fix(tree, {"mod.py": source}, "RL601", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, source, "RL601", line)
    done = run_python(root, "import mod\nmod.Engine(object()).shutdown()\n")
    assert done.returncode == 0, done.stderr


def test_rl601_fix_still_offered_in_a_loop_that_does_not_use_the_alias(tree):
    loop = "self._runner.flush(0)\n        for attempt in range(2):"
    source = textwrap.dedent(RL601_LOOP).replace("{loop}", loop)
    # unsafe: `shutdown()` reads `self._runner` first, so a second call meets `None`
    r, text, root = fix(tree, {"mod.py": source}, "RL601", "--output-format", "full")
    assert r.returncode == 1 and text == source, r.stdout
    assert "`self._runner` is `None` when `shutdown()` runs again" in r.stdout, r.stdout
    r, text, root = fix(tree, {"mod.py": source}, "RL601", "--unsafe-fixes")
    assert r.returncode == 0, r.stdout + r.stderr
    assert text == source.replace(
        "                self.model = None\n",
        "                self.model = None\n                self._runner = None\n")
    done = run_python(root, "import mod\nmod.Engine(object()).shutdown()\n")
    assert done.returncode == 0, done.stderr


# -- RL201 and RL302 also write `weakref.`: the same proof -----------------------------

TYPE_CHECKING_WEAKREF = ("from typing import TYPE_CHECKING\n\nimport torch.nn as nn\n\n"
                         "if TYPE_CHECKING:\n    import weakref\n\n")


@pytest.mark.parametrize("code,body,line", [
    ("RL302", """\
        _layers: dict[str, nn.Module] = {}


        def remember(name: str, layer: nn.Linear):
            _layers[name] = layer
        """, 8),
    ("RL201", """\
        from weakref import finalize


        class Engine:
            def __init__(self, model: nn.Module):
                self.model = model
                finalize(self, print, model)
        """, 14),
], ids=["RL302", "RL201"])
def test_other_weakref_fixes_need_weakref_to_be_the_module(tree, code, body, line):
    source = TYPE_CHECKING_WEAKREF + textwrap.dedent(body)
    r, text, _ = fix(tree, {"mod.py": source}, code, "--unsafe-fixes")
    assert_reported_not_fixed(r, text, source, code, line)


# -- RL101: a fix that would leave the leak unreported ---------------------------------

def test_rl101_offers_no_facade_when_the_instance_itself_is_cached(tree):
    """The facade unwraps bound methods; `describe(self)` passes the instance, which the
    cache would still hold - and the re-run would say "All checks passed!"."""
    source = """\
        import functools


        @functools.lru_cache(maxsize=None)
        def describe(obj):
            return type(obj).__name__


        class Runner:
            def __init__(self, model):
                self.model = model
                self.kind = describe(self)
        """
    r, text, root = fix(tree, {"mod.py": source}, "RL101", "--unsafe-fixes")
    assert text == textwrap.dedent(source)  # nothing rewritten
    assert r.returncode == 1 and "mod.py:5:5: RL101" in r.stdout, r.stdout
    again = check_here("check", "mod.py", "--no-cache", "--select", "RL101", cwd=root)
    assert again.returncode == 1 and "All checks passed" not in again.stdout


def test_rl101_facade_still_offered_for_bound_methods_only(tree):
    source = """\
        import functools


        @functools.lru_cache(maxsize=None)
        def signature_of(fn):
            return fn.__name__


        class Runner:
            def __init__(self, model):
                self.model = model
                self.sig = signature_of(self.model.forward)
        """
    r, text, _ = fix(tree, {"mod.py": source}, "RL101", "--unsafe-fixes")
    assert "def _signature_of(fn):" in text and 'fn = getattr(fn, "__func__", fn)' in text, text


# -- RL501: keeping a handle nobody removes is no fix --------------------------------------

RL501_PROBE = """\
    import torch.nn as nn


    class Probe:
        def __init__(self, model: nn.Module):
            model.register_forward_hook(self.record)
            self.seen = []

        def record(self, module, args, out):
            self.seen.append(out.shape)
    {release}
"""


def test_rl501_no_fix_without_a_release_method_to_remove_the_handle(tree):
    """Kept as `self._forward_hook_handle` but never removed, RL502 reported the same
    line: a fix must leave nothing of the family to report."""
    source = textwrap.dedent(RL501_PROBE).replace("{release}", "")
    r, text, root = fix(tree, {"mod.py": source}, "RL501", "--unsafe-fixes")
    assert text == source and "RL501" in r.stdout, r.stdout  # reported, not fixed
    after = check_here("check", "mod.py", "--no-cache", "--select", "RL501,RL502",
                    "--output-format", "concise", cwd=root)
    assert [l.split(":")[1] for l in after.stdout.splitlines() if l.startswith("mod.py:")] == ["6"]


def test_rl501_fix_with_a_release_method_leaves_nothing_to_report(tree):
    release = "\n    def close(self):\n        self.seen.clear()\n"
    source = textwrap.dedent(RL501_PROBE).replace("{release}", release)
    r, text, root = fix(tree, {"mod.py": source}, "RL501", "--unsafe-fixes")
    assert "self._forward_hook_handle = model.register_forward_hook(self.record)" in text, r.stdout
    assert "        self.seen.clear()\n        self._forward_hook_handle.remove()\n" in text, text
    after = check_here("check", "mod.py", "--no-cache", "--select", "RL501,RL502",
                    "--output-format", "concise", cwd=root)
    assert after.returncode == 0 and "mod.py:6" not in after.stdout, after.stdout


# -- RL601: a reader that already fails once the release deleted the object -------------

RL601_DELETED = """\
    import torch.nn as nn


    class Engine:
        def load(self, model: nn.Module):
            self.model = model
            self._state = State(self.model)

        def run(self, x):
            return self._state.step(self.model, x)

        def shutdown(self):
            del self.model


    class State:
        def __init__(self, model):
            self.model = model

        def step(self, model, x):
            return x
"""


def test_rl601_unsafe_fix_when_every_reader_also_reads_the_deleted_attribute(tree):
    source = textwrap.dedent(RL601_DELETED)
    r, text, root = fix(tree, {"mod.py": source}, "RL601", "--output-format", "full")
    assert r.returncode == 1 and text == source, r.stdout  # unsafe: not applied by --fix
    assert ("`Engine.run()` reads `self._state` (now `None`) if called after `shutdown()`; "
            "it reads the deleted `self.model` too") in r.stdout, r.stdout
    r, text, root = fix(tree, {"mod.py": source}, "RL601", "--unsafe-fixes")
    assert text == source.replace("    del self.model\n",
                                  "    del self.model\n        self._state = None\n"), text
    done = run_python(root, "import gc, weakref, torch, mod\n"
                            "e = mod.Engine()\ne.load(torch.nn.Linear(4, 4))\n"
                            "w = weakref.ref(e._state.model.weight)\ne.shutdown()\ngc.collect()\n"
                            "assert w() is None, 'still held'\n")
    assert done.returncode == 0, done.stderr


def test_rl601_no_fix_when_a_reader_works_without_the_deleted_attribute(tree):
    source = textwrap.dedent(RL601_DELETED).replace(
        "    def shutdown(self):",
        "    def steps(self):\n        return self._state.step(None, 0)\n\n"
        "    def shutdown(self):")
    assert "def steps" in source
    r, text, _ = fix(tree, {"mod.py": source}, "RL601", "--unsafe-fixes")
    assert_reported_not_fixed(r, text, source, "RL601", 16)
