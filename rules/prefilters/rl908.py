"""RL908's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl908_qt_parent_keeps_window.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter


class QtParentKeepsWindowPrefilter(Prefilter):
    code = "RL908"

    # The Qt classes the rule knows, by name (a project class derives from one of them).
    triggers = ("QDialog", "QMainWindow", "QMessageBox", "QFileDialog", "QInputDialog", "QProgressDialog",
                "QColorDialog", "QFontDialog", "QWizard", "QErrorMessage")
