"""The GitHub Action's logic (`action.yml` runs `python -I -m retainlint.integrations.action`).

It reads its inputs from the environment (the composite action passes them through
`env:`, never spliced into a script) and the `GITHUB_*` variables of the run:

    RL_PATHS            paths to check, shell-split (default ".")
    RL_ARGS             extra arguments for `retainlint check`, shell-split
    RL_BASE_REF         revision to compare with (default: the pull request's base)
    RL_CHANGED_ONLY     "true": report only findings on changed lines (default)
    RL_FAIL_ON_FINDINGS "true": exit 1 when a finding on a changed line remains (default)
    RL_SARIF_FILE       also write SARIF (all findings) to this path
    RL_ALLOW_CONFIG_CHANGES "true": a configuration change that checks less only warns

It runs `retainlint check` once over the whole tree, keeps the findings on lines the pull
request added or changed, prints them as annotations (at most 10 per level, GitHub drops
the rest silently, then one warning saying how many were left out), writes every one of
them to the job summary as a Markdown table, and says how many older findings it left out.

When the pull request adds, modifies or deletes configuration (see config_changes.py), it
checks the merge base's tree too, under the base's own configuration, and fails when the
change turns a rule off on a file, stops checking a file, or lets the baseline accept
more findings - unless allow-config-changes is on, which makes that a warning.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
from collections import Counter
from typing import Mapping, Optional, Sequence, TextIO

from retainlint.core.paths import display_path, uri_path
from retainlint.core.source import WriteError, write_output
from retainlint.output.github import GITHUB_LEVEL, gh_command, gh_escape_data, gh_escape_prop, gh_text, github_line
from retainlint.output.json_report import from_json
from retainlint.output.sarif import sarif
from retainlint.output.escape import code_span, printable
from retainlint.core import git
from retainlint.integrations.changed import (
    ChangedError,
    ChangedLines,
    changed_since,
    git_toplevel,
    repo_root,
    split_findings,
)
from retainlint.core.finding import Finding, Severity
from retainlint.integrations.config_changes import (
    baseline_gain,
    changed_configuration,
    checked_files,
    compare,
    count,
    describe_baseline,
    describe_rules,
    extract_base,
    option_values,
    repository_path,
)

ANNOTATIONS_PER_LEVEL = 10  # GitHub keeps at most 10 errors and 10 warnings per step
SUMMARY_LIMIT = 900_000  # bytes; GitHub refuses a step summary over 1 MiB
LEVEL_ORDER = ("error", "warning", "notice")


def _truthy(value: Optional[str], default: bool) -> bool:
    if value is None or not value.strip():
        return default
    return value.strip().lower() in ("1", "true", "yes", "on")


def _event(env: Mapping[str, str]) -> dict:
    path = env.get("GITHUB_EVENT_PATH")
    if not path:
        return {}
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _resolves(ref: str, cwd: str) -> bool:
    repo = git.find_repository(cwd)
    if repo is None:
        return False
    try:
        proc = git.run(repo, ["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"])
    except git.GitError:
        return False
    return proc.returncode == 0


def base_candidates(env: Mapping[str, str], event: dict) -> list[str]:
    """Where a pull request run's base is: `origin/$GITHUB_BASE_REF` (the base branch as
    checked out), then the event's `pull_request.base.sha`."""
    out = []
    if env.get("GITHUB_BASE_REF"):
        out.append(f"origin/{env['GITHUB_BASE_REF']}")
    pr = event.get("pull_request")
    if isinstance(pr, dict) and isinstance(pr.get("base"), dict) and pr["base"].get("sha"):
        out.append(str(pr["base"]["sha"]))
    return out


def choose_base(env: Mapping[str, str], event: dict, cwd: str) -> tuple[Optional[str], str]:
    """(the revision to diff against or None, a note for the log). An explicit base-ref
    input is used as given (an unknown one is an error later)."""
    explicit = (env.get("RL_BASE_REF") or "").strip()
    if explicit:
        return explicit, f"comparing with {explicit} (base-ref input)"
    candidates = base_candidates(env, event)
    for ref in candidates:
        if _resolves(ref, cwd):
            return ref, f"comparing with {ref} (the pull request's base)"
    if candidates:
        raise ChangedError(
            f"the pull request's base ({' or '.join(candidates)}) is not in this clone: "
            "check out with `fetch-depth: 0`, or set the base-ref input")
    return None, "no pull request base (not a pull_request event): reporting every finding"


