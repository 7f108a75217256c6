"""Which lines changed since a git revision, and which findings lie on them.

"Changed" means added or modified between the merge base of REF and HEAD on one side
and the working tree on the other (staged and unstaged edits included); a file git
does not track yet (and does not ignore) counts as changed as a whole.

A finding counts as changed when its own lines or one of its related locations were
added or modified, or when lines were removed or replaced inside the class (else the
outermost function) that holds one of them: deleting `del self.model` from `close()`
creates a finding on lines the diff never touches. Lines merely added elsewhere in that
class do not count, so a new line does not bring back the class's older findings.

The diff is read from ``git diff --unified=0`` and parsed by its hunk headers: each
``@@ -a,b +c,d @@`` says how many old and new lines follow, so a removed line whose text
starts with ``--`` (or an added one starting with ``++``) is never taken for a file header.
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Optional, Sequence

from retainlint.core import git
from retainlint.core.finding import INTERNAL_ERROR, SOURCE_ERROR, Finding, Position
from retainlint.core.paths import relative_to_root
from retainlint.core.source import MAX_PARSE_BYTES, read_source
from retainlint.engine.discover import PYTHON_SUFFIXES


class ChangedError(Exception):
    """Not a git repository, an unknown revision, no merge base: a usage error (exit 2)."""


# A changed file: the set of changed 1-based line numbers, or WHOLE_FILE.
WHOLE_FILE = None

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_BARE_CR = re.compile(rb"\r(?!\n)")
_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v",
            "\\": "\\", '"': '"'}


def _git(repo: git.Repository, args: Sequence[str], check_error: Optional[str] = None,
         stdin: bytes = b"") -> subprocess.CompletedProcess[bytes]:
    try:
        proc = git.run(repo, args, stdin=stdin)
    except git.GitError as e:
        raise ChangedError(str(e)) from None
    if check_error is not None and proc.returncode != 0:
        raise ChangedError(check_error)
    return proc


def git_toplevel(cwd: Optional[str] = None) -> Optional[str]:
    """The root of the git work tree containing `cwd`, or None outside one (or without git)."""
    repo = git.find_repository(Path(cwd or os.getcwd()))
    return None if repo is None else str(repo.work_tree)


def repo_root(cwd: Optional[str] = None) -> str:
    """The git top level of `cwd`, or `cwd` itself outside git (machine formats make
    paths relative to it)."""
    cwd = cwd or os.getcwd()
    return git_toplevel(cwd) or os.path.realpath(cwd)


def unquote_path(raw: str) -> str:
    """A path as git prints it in diff headers: C-quoted ("a\\tb", octal bytes) when it
    has unusual characters."""
    if not (len(raw) >= 2 and raw.startswith('"') and raw.endswith('"')):
        return raw
    body, out, i = raw[1:-1], bytearray(), 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if re.fullmatch(r"[0-7]{3}", body[i + 1:i + 4]):
                out.append(int(body[i + 1:i + 4], 8))
                i += 4
                continue
            out.extend(_ESCAPES.get(nxt, nxt).encode("utf-8"))
            i += 2
            continue
        out.extend(c.encode("utf-8", "surrogateescape"))
        i += 1
    return out.decode("utf-8", "surrogateescape")


def _strip_prefix(path: str, prefix: str) -> Optional[str]:
    # git ends the name with a tab when it contains a space; a real tab would be quoted.
    path = unquote_path(path.rstrip("\n").split("\t")[0])
    if path == "/dev/null":
        return None
    return path[len(prefix):] if path.startswith(prefix) else path


def parse_diff(text: str) -> tuple[dict[str, set[int]], dict[str, set[int]]]:
    """From a unified diff (any -U), per new path: the new-side numbers of added lines,
    and where lines were removed: the new line just before each removed line, and the
    lines that replaced them.

    Header lines (``diff --git``, ``---``, ``+++``, ``index``, ...) are only looked at
    between hunks; inside a hunk the header's counts say how many lines belong to it.
    """
    changed: dict[str, set[int]] = {}
    removed: dict[str, set[int]] = {}
    path: Optional[str] = None
    old_left = new_left = 0
    new_line = 0
    replacing = False  # in a run of changes that removed lines (git lists `-` before `+`)
    # Lines end at \n alone: str.splitlines() would also break at \f, \v, \x1c-\x1e,
    # \x85, \u2028 and \u2029, characters a line of Python may hold (git prints them as
    # they are with --text), and every later line of the hunk would be miscounted.
    for line in text.split("\n"):
        if old_left > 0 or new_left > 0:
            if line.startswith("\\"):  # "\ No newline at end of file": not a line
                continue
            tag = line[:1]
            if tag == "+":
                if path is not None:
                    changed.setdefault(path, set()).add(new_line)
                    if replacing:
                        removed.setdefault(path, set()).add(new_line)
                new_line += 1
                new_left -= 1
            elif tag == "-":
                if path is not None:
                    removed.setdefault(path, set()).add(new_line - 1)
                replacing = True
                old_left -= 1
            else:  # context (" ", or "" for an empty context line some tools emit)
                new_line += 1
                new_left -= 1
                old_left -= 1
                replacing = False
            continue
        if line.startswith("diff --git "):
            path = None
        elif line.startswith("+++ "):
            path = _strip_prefix(line[4:], "b/")
            if path is not None:
                changed.setdefault(path, set())
        elif line.startswith("@@"):
            m = _HUNK.match(line)
            if m is None:
                continue
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_line = int(m.group(3))
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            if new_left == 0:  # only removals: the header names the line before them
                new_line += 1
            replacing = False
    return changed, removed


@dataclass
class ChangedLines:
    """The result of `changed_since`: lines per repo-relative path (WHOLE_FILE for new,
    untracked files), where lines were removed (see `parse_diff`), the repository root
    and the merge base used."""

    root: str
    base: str
    ref: str
    files: dict[str, Optional[set[int]]] = field(default_factory=dict)
    removed: dict[str, set[int]] = field(default_factory=dict)
    _scopes: dict[str, list[tuple[int, int, bool]]] = field(default_factory=dict, repr=False)

    def covers(self, rel_path: str, first: int, last: int) -> bool:
        if rel_path not in self.files:
            return False
        lines = self.files[rel_path]
        if lines is WHOLE_FILE:
            return True
        return any(n in lines for n in range(first, last + 1))

    def removed_around(self, rel_path: str, first: int, last: int) -> bool:
        """Whether lines were removed or replaced within lines `first`..`last` or in the
        class (else the outermost function) around them."""
        spots = self.removed.get(rel_path)
        if not spots:
            return False
        if rel_path not in self._scopes:
            self._scopes[rel_path] = _definitions(os.path.join(self.root, rel_path))
        around = [d for d in self._scopes[rel_path] if d[0] <= first and last <= d[1]]
        classes = [d for d in around if d[2]]
        if around:  # the innermost class (what class-level rules reason about), else the outermost function
            first, last, _ = max(classes) if classes else min(around)
        return any(first <= n <= last for n in spots)


def _definitions(path: str) -> list[tuple[int, int, bool]]:
    """(first line with decorators, last line, is a class) of every class and function in
    the file; none when it cannot be read or parsed (only the finding's own lines count)."""
    try:
        data = read_source(path)
        if len(data) > MAX_PARSE_BYTES:  # not checked either (RL000): not parsed here
            return []
        tree = ast.parse(data)
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    return [(min([node.lineno] + [d.lineno for d in node.decorator_list]), node.end_lineno or node.lineno,
             isinstance(node, ast.ClassDef))
            for node in ast.walk(tree)
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))]


