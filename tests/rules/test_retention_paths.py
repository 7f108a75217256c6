"""The retention model's paths and lifetimes: a removal that only the successful path of an
`async` call reaches, a container emptied only when its owner is closed, an object whose
methods serve requests, and frames that keep their own traceback."""

import json
import textwrap
from pathlib import Path

from conftest import check_here


def _check(root: Path, files: dict[str, str], codes: str = "RL306,RL307,RL703") -> list[tuple[int, str, str, str]]:
    """(line, code, severity, message) of what `retainlint check` reports, info included."""
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    done = check_here("check", "--no-cache", "--select", codes, "--min-severity", "info",
                      "--output-format", "json", "--exit-zero", str(root), cwd=root)
    assert done.returncode == 0, done.stderr
    return sorted((f["location"]["row"], f["code"], f["severity"], f["message"]) for f in json.loads(done.stdout))


HANDLER = """\
    import asyncio

    class Gateway:
        def __init__(self):
            self.running = set()

        async def handle_socket(self, request):
            task = asyncio.ensure_future(serve(request))
            self.running.add(task)
            try:
                await task
            except ConnectionError:
                pass
            {drop}
    """


def test_a_removal_only_the_successful_path_reaches_leaves_each_failed_call_entry(tmp_path):
    found = _check(tmp_path / "bug", {"gateway.py": HANDLER.format(drop="self.running.discard(task)")})
    assert [(line, code, severity) for line, code, severity, _ in found] == [(9, "RL307", "warning")]
    assert "one entry per call that fails or is cancelled before it removes its own" in found[0][3]

    fixed = HANDLER.replace("""\
            try:
                await task
            except ConnectionError:
                pass
    """, """\
            try:
                await task
            finally:
                self.running.discard(task)
    """)
    assert "finally" in fixed
    assert _check(tmp_path / "fixed", {"gateway.py": fixed.format(drop="")}) == []
    # A removal in a done-callback runs when the task ends, however the call goes on; one
    # by a method handed the entry (`_forget(task)`) is no teardown of the whole object.
    callback = HANDLER.replace("self.running.add(task)", "self.running.add(task)\n"
                               "            task.add_done_callback(lambda _: self.running.discard(task))")
    assert _check(tmp_path / "callback", {"gateway.py": callback.format(drop="")}) == []
    locked = HANDLER.replace("self.running.add(task)", "self.running.add(task)\n"
                             "            task.add_done_callback(self._forget)") + """
        async def _forget(self, task):
            async with self.lock:
                self.running.discard(task)
    """
    assert _check(tmp_path / "locked", {"gateway.py": locked.format(drop="")}) == []
    entry = HANDLER + """
        def _stop_tracking(self, task):
            self.running.discard(task)
    """
    assert _check(tmp_path / "entry", {"gateway.py": entry.format(drop="")}) == []


def test_emptying_the_whole_container_past_an_early_exit_sweeps_what_failed_calls_left(tmp_path):
    """zope.server 4.0.2's trigger: `handle_read` returns early when `recv` fails, then runs
    every queued thunk and rebinds the list; the next read that gets there empties it."""
    trigger = """\
        class Trigger:
            def __init__(self):
                self.thunks = []

            def pull_trigger(self, thunk):
                self.thunks.append(thunk)
                self.wake_up()

            def handle_read(self):
                try:
                    self.recv(8192)
                except OSError:
                    return
                for thunk in self.thunks:
                    thunk()
                {drop}
        """
    for drop in ("self.thunks = []", "self.thunks.clear()", "del self.thunks[:]"):
        assert _check(tmp_path / "whole", {"trigger.py": trigger.format(drop=drop)}) == [], drop
    # never emptied: every thunk stays
    found = _check(tmp_path / "kept", {"trigger.py": trigger.format(drop="")})
    assert [(line, code) for line, code, _, _ in found] == [(6, "RL307")]
    # emptied only when the trigger closes: it grows while it serves
    closed = trigger.format(drop="") + "\n            def close(self):\n                self.thunks = []\n"
    found = _check(tmp_path / "closed", {"trigger.py": closed})
    assert [(line, code) for line, code, _, _ in found] == [(6, "RL307")]
    assert "emptied only when the `Trigger` is closed or stopped" in found[0][3]


