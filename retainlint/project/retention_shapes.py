"""The shapes of code the retention model reads: the calls that add to or drop from a
container, names of functions that run once, tear down, register or serve requests, and
walks over assignments and statements."""

from __future__ import annotations

import ast
import re
from typing import Iterator, Mapping, Optional

from retainlint.project.frames import own_nodes
from retainlint.project.nodes import dotted

FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)

# Calls that make a container, by their last name (`collections.OrderedDict()` too).
CONTAINER_CALLS = frozenset({"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter"})
WEAK = frozenset({"WeakValueDictionary", "WeakKeyDictionary", "WeakSet"})
ADD_CALLS = frozenset({"append", "extend", "add", "insert", "appendleft", "extendleft",
                   "setdefault", "__setitem__"})
# Calls that put one more item into a sequence (the list under a key of a defaultdict).
ITEM_ADDS = frozenset({"append", "extend", "insert", "appendleft", "extendleft"})
DROP_CALLS = frozenset({"pop", "popitem", "remove", "discard", "clear", "popleft", "__delitem__",
                    "difference_update", "intersection_update", "cancel"})
# Calls that read a container without keeping it or changing it.
READERS = frozenset({"len", "list", "tuple", "sorted", "set", "frozenset", "dict", "iter",
                      "enumerate", "zip", "any", "all", "sum", "min", "max", "map", "filter",
                      "reversed", "repr", "str", "print", "bool", "isinstance", "hash", "id",
                      "format", "getattr", "hasattr",
                      # read into a new value: `sep.join(xs)`, `json.dumps(xs)`, `copy.deepcopy(xs)`
                      "join", "dumps", "deepcopy", "pformat"})
# Methods run once per object or per class, never per request (and names starting so).
ONCE = ("__init_subclass__", "__set_name__", "__class_getitem__", "__post_init__",
         "__enter__", "__aenter__")
ONCE_PREFIXES = ("setup", "build", "configure", "init", "load", "create", "prepare", "launch",
                  "start", "spawn", "warmup")
# Methods that tear their object down: what they empty is emptied once, at the end.
TEARDOWN = ("close", "aclose", "stop", "shutdown", "teardown", "tear_down", "dispose", "terminate",
             "destroy", "cancel")
# Functions named as an API for registering things: how often they run is their callers'.
REGISTERS = ("register", "add_", "subscribe", "attach", "install", "declare")



# Worker pools: an object that makes one to keep exists to run many submissions on it.
WORKER_POOLS = frozenset({
    "concurrent.futures.ThreadPoolExecutor", "concurrent.futures.ProcessPoolExecutor",
    "concurrent.futures.thread.ThreadPoolExecutor", "concurrent.futures.process.ProcessPoolExecutor",
    "multiprocessing.Pool", "multiprocessing.pool.Pool", "multiprocessing.pool.ThreadPool"})

# What opens an OS resource - a file, a socket, a pool of connections - with the method that
# gives it back. An object that opens one to keep it owns it until that runs. Not a child
# process: it is ended in too many ways to tell (`wait()`, `kill()`, `os.killpg(p.pid, ...)`).
OPEN_RESOURCES = {
    "builtins.open": "close", "io.open": "close", "gzip.open": "close", "bz2.open": "close",
    "lzma.open": "close", "tempfile.TemporaryFile": "close",
    "tempfile.NamedTemporaryFile": "close", "tempfile.SpooledTemporaryFile": "close",
    "socket.socket": "close", "socket.create_connection": "close", "socket.fromfd": "close",
    "selectors.DefaultSelector": "close", "selectors.SelectSelector": "close",
    "selectors.PollSelector": "close", "selectors.EpollSelector": "close",
    "selectors.KqueueSelector": "close", "mmap.mmap": "close", "sqlite3.connect": "close",
    "http.client.HTTPConnection": "close", "http.client.HTTPSConnection": "close",
    "requests.Session": "close", "requests.sessions.Session": "close",
    "httpx.Client": "close", "urllib3.PoolManager": "clear",
    "httpx.AsyncClient": "aclose", "aiohttp.ClientSession": "close",
    "zipfile.ZipFile": "close", "tarfile.open": "close", "tarfile.TarFile": "close",
    "shelve.open": "close", "dbm.open": "close", "ftplib.FTP": "close", "smtplib.SMTP": "close",
    "h5py.File": "close", "psycopg2.connect": "close",
    "pymysql.connect": "close", "paramiko.SSHClient": "close", "redis.Redis": "close",
}
# Library classes whose own `close()` is their release: a subclass that does not override it
# releases with it, and it closes nothing the subclass opened.
CLOSING_BASES = frozenset({
    "requests.Session", "requests.sessions.Session", "httpx.Client", "socket.socket",
    "http.client.HTTPConnection", "http.client.HTTPSConnection", "logging.Handler",
    "logging.StreamHandler", "io.IOBase", "io.RawIOBase", "io.BufferedIOBase", "io.TextIOBase",
})
# Those whose closing method is a coroutine: only an `async` release can await it.
AWAITED_CLOSE = frozenset({"httpx.AsyncClient", "aiohttp.ClientSession"})