def _head_sha(env: Mapping[str, str], event: dict) -> str:
    pr = event.get("pull_request")
    if isinstance(pr, dict) and isinstance(pr.get("head"), dict) and pr["head"].get("sha"):
        return str(pr["head"]["sha"])
    return env.get("GITHUB_SHA", "")


def annotations(findings: Sequence[Finding], root: str, reserved_warnings: int = 0) -> list[str]:
    """Workflow commands for at most 10 findings of each level, most severe first; when
    some are left out, 9 warnings and one warning that says how many. `reserved_warnings`:
    warnings the Action prints besides, taken from the findings' 10."""
    ordered = sorted(findings, key=lambda f: (f.severity.rank, display_path(f.path, root),
                                              f.start.line, f.start.column, f.code))
    by_level: dict[str, list[Finding]] = {level: [] for level in LEVEL_ORDER}
    for f in ordered:
        by_level[GITHUB_LEVEL.get(f.severity, "error")].append(f)
    caps = {level: ANNOTATIONS_PER_LEVEL for level in LEVEL_ORDER}
    caps["warning"] -= reserved_warnings
    if any(len(items) > ANNOTATIONS_PER_LEVEL for items in by_level.values()):
        caps["warning"] -= 1  # room for the "N more" warning
    lines: list[str] = []
    omitted = 0
    for level in LEVEL_ORDER:
        items = by_level[level]
        lines.extend(github_line(f, root) for f in items[:caps[level]])
        omitted += max(0, len(items) - caps[level])
    if omitted:
        lines.append(f"::warning title=retainlint::{omitted} more finding{'s' if omitted != 1 else ''} "
                     "not annotated (GitHub shows at most 10 per level); see the job summary")
    return lines


# Every ASCII punctuation character Markdown gives a meaning to; CommonMark lets a
# backslash make each of them plain text.
_MARKDOWN = re.compile(r"""[\\`*_{}\[\]<>()#+\-.!|~&:"']""")


def _cell(text: str) -> str:
    """A message as a table cell, shown as plain text. Messages quote code from the pull
    request between backticks, and that code may hold backticks itself: which backtick
    closes a span cannot be told, so none is a span - each is shown as it is, and so is
    anything that would make a link, an image, HTML or emphasis."""
    text = _MARKDOWN.sub(lambda m: "\\" + m.group(), printable(text, keep="\n"))
    return text.replace("\n", "<br>")


def _code(text: str) -> str:
    """`text` (a file name from the pull request) as a code span in a table cell: `|`
    escaped, as the table needs even inside a span."""
    return code_span(text).replace("|", "\\|")