CLIENT = """\
    import asyncio

    class Client:
        def __init__(self):
            self._pending = {{}}
            self._next_id = 0

        async def call(self, method):
            self._next_id += 1
            reply = asyncio.get_running_loop().create_future()
            self._pending[self._next_id] = reply
            await self.send(self._next_id, method)
            {wait}

        def on_reply(self, message):
            self._pending.pop(message.id).set_result(message)
    """


def test_a_reply_table_keeps_the_entry_of_every_request_whose_reply_never_comes(tmp_path):
    """pytboss 2026.8.2's `send_command()`: a future per command, awaited under a timeout and
    removed only by the response handler."""
    found = _check(tmp_path / "bug", {"client.py": CLIENT.format(wait="return await asyncio.wait_for(reply, 5)")},
                   "RL307")
    assert [(line, code, severity) for line, code, severity, _ in found] == [(11, "RL307", "warning")]
    assert "a `Client` carries many requests" in found[0][3]
    assert "a reply that never comes (a timeout, a cancellation, a lost connection) leaves the entry" in found[0][3]
    # removed by the waiting call itself, whatever happens to the wait
    fixed = CLIENT.format(wait="""try:
                return await asyncio.wait_for(reply, 5)
            finally:
                self._pending.pop(self._next_id, None)""")
    assert _check(tmp_path / "fixed", {"client.py": fixed}, "RL307") == []
    # not waited for here (a notification): no sign the entry was meant to go with the call
    assert _check(tmp_path / "unwaited", {"client.py": CLIENT.format(wait="return reply")}, "RL307") == []
    # a task resolves itself, and its done-callback removes the entry
    task = CLIENT.format(wait="return await asyncio.wait_for(reply, 5)").replace(
        "asyncio.get_running_loop().create_future()", "asyncio.ensure_future(self.run(method))")
    assert _check(tmp_path / "task", {"client.py": task}, "RL307") == []


EVENTS = """\
    class Connection:
        def __init__(self):
            self.streams = {{}}

        async def handle_event(self, event):
            if event.kind == "open":
                self.streams[event.id] = event.stream
                await self.send(event)
            elif event.kind == "closed":
                {drop}
    """


def test_an_await_in_another_branch_does_not_come_before_a_removal(tmp_path):
    """The `await` is on the `if` branch, the removal on the `elif`: no path reaches both, so
    the removal runs whenever a stream closes (hypercorn 0.18.0's HTTP/3 streams, after its fix)."""
    assert _check(tmp_path / "branches", {"conn.py": EVENTS.format(drop="self.streams.pop(event.id, None)")}) == []
    # on the same path after the `await`, a call that fails there leaves its entry
    same_path = EVENTS.format(drop="await self.flush(event)\n                self.streams.pop(event.id, None)")
    found = _check(tmp_path / "path", {"conn.py": same_path})
    assert [(line, code) for line, code, _, _ in found] == [(7, "RL307")]
    # in a loop, one pass's `await` comes before the next pass's removal
    looped = textwrap.dedent(EVENTS.format(drop="self.streams.pop(event.id, None)")).replace(
        "    async def handle_event(self, event):\n", "    async def handle_events(self, events):\n      for event in events:\n")
    looped = looped.replace("\n        if ", "\n          if ").replace("\n        elif ", "\n          elif ")
    looped = looped.replace("\n            self.streams[", "\n              self.streams[").replace(
        "\n            await", "\n              await").replace("\n            self.streams.pop", "\n              self.streams.pop")
    found = _check(tmp_path / "loop", {"conn.py": looped})
    assert [(line, code) for line, code, _, _ in found] == [(8, "RL307")], looped


def test_an_object_whose_methods_are_handlers_outlives_the_requests_it_keeps(tmp_path):
    worker = """\
        class Worker:
            def __init__(self):
                self.contexts = {{}}

            async def handle_start(self, action):
                self.contexts[action.run_id] = make_context(action)

            async def handle_cancel(self, run_id):
                {cancel}
        """
    found = _check(tmp_path / "bug", {"worker.py": worker.format(cancel="self.contexts.get(run_id)")})
    assert [(line, code) for line, code, _, _ in found] == [(6, "RL307")]
    assert "a `Worker` serves many requests" in found[0][3]
    assert _check(tmp_path / "fixed", {"worker.py": worker.format(cancel="self.contexts.pop(run_id, None)")}) == []
    # No handler, no serve loop, made nowhere: nothing says one object sees many calls.
    plain = worker.replace("handle_start", "remember").replace("handle_cancel", "look")
    assert _check(tmp_path / "plain", {"worker.py": plain.format(cancel="self.contexts.get(run_id)")}) == []
    # A training callback's `on_train_begin()` runs once per run; a `while True:` that parses
    # waits for no request: neither is a sign of serving.
    callback = worker.replace("handle_start", "on_train_begin").replace(
        "handle_cancel", "parse").replace("{cancel}", "while True:\n                    {cancel}")
    assert _check(tmp_path / "callback", {"worker.py": callback.format(cancel="break")}) == []


