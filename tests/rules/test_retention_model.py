"""The retention model over a whole project: a holder grown in one file and released in
another is no finding; what each check reports names the holder, its lifetime and the
function that adds to it."""

import textwrap
from pathlib import Path

from retainlint.core.config import Settings
from retainlint.engine import runner
from retainlint.engine.registry import all_rules

from conftest import run_rules

CODES = [r.code for r in all_rules()]


def _run(root: Path, files: dict[str, str]) -> list:
    return [f for f in run_rules(root, files) if f.code in ("RL306", "RL307", "RL703")]


def _check(root: Path, files: dict[str, str]) -> list[tuple[str, int, str, str]]:
    return [(Path(f.path).relative_to(root).as_posix(), f.start.line, f.code, f.message)
            for f in _run(root, files)]


STATE = """\
    _pending = {}

    def submit(request_id, job):
        _pending[request_id] = job
    """


def test_a_module_container_released_from_another_module_is_not_reported(tmp_path):
    found = _check(tmp_path, {"pkg/__init__.py": "", "pkg/state.py": STATE})
    assert [(p, line, code) for p, line, code, _ in found] == [("pkg/state.py", 4, "RL306")]
    assert "`_pending` (module-level: lives for the process) gains one entry per distinct " \
           "`request_id` in `submit()`" in found[0][3]

    done = tmp_path / "again"
    assert _check(done, {"pkg/__init__.py": "", "pkg/state.py": STATE, "pkg/worker.py": """\
        from pkg.state import _pending

        def finish(request_id):
            _pending.pop(request_id, None)
        """}) == []
    through_module = tmp_path / "module"
    assert _check(through_module, {"pkg/__init__.py": "", "pkg/state.py": STATE, "pkg/worker.py": """\
        from pkg import state

        def reset():
            state._pending.clear()
        """}) == []


def test_a_container_handed_to_other_code_or_size_checked_is_not_reported(tmp_path):
    assert _check(tmp_path, {"jobs.py": """\
        _pending = {}
        _recent = []

        def submit(request_id, job):
            _pending[request_id] = job
            _recent.append(job)
            if len(_recent) > 100:
                trim()

        def drain(handler):
            handler(_pending)
        """}) == []


def test_a_container_joined_into_a_string_or_dumped_is_read_not_handed_on(tmp_path):
    found = _check(tmp_path, {"prefix.py": """\
        import json

        class LogPrefix:
            def __init__(self):
                self.parts = []
                self.seen = []

            def on_request(self, item):
                self.parts.append(str(item))
                self.seen.append(item)
                return ":".join(self.parts), json.dumps(self.seen)

        PREFIX = LogPrefix()
        """})
    assert [(line, code) for _, line, code, _ in found] == [(9, "RL307"), (10, "RL307")]


def test_a_thread_or_task_the_call_starts_is_new_per_call_whatever_the_function_is_named(tmp_path):
    found = _check(tmp_path, {"group.py": """\
        import asyncio
        import threading

        class ThreadGroup:
            def __init__(self):
                self.threads = []
                self.tasks = set()
                self.handlers = []

            def add_thread(self, callback, *args):
                t = threading.Thread(target=callback, args=args)
                t.start()
                self.threads.append(t)

            def add_task(self, coro):
                task = asyncio.ensure_future(coro)
                self.tasks.add(task)

            def add_handler(self, handler):
                self.handlers.append(handler)

        GROUP = ThreadGroup()
        """})
    assert [(line, code) for _, line, code, _ in found] == [(13, "RL307"), (17, "RL307")]


def test_instance_containers_count_only_on_objects_that_live_for_the_process(tmp_path):
    found = _check(tmp_path, {"serve.py": """\
        class Router:
            def __init__(self):
                self.routes = {}
                self.hits = []

            def on_request(self, request_id, path):
                self.routes[request_id] = path
                self.hits.append(path)

        class Parser:
            def __init__(self):
                self.tokens = []

            def feed(self, token):
                self.tokens.append(token)

        ROUTER = Router()
        """})
    assert [(line, code) for _, line, code, _ in found] == [(7, "RL307"), (8, "RL307")]
    assert "a `Router` lives for the process" in found[0][3]


def test_a_dataclass_or_attrs_field_with_a_container_factory_is_an_instance_container(tmp_path):
    found = _check(tmp_path, {"serve.py": """\
        from dataclasses import dataclass, field

        import attr

        @dataclass
        class Router:
            routes: dict = field(default_factory=dict)
            hits: list = field(default_factory=lambda: [])
            name: str = field(default="router")

            def on_request(self, request_id, path):
                self.routes[request_id] = path
                self.hits.append(path)

        @attr.s
        class Audit:
            seen = attr.ib(factory=set)

            def handle_request(self, request):
                self.seen.add(request.id)

        ROUTER = Router()
        AUDIT = Audit()
        """})
    assert [(line, code) for _, line, code, _ in found] == [(12, "RL307"), (13, "RL307"), (20, "RL307")]
    assert "`self.routes` gains one entry per distinct `request_id`" in found[0][3]


