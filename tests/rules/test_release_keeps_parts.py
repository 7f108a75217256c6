"""The release checks (RL610 to RL616) on parts kept outside torch:
a part another method (here `__del__`) frees, and cleanup registered on an ExitStack
nothing closes - run as a user runs retainlint, on a small project, with the cache on
(the prefilter decides which files are read)."""

import json
import textwrap

from conftest import check_here

HANDLER = """
    from contextlib import ExitStack

    import native


    class Handler:
        def __init__(self, path):
            self.path = path
            self._exit_stack = ExitStack()
            self.ctx = None

        def load(self, model):
            self.ctx = native.load(self.path, model)
            self._exit_stack.callback(native.free, self.ctx)
"""

SUBCLASS = """
    from handler import Handler


    class VisionHandler(Handler):
        def describe(self):
            return self.path
"""


def _check(root) -> tuple[int, list[tuple[str, str, int, str]]]:
    done = check_here("check", ".", "--select", "RL61", "--output-format", "json", cwd=root)
    assert done.returncode in (0, 1), done.stderr
    found = json.loads(done.stdout)
    return done.returncode, sorted(
        (f["code"], f["filename"], f["location"]["row"], f["message"]) for f in found)


def _write(root, files: dict) -> None:
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())


def test_an_exit_stack_nothing_closes_is_reported_until_a_subclass_in_another_file_closes_it(tmp_path):
    _write(tmp_path, {"handler.py": HANDLER, "vision.py": SUBCLASS})
    code, found = _check(tmp_path)
    assert code == 1
    assert [(c, f, line) for c, f, line, _ in found] == [("RL614", "handler.py", 14)]
    assert "`self._exit_stack.callback(...)` registers cleanup on an `ExitStack` nothing closes" in found[0][3]
    # the subclass gains a release method that unwinds the stack: nothing left to report
    (tmp_path / "vision.py").write_text(
        (tmp_path / "vision.py").read_text() + "\n    def close(self):\n        self._exit_stack.close()\n")
    assert _check(tmp_path) == (0, [])


def test_a_part_only_the_finalizer_frees_is_reported_at_the_release_method(tmp_path):
    _write(tmp_path, {"llm.py": """
        import contextlib

        import native


        class Llm:
            def __init__(self, path, adapter_path):
                self._stack = contextlib.ExitStack()
                self._model = self._stack.enter_context(native.open_model(path))
                self._adapter = native.adapter_init(self._model, adapter_path)

            def close(self):
                self._stack.close()

            def __del__(self):
                native.adapter_free(self._adapter)
                self.close()
    """})
    code, found = _check(tmp_path)
    assert code == 1
    assert [(c, f, line) for c, f, line, _ in found] == [("RL613", "llm.py", 12)]
    assert "`Llm.close()` lets go of other parts but never frees `self._adapter` (which `__del__()` frees)" \
        in found[0][3]
    # upstream's fix: the adapter's free goes on the stack close() unwinds
    text = (tmp_path / "llm.py").read_text().replace(
        "        self._adapter = native.adapter_init(self._model, adapter_path)\n",
        "        self._adapter = native.adapter_init(self._model, adapter_path)\n"
        "        self._stack.callback(self._free_adapter)\n\n"
        "    def _free_adapter(self):\n"
        "        native.adapter_free(self._adapter)\n"
        "        self._adapter = None\n")
    (tmp_path / "llm.py").write_text(text)
    assert _check(tmp_path) == (0, [])


WRAPPER = """
    from speechlib import Recognizer


    class Wrapper:
        def __init__(self, model_dir):
            self.engine = Recognizer.from_directory(model_dir)
            self.engine.load(progressbar=True)

        def __call__(self, audio):
            return self.engine.run(audio)
"""

WRAPPER_SUBCLASS = """
    from wrapper import Wrapper


    class StreamingWrapper(Wrapper):
        def stream(self, chunks):
            return [self(c) for c in chunks]
"""