POOL = """\
    class Cursor:
        def __init__(self, client, owner):
            self.client = client
            self.owner = owner

        def close(self):
            self.client.disconnect()
            {close}


    class Connection:
        def __init__(self):
            self.cursors = []

        def cursor(self):
            made = Cursor(make_client(), self)
            self.cursors.append(made)
            return made
    """


def test_an_owner_that_keeps_every_object_it_hands_out_grows_with_each(tmp_path):
    """clickhouse-driver 0.2.0's `Connection.cursor()`: each cursor handed out stays in the
    connection's list after its user closes it; 0.2.1 takes it out in the cursor's `close()`."""
    found = _check(tmp_path / "bug", {"db.py": POOL.format(close="")}, "RL307")
    assert [(line, code, severity) for line, code, severity, _ in found] == [(17, "RL307", "warning")]
    assert "a `Connection` keeps every object it hands out (`made`)" in found[0][3]
    # the object's own teardown takes it out of its owner's list: one entry less per cursor closed
    fixed = POOL.format(close="self.owner.cursors.remove(self)")
    assert _check(tmp_path / "fixed", {"db.py": fixed}, "RL307") == []
    # kept but not handed out (a log of what was made), or handed out but made elsewhere: no
    # sign the caller drops it while the owner lives
    kept = POOL.format(close="").replace("            return made\n", "")
    assert _check(tmp_path / "kept", {"db.py": kept}, "RL307") == []
    # a memo hands the same object out again (lmdeploy 0.18.0's workspace per CUDA stream)
    memo = POOL.format(close="").replace("""\
            made = Cursor(make_client(), self)
            self.cursors.append(made)""", """\
            made = self.cursors.get(key)
            if made is None:
                made = Cursor(make_client(), self)
                self.cursors[key] = made""").replace("def cursor(self)", "def cursor(self, key)").replace(
        "self.cursors = []", "self.cursors = {}")
    assert "self.cursors[key] = made" in memo
    assert _check(tmp_path / "memo", {"db.py": memo}, "RL307") == []
    # made per request by the code itself: the owner goes with the request, and its cursors with it
    per_request = POOL.format(close="") + "\n    def handle_request(request):\n        Connection().cursor()\n"
    assert _check(tmp_path / "per_request", {"db.py": per_request}, "RL307") == []


def test_a_container_emptied_only_when_its_owner_stops_still_grows_while_it_serves(tmp_path):
    found = _check(tmp_path, {"queue.py": """\
        class Queue:
            def __init__(self):
                self.tasks = []
                self.stopped = False

            async def start_processing(self):
                while not self.stopped:
                    event = await self.inbox.get()
                    self.tasks.append(spawn(event))

            def stop(self):
                self.tasks = []
        """})
    assert [(line, code) for line, code, _, _ in found] == [(9, "RL307")]
    assert "it is emptied only when the `Queue` is closed or stopped" in found[0][3]


def test_a_loop_until_an_event_or_future_of_the_instance_is_done_serves(tmp_path):
    # `while not self._closing.is_set()` / `while not self._ended.done()` around a wait is a
    # serve loop, as `while not self.stopped` is
    source = """\
        class Sender:
            def __init__(self):
                self.sent = []

            async def run(self):
                while not LOOP_TEST:
                    item = await self.inbox.get()
                    self.sent.append(item)
        """
    for test in ("self._closing.is_set()", "self._ended.done()"):
        found = _check(tmp_path / test[:12], {"send.py": source.replace("LOOP_TEST", test)})
        assert [(line, code) for line, code, _, _ in found] == [(8, "RL307")], test
    # an event of something else says nothing about this instance
    assert _check(tmp_path / "other", {"send.py": source.replace("LOOP_TEST", "event.is_set()")}) == []