def test_a_slot_per_member_of_the_deployment_is_not_growth(tmp_path):
    # vLLM's and lmdeploy's disaggregation connectors: one entry per remote engine or rank,
    # as many as the deployment has; the same server's table per request is reported.
    found = _check(tmp_path, {"connector.py": """\
        class Connector:
            def __init__(self):
                self.sessions = {}
                self.ready = {}
                self.pending = {}

            def on_handshake(self, msg):
                self.sessions[msg.remote_engine_id] = msg.session
                self.ready[msg.tp_rank] = True
                self.pending[msg.request_id] = msg

        CONNECTOR = Connector()
        """})
    assert [(line, code) for _, line, code, _ in found] == [(10, "RL307")]


def test_self_references_count_on_objects_made_per_call(tmp_path):
    found = _check(tmp_path, {"conn.py": """\
        class Peer:
            def __init__(self):
                self.on_close = self.close

            def close(self):
                pass

        class Config:
            def __init__(self):
                self.on_reload = self.reload

            def reload(self):
                pass

        def accept():
            return Peer()

        CONFIG = Config()
        """})
    assert [(line, code) for _, line, code, _ in found] == [(3, "RL703")]
    assert "`self.on_close` keeps a bound method of itself (`self.close`)" in found[0][3]


def test_an_object_its_own_methods_make_anew_is_made_per_call(tmp_path):
    found = _check(tmp_path, {"parts.py": """\
        class Part:
            def __init__(self, rows):
                self.rows = rows
                self.on_split = self.split

            def split(self, n):
                return Part(self.rows[:n])

        class Layout:
            def __init__(self, rows):
                self.rows = rows
                self.on_load = self.load

            def load(self):
                pass

            @classmethod
            def from_rows(cls, rows):
                return Layout(rows)
        """})
    assert [(line, code) for _, line, code, _ in found] == [(4, "RL703")]
    assert "`self.on_split` keeps a bound method of itself (`self.split`)" in found[0][3]


def test_an_object_kept_by_one_that_lives_for_the_process_lives_as_long(tmp_path):
    found = _check(tmp_path, {"pub.py": """\
        class Publisher:
            def __init__(self):
                self._sent = []

            def publish(self, event):
                print(event)
                self._sent.append(event)

        class Loader:
            def __init__(self):
                self._seen = []

            def read(self, path):
                print(path)
                self._seen.append(path)
        """, "sched.py": """\
        from pub import Loader, Publisher

        class Scheduler:
            def __init__(self):
                self.init_publisher()

            def init_publisher(self):
                self.publisher = Publisher()

            def load_weights(self):
                self.loader = Loader()

        class Step:
            def __init__(self):
                self.scratch = Publisher().publish

        SCHEDULER = Scheduler()
        """})
    assert [(path, line, code) for path, line, code, _ in found] == [("pub.py", 7, "RL307")]
    assert "`self._sent` gains one more item per call in `publish()`, and a `Publisher` lives for " \
        "the process" in found[0][3]


def test_a_noqa_on_the_statement_silences_a_model_finding(tmp_path):
    assert _check(tmp_path, {"jobs.py": """\
        _pending = {}

        def submit(request_id, job):
            _pending[request_id] = (  # noqa: RL306 - entries live for the process
                job)
        """}) == []


def test_properties_registration_apis_and_test_code_are_not_growth_nor_cycles(tmp_path):
    assert _check(tmp_path, {"shapes.py": """\
        _plugins = []

        def register_plugin(plugin, *, first=False):
            if first:
                _plugins.insert(0, plugin)
            else:
                _plugins.append(plugin)

        class Request:
            def __init__(self):
                self.start = self.extent

            @property
            def extent(self):
                return 0
        """, "tests/test_jobs.py": """\
        _seen = []

        def test_submit():
            _seen.append(1)
        """}) == []


def test_a_decorator_that_checks_what_it_registers_is_registration(tmp_path):
    """optimum's `@optimum_cli_subcommand(parent)`: the factory's inner `wrapper(subcommand)`
    checks its argument (`if not issubclass(...): raise`) and adds it - once per decorated
    class, at import. A function that does something else besides the add is not."""
    found = _check(tmp_path, {"cli.py": """\
        _SUBCOMMANDS = []
        _SEEN = []

        def subcommand(parent=None):
            def wrapper(command):
                if not issubclass(command, Base):
                    raise ValueError(f"{command} is not a command")
                _SUBCOMMANDS.append((command, parent))
            return wrapper

        def handle(request):
            if request is None:
                raise ValueError("no request")
            _SEEN.append(request)
            return respond(request)
        """})
    assert [(path, line, code) for path, line, code, _ in found] == [("cli.py", 14, "RL306")]


def test_a_drop_method_handed_on_and_a_rebinding_by_unpacking_release_the_holder(tmp_path):
    assert _check(tmp_path, {"server.py": """\
        import asyncio

        class Server:
            def __init__(self):
                self._tasks = set()
                self._timed = []

            def track(self, coro):
                task = asyncio.create_task(coro)
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)

            def on_step(self, step):
                self._timed.append(step)

            def flush(self):
                timed, self._timed = self._timed, []
                return timed
        """}) == []