# Classes made with a callback that drop it once it has run: a thread or process forgets
# its target when `run()` returns.
RUNS_ONCE_CLASSES = ("Thread", "Process", "Greenlet")


def keeps_what_it_is_handed(func: ast.AST) -> bool:
    """Does calling `func` make an object that keeps its arguments: a class from elsewhere
    (`Parser(self)`, `PeriodicCallback(self.tick, 100)`: a constructor stores what it is
    handed) or what a factory made (`CFUNCTYPE(None)(self.next)`)? Not a plain function,
    whose result may keep nothing."""
    if isinstance(func, ast.Call):
        return True
    name = last_name(func)
    return name[:1].isupper() and not name.isupper() and not name.endswith(RUNS_ONCE_CLASSES) \
        and name not in WEAK


# Last words of an attribute's name that say it holds an OS resource or bulk data (`_transport`,
# `recv_sock`, not `stream_interval`): what an object freed late keeps open or allocated
# until the collector runs.
RESOURCE_WORDS = frozenset({"transport", "sock", "socket", "conn", "connection", "stream",
                            "file", "fp", "fd", "pipe", "proc", "process", "subprocess",
                            "channel", "reader", "writer", "buffer", "buf", "tensor", "tensors",
                            "array", "arrays", "dataframe", "df", "frame", "frames", "image",
                            "images"})


def resource_kept(cls: ast.ClassDef) -> str:
    """`self.<attr>` that a method of `cls` assigns and whose name says it holds an OS
    resource or bulk data (`self._transport`, `self.sock`, `self.buffer`); "" if none. Not
    one the class tests for truth (`x.pin_memory() if self.pin_tensors else x`): a flag."""
    tested = {t.attr for n in ast.walk(cls) if isinstance(t := _tested(n), ast.Attribute)}
    for method in cls.body:
        if not isinstance(method, FUNCTIONS) or not method.args.args:
            continue
        me = method.args.args[0].arg
        handed = {a.arg for a in (*method.args.args[1:], *method.args.kwonlyargs)} if method.name == "__init__" else set()
        for node in ast.walk(method):
            for target, value in bindings(node):
                if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) \
                        and target.value.id == me and target.attr not in tested \
                        and (_names_a_resource(target.attr) or _array_of(value, handed)):
                    return f"{me}.{target.attr}"
    return ""


# Array libraries as code imports them, and the calls of theirs that make an array.
_ARRAY_MODULES = frozenset({"np", "numpy", "torch", "cp", "cupy", "jnp", "mx"})
_ARRAY_MAKERS = frozenset({"array", "asarray", "asanyarray", "ascontiguousarray", "concatenate", "stack",
                           "vstack", "hstack", "tensor", "as_tensor", "from_numpy", "frombuffer", "copy"})


def _array_of(value: Optional[ast.AST], handed: set[str]) -> bool:
    """`np.asarray(endog)` in `__init__`, for a parameter `endog`: the object keeps the data
    its caller hands it as an array, bulk data of a size nothing here bounds, whatever the
    attribute is named (`self.exog`). An array made of the object's own values
    (`np.array(self.boundaries)`) is not counted."""
    if not isinstance(value, ast.Call) or not isinstance(value.func, ast.Attribute):
        return False
    module = dotted(value.func.value)
    return (module in _ARRAY_MODULES or module == "jax.numpy") and value.func.attr in _ARRAY_MAKERS \
        and any(isinstance(a, ast.Name) and a.id in handed for a in value.args)


