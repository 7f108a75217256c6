"""Growth that happens only on a path that fails - an `except` block that adds and then
raises again - costs one entry per failed call, not one per call: reported at `info`, saying
so, while the same add on the path that succeeds stays a warning."""

from pathlib import Path

from conftest import run_rules

START = """\
    import ctypes

    _KEPT_FOR_NATIVE = []


    class Mapping:
        def __init__(self, buffer, backend):
            try:
                backend.start(ctypes.addressof(ctypes.c_char.from_buffer(buffer)))
            except BaseException as exc:
                if not isinstance(exc, Exception):
                    # native threads may still write into the buffer
                    _KEPT_FOR_NATIVE.append(ctypes.c_char.from_buffer(buffer))
                    {last}
                backend.close()
    """


def _found(root: Path, source: str) -> list[tuple[int, str, str, str]]:
    return [(f.start.line, f.code, f.severity.value, f.message) for f in run_rules(root, {"mapping.py": source})]


def test_an_add_before_raising_again_is_info(tmp_path):
    found = _found(tmp_path, START.format(last="raise"))
    assert [(line, code, level) for line, code, level, _ in found] == [(13, "RL306", "info")]
    assert "only when the call fails" in found[0][3]


def test_an_add_in_a_handler_that_goes_on_stays_a_warning(tmp_path):
    found = _found(tmp_path, START.format(last="pass"))
    assert [(line, code, level) for line, code, level, _ in found] == [(13, "RL306", "warning")]


def test_an_instance_container_grown_before_raising_again_is_info(tmp_path):
    found = _found(tmp_path, """\
        class Pool:
            def __init__(self):
                self._failed = []

            def serve(self, request):
                try:
                    return self.run(request)
                except ConnectionError as e:
                    self._failed.append(request)
                    raise RuntimeError("lost") from e

            def run(self, request):
                return request

            def start(self):
                pass

            def stop(self):
                pass
        """)
    assert [(line, code, level) for line, code, level, _ in found] == [(9, "RL307", "info")]
    assert "only when the call fails" in found[0][3]