# A queue whose instance map grows per call: reported once an instance lives for the process.
QUEUE = """\
        class Queue:
            def __init__(self):
                self.events = {}

            def push(self, event_id, event):
                self.events[event_id] = event
        """


def test_an_object_lives_for_the_process_when_any_module_makes_one_at_start_up(tmp_path):
    assert _check(tmp_path / "alone", {"app/__init__.py": "", "app/queue.py": QUEUE}) == []
    found = _check(tmp_path / "served", {
        "app/__init__.py": "from app.queue import Queue\n",
        "app/queue.py": QUEUE,
        "app/main.py": """\
            from app import Queue

            def main():
                run(Queue())
            """})
    assert [(p, line, code) for p, line, code, _ in found] == [("app/queue.py", 6, "RL307")]


def test_a_process_body_makes_an_object_for_the_process_and_a_predicate_about_one_does_not(tmp_path):
    found = _check(tmp_path / "body", {"queue.py": QUEUE + """\

        def run_scheduler_process(port):
            serve(Queue(), port)
        """})
    assert [(p, line, code) for p, line, code, _ in found] == [("queue.py", 6, "RL307")]
    assert _check(tmp_path / "predicate", {"queue.py": QUEUE + """\

        def one_queue_per_process(events) -> bool:
            probe = Queue()
            return all(probe.push(e, None) is None for e in events)
        """}) == []


def test_a_value_read_off_the_instance_does_not_keep_it_and_an_emptiness_guard_bounds(tmp_path):
    assert _check(tmp_path, {"metrics.py": """\
        _count = []

        def sm_count():
            if not _count:
                _count.append(read_device())
            return _count[0]

        class Metrics:
            names = set()

            def __init__(self, name):
                self.name = name
                Metrics.names.add(self.name)
        """}) == []


def test_a_cycle_is_info_unless_the_project_disables_the_collector(tmp_path):
    conn = """\
        class Connection:
            def __init__(self):
                self.on_data = self.handle

            def handle(self, data):
                pass
        """

    def levels(root: Path, files: dict[str, str]) -> list[str]:
        for name, text in files.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(textwrap.dedent(text))
        result = runner.run(sorted(str(p) for p in root.rglob("*.py")), ["RL703"],
                            Settings(root=root), runner.Mode(), jobs=1)
        return [f.severity.value for f in result.findings]

    assert levels(tmp_path / "a", {"conn.py": conn}) == ["info"]
    assert levels(tmp_path / "b", {"conn.py": conn, "main.py": "import gc\n\ngc.freeze()\n"}) == ["info"]
    assert levels(tmp_path / "c", {"conn.py": conn, "main.py": "import gc\n\ngc.disable()\n"}) == ["warning"]


def test_a_class_list_every_instance_appends_to_grows_also_through_a_subclass(tmp_path):
    """A list declared in a class body and appended to through `self` is the class's one
    list: every instance made adds to it for the process (xgboost's `temporary_buffers`,
    declared on the base, appended to by each subclass's `__init__`). An instance that
    binds its own list is not reported."""
    found = _check(tmp_path, {"frames.py": """\
        from typing import List, Tuple


        class Transformed:
            buffers: List[Tuple] = []

            def __init__(self, columns):
                self.columns = columns


        class PandasTransformed(Transformed):
            def __init__(self, columns):
                for column in columns:
                    self.buffers.append((column, bytes(1024)))
                super().__init__(columns)


        class Own(Transformed):
            def __init__(self, columns):
                self.buffers = []
                for column in columns:
                    self.buffers.append(column)
        """})
    assert [(p, line, code) for p, line, code, _ in found] == [("frames.py", 14, "RL306")]
    assert "`self.buffers` (class-level: lives for the process) gains one more item per " \
           "instance made in `__init__()`" in found[0][3]


def test_the_callbacks_of_a_parser_or_tree_visitor_read_one_input_and_serve_nothing(tmp_path):
    found = _check(tmp_path, {"readers.py": """\
        import ast
        from html.parser import HTMLParser

        class Captions(HTMLParser):
            def __init__(self):
                super().__init__()
                self.texts = []

            def handle_data(self, data):
                self.texts.append(data.strip())

        class Calls(ast.NodeVisitor):
            def __init__(self):
                self.seen = []

            def visit_Call(self, node):
                self.seen.append(node.func)

        class Judge:
            def __init__(self):
                self.handlers = []

            def visit_Call(self, node):
                self.handlers.append(node.func)

            def _judge_memory_handler(self, handler):
                return handler

        class Inbox:
            def __init__(self):
                self.messages = []

            def handle_message(self, message):
                self.messages.append(message.body)
        """})
    # only the class that serves messages: a parser reads one document per instance, a
    # visitor one tree, whatever its helper methods are named
    assert [(line, code) for _, line, code, _ in found] == [(34, "RL307")]
    assert "`self.messages` gains one more item per call in `handle_message()`, and a `Inbox` serves many requests" in found[0][3]


def test_a_memoised_function_adds_once_per_distinct_argument(tmp_path):
    found = _check(tmp_path, {"libs.py": """\
        import ctypes
        import functools

        _handles = []
        _loaded = []

        @functools.lru_cache(maxsize=2)
        def preload(flag):
            for path in find(flag):
                _handles.append(ctypes.CDLL(str(path)))

        def open_library(path):
            _loaded.append(ctypes.CDLL(str(path)))

        def find(flag):
            return []
        """})
    # the cached body runs once per distinct `flag`; the plain one on every call
    assert [(line, code) for _, line, code, _ in found] == [(13, "RL306")]