def _tested(node: ast.AST) -> Optional[ast.AST]:
    """The expression an `if`, a `while` or a conditional expression tests, `not` looked through."""
    test = node.test if isinstance(node, (ast.If, ast.IfExp, ast.While)) else None
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test = test.operand
    return test


def _names_a_resource(attr: str) -> bool:
    """`_transport`, `recv_sock`, `input_buffer`; not a flag or a size about one
    (`enable_extra_buffer`, `num_streams`)."""
    words = attr.lower().strip("_").split("_")
    return words[-1] in RESOURCE_WORDS and words[0] not in FLAG_WORDS


# First words of a flag's or a count's name.
FLAG_WORDS = frozenset({"is", "has", "use", "enable", "enabled", "disable", "disabled", "num",
                        "max", "min", "should", "can", "with", "no"})


def used_on_release(cls: ast.ClassDef, target: str) -> bool:
    """Does a release method of `cls` (`close()`, `stop()`) use `target` (`self._timer`)
    and keep it? That cycle outlives the release: RL701's finding, whatever the weight."""
    attr = target.partition(".")[2]
    for method in cls.body:
        if isinstance(method, FUNCTIONS) and method.name.lstrip("_") in TEARDOWN and method.args.args:
            mine = f"{method.args.args[0].arg}.{attr}"
            if any(isinstance(n, ast.Attribute) and ast.unparse(n) == mine for n in ast.walk(method)):
                return True
    return False


def cycle_broken(cls: ast.ClassDef, target: str, storing: ast.AST) -> bool:
    """Does a method of `cls` other than `storing` let go of `target` (`self.parser`, as
    the code spells it with the method's own first parameter): `= None` or `del`, as a
    `close()` or `connection_lost()` does to break the cycle once the object is done?
    (`__init__` is not one: it runs before the store.) For
    an entry (`self.peers[name] = self`), also a `del` or `pop` of the container's entry
    under whatever key the method spells (`del self.peers[self.name]`)."""
    spelled = target.partition(".")
    for method in cls.body:
        if method is storing or not isinstance(method, FUNCTIONS) or not method.args.args \
                or method.name == "__init__":  # runs before the store: its `= None` is a default
            continue
        mine = method.args.args[0].arg + spelled[1] + spelled[2]
        container = mine.partition("[")[0] if mine.endswith("]") else None
        for node in ast.walk(method):
            dropped = [t for t, v in bindings(node) if isinstance(v, ast.Constant) and v.value is None]
            if isinstance(node, ast.Delete):
                dropped += node.targets
            if any(ast.unparse(t) == mine or container is not None and isinstance(t, ast.Subscript)
                   and ast.unparse(t.value) == container for t in dropped):
                return True
            if container is not None and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr == "pop" and ast.unparse(node.func.value) == container:
                return True
    return False


# Tests true only while CUDA graphs are captured or code is compiled.
WARMUP_TESTS = frozenset({"is_current_stream_capturing", "is_capturing", "is_compiling",
                           "is_dynamo_compiling"})


# Words naming a switch for debugging or measuring (`TRACK_STEP_TIMES`, `record=False`,
# `self.debug_dump`): what grows only while one is on costs only those who turn it on.
DIAGNOSTIC_WORDS = frozenset({"debug", "debugger", "trace", "tracing", "tracer", "profile", "profiling",
                              "profiler", "record", "recording", "track", "tracking", "dump", "dumper",
                              "verbose"})


def diagnostic_name(*names: str) -> str:
    """The first of `names` (a class, a function, a dotted module) with a diagnostic word
    (`DebugUnderflowOverflow`, `profile_model_time`, `pkg.debug_utils.dump`), or ""."""
    for name in names:
        words = re.sub(r"([a-z])([A-Z])", r"\1_\2", name).lower().replace(".", "_").split("_")
        if DIAGNOSTIC_WORDS.intersection(words):
            return name
    return ""


