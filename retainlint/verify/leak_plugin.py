"""`pytest --retainlint-leaks`: after each test, and after each wider-scope fixture's
teardown, what the test (or the fixture's lifetime) made and left alive.

Order of a test's check: the test's protocol is over (pytest has dropped its fixture values
and arguments), the fixtures of wider scope that ended with it are checked first (what they
made since their setup), then the test (what it made, less what a still-live fixture of
wider scope holds: theirs until their own teardown).

tracemalloc is restarted before each test and stopped after its check (unless something
else started it), so the first object of a holder chain that has an allocation traceback is
one the test made: its line is where the chain was tied to its root. One heap scan per test:
the scan that ends a test's check is the next test's "before".
"""

from __future__ import annotations

import gc
import time
import tracemalloc
from pathlib import Path
from typing import Any, Optional

import pytest

from retainlint.verify import leaks
from retainlint.verify.leak_report import Record, summary_lines, write_json

TRACE_FRAMES = 10  # deep enough to climb out of the standard library and torch


class LeakPlugin:
    def __init__(self, settings: leaks.LeakSettings, root: Path):
        self.settings = settings
        self.root = root
        self.watch = leaks.Watch(settings, root)
        self.records: list[Record] = []
        # live fixtures of wider scope: id(fixturedef) -> [name, scope, value, snapshot]
        self.wide: dict[int, list] = {}
        self.ended: list[list] = []  # wider-scope fixtures finalized during this test
        self.reported = leaks.Seen()  # survivors reported already (and what they own)
        self.growth: dict[str, list] = {}  # project type -> tests it survived
        self.grown: set = set()  # project types reported as growing
        self.before: Optional[leaks.Seen] = None
        self.cuda_before: Optional[int] = None
        self.own_trace = False
        self.seconds = 0.0  # time spent checking (reported in the summary)

    # -- tracemalloc ---------------------------------------------------------------------------
    def pytest_sessionstart(self) -> None:
        self.own_trace = not tracemalloc.is_tracing()

    def _restart_trace(self) -> None:
        if self.own_trace:
            tracemalloc.stop()
            tracemalloc.start(TRACE_FRAMES)

    def _stop_trace(self) -> None:
        """Between tests nothing is traced: what pytest and its plugins do after the last
        test (an import at the summary) would run ten times slower."""
        if self.own_trace and tracemalloc.is_tracing():
            tracemalloc.stop()

    def pytest_unconfigure(self) -> None:
        self._stop_trace()

    # -- fixtures of wider scope -----------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef: Any, request: Any):
        if fixturedef.scope == "function":
            yield
            return
        start = time.perf_counter()
        gc.collect()
        snap = self.watch.snapshot()
        self.seconds += time.perf_counter() - start
        outcome = yield
        try:
            value = outcome.get_result()
        except BaseException:
            return
        self.wide[id(fixturedef)] = [fixturedef.argname, fixturedef.scope, value, snap]

    def pytest_fixture_post_finalizer(self, fixturedef: Any) -> None:
        entry = self.wide.pop(id(fixturedef), None)
        if entry is not None:
            entry[2] = None  # its value is pytest's to drop
            self.ended.append(entry)

    # -- each test -----------------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: Any, nextitem: Any):
        start = time.perf_counter()
        self._restart_trace()
        if self.before is None:  # the first test; later ones start from the last check's scan
            gc.collect()
            self.before = self.watch.snapshot()
        self.cuda_before = leaks.cuda_bytes_now()
        self.seconds += time.perf_counter() - start
        yield
        start = time.perf_counter()
        try:
            self._check(item.nodeid)
        finally:
            self._stop_trace()
            self.seconds += time.perf_counter() - start

    def _check(self, nodeid: str) -> None:
        gc.collect()
        now = self.watch.watched()
        skip: list = [self.wide, self.ended, self.records, self.growth, now]
        inside = [self.root]
        traces = leaks.Traces(self.own_trace)
        held = leaks.held_by_fixtures(entry[2] for entry in self.wide.values())
        for name, scope, _value, snap in self.ended:
            found, _ = leaks.survivors(self.watch, now, snap, held, skip, inside, self.reported, traces)
            self._add(nodeid, f"fixture {name} ({scope}) teardown", found)
        self.ended.clear()
        found, project = leaks.survivors(self.watch, now, self.before or leaks.Seen(), held, skip, inside, self.reported, traces)
        self._add(nodeid, "test", found)
        self._grow(nodeid, project, skip, inside, traces)
        project.clear()
        traces.clear()
        # what is alive now is the next test's "before": one heap scan per test, not two
        self.before = leaks.Seen(now)
        now.clear()
        after = leaks.cuda_bytes_now()
        if self.cuda_before is not None and after is not None and after != self.cuda_before:
            for r in self.records:
                if r.nodeid == nodeid and r.when == "test":
                    r.cuda_delta = after - self.cuda_before

    def _add(self, nodeid: str, when: str, found: list) -> None:
        for s in found:
            self.records.append(Record(nodeid, when, s))

    def _grow(self, nodeid: str, project: list, skip: list, inside: list, traces: leaks.Traces) -> None:
        by_type: dict[str, Any] = {}
        for o in project:
            cls = type(o)
            by_type.setdefault(f"{cls.__module__}.{cls.__qualname__}", o)
        for name, sample in by_type.items():
            tests = self.growth.setdefault(name, [])
            tests.append(nodeid)
            if len(tests) < self.settings.growth_tests or name in self.grown:
                continue
            self.grown.add(name)
            holder = leaks.explain([sample], skip + [by_type, project], inside, traces)[0]
            survivor = leaks.Survivor("growth", f"{name} (one more alive after each of {len(tests)} tests)",
                                      holder=holder, tests=list(tests))
            self.records.append(Record(nodeid, "growth", survivor))
        by_type.clear()

    # -- the end of the run ----------------------------------------------------------------------
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        for line in summary_lines(self.records, self.seconds):
            terminalreporter.write_line(line)

    def pytest_sessionfinish(self, session: Any) -> None:
        if self.settings.json_path:
            write_json(self.settings.json_path, self.records, self.seconds)
        if self.settings.mode == "fail" and self.records and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
