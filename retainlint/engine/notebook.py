"""Jupyter notebooks as Python: the code cells joined into one virtual module (magics and
shell escapes masked, line for line), a map from its lines back to cells, and the
notebook rebuilt from a fixed virtual module with everything but the code left as it was.

A cell starts with a marker comment line in the virtual module, so a fix that adds or
removes lines is still split back at the right places. No libcst here: this is read
before deciding which files to parse."""

from __future__ import annotations

import difflib
import json
import os
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from retainlint.core.source import MAX_PARSE_BYTES, read_source

SUFFIX = ".ipynb"
_MARKER = "# retainlint: cell {}\n"
_MARKER_LINE = re.compile(r"^# retainlint: cell (\d+)\n?$")
_MAGIC = "pass  # retainlint: magic {}"
_MAGIC_LINE = re.compile(r"^[ \t]*pass  # retainlint: magic (\d+)$")
# `model?`, `nn.Linear??`, `torch.*load*?`: help, not a line of code ending in a comment
# or a string with a question mark.
_HELP = re.compile(r"^[\w.*\[\]]+\?{1,2}$")
# `files = !ls`, `t = %timeit -o f()`: a shell escape or magic whose output is kept.
_CAPTURE = re.compile(r"^[\w.]+(?:\s*,\s*[\w.]+)*\s*=\s*[!%]")
_PYTHON_CELL_MAGICS = {"%%time", "%%timeit", "%%capture", "%%prun"}


class NotebookError(ValueError):
    """Not a notebook this can read (bad JSON, no cell list)."""


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


@dataclass
class Notebook:
    document: dict[str, Any]
    code_cells: list[int] = field(default_factory=list)  # positions in `cells` of code cells
    magics: list[str] = field(default_factory=list)  # the lines masked, by placeholder number
    # virtual line (1-based) -> (code cell number, 1-based; line in the cell, 1-based)
    where: dict[int, tuple[int, int]] = field(default_factory=dict)
    source: str = ""


def parse(data: bytes) -> Notebook:
    """The notebook's virtual module; NotebookError when it is not a readable notebook.
    The size cap of source files holds before the JSON is parsed: a parsed document takes
    about ten times its size in memory."""
    if len(data) > MAX_PARSE_BYTES:
        raise NotebookError(f"file too large to check ({len(data) / 2**20:.1f} MB "
                            f"> {MAX_PARSE_BYTES >> 20} MB)")
    try:
        document = json.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, ValueError) as e:
        raise NotebookError(f"cannot read notebook: {e}") from None
    except RecursionError:  # `[[[[...`: the JSON decoder recurses once per level
        raise NotebookError("cannot read notebook: nested too deeply") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise NotebookError("cannot read notebook: no list of cells (nbformat 4 expected)")
    notebook = Notebook(document)
    out: list[str] = []
    for position, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        text = _text(cell.get("source", ""))
        notebook.code_cells.append(position)
        number = len(notebook.code_cells)
        out.append(_MARKER.format(number))
        for line_no, line in enumerate(_masked(text, notebook.magics), start=1):
            out.append(line + "\n")
            notebook.where[len(out)] = (number, line_no)
    notebook.source = "".join(out)
    return notebook


def _text(source: Any) -> str:
    if isinstance(source, list):
        return "".join(str(s) for s in source)
    return str(source)