def test_frames_that_keep_their_own_traceback(tmp_path):
    # Info: the collector frees each cycle (a warning when it is disabled, or when the
    # traceback is kept on an object).
    found = _check(tmp_path / "bug", {"jobs.py": """\
        import sys

        def run_job(job, events):
            try:
                job.func()
            except BaseException:
                exc, tb = sys.exc_info()[1:]
                events.append((exc, tb))

        def check_union(value, types):
            errors = {}
            for t in types:
                try:
                    return check(value, t)
                except TypeError as exc:
                    errors[t.__name__] = exc
            raise TypeError(", ".join(errors))

        def fetch(response):
            try:
                response.raise_for_status()
            except OSError as e:
                err = NotFound(response)
                raise err from e

        def retry(call):
            for _ in range(3):
                try:
                    return call()
                except OSError as e:
                    last = e
            return None
        """})
    assert [(line, code, severity) for line, code, severity, _ in found] == [
        (7, "RL703", "info"), (16, "RL703", "info"), (24, "RL703", "info")]
    assert "`exc` keeps `sys.exc_info()`'s exception or traceback in `run_job()`" in found[0][3]
    assert "`del exc` in a `finally` breaks the cycle" in found[0][3]
    assert "`errors` collects caught exceptions in `check_union()`" in found[1][3]

    assert _check(tmp_path / "fixed", {"jobs.py": """\
        import sys
        import traceback

        def run_job(job, events):
            try:
                job.func()
            except BaseException:
                exc, tb = sys.exc_info()[1:]
                traceback.clear_frames(tb)
                del tb
                events.append(exc)

        def check_union(value, types):
            errors = {}
            try:
                for t in types:
                    try:
                        return check(value, t)
                    except TypeError as exc:
                        errors[t.__name__] = exc
                raise TypeError(", ".join(errors))
            finally:
                del errors

        def fetch(response):
            try:
                response.raise_for_status()
            except OSError as e:
                raise NotFound(response) from e

        def retry(call):
            for _ in range(3):
                try:
                    return call()
                except OSError as e:
                    last = e
            err = RuntimeError("gave up")
            raise err

        def walk(tb):
            while tb is not None:
                tb = tb.tb_next
        """}) == []


def test_a_traceback_kept_on_an_object_or_with_the_collector_off_is_a_warning(tmp_path):
    found = _check(tmp_path / "kept", {"conn.py": """\
        import sys

        class Connection:
            def __init__(self):
                self.history = []

            def restart(self):
                try:
                    self.open()
                except OSError:
                    self.history.append(sys.exc_info())
        """})
    assert [(line, code, severity) for line, code, severity, _ in found] == [(11, "RL703", "warning")]
    assert "`self.history` keeps `sys.exc_info()`'s exception or traceback" in found[0][3]
    off = _check(tmp_path / "off", {"jobs.py": """\
        import gc
        import sys

        gc.disable()

        def run_job(job):
            try:
                job()
            except Exception:
                exc = sys.exc_info()[1]
                print(exc)
        """})
    assert [(line, code, severity) for line, code, severity, _ in off] == [(10, "RL703", "warning")]


def test_a_collector_paused_and_turned_back_on_leaves_a_frame_cycle_hidden(tmp_path):
    # sglang's request_gc.defer() and vLLM's CUDA-graph capture: gc.disable() with a
    # gc.enable() in the same function is a pause, not a collector that stays off.
    found = _check(tmp_path, {"jobs.py": """\
        import gc
        import sys

        def capture(graph):
            was_on = gc.isenabled()
            gc.disable()
            try:
                graph.capture()
            finally:
                if was_on:
                    gc.enable()

        def run_job(job):
            try:
                job()
            except Exception:
                exc = sys.exc_info()[1]
                print(exc)
        """})
    assert [(line, code, severity) for line, code, severity, _ in found] == [(17, "RL703", "info")]


def test_growth_only_while_a_cuda_graph_is_captured_is_bounded(tmp_path):
    # sglang's LoRA overlap events: kept only during capture, at start-up, so the captured
    # cross-stream waits stay valid. The same list grown on every call is reported.
    found = _check(tmp_path, {"overlap.py": """\
        import torch

        _OVERLAP_EVENTS = []
        _EVERY_CALL = []

        def run_lora(x):
            event = torch.cuda.Event()
            event.record()
            if torch.cuda.is_current_stream_capturing():
                _OVERLAP_EVENTS.append(event)
            _EVERY_CALL.append(event)
            return x * 2
        """})
    assert [(line, code) for line, code, _, _ in found] == [(11, "RL306")]


