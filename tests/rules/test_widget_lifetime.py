"""A GUI widget lives as long as the window showing it, while the user's events call its
methods again and again: what a method adds to one of its containers, and nothing removes,
piles up for the window's life."""

from pathlib import Path

from conftest import run_rules

STACK = """\
    {imports}

    class Info:
        def __init__(self, widget):
            self.widget = widget

    class Base({base}):
        pass

    class AnimatedStack(Base):
        def __init__(self, parent=None):
            super().__init__(parent)
            self.infos = []

        def addWidget(self, widget):
            self.infos.append(Info(widget))
    """


def _check(root: Path, imports: str, base: str) -> list[tuple[int, str, str]]:
    return [(f.start.line, f.code, f.message)
            for f in run_rules(root, {"stack.py": STACK.format(imports=imports, base=base)})]


def test_a_qt_widget_keeps_what_its_methods_add_for_the_window_s_life(tmp_path):
    found = _check(tmp_path, "from PyQt5.QtWidgets import QStackedWidget", "QStackedWidget")
    assert [(line, code) for line, code, _ in found] == [(16, "RL307")]
    assert "a `AnimatedStack` is a GUI widget, which lives as long as the window showing it" in found[0][2]


def test_a_tk_frame_is_a_widget_too(tmp_path):
    found = _check(tmp_path, "import tkinter as tk", "tk.Frame")
    assert [(line, code) for line, code, _ in found] == [(16, "RL307")]


def test_a_class_that_is_no_widget_shows_no_lifetime(tmp_path):
    assert _check(tmp_path, "from collections import UserList", "UserList") == []