def changed_since(ref: str, cwd: Optional[str] = None) -> ChangedLines:
    """Lines added or modified between merge-base(`ref`, HEAD) and the working tree of
    the repository containing `cwd`. Raises ChangedError outside a git repository, for
    an unknown `ref`, or when there is no merge base (a shallow clone, unrelated history)."""
    cwd = cwd or os.getcwd()
    if git.executable() is None:
        raise ChangedError("git is not installed (no git on PATH)")
    repo = git.find_repository(Path(cwd))
    if repo is None:
        raise ChangedError(f"--changed-since needs a git repository, and {os.path.abspath(cwd)} is not in one")
    if not ref or ref.startswith("-"):
        raise ChangedError(f"unknown git revision `{ref}`")
    root = str(repo.work_tree)
    _git(repo, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
         f"unknown git revision `{ref}`")
    _git(repo, ["rev-parse", "--verify", "--quiet", "HEAD^{commit}"],
         "the repository has no commit yet (HEAD does not exist)")
    proc = _git(repo, ["merge-base", "--end-of-options", ref, "HEAD"],
                f"no merge base between `{ref}` and HEAD (a shallow clone? fetch the full history, "
                f"e.g. actions/checkout with fetch-depth: 0)")
    base = proc.stdout.decode().strip()
    # --text, --no-textconv, --no-ext-diff: a .gitattributes the change adds (`*.py -diff`,
    # `binary`, a diff driver) must not turn its lines into "Binary files differ".
    diff = _git(
        repo, ["-c", "core.quotePath=false", "diff", "--text", "--no-color", "--no-ext-diff",
               "--no-textconv", "--no-relative", "--src-prefix=a/", "--dst-prefix=b/", "--unified=0",
               "--find-renames", base, "--"],
        f"git diff against {base[:12]} failed",
    )
    added, removed = parse_diff(diff.stdout.decode("utf-8", "surrogateescape"))
    files: dict[str, Optional[set[int]]] = dict(added)
    for path in _converted(repo, base, files) | _bare_cr(root, files):
        files[path] = WHOLE_FILE
    untracked = _git(repo, ["ls-files", "-z", "--others", "--exclude-standard"], "git ls-files failed")
    for raw in untracked.stdout.split(b"\0"):
        if raw:
            files[raw.decode("utf-8", "surrogateescape")] = WHOLE_FILE
    return ChangedLines(root=root, base=base, ref=ref, files=files, removed=removed)


