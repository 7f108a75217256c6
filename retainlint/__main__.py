import os
import sys

# `python -m retainlint` puts the current directory first on sys.path: inside a checked
# tree, its `multiprocessing/` or `json.py` would be imported in place of the standard
# library's (code from the tree run, or a crash). Nothing of ours is imported from there.
if sys.path and sys.path[0] in ("", os.getcwd()) and not sys.flags.safe_path:
    del sys.path[0]

from retainlint.cli import main  # noqa: E402 - only once the path is safe

main()
