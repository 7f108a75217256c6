"""What a pull request's configuration change turns off, compared with what the base
revision's own configuration checked (the GitHub Action's allow-config-changes).

Configuration in a pull request can switch the check off: `select = []`, `exclude`, a
nested `retainlint.toml`, `per-file-ignores`, a baseline accepting the new finding. When
the pull request adds, modifies or deletes such a file, the merge base's tree is
extracted (`git archive`, outside the checkout) and checked as the pull request is; the
two `--run-summary` files then say, file by file, which rules ran. A file the base
checked must still be checked, with at least the same rules, and the baseline must not
accept more findings than the base's did.
"""

from __future__ import annotations

import json
import os
import tarfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from retainlint.core import git
from retainlint.core.errors import ConfigError
from retainlint.integrations.changed import ChangedError, ChangedLines
from retainlint.output import baseline

CONFIG_NAMES = ("pyproject.toml", "retainlint.toml", ".retainlint.toml")
FILE_OPTIONS = ("--baseline", "--config")  # files named in the args that decide what is reported
RULES_SHOWN = 8  # rules named in a message before "and N more"


def option_values(args: Sequence[str], name: str) -> list[str]:
    """The values given to option `name` in `args` (`--name VALUE` or `--name=VALUE`),
    up to a `--`."""
    values = []
    for i, arg in enumerate(args):
        if arg == "--":
            break
        if arg == name and i + 1 < len(args):
            values.append(args[i + 1])
        elif arg.startswith(name + "="):
            values.append(arg[len(name) + 1:])
    return values


def repository_path(path: str, cwd: str, root: str) -> Optional[str]:
    """`path` (relative to `cwd`) relative to the repository root, forward slashes; None
    outside it. Not resolved through links: git names files as they are in the tree."""
    rel = os.path.relpath(os.path.join(os.path.realpath(cwd), path), root)
    return None if rel == os.pardir or rel.startswith(os.pardir + os.sep) else rel.replace(os.sep, "/")


def changed_configuration(changed: ChangedLines, args: Sequence[str], cwd: str) -> list[str]:
    """The configuration files (repository-relative) the pull request added, modified or
    deleted: any pyproject.toml, retainlint.toml or .retainlint.toml, and the files given
    to --baseline or --config. One git call (deletions, which the changed lines leave
    out); new files git does not track are among `changed.files` already."""
    repo = git.find_repository(changed.root)
    if repo is None:
        raise ChangedError(f"{changed.root} is no longer a git repository")
    try:
        proc = git.run(repo, ["-c", "core.quotePath=false", "diff", "--name-status", "--no-renames",
                              "-z", changed.base, "--"])
    except git.GitError as e:
        raise ChangedError(str(e)) from None
    if proc.returncode != 0:
        raise ChangedError(f"git diff --name-status against {changed.base[:12]} failed")
    fields = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    paths = set(fields[1::2]) | set(changed.files)
    named = {rel for option in FILE_OPTIONS for value in option_values(args, option)
             if (rel := repository_path(value, cwd, changed.root)) is not None}
    return sorted(p for p in paths if p and (os.path.basename(p) in CONFIG_NAMES or p in named))


def extract_base(changed: ChangedLines, dest: str) -> None:
    """The merge base's tree, as committed, into the folder `dest` (outside the checkout).
    tarfile's data filter keeps every member inside `dest`: a link leading out of it, a
    device or an absolute name is left out, not followed."""
    if not hasattr(tarfile, "data_filter"):
        raise ChangedError("comparing configurations needs Python's tarfile data filter "
                           "(Python 3.10.12, 3.11.4, 3.12 or later)")
    repo = git.find_repository(changed.root)
    if repo is None:
        raise ChangedError(f"{changed.root} is no longer a git repository")
    archive = dest + ".tar"
    try:
        proc = git.run(repo, ["archive", "--format=tar", f"--output={archive}", changed.base])
    except git.GitError as e:
        raise ChangedError(str(e)) from None
    if proc.returncode != 0:
        raise ChangedError(f"git archive of the merge base {changed.base[:12]} failed: "
                           f"{proc.stderr.decode('utf-8', 'replace').strip()}")
    os.makedirs(dest, exist_ok=True)
    try:
        with tarfile.open(archive) as tar:
            tar.extractall(dest, filter=_inside_only)
    except (OSError, tarfile.TarError) as e:
        raise ChangedError(f"cannot extract the merge base {changed.base[:12]}: {e}") from None
    finally:
        if os.path.exists(archive):
            os.unlink(archive)