def test_a_part_loaded_in_place_and_never_unloaded_is_reported_until_a_subclass_elsewhere_unloads_it(tmp_path):
    _write(tmp_path, {"wrapper.py": WRAPPER, "streaming.py": WRAPPER_SUBCLASS})
    code, found = _check(tmp_path)
    assert code == 1
    assert [(c, f, line) for c, f, line, _ in found] == [("RL615", "wrapper.py", 4)]
    assert "`Wrapper` never calls `self.engine.unload()` after `self.engine.load()`" in found[0][3]
    # a subclass in another file gains a release method that unloads the part
    (tmp_path / "streaming.py").write_text(
        (tmp_path / "streaming.py").read_text() + "\n    def unload(self):\n        self.engine.unload()\n")
    assert _check(tmp_path) == (0, [])


BASE = """
    class Store:
        def __init__(self):
            self._closed = False

        def close(self):
            self._closed = True
"""

MEMORY_STORE = """
    from base import Store


    class _Node:
        def __init__(self):
            self._children = {}

        def set_child(self, name, node):
            self._children[name] = node


    class MemoryStore(Store):
        def __init__(self):
            super().__init__()
            self.root = _Node()

        def write(self, name, node):
            self.root.set_child(name, node)
"""


def test_a_store_kept_by_a_release_inherited_from_another_file_is_reported_until_the_class_drops_it(tmp_path):
    _write(tmp_path, {"base.py": BASE, "memory.py": MEMORY_STORE})
    code, found = _check(tmp_path)
    assert code == 1
    assert [(c, f, line) for c, f, line, _ in found] == [("RL616", "memory.py", 12)]
    assert "`MemoryStore` inherits `close()` from `Store`, which only marks the object closed" in found[0][3]
    # the class overrides close() to drop its tree, then closes as the base does
    (tmp_path / "memory.py").write_text((tmp_path / "memory.py").read_text() + textwrap.indent(
        "\ndef close(self):\n    self.root = None\n    super().close()\n", "    "))
    assert _check(tmp_path) == (0, [])


MIGRATOR = """
    class Migrator:
        def __init__(self, link, log):
            self.link = {link}
            self.log = log

        def rebuild_schema(self):
            self.link.send("REBUILD")
            if self.link.caches_schema:
                self.link.close()

        def close(self):
            self.log.close()
"""


def test_a_method_closing_a_part_the_caller_handed_in_is_no_sign_the_release_owns_it(tmp_path):
    _write(tmp_path, {"migrator.py": MIGRATOR.replace("{link}", "link")})
    assert _check(tmp_path) == (0, [])
    # a part the class builds around it: its own, freed by one method, kept by close()
    _write(tmp_path, {"migrator.py": MIGRATOR.replace("{link}", "Link(link)")})
    code, found = _check(tmp_path)
    assert [(c, f, line) for c, f, line, _ in found] == [("RL613", "migrator.py", 11)]
    assert "`Migrator.close()` lets go of other parts but never frees `self.link` (which " \
        "`rebuild_schema()` frees)" in found[0][3]


def test_a_finalizer_freeing_a_handle_the_caller_handed_in_still_marks_it_as_owned(tmp_path):
    _write(tmp_path, {"native_handle.py": """
        import native


        class Handle:
            def __init__(self, raw, log):
                self.raw = raw
                self.log = log

            def close(self):
                self.log.close()

            def __del__(self):
                native.handle_free(self.raw)
    """})
    code, found = _check(tmp_path)
    assert [(c, f, line) for c, f, line, _ in found] == [("RL613", "native_handle.py", 9)]


CHANNEL = """
    class ChannelClosed(RuntimeError):
        pass


    class Channel:
        def __init__(self, queue):
            self._open = True
            self._error = None
            self._queue = queue

        def fail(self, exc: Exception):
            self._error = exc

        def put(self, item):
            if {guard}:
                raise ChannelClosed("closed") from self._error
            self._queue.put(item)

        def close(self):
            self._open = False
            self._queue.close()
"""


