"""An `atexit` callback that undoes its own registration undoes it only when it runs: a
private one nothing else calls runs at exit, so until then the registration keeps the
instance (napari-micromanager's `MainWindow._cleanup`). A public one (`close()`) is the
owner's to call, and one another method calls runs before exit: their undo counts."""

from conftest import run_rules

WINDOW = """\
import atexit


class MainWindow:
    def __init__(self, core):
        self.core = core
        atexit.register(self.{callback})

    def {callback}(self):
        self.core.unload()
        atexit.unregister(self.{callback})
{more}
"""


def _found(root, callback: str, more: str = "") -> list[tuple[int, str]]:
    source = WINDOW.format(callback=callback, more=more)
    return [(f.start.line, f.code) for f in run_rules(root, {"window.py": source}) if f.code == "RL203"]


def test_a_private_callback_undoing_itself_undoes_nothing_before_exit(tmp_path):
    assert _found(tmp_path, "_cleanup") == [(7, "RL203")]


def test_a_public_release_undoing_itself_is_the_owners_to_call(tmp_path):
    assert _found(tmp_path, "close") == []


def test_a_private_callback_another_method_calls_is_undone_there(tmp_path):
    more = "\n    def hide(self):\n        self._cleanup()\n"
    assert _found(tmp_path, "_cleanup", more) == []