def _inside_only(member: tarfile.TarInfo, path: str) -> Optional[tarfile.TarInfo]:
    try:
        return tarfile.data_filter(member, path)
    except tarfile.FilterError:
        return None  # left out: what it points at is not part of the tree


def checked_files(summary_file: str) -> Optional[dict[str, frozenset[str]]]:
    """From a --run-summary file: each file checked -> the rules that ran on it; None when
    there is none or it is not one."""
    try:
        with open(summary_file, encoding="utf-8") as f:
            data = json.load(f)
        return {str(path): frozenset(str(r) for r in group["rules"])
                for group in data["checked"] for path in group["files"]}
    except (OSError, ValueError, KeyError, TypeError):
        return None


@dataclass
class Loss:
    """What the pull request's configuration no longer checks: rules turned off per file,
    files no longer checked, baseline entries gained."""

    turned_off: dict[str, frozenset[str]] = field(default_factory=dict)
    dropped: list[str] = field(default_factory=list)
    accepted: Counter[tuple[str, str, str]] = field(default_factory=Counter)


def compare(base: dict[str, frozenset[str]], head: dict[str, frozenset[str]],
            exists: Callable[[str], bool]) -> Loss:
    """Every file the base checked that is still in the work tree must be checked with
    at least the base's rules (a file the pull request deletes or renames is left out)."""
    loss = Loss()
    for path, rules in sorted(base.items()):
        if path not in head:
            if exists(path):
                loss.dropped.append(path)
        elif rules - head[path]:
            loss.turned_off[path] = rules - head[path]
    return loss


def baseline_gain(base_file: str, head_file: str) -> Counter[tuple[str, str, str]]:
    """Entries (code, path, fingerprint) the head's baseline accepts beyond the base's.
    A base without the file, or with one that is not a baseline, accepted nothing; a
    head baseline that cannot be read failed the check itself."""
    def entries(path: str) -> Counter[tuple[str, str, str]]:
        try:
            return baseline.read(path)
        except ConfigError:
            return Counter()
    return entries(head_file) - entries(base_file)


def count(n: int, noun: str) -> str:
    """`1 file`, `3 files`."""
    return f"{n} {noun}{'s' if n != 1 else ''}"


def _names(codes: Sequence[str]) -> str:
    shown = ", ".join(codes[:RULES_SHOWN])
    return shown + (f" and {len(codes) - RULES_SHOWN} more" if len(codes) > RULES_SHOWN else "")


def describe_rules(configs: Sequence[str], loss: Loss) -> Optional[str]:
    """One sentence on the rules turned off and the files dropped, naming the changed
    configuration files; None when nothing was."""
    parts = []
    one = len(configs) == 1
    if loss.turned_off:
        codes = sorted(set().union(*loss.turned_off.values()))
        files = sorted(loss.turned_off)
        parts.append(f"turn{'s' if one else ''} off {_names(codes)} on {count(len(files), 'file')} "
                     f"(e.g. {files[0]})")
    if loss.dropped:
        parts.append(f"stop{'s' if one else ''} checking {count(len(loss.dropped), 'file')} "
                     f"(e.g. {loss.dropped[0]})")
    if not parts:
        return None
    return f"{', '.join(configs)} in this pull request {' and '.join(parts)}"


def describe_baseline(name: str, gained: Counter[tuple[str, str, str]]) -> Optional[str]:
    if not gained:
        return None
    code, path, _ = sorted(gained)[0]
    return (f"{name} in this pull request accepts {count(sum(gained.values()), 'more finding')} "
            f"(e.g. {code} in {path})")