def test_an_exception_the_class_raises_once_released_is_kept_on_purpose(tmp_path):
    _write(tmp_path, {"channel.py": CHANNEL.replace("{guard}", "not self._open")})
    assert _check(tmp_path) == (0, [])
    # raised while still open: after close() nothing needs it, and its frames stay
    _write(tmp_path, {"channel.py": CHANNEL.replace("{guard}", "self._open and self._error")})
    code, found = _check(tmp_path)
    assert [(c, f, line) for c, f, line, _ in found] == [("RL611", "channel.py", 19)]
    assert "`Channel.close()` never drops `self._error` (an exception `Channel.fail()` stores)" in found[0][3]


EVENT_BASE = """
    class EventLoop:
        def __init__(self):
            self._running = False
            self._handlers = {}
            self.on("stopped", self._flush_all)

        def on(self, event, handler):
            self._handlers.setdefault(event, []).append(handler)

        def stop(self):
            self._running = False

        def run(self):
            self._running = True
            while self._running:
                self.tick()
            for handler in self._handlers.get("stopped", []):
                handler()

        def _flush_all(self):
            for item in self.pending():
                item.cancel()
"""

WATCHER = """
    from loop import EventLoop


    class _Registry:
        def __init__(self):
            self._items = set()

        def add(self, item):
            self._items.add(item)

        def drain(self):
            items = list(self._items)
            self._items.clear()
            return items


    class WatchLoop(EventLoop):
        def __init__(self):
            self._watched = _Registry()
            super().__init__()

        def watch(self, item):
            self._watched.add(item)

        def tick(self):
            pass

        def pending(self):
            {pending}
"""


def test_a_store_a_callback_the_base_registers_for_itself_reaches_is_not_known_to_stay(tmp_path):
    _write(tmp_path, {"loop.py": EVENT_BASE, "watch.py": WATCHER.replace("{pending}", "return self._watched.drain()")})
    assert _check(tmp_path) == (0, [])
    # the registered callback never reaches the store: it stays after stop()
    _write(tmp_path, {"watch.py": WATCHER.replace("{pending}", "return []")})
    code, found = _check(tmp_path)
    assert [(c, f, line) for c, f, line, _ in found] == [("RL616", "watch.py", 17)]
    assert "`WatchLoop` inherits `stop()` from `EventLoop`, which only marks the object closed" in found[0][3]


def test_a_connection_the_release_leaves_open_is_closed_by_the_fix(tmp_path):
    """google-auth's session made a `requests.Session()` for refreshing tokens and its
    `close()` closed only the session itself: the refresh session's connection pool stayed
    open. The fix closes it with its own method; a socket handed in by the caller is not
    the class's to close."""
    source = textwrap.dedent("""\
        import requests


        class AuthorizedSession:
            def __init__(self, transport):
                self.transport = transport
                self._refresh_session = requests.Session()

            def close(self):
                self.transport.close()
        """)
    (tmp_path / "auth.py").write_text(source)
    found = check_here("check", "--no-cache", "--no-project", "--output-format", "concise", "auth.py", cwd=tmp_path)
    assert found.returncode == 1
    assert found.stdout.splitlines()[0].startswith(
        "auth.py:9:9: RL610 `AuthorizedSession.close()` never drops `self._refresh_session` (`requests.Session(...)`")
    fixed = check_here("check", "--no-cache", "--no-project", "--fix", "--unsafe-fixes", "auth.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout
    assert (tmp_path / "auth.py").read_text() == source + "        self._refresh_session.close()\n"


def test_a_handler_inheriting_close_from_logging_keeps_the_file_it_opened(tmp_path):
    """A `logging.Handler` subclass that opens its own file and does not override `close()`
    releases with `Handler.close()`, which knows nothing of that file: reported at the
    class, also when no class of the file has a release method of its own."""
    (tmp_path / "handlers.py").write_text(textwrap.dedent("""\
        import logging


        class FileLogHandler(logging.Handler):
            def __init__(self, path):
                super().__init__()
                self.stream = open(path, "a")

            def emit(self, record):
                self.stream.write(self.format(record))
        """))
    found = check_here("check", "--no-cache", "--no-project", "--output-format", "concise", "handlers.py", cwd=tmp_path)
    assert found.returncode == 1
    assert found.stdout.splitlines()[0].startswith(
        "handlers.py:4:7: RL610 `FileLogHandler` releases with the `close()` it inherits from `logging.Handler`")