def summary_markdown(kept: Sequence[Finding], older: int, root: str, base_note: str,
                     env: Mapping[str, str], event: dict, filtered: bool,
                     ran: Optional[str] = None, configuration: Sequence[str] = ()) -> str:
    """The job summary: counts, what ran, then one table row per finding on changed lines."""
    server, repo, sha = env.get("GITHUB_SERVER_URL", ""), env.get("GITHUB_REPOSITORY", ""), _head_sha(env, event)
    n = len(kept)
    head = ["## retainlint", ""]
    scope = "on lines this change added or modified" if filtered else "in total"
    if n:
        by_sev = Counter(f.severity.value for f in kept)
        counts = ", ".join(f"{by_sev[s.value]} {s.value}" for s in Severity if by_sev[s.value])
        by_rule = Counter((f.code, f.name) for f in kept)
        rules = ", ".join(f"`{code}` {name} ({c})" for (code, name), c in sorted(by_rule.items()))
        head.append(f"**{n} finding{'s' if n != 1 else ''}** {scope} ({counts}): {rules}.")
    else:
        head.append(f"No findings {scope}.")
    head.append("")
    if filtered:
        head.append(f"{older} older finding{'s' if older != 1 else ''} on lines this change did not "
                    f"touch {'was' if older == 1 else 'were'} left out. {base_note[:1].upper()}{base_note[1:]}.")
    else:
        head.append(f"{base_note[:1].upper()}{base_note[1:]}.")
    head.append("")
    if ran is not None:
        head += [f"retainlint {_cell(ran)}.", ""]
    for line in configuration:  # what a configuration change turns off, compared with the base
        head += [f"**Configuration:** {_cell(line)}.", ""]
    text = "\n".join(head) + "\n"
    if not kept:
        return text
    rows = ["| location | rule | severity | message |", "|---|---|---|---|"]
    size = len(text.encode()) + sum(len(r) + 1 for r in rows)
    for i, f in enumerate(sorted(kept, key=lambda f: (display_path(f.path, root), f.start.line,
                                                      f.start.column, f.code))):
        path = display_path(f.path, root)
        where = _code(f"{path}:{f.start.line}:{f.start.column}")
        if server and repo and sha and not os.path.isabs(path):
            location = f"[{where}]({server}/{repo}/blob/{sha}/{uri_path(path)}#L{f.start.line})"
        else:
            location = where
        row = f"| {location} | `{f.code}` {f.name} | {f.severity.value} | {_cell(f.message)} |"
        if size + len(row.encode()) + 200 > SUMMARY_LIMIT:
            rest = len(kept) - i
            rows.append(f"| … | | | {rest} more finding{'s' if rest != 1 else ''} not shown (summary size limit) |")
            break
        rows.append(row)
        size += len(row.encode()) + 1
    return text + "\n".join(rows) + "\n"


def _append(path: Optional[str], text: str) -> None:
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(text)


# Arguments that change what `retainlint check` prints, or make it write or exit 0: the
# Action reads its JSON findings and decides the outcome itself, so they are left out
# (with a note) rather than crash the step or let a finding pass.
_OUTPUT_FLAGS = {"--statistics", "--diff", "--show-fixes", "--show-source", "--no-show-source",
                 "--show-settings", "--fix", "--add-noqa", "-e", "--exit-zero",
                 "--exit-non-zero-on-fix", "-V", "--version", "-h", "--help"}
_OUTPUT_OPTIONS = {"--output-format", "-o", "--output-file", "--write-baseline", "--color",
                   "--stdin-filename", "--run-summary"}


def safe_args(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """(the arguments kept, those left out) for a check whose output the Action reads."""
    kept: list[str] = []
    dropped: list[str] = []
    rest = iter(args)
    for arg in rest:
        name = arg.split("=", 1)[0]
        if arg == "--":
            kept.append(arg)
            kept.extend(rest)
        elif name in _OUTPUT_FLAGS and "=" not in arg:
            dropped.append(arg)
        elif name in _OUTPUT_OPTIONS:
            dropped.append(arg if "=" in arg else f"{arg} {next(rest, '')}".rstrip())
        else:
            kept.append(arg)
    return kept, dropped


def run_check(python: str, paths: Sequence[str], args: Sequence[str], cwd: str,
              run_summary: str) -> tuple[int, Optional[list[Finding]], str]:
    """`retainlint check` over the whole tree, as json: (exit code, findings or None when
    it printed no JSON list, stderr). What ran goes to the file `run_summary`."""
    # -I: `-m` would put the checkout first on sys.path, and a pull request's own
    # `retainlint/` or `json.py` would run instead.
    cmd = [python, "-I", "-m", "retainlint", "check", *args, "--output-format", "json",
           "--color", "never", "--run-summary", run_summary, "--", *paths]
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, errors="replace",
                          env={**os.environ, "NO_COLOR": "1"})
    try:
        items = json.loads(proc.stdout)
    except ValueError:
        items = None
    if not isinstance(items, list):
        return proc.returncode, None, proc.stderr or proc.stdout
    try:
        return proc.returncode, from_json(items), proc.stderr
    except (KeyError, TypeError, ValueError, AttributeError):  # a list, but not of findings
        return proc.returncode, None, proc.stderr or "the check printed no findings list"