def test_a_file_only_the_model_checks_read_is_reported_in_any_encoding(tmp_path):
    # Such a file is checked from the index's facts alone; one whose text needs its coding
    # cookie (or has form feeds) goes through the full parse. Both report the same line.
    for name, encoding, comment in (("utf8", "utf-8", "# café\n"),
                                    ("latin1", "latin-1", "# -*- coding: latin-1 -*-\n# café\n"),
                                    ("formfeed", "utf-8", "# \f\n")):
        root = tmp_path / name
        root.mkdir()
        (root / "jobs.py").write_bytes((comment + textwrap.dedent(STATE)).encode(encoding))
        result = runner.run([str(root / "jobs.py")], CODES, Settings(root=root), runner.Mode(), jobs=1)
        found = [(f.start.line, f.code) for f in result.findings]
        assert found == [(comment.count("\n") + 4, "RL306")], (name, found)


def test_an_id_keyed_store_whose_value_holds_the_key_is_reported_once(tmp_path):
    code = """\
        CACHE = {}


        class Fused:
            def __init__(self, group):
                self.group = group


        def lazy_init(group):
            try:
                return CACHE[id(group)]
            except KeyError:
                obj = Fused(group)
                CACHE[id(group)] = obj
                return obj
        """
    (tmp_path / "fused.py").write_text(textwrap.dedent(code))
    paths = [str(tmp_path / "fused.py")]
    every = runner.run(paths, CODES, Settings(root=tmp_path), runner.Mode(), jobs=1).findings
    assert [(f.start.line, f.code) for f in every] == [(14, "RL305")]
    alone = runner.run(paths, ["RL306"], Settings(root=tmp_path), runner.Mode(), jobs=1).findings
    assert [(f.start.line, f.code) for f in alone] == [(14, "RL306")]


def test_a_key_the_adding_call_counts_up_is_a_new_slot_per_call(tmp_path):
    """asyncua's client protocol keys each pending request's future by `self._request_id`,
    which the same call counts up: a new slot per request, not one per instance."""
    found = _check(tmp_path, {"client.py": """\
        class Client:
            def __init__(self):
                self._request_id = 0
                self._last = None
                self._pending = {}
                self._labels = {}

            def on_request(self, payload, future):
                self._request_id += 1
                self._pending[self._request_id] = future
                self._labels[self._last] = payload

        CLIENT = Client()
        """})
    assert [(line, code) for _, line, code, _ in found] == [(10, "RL307")]
    assert "under a new `self._request_id` each time" in found[0][3]


def test_an_object_a_factory_makes_at_module_level_lives_for_the_process(tmp_path):
    """A zero-argument factory (`def handler(): return Handler()`) called at module level
    makes the process's one instance; its own name (`*handler`) says nothing of how often
    it runs. Called per request, it makes one per request."""
    found = _check(tmp_path, {"callbacks.py": """\
        class SpanHandler:
            def __init__(self):
                self.spans = {}

            def on_start(self, call_id, span):
                self.spans[call_id] = span

        class Tracker:
            def __init__(self):
                self.seen = {}

            def on_start(self, call_id, span):
                self.seen[call_id] = span

        def span_handler():
            return SpanHandler()

        def new_tracker():
            return Tracker()

        CALLBACKS = [span_handler()]

        def handle_request(request):
            tracker = new_tracker()
            tracker.on_start(request.id, request)
        """})
    assert [(line, code) for _, line, code, _ in found] == [(6, "RL307")]
    assert "a `SpanHandler` lives for the process" in found[0][3]


def test_a_tuple_key_is_a_new_slot_when_any_part_is(tmp_path):
    """croniter kept every expanded expression in a module dict keyed by `(expr_format,
    hash_id, second_at_beginning)`: a slot per distinct id, whatever the last part is named.
    A tuple with a part naming the deployment or the code (`(device, stream_id)`, `(rank,
    pg_id)`) keys a fixed set of members."""
    found = _check(tmp_path, {"expressions.py": """\
        EXPRESSIONS = {}
        BUFFERS = {}
        WORKSPACES = {}

        def expand(expr_format, hash_id, second_at_beginning):
            expressions = expr_format.split()
            EXPRESSIONS[(expr_format, hash_id, second_at_beginning)] = expressions
            return expressions

        def buffers(device, stream_id, size):
            BUFFERS[(device, stream_id)] = bytearray(size)

        def workspace(rank, pg_id, size):
            WORKSPACES[rank, pg_id] = bytearray(size)
        """})
    assert [(line, code) for _, line, code, _ in found] == [(7, "RL306")]
    assert "one entry per distinct `(expr_format, hash_id, second_at_beginning)`" in found[0][3]


