"""RL911's prefilter: which files are worth parsing with libcst for the rule in
`rules/rl911_gobject_handler_cycle.py` (from the file's bytes; no libcst here)."""

from __future__ import annotations

from retainlint.project.prefilter import Prefilter


class GObjectHandlerCyclePrefilter(Prefilter):
    code = "RL911"

    # PyGObject's modules are imported from `gi.repository` (`from gi.repository import Gtk`);
    # PyGTK 2's are modules of their own (`import gobject`, `import gtk`).
    triggers = ("gi.repository", "import gobject", "import gtk", "import pygtk", "from gobject", "from gtk")