def what_ran(path: str, cwd: str) -> Optional[str]:
    """One sentence from the check's --run-summary: which rules ran on how many files,
    and, for each configuration, how many rules on how many files; None when the check
    wrote none (it failed)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        rules, files = [str(r) for r in data["rules"]], int(data["files"])
        parts = [(os.path.relpath(str(p["configuration"]), cwd) if p.get("configuration") else "defaults",
                  len(p["rules"]), int(p["files"]), sum(p.get("ignored", {}).values()))
                 for p in data["projects"]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None
    text = f"ran {count(len(rules), 'rule')} on {count(files, 'file')}" + (f" ({', '.join(rules)})" if rules else "")
    for config, n_rules, n_files, ignored in parts:
        text += f"; {config}: {count(n_rules, 'rule')} on {count(n_files, 'file')}"
        if ignored:
            text += f", per-file-ignores turning off {count(ignored, 'rule')} for some"
    return text


def against_base(changed: ChangedLines, touched: Sequence[str], paths: Sequence[str],
                 args: Sequence[str], cwd: str, scratch: str, head_ran: str
                 ) -> tuple[list[tuple[str, str]], Optional[str]]:
    """The configuration changes `touched` against the merge base: ([(the file to name,
    what it turns off)], None), or ([], why no comparison could be made). The base's tree
    is checked in `scratch`, with the same paths and arguments, without the cache."""
    _log(f"retainlint: configuration changed in this pull request ({', '.join(touched)}): checking "
         f"the merge base {changed.base[:12]} under its own configuration to compare")
    tree = os.path.join(scratch, "base")
    extract_base(changed, tree)
    base_cwd = os.path.normpath(os.path.join(tree, os.path.relpath(os.path.realpath(cwd), changed.root)))
    if not os.path.isdir(base_cwd):
        return [], None  # the folder is new: the base checked nothing here
    base_ran = os.path.join(scratch, "base-run.json")
    rc, _, stderr = run_check(sys.executable, paths, [*args, "--no-cache"], base_cwd, base_ran)
    base, head = checked_files(base_ran), checked_files(head_ran)
    if base is None or head is None:
        return [], ("what the base revision's configuration checked is unknown, so this change was not "
                    "compared with it: " + _failure(rc, stderr))
    loss = compare(base, head, lambda p: os.path.lexists(os.path.join(cwd, p)))
    baselines: dict[str, str] = {}  # the changed --baseline file -> its name in the args
    for value in option_values(args, "--baseline"):
        rel = repository_path(value, cwd, changed.root)
        if rel is not None and rel in touched:
            baselines[rel] = value
    configs = [p for p in touched if p not in baselines] or list(touched)
    found = []
    rules = describe_rules(configs, loss)
    if rules:
        found.append((configs[0], rules))
    for rel, value in baselines.items():
        gained = describe_baseline(rel, baseline_gain(os.path.join(base_cwd, value), os.path.join(cwd, value)))
        if gained:
            found.append((rel, gained))
    return found, None


def _file_command(level: str, path: str, message: str) -> str:
    """A workflow command about a file as a whole (`::error file=...::`)."""
    return (f"::{level} file={gh_escape_prop(printable(path))},title=retainlint::"
            f"{gh_escape_data(printable(message))}")


def _failure(rc: int, stderr: str) -> str:
    """The annotation for a check that failed: its exit status and the last line it wrote
    (the full output is in the log)."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return f"retainlint check failed (exit {rc})" + (f": {lines[-1]}" if lines else "")


def _log(text: str, stream: Optional[TextIO] = None) -> None:
    """Text for the log, line by line, none of it read as a workflow command (gh_text):
    the check's output and anything else quoting the pull request."""
    for line in text.split("\n"):
        print(gh_text(line), file=stream or sys.stdout, flush=True)


def _error(message: str) -> None:
    print(gh_command("error", message), flush=True)


