"""Growth that only a diagnostic switch turns on (`if TRACK_STEP_TIMES:`, a decorator's
`record=False`) costs only those who turn it on to debug: reported at `info`, saying which
switch, while the same growth with no switch, or under a feature flag, stays a warning."""

from pathlib import Path

from conftest import run_rules

TIMES = """\
    import os
    import time
    from collections import defaultdict

    TRACK_STEP_TIMES = os.environ.get("TRACK_STEP_TIMES") == "1"
    ENABLED = os.environ.get("ENABLED") == "1"
    step_times = defaultdict(list)


    def step(batch):
        start = time.perf_counter()
        batch.run()
        {guard}
            step_times[len(batch)].append(time.perf_counter() - start)
    """


def _found(root: Path, source: str) -> list[tuple[int, str, str, str]]:
    return [(f.start.line, f.code, f.severity.value, f.message) for f in run_rules(root, {"steps.py": source})]


def test_growth_under_a_diagnostic_switch_is_info(tmp_path):
    found = _found(tmp_path, TIMES.format(guard="if TRACK_STEP_TIMES:"))
    assert [(line, code, level) for line, code, level, _ in found] == [(14, "RL306", "info")]
    assert "only while `TRACK_STEP_TIMES` is on" in found[0][3]


def test_a_local_switch_made_from_a_diagnostic_one_is_followed(tmp_path):
    source = TIMES.format(guard="need_to_track = TRACK_STEP_TIMES and batch is not None\n"
                                "        if need_to_track:")
    assert [(code, level) for _, code, level, _ in _found(tmp_path, source)] == [("RL306", "info")]


def test_the_same_growth_without_a_switch_or_under_a_feature_flag_stays_a_warning(tmp_path):
    assert [(code, level) for _, code, level, _ in _found(tmp_path, TIMES.format(guard="if True:"))] \
        == [("RL306", "warning")]
    assert [(code, level) for _, code, level, _ in _found(tmp_path, TIMES.format(guard="if ENABLED:"))] \
        == [("RL306", "warning")]


def test_a_decorator_that_records_only_when_asked(tmp_path):
    found = _found(tmp_path, """\
        import functools
        import time
        from collections import defaultdict

        records = defaultdict(list)


        def timed(record=False):
            def wrap(func):
                @functools.wraps(func)
                def inner(*args, **kwargs):
                    start = time.time()
                    result = func(*args, **kwargs)
                    if record:
                        records[func.__qualname__].append(time.time() - start)
                    return result
                return inner
            return wrap
        """)
    assert [(line, code, level) for line, code, level, _ in found] == [(15, "RL306", "info")]
    assert "only while `record` is on" in found[0][3]