# Attributes under which git diffs another text than the file holds: a clean filter (git-lfs
# makes a pointer of it), a re-encoding, $Id$ collapsed. Attributes cannot be turned off on
# every git (--attr-source came in 2.40), so a file under one counts as changed in full.
_CONVERTING = ("filter", "working-tree-encoding", "ident")


def _converted(repo: git.Repository, base: str, diffed: Iterable[str]) -> set[str]:
    """The files differing from `base` (by git's index and file times: nothing converted,
    so a filter cannot hide a file from the list) that an attribute converts."""
    listed = _git(repo, ["diff-index", "-z", "--name-only", "--no-renames", base, "--"],
                  f"git diff-index against {base[:12]} failed")
    paths = {p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p}
    paths.update(diffed)
    if not paths:
        return set()
    proc = _git(repo, ["check-attr", "-z", "--stdin", *_CONVERTING], "git check-attr failed",
                stdin=b"".join(os.fsencode(p) + b"\0" for p in sorted(paths)))
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    return {path for path, _attribute, value in zip(fields[0::3], fields[1::3], fields[2::3])
            if value not in ("unspecified", "unset")}


def _bare_cr(root: str, diffed: dict[str, Optional[set[int]]]) -> set[str]:
    """Changed files with a carriage return not followed by a line feed: a line end for
    Python, not for git, so the two number their lines differently."""
    found = set()
    for path, lines in diffed.items():
        if lines is WHOLE_FILE or not path.endswith(PYTHON_SUFFIXES):
            continue
        try:
            data = read_source(os.path.join(root, path))
        except OSError:
            continue
        if _BARE_CR.search(data):
            found.add(path)
    return found


def _last_line(start: Position, end: Position) -> int:
    # End positions are exclusive: a range ending at column 1 does not touch its end line.
    if end.line > start.line and end.column <= 1:
        return end.line - 1
    return max(end.line, start.line)


def on_changed_lines(f: Finding, changed: ChangedLines) -> bool:
    """A finding counts when a line of its range or of a related location was added or
    modified, or when lines were removed around one of them (see the module's docstring).
    Internal errors (RL999) are always reported, and so is a file that cannot be checked
    (RL000: over the size cap, nested too deeply, unreadable) when it is a changed file:
    it is reported at 1:1, seldom a changed line, and every finding the change made in it
    would go unseen with it."""
    if f.code == INTERNAL_ERROR[0]:
        return True
    if f.code == SOURCE_ERROR[0] and relative_to_root(f.path, changed.root) in changed.files:
        return True
    for path, start, end in [(f.path, f.start, f.end), *((r.path, r.start, r.end) for r in f.related)]:
        rel = relative_to_root(path, changed.root)
        if rel is None:
            continue
        first, last = start.line, _last_line(start, end)
        if changed.covers(rel, first, last) or changed.removed_around(rel, first, last):
            return True
    return False


def split_findings(findings: Iterable[Finding], changed: ChangedLines) -> tuple[list[Finding], list[Finding]]:
    """(findings on changed lines, the others)."""
    kept: list[Finding] = []
    left_out: list[Finding] = []
    for f in findings:
        (kept if on_changed_lines(f, changed) else left_out).append(f)
    return kept, left_out
