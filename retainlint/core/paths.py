"""Paths as reports show them."""

from __future__ import annotations

import os
from typing import Optional
from urllib.parse import quote


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


def display_path(path: str, root: str) -> str:
    """`path` relative to `root` with forward slashes; outside `root`, absolute."""
    rel = relative_to_root(path, root)
    return rel if rel is not None else os.path.abspath(path).replace(os.sep, "/")


def uri_path(rel: str) -> str:
    """A relative path percent-encoded for a URI (RFC 3986) from its bytes, so a file name
    that is not UTF-8 keeps its exact bytes."""
    return quote(os.fsencode(rel))