def test_an_object_made_per_call_handing_itself_to_what_it_keeps_is_a_cycle(tmp_path):
    # The cycle closes through another object: a cache made with a bound method of its
    # owner, a child told who its parent is, a C callback made from a bound method. The
    # finding points at the argument that closes it; a warning when the object keeps a
    # socket, a stream or bulk data open until the collector runs, info when it is light.
    # The instance itself handed to a class from elsewhere (`HttpRequestParser(self)`) may
    # be kept weakly (aio-pika's `CallbackCollection(self)` is): not counted.
    found = _check(tmp_path, {"conn.py": """\
        import ctypes
        import threading

        class Connection:
            def __init__(self, transport):
                self._transport = transport
                self._stmt_cache = StatementCache(
                    max_size=100,
                    on_remove=self._maybe_gc_stmt,
                )
                self._worker = threading.Thread(target=self._maybe_gc_stmt)

            def _maybe_gc_stmt(self, stmt=None):
                pass

        class RequestParserProtocol:
            def __init__(self):
                self.parser = HttpRequestParser(self)
                self.tracker = Tracker()
                self.tracker.owner = self
                self._next = ctypes.CFUNCTYPE(ctypes.c_int)(self.next)

            def next(self):
                return 0

        class Config:
            def __init__(self):
                self.watcher = Watcher(on_change=self.reload)

            def reload(self):
                pass

        CONFIG = Config()
        """})
    assert [(line, code, severity) for line, code, severity, _ in found] == [
        (9, "RL703", "warning"), (20, "RL703", "info"), (21, "RL703", "info")]
    assert "`self._stmt_cache` keeps a child that keeps it (`StatementCache(max_size=100, " \
           "on_remove=self._maybe_gc_stmt)`): each `Connection`, made per call, is freed with " \
           "`self._transport` only when the cyclic collector runs" in found[0][3]


def test_a_cycle_broken_when_the_object_is_done_is_not_reported(tmp_path):
    # uvicorn's protocol drops its parser in `connection_lost()`: the cycle ends with the
    # connection.
    assert _check(tmp_path, {"proto.py": """\
        class HttpProtocol:
            def __init__(self, transport):
                self.transport = transport
                self.parser = HttpRequestParser(self)
                self.on_done = self.finish

            def finish(self):
                pass

            def connection_lost(self, exc):
                self.parser = None
                del self.on_done
        """}) == []


def test_a_default_set_in_init_before_the_store_does_not_break_the_cycle(tmp_path):
    # `__init__` runs before any other method: its `self.on_done = None` is the attribute's
    # default, not a release, and the bound method stored later keeps its connection.
    found = _check(tmp_path, {"proto.py": """\
        class HttpProtocol:
            def __init__(self, transport):
                self.transport = transport
                self.on_done = None

            def connection_made(self, transport):
                self.on_done = self.finish

            def finish(self):
                pass
        """})
    assert [(line, code) for line, code, _, _ in found] == [(7, "RL703")]


def test_an_entry_of_itself_removed_under_another_spelling_of_its_key_breaks_the_cycle(tmp_path):
    source = """\
        import asyncio

        class Protocol(asyncio.Protocol):
            def __init__(self, connections):
                self.connections = connections
                self.conn = None

            def connection_made(self, transport):
                self.peername = peername = transport.get_extra_info("peername")
                self.conn = transport
                self.connections[peername] = self

            def connection_lost(self, exc):
                {release}
        """
    kept = _check(tmp_path / "kept", {"proto.py": source.format(release="self.conn = None")})
    assert [(line, code) for line, code, _, _ in kept] == [(11, "RL703")]
    assert _check(tmp_path / "del", {"proto.py": source.format(release="del self.connections[self.peername]")}) == []
    assert _check(tmp_path / "pop", {"proto.py": source.format(
        release="self.connections.pop(self.peername, None)")}) == []


def test_a_cycle_kept_past_the_release_method_is_reported_once(tmp_path):
    # `close()` stops the timer but keeps it: RL701's finding (the instance stays in the
    # cycle after its release); RL703 does not report the same cycle again.
    found = _check(tmp_path, {"session.py": """\
        class PeerSession:
            def __init__(self, transport):
                self._transport = transport
                self._timer = PeriodicCallback(self._tick, 500)

            def _tick(self):
                pass

            def close(self):
                self._timer.stop()

        def connect(transport):
            return PeerSession(transport)
        """}, codes="RL701,RL703")
    assert [(line, code) for line, code, _, _ in found] == [(4, "RL701")]