def main(env: Optional[Mapping[str, str]] = None) -> int:
    env = os.environ if env is None else env
    cwd = env.get("GITHUB_WORKSPACE") or os.getcwd()
    event = _event(env)
    paths = shlex.split(env.get("RL_PATHS") or "") or ["."]
    args = shlex.split(env.get("RL_ARGS") or "")
    changed_only = _truthy(env.get("RL_CHANGED_ONLY"), True)
    fail = _truthy(env.get("RL_FAIL_ON_FINDINGS"), True)
    allow_config = _truthy(env.get("RL_ALLOW_CONFIG_CHANGES"), False)

    changed: Optional[ChangedLines] = None
    base_note = "reporting every finding (changed-only is off)"
    try:
        if changed_only:
            if git_toplevel(cwd) is None:
                raise ChangedError(f"{cwd} is not a git repository: check it out with actions/checkout")
            base, base_note = choose_base(env, event, cwd)
            if base is not None:
                changed = changed_since(base, cwd)
                base_note += f", merge base {changed.base[:12]}"
    except ChangedError as e:
        _error(str(e))
        _log(f"retainlint: error: {e}", sys.stderr)
        return 2
    _log(f"retainlint: {base_note}")

    args, dropped = safe_args(args)
    for arg in dropped:
        print(gh_command("notice", f"args: {arg} left out (the Action reads the findings as JSON "
                                   "and decides the outcome itself)"))
    config_found: list[tuple[str, str]] = []
    config_note: Optional[str] = None
    touched: list[str] = []
    with tempfile.TemporaryDirectory(prefix="retainlint-action-") as scratch:  # outside the checkout
        ran_file = os.path.join(scratch, "run.json")
        rc, findings, stderr = run_check(sys.executable, paths, args, cwd, ran_file)
        ran = what_ran(ran_file, cwd)
        if stderr.strip():
            _log(stderr.rstrip(), sys.stderr)
        # Only exit 0 or 1 with a JSON list is a check that ran: anything else (a crash, a bad
        # configuration) fails the step, never passes as "no findings".
        failed = findings is None or rc not in (0, 1)
        if failed:
            _error(_failure(rc, stderr))
        if findings is None:
            return 2
        try:
            touched = changed_configuration(changed, args, cwd) if changed is not None else []
            # The second check runs only when configuration changed.
            if touched and changed is not None and not failed:
                config_found, config_note = against_base(changed, touched, paths, args, cwd, scratch, ran_file)
        except ChangedError as e:
            _error(str(e))
            return 2

    root = changed.root if changed is not None else repo_root(cwd)
    if changed is not None:
        kept, left_out = split_findings(findings, changed)
    else:
        kept, left_out = list(findings), []

    # What ran is always in the summary, and a warning when the pull request touches a
    # configuration file: it can turn rules off or leave files out, and a green run must
    # say so.
    warnings = 0
    if ran is not None and touched:
        print(gh_command("warning", f"{', '.join(touched)} changed in this pull request: retainlint {ran}"))
        warnings += 1
    if config_note is not None:
        print(gh_command("warning", config_note))
        warnings += 1
    config_lines = [f"{message} (allow-config-changes is on)" if allow_config
                    else f"{message}; set allow-config-changes: true to accept"
                    for _, message in config_found]
    for (path, _), message in zip(config_found, config_lines):
        print(_file_command("warning" if allow_config else "error", path, message))
    warnings += len(config_found) if allow_config else 0
    for line in annotations(kept, root, reserved_warnings=warnings):
        print(line)
    _append(env.get("GITHUB_STEP_SUMMARY"),
            summary_markdown(kept, len(left_out), root, base_note, env, event, changed is not None, ran,
                             config_lines + ([config_note] if config_note else [])))
    sarif_path = (env.get("RL_SARIF_FILE") or "").strip()
    if sarif_path:
        try:  # never through a link the pull request commits (a workspace file, a folder)
            write_output(os.path.join(cwd, sarif_path), json.dumps(sarif(findings, root), indent=2).encode(),
                         roots=(cwd,), make_folders=True)
        except WriteError as e:
            _error(f"{sarif_path}: cannot write SARIF: {e}")
            return 2
        _log(f"retainlint: wrote SARIF ({len(findings)} findings) to {sarif_path}")
    _append(env.get("GITHUB_OUTPUT"),
            f"findings={len(kept)}\nolder-findings={len(left_out)}\ntotal-findings={len(findings)}\n")
    _log(f"retainlint: {len(kept)} finding{'s' if len(kept) != 1 else ''}"
         + (f" on changed lines, {len(left_out)} older left out" if changed is not None else "")
         + "; see the job summary")
    if failed:
        return 2
    if config_found and not allow_config:
        return 1
    return 1 if kept and fail else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