def test_an_object_that_keeps_a_worker_pool_outlives_its_submissions(tmp_path):
    """AntaREST's task service made a thread pool in `__init__` and kept every submitted
    task's future under the task's id: an object made to run many submissions outlives
    each of them, wherever it is made. Without a pool (or another sign that it serves
    requests), who makes the object and how often is unknown: nothing is said."""
    found = _check(tmp_path, {"service.py": """\
        from concurrent.futures import ThreadPoolExecutor

        class TaskJobService:
            def __init__(self, workers):
                self.tasks = {}
                self.threadpool = ThreadPoolExecutor(max_workers=workers)

            def launch(self, task):
                future = self.threadpool.submit(task.run)
                self.tasks[task.id] = future

        class Recorder:
            def __init__(self):
                self.tasks = {}

            def launch(self, task):
                self.tasks[task.id] = task.run()
        """})
    assert [(line, code) for _, line, code, _ in found] == [(10, "RL307")]
    assert "a `TaskJobService` serves many requests" in found[0][3] and "worker pool" in found[0][3]


def test_an_object_that_makes_another_of_its_own_class_is_made_per_call(tmp_path):
    """`type(self)(...)` and `self.__class__(...)` in a method (a copy, a transform) make
    instances that come and go, as `Part(...)` does in a method of `Part`."""
    found = _check(tmp_path, {"images.py": """\
        class Image:
            def __init__(self, pixels):
                self.pixels = pixels
                self.on_copy = self.copy

            def copy(self):
                return type(self)(list(self.pixels))

        class Mesh:
            def __init__(self, points):
                self.points = points
                self.on_copy = self.copy

            def copy(self):
                return self.__class__(list(self.points))

        class Scene:
            def __init__(self, objects):
                self.objects = objects
                self.on_load = self.load

            def load(self):
                pass
        """})
    assert [(line, code) for _, line, code, _ in found] == [(4, "RL703"), (12, "RL703")]


def test_a_set_holds_each_value_once(tmp_path):
    """A set never holds the same value twice: adding to it grows per call only when the
    value is new per call (a request, a connection), as a dict's slot per key does. A set
    of ranks or exchange names is as large as the deployment or the configuration."""
    found = _check(tmp_path, {"watch.py": """\
        _DEAD = set()
        _EXCHANGES = set()
        _OPEN = set()

        def on_worker_exit(fut):
            rank = fut.result()
            _DEAD.add(rank)

        def bind(queue):
            exchange = queue.exchange
            _EXCHANGES.add(exchange)

        def on_connect(listener):
            conn, _ = listener.accept()
            _OPEN.add(conn)
        """})
    assert [(line, code) for _, line, code, _ in found] == [(15, "RL306")]
    assert "one entry per distinct `conn`" in found[0][3]


def test_objects_made_in_a_walk_over_a_models_layers_are_not_made_per_call(tmp_path):
    """A loop over a model's layers (`named_children()`, `modules()`) makes one object per
    layer when the model is set up, as many as it has layers: they come and go with the
    model, not per call. A loop over the rows a call is handed makes one per row."""
    found = _check(tmp_path, {"wrap.py": """\
        class Adapter:
            def __init__(self, layer):
                self.layer = layer
                self.on_forward = self.forward

            def forward(self, x):
                return self.layer(x)

        class Item:
            def __init__(self, row):
                self.row = row
                self.on_done = self.done

            def done(self):
                pass

        def wrap(model):
            for name, child in model.named_children():
                setattr(model, name, Adapter(child))
            return [Adapter(m) for m in model.modules()]

        def items(rows):
            return [Item(row) for row in rows]
        """})
    assert [(line, code) for _, line, code, _ in found] == [(12, "RL703")]


def _levels(root: Path, files: dict[str, str]) -> list[tuple[int, str, str]]:
    return [(f.start.line, f.code, f.severity.value) for f in _run(root, files) if f.code == "RL703"]


def test_a_traceback_kept_on_an_object_made_per_call_goes_with_it(tmp_path):
    """kombu's `Message.__init__` keeps `sys.exc_info()` of a failed decode in
    `self.errors`: one message, made per message received, keeps it as long as it lives - an
    exception kept on a short-lived object, negligible (`info`). A long-lived object keeping
    every traceback keeps them with all their frames: a warning."""
    found = _levels(tmp_path, {"messages.py": """\
        import sys

        class Message:
            def __init__(self, body):
                self.errors = []
                try:
                    self.body = body.decode()
                except Exception:
                    self.errors.append(sys.exc_info())

        class Decoder:
            def __init__(self):
                self.errors = []

            def decode(self, body):
                try:
                    return body.decode()
                except Exception:
                    self.errors.append(sys.exc_info())

        DECODER = Decoder()
        """})
    assert found == [(9, "RL703", "info"), (19, "RL703", "warning")]


def test_a_count_or_a_flag_in_a_key_is_no_identity(tmp_path):
    """A kernel cache keyed by sizes and flags (`max_blocks_per_seq`, `use_small_batch`,
    `int(num_partitions)`) holds one entry per configuration, however many requests: a
    count or a flag names no request. `id(cu_seqlens)` still does."""
    found = _check(tmp_path, {"kernels.py": """\
        _KERNELS = {}
        _SEEN = {}

        def get_kernel(num_heads, max_blocks_per_seq, use_small_batch, num_partitions):
            _KERNELS[num_heads, int(max_blocks_per_seq), use_small_batch, int(num_partitions)] = object()

        def seen(cu_seqlens):
            _SEEN[id(cu_seqlens)] = True
        """})
    assert [(line, code) for _, line, code, _ in found] == [(8, "RL306")]