def test_a_class_defined_under_an_if_leaves_the_modules_other_findings(tmp_path):
    # xformers defines fallback classes under `if`/`else`; reading them must not cost the
    # module its frame findings.
    found = _check(tmp_path, {"overlap.py": """\
        import sys

        if sys.version_info >= (3, 12):
            class Handle:
                def __init__(self, transport):
                    self.transport = transport
                    self.on_done = self.finish

                def finish(self):
                    pass

        def poll(queue):
            try:
                return queue.get()
            except OSError as e:
                tb = e.__traceback__
                return tb.tb_lineno
        """})
    assert [(line, code) for line, code, _, _ in found] == [(16, "RL703")]



def test_a_class_under_a_module_level_try_is_read_like_any_other(tmp_path):
    # a fallback defined where an import fails is the class the process uses then
    found = _check(tmp_path, {"local.py": """\
        import threading

        try:
            from contextvars import ContextVar
        except ImportError:
            class ContextVar:
                def __init__(self, name):
                    self.storage = {}

                def set(self, value):
                    self.storage[threading.get_ident()] = value

        _var = ContextVar("x")
        """})
    assert [(line, code) for line, code, _, _ in found] == [(11, "RL307")]
    assert "`self.storage` gains one entry per distinct `threading.get_ident()`" in found[0][3]


def test_an_exception_raised_again_after_its_handler_rebound_the_name(tmp_path):
    # `except ... as e` unbinds `e` when the handler ends: a later `raise e` raises what
    # the name was bound to next, here an exception kept on an object
    found = _check(tmp_path, {"interp.py": """\
        def step(ctx, fn):
            try:
                return fn()
            except Exception as e:
                ctx.log(e)
            e = ctx.current_exception
            raise e
        """})
    assert [(line, code) for line, code, _, _ in found] == [(7, "RL703")]
    assert "`e` is raised from a local in `step()`" in found[0][3]


def test_a_class_registering_itself_and_a_flag_named_for_a_buffer_are_no_cycle_of_note(tmp_path):
    # `cls` in `__init_subclass__` is the class, not an instance (lmdeploy's state
    # registry); `enable_extra_buffer` is a flag about a buffer, not one (sglang).
    found = _check(tmp_path, {"states.py": """\
        class StateBase:
            _registry = {}

            def __init_subclass__(cls, **kwargs):
                cls._registry[cls.status] = cls

            @classmethod
            def register(cls):
                cls.self_ref = cls

        class StreamRequest:
            def __init__(self, args):
                self.enable_extra_buffer = args.enable_extra_buffer
                self.on_done = self.finish

            def finish(self):
                pass
        """})
    assert [(line, code, severity) for line, code, severity, _ in found] == [(14, "RL703", "info")]


def test_a_removal_after_a_context_managers_yield_runs_only_when_the_block_succeeds(tmp_path):
    # The `with` block's exception is raised at the `yield`: what comes after it, outside
    # `finally`, never runs then (broadcaster's subscribers, before its fix).
    buggy = """\
        from contextlib import contextmanager

        class Runner:
            def __init__(self):
                self._running = set()

            @contextmanager
            def track(self, job):
                self._running.add(job)
                yield job
                self._running.discard(job)

        RUNNER = Runner()
        """
    found = _check(tmp_path / "buggy", {"run.py": buggy})
    assert [(line, code, severity) for line, code, severity, _ in found] == [(9, "RL307", "warning")]
    assert "one entry per call that fails or is cancelled before it removes its own" in found[0][3]
    fixed = buggy.replace("                yield job\n                self._running.discard(job)",
                          "                try:\n                    yield job\n"
                          "                finally:\n                    self._running.discard(job)")
    assert fixed != buggy and _check(tmp_path / "fixed", {"run.py": fixed}) == []
    # A `yield` in one branch that returns right after it does not precede the removal on
    # the other path (sglang's compile-warmup offload clears its list before its own yield).
    early = """\
        from contextlib import contextmanager

        class Runner:
            def __init__(self):
                self._offloaded = []

            def submit(self, module):
                self._offloaded.append(module)

            @contextmanager
            def settle(self, warmup):
                if warmup:
                    yield
                    return
                self._offloaded.clear()
                yield

        RUNNER = Runner()
        """
    assert _check(tmp_path / "early", {"run.py": early}) == []


