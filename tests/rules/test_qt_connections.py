"""Qt connections (RL701): a signal keeps any slot that is not a plain bound method in its
C++ connection, so a lambda over `self` connected to a signal of an object `self` owns is
a cycle the collector cannot see."""

import json
import textwrap
from pathlib import Path

from conftest import check_here


def _check(root: Path, source: str) -> list[tuple[int, str]]:
    """(line, severity) of RL701's findings, info included."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "view.py").write_text(textwrap.dedent(source))
    done = check_here("check", "--no-cache", "--select", "RL701", "--min-severity", "info",
                      "--output-format", "json", "--exit-zero", str(root), cwd=root)
    assert done.returncode == 0, done.stderr
    return sorted((f["location"]["row"], f["severity"]) for f in json.loads(done.stdout))


TIMER = """\
    from qtpy.QtCore import QTimer


    class Renderer:
        def __init__(self):
            self._timer = QTimer()
            self._armed = False

        def request_render(self):
            {rearm}
            self._timer.timeout.connect(lambda: self.render())
            self._timer.start(16)

        def render(self):
            pass

        def close(self):
            {close}
    """


def test_a_disconnect_before_the_connect_in_the_same_method_undoes_nothing(tmp_path):
    # re-arming takes out the previous slot and puts a new one in: the last one stays
    rearm = "if self._armed:\n                self._timer.timeout.disconnect()"
    source = TIMER.format(rearm=rearm, close="pass")
    connect = textwrap.dedent(source).splitlines().index("        self._timer.timeout.connect(lambda: self.render())") + 1
    assert [line for line, _ in _check(tmp_path / "rearm", source)] == [connect]
    # a release that disconnects the signal breaks the cycle
    assert _check(tmp_path / "closed", TIMER.format(rearm=rearm, close="self._timer.timeout.disconnect()")) == []


def test_a_widget_made_with_self_as_its_parent_is_owned_by_self(tmp_path):
    source = """\
        from qtpy.QtWidgets import QAction, QWidget


        class Editor(QWidget):
            def context_menu(self, menu):
                action = QAction("Run", {parent})
                action.triggered.connect(lambda: self.run())
                menu.addAction(action)

            def run(self):
                pass
        """
    # Qt's parent keeps the action, and the action's connection keeps `self`: a cycle
    # through C++ that lives as long as the editor
    assert [line for line, _ in _check(tmp_path / "parented", source.format(parent="self"))] == [7]
    # with no parent the action goes with the menu
    assert _check(tmp_path / "free", source.format(parent="menu")) == []
