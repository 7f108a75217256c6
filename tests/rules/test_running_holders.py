"""Holders that run on their own (RL203): a thread whose target never returns, a timer its
own callback arms again, an asyncio task whose coroutine loops for ever or starts itself
again, a Twisted looping call. Each keeps the instance while it runs;
shown when instances are made per call and nothing stops the runner."""

import json
import textwrap
from pathlib import Path

from conftest import check_here


def _check(root: Path, source: str) -> list[tuple[int, str, str]]:
    """(line, severity, message) of RL203's findings, info included."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "conn.py").write_text(textwrap.dedent(source))
    done = check_here("check", "--no-cache", "--select", "RL203", "--min-severity", "info",
                      "--output-format", "json", "--exit-zero", str(root), cwd=root)
    assert done.returncode == 0, done.stderr
    return sorted((f["location"]["row"], f["severity"], f["message"]) for f in json.loads(done.stdout))


PINGER = """\
    import threading
    import time


    class Pinger:
        def __init__(self, sock):
            self.sock = sock
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()

        def _run(self):
            {loop}
                time.sleep(30)
                self.sock.send(b"ping")

        def close(self):
            {close}
            self.sock = None


    def handle_connection(sock):
        pinger = Pinger(sock)
        pinger.close()
    """


def test_a_thread_that_never_ends_keeps_each_instance_made_per_call(tmp_path):
    found = _check(tmp_path / "forever", PINGER.format(loop="while True:", close="pass"))
    assert [(line, severity) for line, severity, _ in found] == [(9, "error")]
    assert found[0][2].startswith("the bound method `self._run` runs in a thread that never ends, "
                                  "started by `Pinger.__init__`: the instance stays alive until the "
                                  "interpreter exits")
    unset = _check(tmp_path / "unset", PINGER.format(loop="while not self._stop.is_set():", close="pass"))
    assert [(line, severity) for line, severity, _ in unset] == [(9, "error")]


def test_a_thread_whose_loop_reads_what_the_release_closes_ends_with_it(tmp_path):
    """`close()` closes the socket the loop sends on: the next send raises, and the thread
    ends (lmdeploy's receive loop over a socket its disconnect closes)."""
    source = PINGER.format(loop="while True:", close="pass").replace("self.sock = None", "self.sock.close()")
    assert "self.sock.close()" in source
    assert _check(tmp_path / "raises", source) == []
    # the loop catches every error of the send (websocket-client's ping thread): it goes on
    guarded = source.replace('                self.sock.send(b"ping")',
                             '                try:\n                    self.sock.send(b"ping")\n'
                             '                except Exception:\n                    pass')
    assert "except Exception:" in guarded
    assert [(line, severity) for line, severity, _ in _check(tmp_path / "caught", guarded)] == [(9, "error")]


def test_a_thread_its_release_stops_is_not_reported(tmp_path):
    assert _check(tmp_path, PINGER.format(loop="while not self._stop.is_set():", close="self._stop.set()")) == []


def test_a_loop_whose_test_calls_a_method_or_whose_flag_is_set_through_getattr_is_not_reported(tmp_path):
    # transformers' `while self._generation_loop_body(...)`: the method says when it ends
    assert _check(tmp_path / "method", PINGER.format(loop="while self._step():", close="pass")) == []
    # sglang's release: `probe = getattr(self, "_stop", None); probe.set()`
    assert _check(tmp_path / "getattr", PINGER.format(
        loop="while not self._stop.wait(30):", close='getattr(self, "_stop").set()')) == []


def test_a_thread_that_never_ends_is_not_shown_without_a_sign_that_instances_come_and_go(tmp_path):
    # made once, by the process's entry point: it lives as long as its thread anyway
    source = PINGER.format(loop="while True:", close="pass").replace("def handle_connection", "def main")
    assert _check(tmp_path / "once", source + "\n    if __name__ == '__main__':\n        main(None)\n") == []
    # made by a function that says nothing of how often it runs: info
    unknown = _check(tmp_path / "unknown", source.replace("def main", "def make_pinger"))
    assert [(line, severity) for line, severity, _ in unknown] == [(9, "info")]


BULB = """\
    import asyncio


    class Bulb:
        def __init__(self, transport):
            self.transport = transport
            self._loop = asyncio.get_running_loop()
            self._timer = self._loop.call_later(5, self._keep_alive)

        def _keep_alive(self):
            self.transport.sendto(b"ping")
            self._timer = self._loop.call_later(5, self._keep_alive)

        def close(self):
            {close}
            self.transport.close()


    async def handle_request(transport):
        bulb = Bulb(transport)
        bulb.close()
    """


def test_a_timer_its_own_callback_arms_again_keeps_the_instance_until_cancelled(tmp_path):
    found = _check(tmp_path / "kept", BULB.format(close="pass"))
    assert [(line, severity) for line, severity, _ in found] == [(12, "error")]
    assert "armed again by `Bulb._keep_alive`" in found[0][2]
    assert "nothing `Bulb`'s release path runs calls `.cancel()` on it" in found[0][2]
    assert _check(tmp_path / "cancelled", BULB.format(close="self._timer.cancel()")) == []


def test_a_timer_re_armed_only_while_a_flag_another_method_clears_is_not_reported(tmp_path):
    source = BULB.format(close="self.running = False").replace(
        "            self._timer = self._loop.call_later(5, self._keep_alive)\n\n        def close",
        "            if self.running:\n                self._timer = self._loop.call_later(5, self._keep_alive)\n\n"
        "        def close")
    assert "if self.running:" in source
    assert _check(tmp_path, source) == []


def test_a_looping_call_nothing_stops_keeps_its_protocol(tmp_path):
    source = """\
        from twisted.internet import task


        class KeepAlive:
            def __init__(self, transport):
                self.transport = transport
                self.pinger = task.LoopingCall(self.ping)
                self.pinger.start(30)

            def ping(self):
                self.transport.write(b"ping")

            def connection_lost(self, reason):
                {release}


        def handle_connection(transport):
            return KeepAlive(transport)
        """
    found = _check(tmp_path / "kept", source.format(release="self.transport = None"))
    assert [(line, severity) for line, severity, _ in found] == [(7, "error")]
    assert "runs in the reactor's looping calls" in found[0][2]
    assert _check(tmp_path / "stopped", source.format(release="self.pinger.stop()")) == []


def test_a_function_that_installs_its_own_sigterm_handler_makes_its_objects_once_per_process(tmp_path):
    # vLLM's `run_engine_core`: a `Process` target, named like a per-call function, that
    # sets up the process (only a process's main thread can install a signal handler)
    source = PINGER.format(loop="while True:", close="pass").replace(
        "def handle_connection(sock):", "def run_pinger(sock):\n        {install}")
    per_call = _check(tmp_path / "named", source.format(install="pass"))
    assert [(line, severity) for line, severity, _ in per_call] == [(9, "error")]
    once = _check(tmp_path / "process", source.replace("import threading", "import signal\n    import threading")
                  .format(install="signal.signal(signal.SIGTERM, lambda *_: None)"))
    assert [(line, severity) for line, severity, _ in once] == [(10, "info")]


def test_a_stop_only_the_release_path_can_reach_counts(tmp_path):
    # evennia's telnet protocol: `toggle_nop_keepalive()` starts or stops the keep-alive;
    # the connection's end must reach it
    source = """\
        from twisted.internet.task import LoopingCall


        class TelnetProtocol:
            def __init__(self, transport):
                self.transport = transport
                self.nop_keep_alive = None

            def toggle_nop_keepalive(self):
                if self.nop_keep_alive and self.nop_keep_alive.running:
                    self.nop_keep_alive.stop()
                else:
                    self.nop_keep_alive = LoopingCall(self._send_nop)
                    self.nop_keep_alive.start(30, now=False)

            def _send_nop(self):
                self.transport.write(b"nop")

            def connectionLost(self, reason):
                {release}


        def handle_connection(transport):
            return TelnetProtocol(transport)
        """
    kept = _check(tmp_path / "kept", source.format(release="self.transport = None"))
    assert [(line, severity) for line, severity, _ in kept] == [(13, "error")]
    assert "nothing `TelnetProtocol`'s release path runs calls `.stop()` on it" in kept[0][2]
    assert _check(tmp_path / "stopped", source.format(
        release="if self.nop_keep_alive and self.nop_keep_alive.running:\n"
                "                    self.toggle_nop_keepalive()")) == []


POLLER = """\
    import asyncio


    class Poller:
        def __init__(self, client):
            self.client = client
            self._task = None

        def start(self):
            self._task = asyncio.create_task(self.tick())

        async def tick(self, requeue=True):
            self.update(await self.client.fetch())
            if requeue:
                await asyncio.sleep(5)
                self._task = asyncio.create_task(self.tick())

        def refresh(self):
            asyncio.create_task(self.tick(requeue=False))

        def update(self, value):
            self.value = value

        def close(self):
            {close}
            self.client = None


    async def handle_request(client):
        poller = Poller(client)
        poller.start()
        poller.close()
    """


def test_a_task_whose_coroutine_starts_itself_again_keeps_the_instance_until_cancelled(tmp_path):
    found = _check(tmp_path / "kept", POLLER.format(close="pass"))
    assert [(line, severity) for line, severity, _ in found] == [(10, "error"), (16, "error")]
    assert found[0][2].startswith("the bound method `self.tick` runs in the event loop's pending tasks, "
                                  "started by `Poller.start`")
    assert "nothing `Poller`'s release path runs calls `.cancel()` on it" in found[0][2]
    # `refresh` runs one tick: its `requeue=False` turns the restart off
    assert _check(tmp_path / "cancelled", POLLER.format(close="self._task.cancel()")) == []


def test_a_task_of_a_coroutine_that_loops_for_ever_keeps_the_instance(tmp_path):
    source = POLLER.format(close="pass").replace(
        "            self.update(await self.client.fetch())\n            if requeue:\n"
        "                await asyncio.sleep(5)\n                self._task = asyncio.create_task(self.tick())\n",
        "            while True:\n                self.update(await self.client.fetch())\n"
        "                await asyncio.sleep(5)\n")
    assert "while True:" in source
    # `refresh` starts it too: its `requeue=False` no longer matters
    assert [(line, severity) for line, severity, _ in _check(tmp_path, source)] == [(10, "error"), (18, "error")]


WATCHDOGS = """\
    import asyncio


    class LockManager:
        def __init__(self, client):
            self.client = client
            self._watchdogs = dict()

        def lock(self, resource):
            self._watchdogs[resource] = asyncio.ensure_future(self._extend(resource))

        async def _extend(self, resource):
            while True:
                await asyncio.sleep(1)
                await self.client.touch(resource)

        def unlock(self, resource):
            {unlock}

        def destroy(self):
            for resource in list(self._watchdogs):
                self.unlock(resource)
            self.client = None


    async def handle_request(client):
        manager = LockManager(client)
        manager.lock("a")
        manager.destroy()
    """


def test_a_task_kept_in_a_slot_of_a_dict_is_stopped_by_cancelling_a_slot(tmp_path):
    kept = _check(tmp_path / "kept", WATCHDOGS.format(unlock="self._watchdogs.pop(resource)"))
    assert [(line, severity) for line, severity, _ in kept] == [(10, "error")]
    for n, unlock in enumerate(["self._watchdogs[resource].cancel()", "self._watchdogs.pop(resource).cancel()",
                                "for task in self._watchdogs.values():\n                task.cancel()"]):
        assert _check(tmp_path / f"cancelled{n}", WATCHDOGS.format(unlock=unlock)) == [], unlock