def diagnostic_switch(test: ast.AST, assigned: Mapping[str, ast.AST], depth: int = 0) -> str:
    """The diagnostic switch an `if` test is (`TRACK_STEP_TIMES`, `self.debug`), is made
    from (`need = TRACK and batch is not None`, one step back) or is one side of an `and`
    of; "" for any other test."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((s for s in (diagnostic_switch(v, assigned, depth) for v in test.values) if s), "")
    name = test.attr if isinstance(test, ast.Attribute) else test.id if isinstance(test, ast.Name) else ""
    if diagnostic_name(name):
        return name
    made = assigned.get(name) if isinstance(test, ast.Name) and depth == 0 else None
    return diagnostic_switch(made, assigned, 1) if made is not None else ""


def warms_up(test: ast.AST) -> bool:
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(warms_up(v) for v in test.values)
    return isinstance(test, ast.Call) and last_name(test.func) in WARMUP_TESTS


def last_name(func: ast.AST) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Subscript):
        # a generic alias called (`dict[str, int]()`, `asyncio.Future[bytes]()`) makes what the
        # bare class makes; an item called (`handlers[key]()`) is no class
        name = last_name(func.value)
        return name if name in CONTAINER_CALLS or name[:1].isupper() else ""
    return func.id if isinstance(func, ast.Name) else ""


def container_kind(value: Optional[ast.AST]) -> Optional[str]:
    """"dict", "list", "set", "deque(bounded)"... for an expression making an empty or
    literal container; "weak" for a weak one; None for anything else."""
    if isinstance(value, (ast.Dict, ast.DictComp)):
        return "dict"
    if isinstance(value, (ast.List, ast.ListComp)):
        return "list"
    if isinstance(value, (ast.Set, ast.SetComp)):
        return "set"
    if isinstance(value, ast.Call):
        name = last_name(value.func)
        if name in WEAK:
            return "weak"
        if name in CONTAINER_CALLS:
            if name == "deque" and (len(value.args) > 1 or any(k.arg == "maxlen" for k in value.keywords)):
                return "bounded"
            return name
    return None


# A class-body field that gives each instance a container of its own: dataclasses' and
# pydantic's `field(default_factory=dict)`, attrs' `field(factory=list)` and `attr.ib(factory=...)`.
_FIELDS = frozenset({"field", "Field", "ib", "attrib"})


def field_container_kind(value: Optional[ast.AST]) -> Optional[str]:
    """The kind of container a class-body field makes per instance, or None."""
    if not (isinstance(value, ast.Call) and last_name(value.func) in _FIELDS):
        return None
    factory = next((k.value for k in value.keywords if k.arg in ("default_factory", "factory")), None)
    if isinstance(factory, ast.Lambda):
        return container_kind(factory.body)
    if isinstance(factory, (ast.Name, ast.Attribute)):
        return container_kind(ast.Call(func=factory, args=[], keywords=[]))
    return None


def names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def bindings(node: ast.AST) -> Iterator[tuple[ast.AST, Optional[ast.AST]]]:
    """(target, value) of an assignment; each element of an unpacking target, paired
    with its own value when the right side is a tuple of the same length."""
    if isinstance(node, ast.Assign):
        for target in node.targets:
            yield from unpacked(target, node.value)
    elif isinstance(node, ast.AnnAssign):
        yield node.target, node.value


def unpacked(target: ast.AST, value: Optional[ast.AST]) -> Iterator[tuple[ast.AST, Optional[ast.AST]]]:
    if not isinstance(target, (ast.Tuple, ast.List)):
        yield target, value
        return
    values = value.elts if isinstance(value, (ast.Tuple, ast.List)) else None
    for i, element in enumerate(target.elts):
        inner = element.value if isinstance(element, ast.Starred) else element
        same = values is not None and len(values) == len(target.elts)
        yield from unpacked(inner, values[i] if same and values is not None else None)


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a function body, nested blocks included, nested definitions not."""
    for stmt in body:
        yield stmt
        if isinstance(stmt, (*FUNCTIONS, ast.ClassDef)):
            continue
        for field in ("body", "orelse", "finalbody"):
            inner = getattr(stmt, field, None)
            if isinstance(inner, list):
                yield from statements(inner)
        for block in [*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ())]:
            yield from statements(block.body)