def _masked(text: str, magics: list[str]) -> list[str]:
    """The cell's lines, each magic (`%`, `%%`, `!`, `?` help) replaced by a numbered
    `pass` at the same indentation, so line numbers stay and the code still parses."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    # A cell magic masks the whole cell, unless it only times or captures Python code.
    first = lines[0].split() if lines else []
    whole = bool(first) and first[0].startswith("%%") and first[0] not in _PYTHON_CELL_MAGICS
    masked: list[str] = []
    continued = False
    for line in lines:
        stripped = line.strip()
        # A line of the cell that looks like our own marks is masked too, so that it
        # cannot be mistaken for one when the cells are split back.
        ours = _MARKER_LINE.match(line) or _MAGIC_LINE.match(line)
        if whole or continued or ours or _is_magic(stripped):
            indent = "" if whole else line[: len(line) - len(line.lstrip())]
            masked.append(indent + _MAGIC.format(len(magics)))
            magics.append(line)
            continued = not whole and line.rstrip().endswith("\\")
        else:
            masked.append(line)
    return masked


def _is_magic(stripped: str) -> bool:
    if not stripped or stripped.startswith("#"):
        return False
    return stripped[0] in "%!?" or bool(_HELP.match(stripped) or _CAPTURE.match(stripped))


def read_python(path: str) -> bytes:
    """What is linted for `path`: the file itself, or a notebook's virtual module.
    OSError for an unreadable file, NotebookError for a broken notebook."""
    data = read_source(path)
    return parse(data).source.encode("utf-8") if is_notebook(path) else data


def cell_of(notebook: Notebook, line: int) -> tuple[int, int] | None:
    """(code cell, line in it) of a virtual line; None for a marker line (where only what
    is about the whole file is reported: it cannot be read, a rule crashed)."""
    return notebook.where.get(line)


def rebuild(original: bytes, fixed: str) -> bytes:
    """The notebook `original` with its code cells taken from the fixed virtual module
    `fixed`: magics restored exactly, outputs, metadata and ids untouched, the JSON
    written back with the same indentation and final newline. NotebookError when the
    fixed module cannot be split back (a marker or a magic lost)."""
    notebook = parse(original)
    parts: dict[int, list[str]] = {}
    current = 0
    ahead: list[str] = []  # code a fix put above the first marker (an import) opens cell 1
    for line in fixed.splitlines(keepends=True):
        m = _MARKER_LINE.match(line)
        if m:
            if int(m.group(1)) != current + 1:
                raise NotebookError("a fix moved a cell boundary")
            current = int(m.group(1))
            parts[current] = ahead if current == 1 else []
        elif current == 0:
            ahead.append(line)
        else:
            parts[current].append(line)
    if sorted(parts) != list(range(1, len(notebook.code_cells) + 1)):
        raise NotebookError("a fix removed a cell boundary")
    used: set[int] = set()
    cells = notebook.document["cells"]
    for number, position in enumerate(notebook.code_cells, start=1):
        cell = cells[position]
        before = _text(cell.get("source", ""))
        lines = []
        for line in parts[number]:
            body = line.rstrip("\n")
            m = _MAGIC_LINE.match(body)
            if m:
                used.add(int(m.group(1)))
                body = notebook.magics[int(m.group(1))]
            lines.append(body)
        text = "\n".join(lines)
        if before.endswith("\n") and lines:
            text += "\n"
        if text == before:
            continue
        cell["source"] = text.splitlines(keepends=True) if isinstance(cell.get("source"), list) \
            else text
    if used != set(range(len(notebook.magics))):
        raise NotebookError("a fix removed a magic line")
    return _dump(notebook.document, original)


def _dump(document: dict[str, Any], original: bytes) -> bytes:
    text = original.decode("utf-8-sig")
    m = re.match(r"\s*[\[{]\r?\n([ \t]+)", text)
    indent: int | str | None = None
    if m:
        indent = len(m.group(1)) if set(m.group(1)) == {" "} else m.group(1)
    ascii_only = "\\u" in text and text.isascii()
    out = json.dumps(document, indent=indent, ensure_ascii=ascii_only,
                     separators=(",", ": ") if indent is not None else (", ", ": "))
    if text.endswith("\n"):
        out += "\n"
    return out.encode("utf-8")


def locate(path: str, line: int) -> tuple[int, int] | None:
    """(code cell, line in it) of a finding at virtual `line` of the notebook `path` as it
    is now (after any fixes); None for other files or a notebook that cannot be read."""
    if not is_notebook(path):
        return None
    try:
        return cell_of(_current(path), line)
    except (OSError, NotebookError):
        return None


# Notebooks checked from a buffer (--stdin-filename), not from the file of that name.
_BUFFERS: dict[str, Notebook] = {}


def checked_from_buffer(path: str, data: bytes) -> None:
    """Positions in `path` are to be read in `data`, not in the file on disk."""
    _BUFFERS[path] = parse(data)


def forget_buffers() -> None:
    """A new run: positions come from disk again, whatever an earlier run in this process
    read from standard input under the same name."""
    _BUFFERS.clear()


def _current(path: str) -> Notebook:
    return _BUFFERS.get(path) or _parsed(path, os.stat(path).st_mtime_ns)


@lru_cache(maxsize=64)
def _parsed(path: str, stamp: int) -> Notebook:
    return parse(read_source(path))


def place(path: str, line: int) -> str:
    """`cell 3:2` for a notebook's virtual line, else the line itself."""
    cell = locate(path, line)
    return f"cell {cell[0]}:{cell[1]}" if cell else str(line)


def cell_span(path: str, line: int) -> tuple[int, int] | None:
    """The virtual lines (first, last) of the code cell holding virtual `line` of the
    notebook `path`, for a code frame that stays in the cell; None for other files."""
    cell = locate(path, line)
    if cell is None:
        return None
    lines = [v for v, (number, _) in _current(path).where.items() if number == cell[0]]
    return (min(lines), max(lines)) if lines else None


def shown_source(path: str) -> bytes:
    """What a code frame shows of `path`: a notebook's virtual module with its magics
    as written (the line numbers are the same)."""
    if not is_notebook(path):
        return read_source(path)
    notebook = _current(path)
    lines = [_shown(line, notebook.magics) for line in notebook.source.split("\n")]
    return "\n".join(lines).encode("utf-8")


def _shown(line: str, magics: list[str]) -> str:
    m = _MAGIC_LINE.match(line)
    return magics[int(m.group(1))] if m else line


def diff(path: str, before: str, after: str) -> str:
    """`--diff` for a notebook: a unified diff per changed cell (`nb.ipynb:cell 2`),
    from the virtual modules before and after the fixes, magics shown as written."""
    magics: list[str] = []
    try:
        magics = parse(read_source(path)).magics
    except (OSError, NotebookError):
        pass
    old, new = _cells(before, magics), _cells(after, magics)
    out: list[str] = []
    for number in sorted(set(old) | set(new)):
        name = f"{path}:cell {number}"
        out += difflib.unified_diff(old.get(number, []), new.get(number, []), name, name)
    return "".join(out)


def _cells(source: str, magics: list[str]) -> dict[int, list[str]]:
    cells: dict[int, list[str]] = {}
    current = 1
    for line in source.splitlines(keepends=True):
        m = _MARKER_LINE.match(line)
        if m:
            current = int(m.group(1))
            cells.setdefault(current, [])
            continue
        end = "\n" if line.endswith("\n") else ""
        shown = _shown(line[: len(line) - len(end)], magics) if magics else line.rstrip("\n")
        cells.setdefault(current, []).append(shown + end)
    return cells