def test_an_entry_keyed_by_each_requests_own_id_is_an_error_and_a_bare_key_a_warning(tmp_path):
    # `request.request_id` names the request this call handles: one entry per request served,
    # never the same key twice (vLLM's and sglang's response stores). A bare key the caller
    # hands in (`sender_id`) may name one of a few senders: growth not proven.
    server = """\
        _RESPONSES = {}

        class ResponsesServer:
            def __init__(self):
                self.store = {}
                self.senders = {}

            async def handle_request(self, request, sender_id, sender):
                response = await generate(request)
                self.store[response.id] = response
                self.senders[sender_id] = sender
                _RESPONSES[request.request_id] = response
                return response

        SERVER = ResponsesServer()
        """
    found = _check(tmp_path, {"serve.py": server})
    assert [(line, code, severity) for line, code, severity, _ in found] == [
        (10, "RL307", "error"), (11, "RL307", "warning"), (12, "RL306", "error")]
    assert "one entry per distinct `response.id`" in found[0][3]


def test_an_object_handed_out_through_an_annotated_local_is_kept_by_its_owner(tmp_path):
    # frequenz-channels' `recv: Receiver[T] = Receiver(...)`: an annotation changes nothing
    # of what the local holds
    source = """\
        from uuid import uuid4


        class Receiver:
            def __init__(self, chan):
                self.chan = chan


        class Broadcast:
            def __init__(self):
                self.receivers = {{}}

            def get_receiver(self):
                uuid = uuid4()
                {binding} = Receiver(self)
                self.receivers[uuid] = recv
                return recv
        """
    for binding in ("recv", "recv: Receiver"):
        found = _check(tmp_path / binding.replace(":", "").replace(" ", "_"),
                       {"chan.py": source.format(binding=binding)}, codes="RL307")
        assert [(line, code) for line, code, _, _ in found] == [(16, "RL307")], binding
        assert "keeps every object it hands out (`recv`)" in found[0][3]


SYNC_CLIENT = """\
    from concurrent.futures import Future

    class Client:
        def __init__(self):
            self._pending = {{}}
            self._next_id = 0

        def call(self, method):
            self._next_id += 1
            reply = Future()
            self._pending[self._next_id] = reply
            self.send(self._next_id, method)
            return reply.result({timeout})

        def on_reply(self, message):
            self._pending.pop(message.id).set_result(message)
    """


def test_a_blocking_wait_without_a_timeout_abandons_no_entry(tmp_path):
    """`reply.result()` returns with the reply or never: the call cannot leave its entry
    behind, and the code delivering the reply removes it (vLLM 0.33.0's `call_utility()`).
    With a timeout it gives up, and a reply that never comes leaves the entry."""
    assert _check(tmp_path / "blocking", {"client.py": SYNC_CLIENT.format(timeout="")}, "RL307") == []
    found = _check(tmp_path / "timeout", {"client.py": SYNC_CLIENT.format(timeout="timeout=5")}, "RL307")
    assert [(line, code) for line, code, _, _ in found] == [(11, "RL307")]


def test_a_table_of_counts_keeps_its_keys(tmp_path):
    """airbyte-cdk's `self._request_attempt_count[request] = 1`: what each entry keeps is its
    key, the request with its headers and body; the count beside it weighs nothing. A value
    that is an object is what the entry keeps."""
    (tmp_path / "client.py").write_text(textwrap.dedent("""\
        class HttpClient:
            def __init__(self):
                self._attempts = {}
                self._replies = {}

            def send(self, request):
                self._attempts[request] = 1
                self._replies[request] = Reply(request)
                return request

            def start(self):
                pass

            def stop(self):
                pass
        """))
    done = check_here("check", "--no-cache", "--select", "RL307", "--min-severity", "info",
                      "--output-format", "json", "--exit-zero", str(tmp_path), cwd=tmp_path)
    kept = {f["location"]["row"]: f["consequence"]["kept"] for f in json.loads(done.stdout)}
    assert kept == {7: "`request` (each entry's key) of every `send()` call",
                    8: "`Reply(request)` of every `send()` call"}
