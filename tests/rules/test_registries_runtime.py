"""The registry rules' new shapes, run for real: for each, retainlint reports the buggy
module at the line the retention starts, the same code run in a real interpreter keeps
what the message says it keeps, and the clean twin is silent and lets it go.

- RL102 `@property` over `@lru_cache`: the instance stays; `cached_property` frees it.
- RL202 a finalizer callback made by a wrapper from a bound method: the owner stays.
- RL203 `os.register_at_fork(after_in_child=self.m)`: the instance stays; a WeakMethod
  reached through a lambda frees it. And a class-level list a helper fills from
  `__init__`'s arguments: the argument stays; a `weakref.ref` entry frees it.
- RL204 `setdefault(key, weakref.finalize(...))`: one more live finalizer per call.
- RL801 `getChild(per-connection)`: one more logger in the manager per connection;
  popping it from `loggerDict` leaves none."""

import json
import subprocess
import sys
import textwrap

from conftest import check_here


def _findings(root, code: str) -> list[tuple[str, int, str]]:
    done = check_here("check", "mod.py", "--no-cache", "--select", code, "--output-format", "json",
                   "--min-severity", "info", "--exit-zero", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    return [(f["code"], f["location"]["row"], f["severity"]) for f in json.loads(done.stdout)]


def _python(root, script: str) -> str:
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=root,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def _check(tree, code: str, buggy: str, clean: str, probe: str, line: int, severity: str,
           leaked: str, freed: str) -> None:
    root = tree({"mod.py": textwrap.dedent(buggy)})
    assert _findings(root, code) == [(code, line, severity)]
    assert _python(root, probe) == leaked
    (root / "mod.py").write_text(textwrap.dedent(clean))
    assert _findings(root, code) == []
    assert _python(root, probe) == freed


ALIVE = """
import gc, weakref
from mod import make
obj = make()
ref = weakref.ref(obj)
del obj
gc.collect()
print("alive" if ref() is not None else "freed")
"""


def test_property_over_lru_cache_keeps_every_instance(tree):
    buggy = """
    from functools import lru_cache

    class Parser:
        def __init__(self, rows):
            self.rows = rows

        @property
        @lru_cache()
        def width(self):
            return len(self.rows)

    def make():
        p = Parser([1, 2, 3])
        assert p.width == 3
        return p
    """
    clean = buggy.replace("from functools import lru_cache", "from functools import cached_property") \
        .replace("        @property\n        @lru_cache()\n", "        @cached_property\n")
    _check(tree, "RL102", buggy, clean, ALIVE, line=9, severity="warning", leaked="alive", freed="freed")


def test_wrapped_finalizer_callback_keeps_its_owner(tree):
    buggy = """
    import weakref

    def logged(fn):
        def run():
            return fn()
        return run

    class Index:
        def __init__(self):
            self.client = bytearray(1024)
            weakref.finalize(self, logged(self.disconnect))

        def disconnect(self):
            self.client = None

    def make():
        return Index()
    """
    clean = buggy.replace("weakref.finalize(self, logged(self.disconnect))",
                          "weakref.finalize(self, logged(type(self).close))") \
        .replace("        def disconnect(self):\n            self.client = None\n",
                 "        @staticmethod\n        def close():\n            pass\n")
    _check(tree, "RL202", buggy, clean, ALIVE, line=12, severity="warning", leaked="alive", freed="freed")


def test_fork_hook_keeps_the_instance_whatever_its_release_method_does(tree):
    buggy = """
    import os

    class Processor:
        def __init__(self):
            self.queue = []
            os.register_at_fork(after_in_child=self._reinit)

        def _reinit(self):
            self.queue = []

        def shutdown(self):
            self.queue = None

    def make():
        p = Processor()
        p.shutdown()
        return p
    """
    clean = buggy.replace("import os\n", "import os\n    import weakref\n").replace(
        "            os.register_at_fork(after_in_child=self._reinit)\n",
        "            weak = weakref.WeakMethod(self._reinit)\n"
        "            os.register_at_fork(after_in_child=lambda: weak() and weak()())\n")
    _check(tree, "RL203", buggy, clean, ALIVE, line=7, severity="warning", leaked="alive", freed="freed")


def test_class_level_list_keeps_what_init_was_given(tree):
    buggy = """
    class Engine:
        pass

    class Tracer:
        _params = []

        def __init__(self, engine):
            self._register(engine, "connect")

        @classmethod
        def _register(cls, target, name):
            cls._params.append((target, name))

        @classmethod
        def uninstrument(cls):
            cls._params.clear()

    def make():
        engine = Engine()
        Tracer(engine)
        return engine
    """
    clean = buggy.replace("cls._params.append((target, name))",
                          "cls._params.append((weakref.ref(target), name))") \
        .replace("    class Engine:", "    import weakref\n\n    class Engine:")
    _check(tree, "RL203", buggy, clean, ALIVE, line=13, severity="warning", leaked="alive", freed="freed")


def test_finalizer_as_setdefault_default_registers_per_call(tree):
    buggy = """
    import weakref

    _props = {}

    class Owner:
        pass

    def write(owner, name):
        key = (id(owner), name)
        _props.setdefault(key, weakref.finalize(owner, _props.pop, key, None))
    """
    clean = buggy.replace("        _props.setdefault(key, weakref.finalize(owner, _props.pop, key, None))",
                          "        if key not in _props:\n"
                          "            _props[key] = weakref.finalize(owner, _props.pop, key, None)")
    probe = """
    import gc, weakref
    from mod import Owner, write
    owner = Owner()
    for _ in range(100):
        write(owner, "text")
    gc.collect()
    print(sum(1 for f in weakref.finalize._registry if f.alive))
    """
    _check(tree, "RL204", buggy, clean, probe, line=11, severity="error", leaked="100", freed="1")


def test_child_logger_per_connection_stays_in_the_manager(tree):
    buggy = """
    import logging

    class Transport:
        def __init__(self):
            self.log = logging.getLogger("ws")

        def connection_made(self, sock):
            self.log = self.log.getChild(str(sock.fileno()))
            self.log.debug("connected")
    """
    clean = buggy.replace("            self.log.debug(\"connected\")\n",
                          "            try:\n"
                          "                self.log.debug(\"connected\")\n"
                          "            finally:\n"
                          "                logging.root.manager.loggerDict.pop(self.log.name, None)\n")
    probe = """
    import logging
    from mod import Transport

    class Sock:
        def __init__(self, n):
            self.n = n
        def fileno(self):
            return self.n

    for n in range(50):
        Transport().connection_made(Sock(n))
    print(sum(1 for name in logging.root.manager.loggerDict if name.startswith("ws.")))
    """
    _check(tree, "RL801", buggy, clean, probe, line=9, severity="warning", leaked="50", freed="0")


LOOP_READER = """
import asyncio
import socket
import weakref

LOOP = asyncio.new_event_loop()


class Connection:
    def __init__(self, loop, sock):
        self._loop = loop
        self._sock = sock
        self._loop.add_reader(sock.fileno(), self._ready)

    def _ready(self):
        self._sock.recv(1024)

    def close(self):
        self._loop.remove_reader(self._sock.fileno())
        self._sock.close()

    def __del__(self):
        self.close()


def make():
    mine, peer = socket.socketpair()
    make.peer = peer
    return Connection(LOOP, mine)
"""


def test_loop_reader_undone_only_by_the_close_del_calls_keeps_a_dropped_instance(tree):
    """`__del__` is the class's release for an instance nobody closes, and it cannot run
    while the event loop's reader holds the instance; `close()` called by hand undoes it."""
    clean = LOOP_READER.replace(
        "        self._loop.add_reader(sock.fileno(), self._ready)\n\n    def _ready(self):\n",
        "        self._weak = weakref.ref(self)\n"
        "        self._loop.add_reader(sock.fileno(), Connection._ready, self._weak)\n\n"
        "    @staticmethod\n    def _ready(weak):\n        self = weak()\n        if self is None:\n"
        "            return\n")
    _check(tree, "RL203", LOOP_READER, clean, ALIVE, line=13, severity="warning", leaked="alive",
           freed="freed")
    closed_by_hand = tree({"mod.py": LOOP_READER.replace(
        "    def __del__(self):\n        self.close()\n", "")})
    assert _findings(closed_by_hand, "RL203") == []
    # a `__del__` defined under an `if` of the class body is the class's all the same
    conditional = tree({"mod.py": LOOP_READER.replace(
        "    def __del__(self):\n        self.close()\n",
        "    if hasattr(socket, 'socketpair'):\n        def __del__(self):\n            self.close()\n")})
    assert _findings(conditional, "RL203") == [("RL203", 13, "warning")]
    # a list's `remove` is no hub's `remove(fd)`: only the latter, on the loop itself, undoes it
    by_hub = LOOP_READER.replace("    def __del__(self):\n        self.close()\n", "")
    by_list = tree({"mod.py": by_hub.replace("self._loop.remove_reader(self._sock.fileno())",
                                             "self._open.remove(self._sock)")})
    assert _findings(by_list, "RL203") == [("RL203", 13, "warning")]
    assert _findings(tree({"mod.py": by_hub.replace("self._loop.remove_reader(self._sock.fileno())",
                                                    "self._loop.remove(self._sock.fileno())")}), "RL203") == []
    # a method that registers the instance with a loop its caller hands it: the caller's
    # registration, which the caller's loop takes out
    handed = tree({"mod.py": LOOP_READER.replace(
        "        self._loop.add_reader(sock.fileno(), self._ready)\n",
        "\n    def register_with_event_loop(self, loop):\n        loop.add_reader(self._sock.fileno(), self._ready)\n")})
    assert _findings(handed, "RL203") == []