def expressions(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The nodes of one statement, not of the statements nested in it."""
    stack: list[ast.AST] = [stmt]
    while stack:
        node = stack.pop()
        yield node
        for name, value in ast.iter_fields(node):
            if name in ("body", "orelse", "finalbody", "handlers", "cases") and isinstance(value, list):
                continue  # nested statements (a lambda's body is an expression: walked)
            if isinstance(value, ast.AST):
                stack.append(value)
            elif isinstance(value, list):
                stack.extend(v for v in value if isinstance(v, ast.AST))


def stored_names(node: ast.AST) -> Iterator[ast.Name]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        yield node

# Functions that run once per process: what they make lives as long.
ENTRY_POINTS = frozenset({"main", "cli", "serve", "run_server", "start_server", "entrypoint",
                           "run_app", "create_app", "app"})
LOOPS = (ast.For, ast.AsyncFor, ast.While, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


# What iterates over a model's own structure: one item per layer or parameter it has.
MODEL_WALKS = frozenset({"modules", "named_modules", "children", "named_children", "parameters",
                         "named_parameters", "buffers", "named_buffers"})


def walks_a_model(loop: ast.AST) -> bool:
    """Does `loop` go over a model's layers (`for name, child in model.named_children()`)?
    What it makes, it makes once per layer when the model is set up: as many as the model
    has layers, and they come and go with the model, not with each call."""
    if isinstance(loop, (ast.For, ast.AsyncFor)):
        over = loop.iter
    elif isinstance(loop, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)):
        over = loop.generators[0].iter
    else:
        return False
    return isinstance(over, ast.Call) and last_name(over.func) in MODEL_WALKS


def adds_a_parameter(stmt: ast.stmt, params: set[str]) -> bool:
    """`h.append(param)`, `h.add(param)`: one more item, exactly what the caller handed -
    also beside names it closes over (`h.append((command, parent))` in a decorator's wrapper)."""
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr in ("append", "add", "appendleft", "insert") and call.args):
        return False
    item = call.args[-1]
    parts = item.elts if isinstance(item, ast.Tuple) else [item]
    names = [n.id for n in parts if isinstance(n, ast.Name)]
    return len(names) == len(parts) and not params.isdisjoint(names)


ROUTES = frozenset({"route", "get", "post", "put", "delete", "patch", "websocket", "listener",
                     "middleware", "on_event", "exception_handler", "api_route", "handler"})


# Decorators that run a function's body once per distinct argument.
MEMOS = frozenset({"cache", "lru_cache", "cached", "memoize", "memoized"})

# Bases whose methods are called once per tag or node of one input (a document, a syntax
# tree): an instance reads that input and is made again for the next, whatever its
# methods are named (`handle_data`, `visit_Call`).
INPUT_READERS = frozenset({
    "html.parser.HTMLParser", "ast.NodeVisitor", "ast.NodeTransformer", "libcst.CSTVisitor",
    "libcst.CSTTransformer", "libcst.BatchableCSTVisitor", "xml.sax.handler.ContentHandler",
    "xml.sax.ContentHandler"})


def walks_a_tree(cls: ast.ClassDef) -> bool:
    """Does the class visit a syntax tree: methods named for node types (`visit_Call`,
    `leave_FunctionDef`), called once per node of the tree the instance was made for?"""
    return any(isinstance(f, FUNCTIONS) and f.name.startswith(("visit_", "leave_"))
               and f.name.partition("_")[2][:1].isupper() for f in cls.body)


def serves(function: ast.AST) -> bool:
    """Is this function a handler, run once per request, message or connection: `handle`,
    `handle_*`, `*_handler`, `on_*` for a request, message or connection, or a method
    decorated as a route? (`on_train_begin()`, `from_request()`: not named for serving.)"""
    name = getattr(function, "name").lstrip("_")
    return (name.startswith("handle") or name.endswith("_handler")
            or (name.startswith("on_") and any(w in name for w in SERVED))
            or any(isinstance(d, ast.Call) and last_name(d.func) in ROUTES
                   and isinstance(d.func, ast.Attribute) for d in getattr(function, "decorator_list")))


# What an `on_*` handler is named after when it runs per request.
SERVED = ("request", "message", "msg", "connect", "packet", "chunk", "recv", "receive")
# Calls a serve loop waits in for the next piece of work.
WAITS = frozenset({"recv", "recv_multipart", "recv_pyobj", "recvfrom", "accept", "wait", "poll",
                    "select", "receive", "read_message", "get_nowait"})


# What a loop asks an event or a future of the instance: has it been set, is it done?
_UNTIL = frozenset({"is_set", "done"})


def serves_until_stopped(loop: ast.While) -> bool:
    """`while True:`, `while self.running:`, `while not self.stopped:`, `while not
    self._closing.is_set():` (an event or future of the instance's own) around a wait for the
    next request (an `await`, `sock.recv()`, `queue.get()`...): a loop that parses, retries
    or walks does not serve."""
    test = loop.test.operand if isinstance(loop.test, ast.UnaryOp) else loop.test
    if isinstance(test, ast.Call) and isinstance(test.func, ast.Attribute) and test.func.attr in _UNTIL \
            and not test.args and not test.keywords:
        test = test.func.value
    if not ((isinstance(test, ast.Constant) and test.value is True) or (
            isinstance(test, ast.Attribute) and isinstance(test.value, ast.Name) and test.value.id == "self")):
        return False
    for sub in own_nodes(loop):
        if isinstance(sub, (ast.Await, ast.AsyncFor, ast.AsyncWith)):
            return True
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and (
                sub.func.attr in WAITS or (sub.func.attr == "get" and not sub.args
                                            and all(k.arg in ("timeout", "block") for k in sub.keywords))):
            return True
    return False


def process_entry(function: ast.AST, installs_signal_handlers: bool = False) -> bool:
    """A function named as the body of a process (`run_scheduler_process`, `worker_main`):
    it runs once per process, so what it makes lives for the process. Not a predicate
    about one (`one_instance_per_process(...) -> bool`): it answers a question, any number
    of times. Also one that installs its own SIGTERM or SIGINT handler (vLLM's
    `run_engine_core`; the caller says, from `installs_signal_handler`): only a process's
    main thread can, and a process has one handler per signal, so that function sets up
    the process."""
    name = getattr(function, "name")
    returns = getattr(function, "returns", None)
    return name.endswith(("_process", "_main")) and not name.lstrip("_").startswith("process") \
        and not (isinstance(returns, ast.Name) and returns.id == "bool") or installs_signal_handlers


def installs_signal_handler(call: ast.AST) -> bool:
    """`signal.signal(SIGTERM or SIGINT, ...)` (not `SIGALRM`, which may time out each call)."""
    return isinstance(call, ast.Call) and dotted(call.func) == "signal.signal" and bool(call.args) \
        and (dotted(call.args[0]) or "").rpartition(".")[2] in ("SIGTERM", "SIGINT")


def runs_once(name: str) -> bool:
    if name.startswith("__") and name.endswith("__"):
        return name in ONCE
    return name.lstrip("_").startswith(ONCE_PREFIXES)


# Parameters that hand a function one connection, request or message.
_PER_CONNECTION = frozenset({"addr", "address", "peer", "request", "req", "conn", "connection",
                             "sock", "socket", "message", "msg"})


def sets_up(function: ast.AST) -> bool:
    """Is `function` named for set-up (`runs_once`) and handed nothing per connection? One
    handed a connection's address, a request or a message (Twisted's `buildProtocol(addr)`,
    `create_session(request)`) builds per connection, whatever it is named."""
    args = getattr(function, "args")
    return runs_once(getattr(function, "name")) and not any(
        a.arg in _PER_CONNECTION for a in (*args.posonlyargs, *args.args, *args.kwonlyargs))


# Words in a function's name that say it runs per request, message or item.
PER_CALL_FUNCTIONS = ("handle", "process", "serve", "request", "dispatch", "call",
                       "submit", "step", "forward", "generate", "receive", "recv", "send",
                       "accept", "execute", "run", "query", "fetch", "invoke", "emit")


def named_per_call(name: str) -> bool:
    """Does a function's name say it runs per request, message or item: a word of it
    starts with one of `PER_CALL_FUNCTIONS` (`handle_error`, `_run_job`, `__call__`), or
    it is a handler (`on_message`)? Words, not letters anywhere: `clip_vision_encoder` is
    no `on_` handler, `truncate` runs nothing."""
    words = [w.lower() for w in _WORDS.findall(name)]
    return bool(words) and (words[0] == "on" or any(w.startswith(PER_CALL_FUNCTIONS) for w in words))


_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")  # `data_received`, `dataReceived`, `HTTPRequest`