def test_adds_through_a_key_s_entry_and_through_plus_equals_grow_per_call(tmp_path):
    found = _check(tmp_path, {"server.py": """\
        from collections import defaultdict

        _seen = {}
        _log = []


        def remember(request):
            _seen.setdefault(request.tenant, []).append(request.payload)


        def record(request):
            global _log
            _log += [request.payload]


        class Server:
            def __init__(self):
                self._history = []
                self._groups = defaultdict(list)

            def serve_forever(self):
                while True:
                    self.handle(None)

            def handle(self, request):
                self._history += [request.body]
                self._groups[request.kind].append(request.body)
        """})
    assert [(line, code) for _, line, code, _ in found] == [
        (8, "RL306"), (13, "RL306"), (26, "RL307"), (27, "RL307")]
    assert "`_log` (module-level: lives for the process) gains one more item per call in `record()`" in found[1][3]
    assert "`self._groups[request.kind]` gains one more item per call in `handle()`" in found[3][3]

    # the list under each key of a plain dict is not the dict's entry; a constant list
    # extended once at import is set-up
    assert _check(tmp_path / "clean", {"server.py": """\
        _table = {}
        _names = []
        _names += ["a", "b"]


        def lookup(request):
            return _table[request.tenant].copy()
        """}) == []


def test_a_container_default_value_lives_as_long_as_the_function(tmp_path):
    found = _check(tmp_path, {"config.py": """\
        def to_list(cfg, config_list=[], prefix="MODEL"):
            for key, value in cfg.items():
                if isinstance(value, dict):
                    config_list, _ = to_list(value, config_list, prefix + "." + key)
                else:
                    config_list.append(value)
            return config_list, prefix


        class Parser:
            def feed(self, token, seen=set()):
                seen.add(token)
        """})
    assert [(line, code) for _, line, code, _ in found] == [(6, "RL306"), (12, "RL306")]
    assert "`config_list` (a default value of `to_list()`: lives for the process) gains one more item " \
           "per call in `to_list()`" in found[0][3]
    consequence = _run(tmp_path, {})[0].consequence
    assert (consequence.kept, consequence.holder) == ("`value` of every `to_list()` call",
                                                      "the default `config_list` of `to_list()`")

    # a default the body replaces before adding, `None` as the default, a memo, and a
    # function made per call of another (its defaults are made with it) are fine
    assert _check(tmp_path / "clean", {"config.py": """\
        def copied(items, acc=[]):
            acc = list(acc)
            acc.extend(items)
            return acc


        def fresh(items, acc=None):
            acc = [] if acc is None else acc
            acc.extend(items)
            return acc


        def memo(key, _cache={}):
            if key in _cache:
                return _cache[key]
            _cache[key] = value = len(key)
            return value


        def outer(items):
            def inner(item, found=[]):
                found.append(item)
                return found
            return [inner(i) for i in items]
        """}) == []


def test_a_default_list_extended_with_plus_equals_grows_despite_membership_tests(tmp_path):
    found = _check(tmp_path, {"cast.py": """\
        def raycast(origin, entities, ignore=[]):
            ignore += tuple(e for e in entities if not e.collision)
            return [e for e in entities if e not in ignore]
        """})
    assert [(line, code) for _, line, code, _ in found] == [(2, "RL306")]


def test_a_removal_through_a_key_s_list_undoes_an_add_through_it(tmp_path):
    source = """\
        class Connection:
            def __init__(self):
                self._handlers = {}

            def serve_forever(self):
                while True:
                    self.on_message(None)

            def on_message(self, message):
                waiter = Waiter(message)
                self._handlers.setdefault(message.kind, []).append(waiter)
                return waiter

            def done(self, message, waiter):
                self._handlers[message.kind].DROP(waiter)
        """
    assert _check(tmp_path, {"conn.py": source.replace("DROP", "remove")}) == []
    # cancelling what an entry holds leaves the entry
    found = _check(tmp_path / "cancel", {"conn.py": source.replace("DROP", "cancel")})
    assert [(line, code) for _, line, code, _ in found] == [(11, "RL307")]


def test_removing_an_item_from_a_key_s_set_leaves_the_key_s_slot(tmp_path):
    found = _check(tmp_path, {"resolvers.py": """\
        class Resolvers:
            def __init__(self):
                self.flows = {}

            def serve_forever(self):
                while True:
                    self.handle_subscribe(None)

            def handle_subscribe(self, request):
                self.flows[request.sub_id] = set()
                return Subscription(request)

            def processed(self, request, w_id):
                self.flows[request.sub_id].remove(w_id)
        """})
    assert [(line, code) for _, line, code, _ in found] == [(10, "RL307")]
    assert "`self.flows` gains one entry per distinct `request.sub_id` in `handle_subscribe()`" in found[0][3]


