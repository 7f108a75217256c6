"""Paths as reports show them."""

from __future__ import annotations

import os
from typing import Optional


def relative_to_root(path: str, root: str) -> Optional[str]:
    """`path` (as given on the command line, relative to the cwd or absolute) relative to
    `root`, with forward slashes; None when it lies outside `root`."""
    full = os.path.realpath(path)
    try:
        rel = os.path.relpath(full, root)
    except ValueError:  # another drive on Windows
        return None
    if rel == os.pardir or rel.startswith(os.pardir + os.sep) or os.path.isabs(rel):
        return None
    return rel.replace(os.sep, "/")