def test_a_class_another_module_makes_per_call_is_made_per_call(tmp_path):
    """A cycle in a class costs when objects are made again and again: where they are made
    is often another module (a request handler making a `Pipeline`), read through imports."""
    pipeline = """\
        class Reader:
            def __init__(self, owner):
                self.owner = owner

        class Pipeline:
            def __init__(self):
                self.reader = Reader(self)
        """
    alone = tmp_path / "alone"
    assert _check(alone, {"pkg/__init__.py": "", "pkg/pipeline.py": pipeline}) == []
    found = _check(tmp_path / "used", {"pkg/__init__.py": "", "pkg/pipeline.py": pipeline, "pkg/server.py": """\
        from pkg.pipeline import Pipeline

        def handle_request(request):
            return Pipeline()
        """})
    assert [(p, line, code) for p, line, code, _ in found] == [("pkg/pipeline.py", 7, "RL703")]
    # made per case by the tests: how the tests run, not the product
    assert _check(tmp_path / "tested", {"pkg/__init__.py": "", "pkg/pipeline.py": pipeline,
                                        "tests/test_pipeline.py": """\
        from pkg.pipeline import Pipeline

        def test_many():
            for _ in range(3):
                Pipeline()
        """}) == []
    # made once, by a builder whose name has no per-call word in it (`vision_encoder`
    # holds `on_` only as letters): no cycle that matters
    assert _check(tmp_path / "built", {"pkg/__init__.py": "", "pkg/pipeline.py": pipeline, "pkg/build.py": """\
        from pkg.pipeline import Pipeline

        def clip_vision_encoder():
            return Pipeline()
        """}) == []


def test_a_child_the_instance_holds_given_a_reference_back_is_a_cycle(tmp_path):
    """`col.parent = self` for a child kept in the instance's own container, a child made
    with the instance and stored through a local, or appended: each closes a cycle."""
    found = _check(tmp_path, {"table.py": """\
        class Column:
            def __init__(self, name):
                self.parent = None

        class Surface:
            def __init__(self, owner, layer):
                self.owner = owner

        class Table:
            def __init__(self, names):
                self.columns = {}
                self.surfaces = {}
                self.more = []
                for name in names:
                    col = Column(name)
                    col.parent = self
                    self.columns[name] = col

            def add_surface(self, layer):
                surface = Surface(self, layer)
                self.surfaces[layer] = surface

            def add_more(self, layer):
                self.more.append(Surface(self, layer))

            def relink(self):
                for col in self.columns.values():
                    col.parent = self

            def unrelated(self, other):
                other.parent = self

        def handle(names):
            return Table(names)
        """})
    assert [(line, code) for _, line, code, _ in found] == [
        (16, "RL703"), (20, "RL703"), (24, "RL703"), (28, "RL703")]
    assert found[0][3].startswith("`col.parent = self` makes a child it holds keep it: each `Table`, made per call")
    assert found[1][3].startswith("`self.surfaces[layer]` keeps a child that keeps it (`Surface(self, layer)`)")


def test_an_attribute_tested_for_truth_is_a_flag_not_a_resource_the_cycle_keeps(tmp_path):
    decoder = """\
        class Decoder:
            def __init__(self, pin):
                self.pin_tensors = pin
                self.hook = self.decode

            def decode(self, x):
                return x.pin_memory() if self.pin_tensors else x

        def handle_message(message):
            return Decoder(True).decode(message)
        """
    found = _levels(tmp_path / "flag", {"codec.py": decoder})
    assert found == [(4, "RL703", "info")]
    kept = decoder.replace("x.pin_memory() if self.pin_tensors else x", "self.pin_tensors.append(x)")
    assert _levels(tmp_path / "kept", {"codec.py": kept}) == [(4, "RL703", "warning")]


def test_a_cycle_made_through_inherited_code_and_kept_arrays(tmp_path):
    """The cycle of a results object built with the model (`Results(self)`, whose `__init__`
    is its base's), kept after an attribute is set on it; the model keeps arrays it made
    (`np.asarray(endog)`), so each one waits for the collector with them: a warning. A cycle
    a base class makes in its `__init__` is made for each instance of a subclass made per call."""
    found = _levels(tmp_path / "model", {"model.py": """\
        import numpy as np

        class BaseResults:
            def __init__(self, model, params):
                self.model = model
                self.params = params

        class Results(BaseResults):
            pass

        class Model:
            def __init__(self, endog):
                self.endog = np.asarray(endog)

            def fit(self):
                results = Results(self, 1.0)
                results.fitted = True
                self._results = results
                return results

        def handle_request(data):
            return Model(data).fit()
        """})
    assert found == [(16, "RL703", "warning")]
    found = _levels(tmp_path / "base", {"rows.py": """\
        class BaseTable:
            def __init__(self):
                self.row = self.make_row

            def make_row(self):
                return None

        class NodeTable(BaseTable):
            pass

        def handle_request():
            return NodeTable()
        """})
    assert found == [(3, "RL703", "info")]


def test_a_staticmethod_read_off_the_instance_is_no_bound_method(tmp_path):
    hook = """\
        class Hook:
            def __init__(self, fn=None):
                if fn is None:
                    self.fn = self.default
                else:
                    self.fn = fn

            @staticmethod
            def default(x):
                return x

        def handle_request(x):
            return Hook().fn(x)
        """
    assert _levels(tmp_path / "static", {"hook.py": hook}) == []
    bound = hook.replace("            @staticmethod\n            def default(x):", "            def default(self, x):")
    assert _levels(tmp_path / "bound", {"hook.py": bound}) == [(4, "RL703", "info")]


def test_a_removal_in_an_except_exception_handler_is_skipped_when_the_call_is_cancelled(tmp_path):
    """A cancelled `await` raises `CancelledError`, a `BaseException`: `except Exception:`
    does not run, so the entry the call added stays; `finally`, a bare `except:` or `except
    BaseException:` run for it."""
    pool = """\
        class Pool:
            def __init__(self):
                self._waiting = []

            async def request(self, req):
                self._waiting.append(req)
                try:
                    await self.wait_for(req)
                except Exception:
                    self._waiting.remove(req)
                    raise
                self._waiting.remove(req)
                return req

            async def wait_for(self, req):
                return req
        """
    found = _check(tmp_path / "exception", {"pool.py": pool})
    assert [(line, code) for _, line, code, _ in found] == [(6, "RL307")]
    assert "fails or is cancelled" in found[0][3]
    assert _check(tmp_path / "base", {"pool.py": pool.replace("except Exception:", "except BaseException:")}) == []
    # a plain function has no cancellation: its `except Exception:` runs for what it raises
    plain = pool.replace("async def", "def").replace("await ", "")
    assert _check(tmp_path / "plain", {"pool.py": plain}) == []


def test_a_class_named_for_a_per_call_role_but_made_once_at_start_up_is_not_made_per_call(tmp_path):
    session = """\
        class XonshSession:
            def __init__(self):
                self.flush = self.flush_history

            def flush_history(self):
                return None
        """
    assert _levels(tmp_path / "named", {"session.py": session}) == [(3, "RL703", "info")]
    assert _levels(tmp_path / "once", {"session.py": session + "\nXSH = XonshSession()\n"}) == []


def test_a_class_attribute_reached_through_the_instance_s_type_is_the_class_s(tmp_path):
    # `type(self).X` and `self.__class__.X` name the class attribute, as `Cls.X` does
    for spelling in ("type(self)", "self.__class__", "Tracker"):
        found = _check(tmp_path / spelling.replace("(", "_").replace(")", ""), {"trace.py": f"""\
            from threading import get_ident

            class Tracker:
                _lookup = {{}}

                def __init__(self):
                    {spelling}._lookup[get_ident()] = self
            """})
        assert [(line, code) for _, line, code, _ in found] == [(7, "RL306")], spelling
        assert "`Tracker`" in found[0][3] or "Tracker._lookup" in found[0][3]


def test_a_class_container_made_lazily_when_missing_is_the_class_s_and_not_emptied(tmp_path):
    # made on first use under `if not hasattr(...)`: one container for the class, and the
    # guarded assignment in another method only makes it where it is missing
    source = """\
        from threading import get_ident

        class Tracker:
            def __init__(self):
                if not hasattr(self.__class__, "_lookup"):
                    self.__class__._lookup = dict()
                self.__class__._lookup[get_ident()] = self

            @classmethod
            def current(cls):
                if not hasattr(cls, "_lookup"):
                    cls._lookup = dict()
                return cls._lookup.get(get_ident())
        """
    found = _check(tmp_path, {"trace.py": source})
    assert [(line, code) for _, line, code, _ in found] == [(7, "RL306")]
    # emptied for real when it is rebound without the guard
    emptied = source.replace('if not hasattr(cls, "_lookup"):\n                    cls._lookup = dict()',
                             'cls._lookup = dict()')
    assert _check(tmp_path / "emptied", {"trace.py": emptied}) == []
    # `self.x` made when missing is the instance's own: not a class-level container
    own = source.replace('hasattr(self.__class__, "_lookup")', 'hasattr(self, "_lookup")').replace(
        "self.__class__._lookup = dict()", "self._lookup = dict()")
    assert _check(tmp_path / "own", {"trace.py": own}) == []


def test_a_slot_per_key_of_an_inner_dict_made_on_read_grows_the_outer_container(tmp_path):
    # `d.setdefault(k, {})[k2] = v` (and `d[k][k2] = v` on a `defaultdict(dict)`): one more
    # entry per distinct `k2` under each `k`, kept by `d`
    for store in ("_pending.setdefault(session_id, {})[request_id] = job",
                  "_by_session[session_id][request_id] = job"):
        found = _check(tmp_path / store[:8], {"jobs.py": f"""\
            from collections import defaultdict

            _pending = {{}}
            _by_session = defaultdict(dict)

            def submit(session_id, request_id, job):
                {store}
            """})
        assert [(line, code) for _, line, code, _ in found] == [(7, "RL306")], store
        assert "`request_id`" in found[0][3]
    # a removal through the same spelling is one
    assert _check(tmp_path / "removed", {"jobs.py": """\
        _pending = {}

        def submit(session_id, request_id, job):
            _pending.setdefault(session_id, {})[request_id] = job

        def finish(session_id, request_id):
            del _pending[session_id][request_id]
        """}) == []
