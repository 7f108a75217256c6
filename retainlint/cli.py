"""The `retainlint` command: check, rule."""

from __future__ import annotations

import difflib
import importlib
import io
import json
import logging
import os
import signal
import sys
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Optional

import click
from rich.console import Console

from retainlint import __version__

from retainlint.output import baseline, text
from retainlint.output.escape import printable
from retainlint.output.formats import FORMATS
from retainlint.integrations.changed import ChangedError, changed_since, repo_root, split_findings
from retainlint.engine.cache import default_cache_dir
from retainlint.core.codes import split_codes, split_named, split_note
from retainlint.core.errors import ConfigError
from retainlint.core.source import WriteError, write_output
from retainlint.engine.discover import excluded
from retainlint.engine import notebook
from retainlint.engine.notebook import is_notebook
from retainlint.engine.projects import (Overrides, Project, ignored_here, plan, project_of,
                                        selection, settings_for)
from retainlint.core.finding import INTERNAL_ERROR, SOURCE_ERROR, Applicability, Finding, Severity
from retainlint.engine.registry import all_rules, lookup
from retainlint.engine.runner import Mode, RunResult, run

ALWAYS_SHOWN = (INTERNAL_ERROR[0], SOURCE_ERROR[0])  # files not checked, whatever the floor
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as shells report it


def _color(flag: str) -> bool:
    """--color, then NO_COLOR, then FORCE_COLOR / CLICOLOR_FORCE, then TERM=dumb, then isatty."""
    if flag != "auto":
        return flag == "always"
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR") or os.environ.get("CLICOLOR_FORCE"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    return sys.stdout.isatty()


def _console(color: bool, stderr: bool = False, file: Optional[IO[str]] = None) -> Console:
    if color:
        return Console(force_terminal=True, stderr=stderr, highlight=False, soft_wrap=True)
    return Console(color_system=None, force_terminal=False, no_color=True, stderr=stderr,
                   highlight=False, soft_wrap=True, width=10_000, file=file)


def _split(values: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(v.strip() for value in values for v in value.split(",") if v.strip())


def _fail(message: str) -> None:
    # One line, whatever names or keys from the checked tree it quotes (a TOML key may
    # hold a newline or an escape sequence).
    click.echo(f"retainlint: error: {printable(message)}", err=True)
    sys.exit(EXIT_ERROR)


PROGRESS_MIN_FILES = 300  # below this a run is over before a bar would help


@contextmanager
def _progress_bar(enabled: bool):
    """A transient bar on stderr (a terminal only): yields the `progress` callback."""
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as bar:
        def start(what: str, total: int):
            # One phase shown at a time: the one just begun replaces the last. A phase
            # with nothing to count (reading installed packages) gets a pulsing bar.
            for earlier in bar.task_ids:
                bar.update(earlier, visible=False)
            task = bar.add_task(what, total=total or None)
            bar.refresh()  # drawn now, however soon it ends
            return lambda done: bar.advance(task, done)
        yield start


class _Group(click.Group):
    # `verify` (torch, the scenarios, importlib.metadata) is imported when asked for: a
    # check answered from the cache would spend a twentieth of its time importing it.
    _LAZY = {"verify": ("retainlint.verify.cli", "verify")}

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted([*super().list_commands(ctx), *self._LAZY])

    def get_command(self, ctx: click.Context, name: str) -> Optional[click.Command]:
        if name in self._LAZY:
            module, attribute = self._LAZY[name]
            command: click.Command = getattr(importlib.import_module(module), attribute)
            return command
        return super().get_command(ctx, name)

    def invoke(self, ctx: click.Context):
        try:
            with _sigterm_as_ctrl_c():
                return super().invoke(ctx)
        except KeyboardInterrupt:  # every file is old or new: fixes are written atomically
            click.echo("retainlint: interrupted", err=True)
            ctx.exit(EXIT_INTERRUPTED)


@contextmanager
def _sigterm_as_ctrl_c():
    """SIGTERM (a cancelled CI job, `kill`, a service stopping) ends a run as Ctrl-C does:
    the files in hand are finished, then one line and exit 130. By default it would kill
    this process at once and leave its workers running."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread may set handlers
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="retainlint")
def main() -> None:
    """Find and fix Python code that keeps memory (models, tensors) alive after it should be freed."""


SELECTOR_HELP = "Comma-separated codes, prefixes (RL2) or rule names; repeatable."


@main.command()
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--select", multiple=True, help=f"Only these rules. {SELECTOR_HELP}")
@click.option("--extend-select", multiple=True, help=f"Rules to add to the selection. {SELECTOR_HELP}")
@click.option("--ignore", multiple=True, help=f"Rules to leave out. {SELECTOR_HELP}")
@click.option("--fix", is_flag=True, help="Apply safe fixes.")
@click.option("--fix-only", is_flag=True,
              help="Apply fixes and report nothing that remains (exit 0 unless "
                   "--exit-non-zero-on-fix and something was fixed).")
@click.option("--unsafe-fixes/--no-unsafe-fixes", default=None,
              help="Include fixes that may change behaviour (with --fix or --diff).")
@click.option("--diff", is_flag=True, help="Print the diff of what --fix would change; write nothing.")
@click.option("--exit-non-zero-on-fix", is_flag=True, help="Exit 1 if anything was fixed.")
@click.option("--output-format", type=click.Choice(list(FORMATS)),
              envvar="RETAINLINT_OUTPUT_FORMAT", default="full", show_default=True,
              help="github: workflow-command annotations; sarif: SARIF 2.1.0 for code scanning.")
@click.option("-o", "--output-file", type=click.Path(dir_okay=False, writable=True),
              envvar="RETAINLINT_OUTPUT_FILE", default=None,
              help="Write the report to this file instead of standard output.")
@click.option("--show-source/--no-show-source", default=None,
              help="Code frames (--output-format full) or one line a finding (concise).")
@click.option("--show-fixes", is_flag=True,
              help="List the fixes applied (with --fix), or those --fix would apply, per file.")
@click.option("--changed-since", "changed_since_ref", metavar="REF", default=None,
              help="Report only findings on lines added or changed since the merge base of REF "
                   "and HEAD (working tree included; new files count whole). All files are "
                   "still analysed.")
@click.option("--min-severity", type=click.Choice(["info", "warning", "error"]), default=None,
              help="Report only findings of this severity or higher (error: retains something "
              "heavy or without bound; warning: real, but bounded or unproven; info: real but "
              "negligible). Default: `min-severity` in the configuration, else warning.")
@click.option("-e", "--exit-zero", is_flag=True, help="Exit 0 even when there are findings.")
@click.option("--statistics", is_flag=True, help="Count findings per rule instead of listing them.")
@click.option("-n", "--no-cache", is_flag=True, help="Do not read or write the result cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              envvar="RETAINLINT_CACHE_DIR", show_envvar=True,
              help="Where the cache lives (default: a folder per project in the user cache directory).")
@click.option("--exclude", multiple=True, help="Extra exclude patterns (comma-separated).")
@click.option("--force-exclude", is_flag=True, help="Apply excludes to files named on the command line too.")
@click.option("--config", "config_path", type=click.Path(path_type=Path),
              help="Use this pyproject.toml / retainlint.toml instead of searching.")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto")
@click.option("-j", "--jobs", type=click.IntRange(min=1), default=None,
              help="Worker processes (default: CPU count).")
@click.option("--no-installed-types", is_flag=True,
              help="Do not read installed packages (with astroid) to tell which of their types are heavy.")
@click.option("--add-noqa", is_flag=True,
              help="Add `# noqa: CODE` to the lines of every current finding, and exit 0.")
@click.option("--baseline", "baseline_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Leave out the findings recorded in FILE (see --write-baseline).")
@click.option("--write-baseline", "write_baseline", metavar="FILE", type=click.Path(dir_okay=False),
              help="Record every current finding in FILE, and exit 0.")
@click.option("--stdin-filename", metavar="PATH", default=None,
              help="Read the source from standard input and check it as PATH (`-` or no path "
                   "given); with --fix, write the fixed source to standard output.")
@click.option("--no-project", is_flag=True,
              help="Index only the paths named, not the rest of the project they belong to "
                   "(examples checked one by one).")
@click.option("--show-settings", is_flag=True,
              help="Print the settings the (first) file named is checked under, and exit.")
@click.option("-v", "--verbose", is_flag=True, help="Say what the run did besides checking (on stderr).")
@click.option("-q", "--quiet", is_flag=True,
              help="Print the findings and nothing else: no summary line, notes or progress bar.")
@click.option("--run-summary", "run_summary_file", metavar="FILE", type=click.Path(dir_okay=False),
              help="Also write what ran to FILE, as JSON: the rules, how many files, under which "
                   "configuration (for CI wrappers such as the GitHub Action).")
@click.option("--confirmed-by", "confirmed_by", metavar="FILE", multiple=True,
              type=click.Path(dir_okay=False),
              help="Mark the findings that a leak-mode run saw happen (the JSON file of "
                   "`pytest --retainlint-leaks-json FILE`): `confirmed` in JSON and SARIF.")
@click.option("-w", "--watch", is_flag=True,
              help="Check, then check again whenever a checked file or a configuration changes "
                   "(until Ctrl-C).")
def check(watch: bool, **options: Any) -> None:
    """Check PATHS (default: the current directory)."""
    if options["verbose"]:
        logging.basicConfig(level=logging.INFO, format="retainlint: %(message)s")
    if not watch:
        _check(**options)
        return
    for flag in ("stdin_filename", "add_noqa", "write_baseline", "show_settings"):
        if options[flag]:
            _fail(f"--watch cannot be combined with --{flag.replace('_', '-')}")
    if "-" in options["paths"]:
        _fail("--watch cannot check standard input")
    from retainlint.engine.watch import watch as watching

    def files() -> Optional[list[str]]:
        """What a change of re-runs the check: the checked files, their configurations."""
        try:
            projects = plan(options["paths"] or (".",), _overrides(options),
                            options["config_path"], options["force_exclude"],
                            not options["no_project"])
        except ConfigError:
            return None  # the check says why
        sources = {str(p.settings.source) for p in projects if p.settings.source is not None}
        return [f for p in projects for f in p.files] + sorted(sources)

    def say(line: str) -> None:
        click.echo(line, err=True)

    sys.exit(watching(lambda: _check(**options), files, say))


def _selectors(overrides: Overrides, projects: list[Project]) -> list[str]:
    """Every rule selector of the command line and of the projects' configurations."""
    found = [*(overrides.select or ()), *overrides.extend_select, *overrides.ignore]
    for p in projects:
        s = p.settings
        found += [*(s.select or ()), *s.extend_select, *s.ignore, *(c for _, codes in s.per_file_ignores
                                                                     for c in codes)]
    return found


def _overrides(options: dict[str, Any]) -> Overrides:
    return Overrides(
        _split(options["select"]), _split(options["extend_select"]), _split(options["ignore"]),
        _split(options["exclude"]),
        (lambda s: s.with_overrides(installed_types=False)) if options["no_installed_types"]
        else (lambda s: s))


def _check(paths, select, extend_select, ignore, fix, fix_only, unsafe_fixes, diff,
           exit_non_zero_on_fix, output_format, output_file, show_source, show_fixes,
           changed_since_ref, min_severity, exit_zero, statistics, no_cache, cache_dir, exclude,
           force_exclude, config_path, color, jobs, no_installed_types, add_noqa, baseline_file,
           write_baseline, stdin_filename, no_project, show_settings, verbose, quiet,
           run_summary_file, confirmed_by) -> None:
    """One check; ends with sys.exit and the exit status."""
    # Not what a run before this one in the process (a test, a watch) read from stdin.
    notebook.forget_buffers()
    text.forget_buffers()
    fix = fix or fix_only
    paths = paths or (".",)
    overrides = _overrides(dict(select=select, extend_select=extend_select, ignore=ignore,
                                exclude=exclude, no_installed_types=no_installed_types))
    if show_settings:
        _show_settings(paths, overrides, config_path)
        return
    from_stdin = stdin_filename is not None or "-" in paths
    if from_stdin and paths not in ((".",), ("-",)):
        _fail("source from standard input: give `-` alone, or no path, with --stdin-filename")
    try:
        projects = [project_of(stdin_filename or "-", overrides, config_path)] if from_stdin \
            else plan(paths, overrides, config_path, force_exclude, not no_project)
    except ConfigError as e:
        _fail(str(e))
        return
    changed = None
    if changed_since_ref is not None:
        try:
            changed = changed_since(changed_since_ref)
        except ChangedError as e:
            _fail(str(e))
            return
    if show_source is not None and output_format in ("full", "concise"):
        output_format = "full" if show_source else "concise"
    shown = FORMATS[output_format]
    machine = shown.machine
    files = [f for p in projects for f in p.files]
    fixed_source = None
    if from_stdin:
        project = projects[0]
        stdin_mode = Mode(fix=fix or diff, unsafe_fixes=project.settings.unsafe_fixes
                          if unsafe_fixes is None else unsafe_fixes, edits=shown.line_edits,
                          floor=_fix_floor(project, min_severity))
        checked, fixed_source = _run_stdin(project, stdin_mode, force_exclude, diff,
                                           None if no_cache else cache_dir or
                                           default_cache_dir(project.settings.root), jobs)
        if checked is None:  # excluded (--force-exclude): the source goes back untouched
            if fix and fixed_source is not None:
                sys.stdout.buffer.write(fixed_source)
            sys.exit(EXIT_CLEAN)
        if fixed_source is not None and not is_notebook(project.files[0]):
            text.shown_from(project.files[0], fixed_source)  # frames: the buffer, as fixed
        result = checked
    else:
        results = []
        with _progress_bar(sys.stderr.isatty() and not machine and not quiet
                           and len(files) >= PROGRESS_MIN_FILES) as bar:
            for project in projects:
                settings = project.settings
                unsafe = settings.unsafe_fixes if unsafe_fixes is None else unsafe_fixes
                mode = Mode(fix=fix and not diff, diff=diff, unsafe_fixes=unsafe,
                            edits=shown.line_edits, floor=_fix_floor(project, min_severity))
                where = None if no_cache else cache_dir or default_cache_dir(settings.root)
                results.append(run(project.files, list(project.codes), settings, mode, jobs,
                                   where, bar, project.context))
        result = RunResult.merged(results)
    if run_summary_file is not None:
        _write_file(run_summary_file, run_summary(projects), "the run summary")
    if confirmed_by:
        from retainlint.verify.leak_report import LeakFileError, confirm

        try:
            confirm(result.findings, confirmed_by)
        except LeakFileError as e:
            _fail(str(e))

    colored = _color(color) and not machine and output_file is None
    err = _console(colored and sys.stderr.isatty(), stderr=True)
    with _report_file(output_file) as report:
        out = _console(colored, file=report) if report is not None else _console(colored)
        if from_stdin and fix and not diff:  # stdout is the fixed source; the report goes to stderr
            sys.stdout.buffer.write(fixed_source or b"")
            sys.stdout.flush()
            out = err
        findings = result.findings
        internal = any(f.code == INTERNAL_ERROR[0] for f in findings)
        # Whether --fix would apply unsafe fixes: `[*]`, the statistics and the summary count
        # what it would apply under the same flags.
        unsafe = projects[0].settings.unsafe_fixes if unsafe_fixes is None else unsafe_fixes
        shown_at = _floor(projects, min_severity)
        findings, below = [f for f in findings if shown_at(f)], [f for f in findings if not shown_at(f)]
        if add_noqa or write_baseline:
            _accept(findings, add_noqa, write_baseline, err)
        if baseline_file is not None:
            try:
                findings, known = baseline.new_findings(baseline_file, findings)
                below, _ = baseline.new_findings(baseline_file, below)
            except ConfigError as e:
                _fail(str(e))
                return
            if known and not quiet:
                err.print(f"note: {known} finding{'s' if known != 1 else ''} in the baseline "
                          f"not shown", highlight=False)
        if changed is not None and not diff:
            findings, left_out = split_findings(findings, changed)
            below, _ = split_findings(below, changed)
            if left_out and not quiet:
                err.print(f"note: {len(left_out)} finding{'s' if len(left_out) != 1 else ''} on lines "
                          f"not changed since {changed_since_ref} not shown", highlight=False)
        if not files:
            err.print("warning: no Python files found", highlight=False)
        if not quiet:
            for split in split_named(_selectors(overrides, projects)):
                err.print(f"warning: {split_note(split)}", highlight=False)
        for note in result.notes:
            err.print(f"warning: {note}", highlight=False)

        if diff:
            for chunk in result.diffs:
                out.out(chunk, end="", highlight=False)
            if not quiet:
                err.print(f"Would fix {result.fixed} finding{'s' if result.fixed != 1 else ''}.",
                          highlight=False)
            unsafe_only = sum(1 for f in findings if f.fix is not None
                              and f.fix.applicability is Applicability.UNSAFE)
            if not result.diffs and unsafe_only and not quiet \
                    and not (unsafe_fixes or projects[0].settings.unsafe_fixes):
                err.print(f"No safe fixes; {unsafe_only} unsafe fix{'es' if unsafe_only != 1 else ''} "
                          f"available: see them with --diff --unsafe-fixes.", highlight=False)
            if show_fixes:
                text.show_fixes(err, result.fixed_codes, findings, applied=True, unsafe_fixes=unsafe)
            sys.exit(EXIT_ERROR if internal else EXIT_FINDINGS if result.diffs else EXIT_CLEAN)

        if fix_only:  # what was left is not reported; files that could not be checked are
            _fixed_only(out, [f for f in findings if f.code in ALWAYS_SHOWN], result, shown,
                        changed.root if changed else repo_root(), quiet, machine)
            sys.exit(EXIT_ERROR if internal else EXIT_FINDINGS
                     if exit_non_zero_on_fix and result.fixed else EXIT_CLEAN)
        if statistics:
            text.print_statistics(out, findings, as_json=output_format == "json", unsafe_fixes=unsafe)
        else:
            shown.show(out, findings, changed.root if changed else repo_root(), unsafe)
        if not machine and not quiet:
            # What the fixes resolved, counted over every finding: a fix may also end a
            # finding below the severity floor (whose own fixes are not applied), or one
            # left out by a baseline or --changed-since. Standard input keeps no count
            # before: one a fix.
            resolved = max(len(result.before) - len(result.findings), 0)
            before = len(findings) + resolved if result.fixed and result.before else None
            if show_fixes:
                text.show_fixes(out, result.fixed_codes, findings, applied=bool(fix), unsafe_fixes=unsafe)
            out.print(text.summary(findings, result.fixed, unsafe, before), highlight=False)
            if below:  # last: what a higher --min-severity (or the default) left out
                err.print(f"note: {text.not_shown(below)}", highlight=False)

        if internal:
            sys.exit(EXIT_ERROR)
        if exit_zero:
            sys.exit(EXIT_CLEAN)
        if findings or (exit_non_zero_on_fix and result.fixed):
            sys.exit(EXIT_FINDINGS)
        sys.exit(EXIT_CLEAN)


def _floor(projects: list[Project], flag: Optional[str]) -> Callable[[Finding], bool]:
    """Whether a finding is shown: at or above `--min-severity`, else its project's
    `min-severity` (each configuration's floor applies to its own files). A file that
    could not be checked is always shown."""
    ranks: dict[str, int] = {}
    if flag is not None:
        default = Severity(flag).rank
    else:
        ranks = {path: p.settings.min_severity.rank for p in projects for path in p.files}
        default = projects[0].settings.min_severity.rank if projects else Severity.WARNING.rank
    return lambda f: f.code in ALWAYS_SHOWN or f.severity.rank <= ranks.get(f.path, default)


def _fix_floor(project: Project, flag: Optional[str]) -> Severity:
    """The lowest severity whose fixes --fix applies: the lowest shown (see `_floor`)."""
    return Severity(flag) if flag is not None else project.settings.min_severity


def _fixed_only(out: Console, unchecked: list, result: RunResult, shown, root: str, quiet: bool,
                machine: bool) -> None:
    """--fix-only: the files that could not be checked or fixed (RL000, RL999), then how
    many findings the fixes resolved."""
    if unchecked or machine:
        shown.show(out, unchecked, root, False)  # files not checked: no fix to mark
    if not machine and not quiet:
        fixed = max(len(result.before) - len(result.findings), 0) if result.before else result.fixed
        out.print(f"Fixed {fixed} finding{'s' if fixed != 1 else ''}." if result.fixed
                  else "No fixes applied.", highlight=False)


@contextmanager
def _report_file(path: Optional[str]) -> Iterator[Optional[IO[str]]]:
    """The --output-file's report, kept in memory and written when the command ends (its
    exit included), whole, and never through a symlink in the tree (see write_output)."""
    if path is None:
        yield None
        return
    report = io.StringIO()
    try:
        yield report
    except SystemExit:
        _write_file(path, report.getvalue().encode("utf-8"), "the report")
        raise
    _write_file(path, report.getvalue().encode("utf-8"), "the report")


RUN_SUMMARY_FORMAT = "retainlint-run/1"


def run_summary(projects: list[Project]) -> bytes:
    """--run-summary: which rules ran on how many files, per configuration (a file that
    `per-file-ignores` spares a rule counts in `ignored`, per code), and in all; and in
    `checked`, which rules ran on each file (its path relative to the working directory),
    as groups of files sharing one set of rules, so that the summary stays small and two
    runs can be compared file by file."""
    entries = []
    groups: dict[tuple[str, ...], list[str]] = {}
    here = os.getcwd()
    for p in projects:
        ignored: dict[str, int] = {}
        for file in p.files:
            spared = ignored_here(file, p.settings) & set(p.codes)
            for code in spared:
                ignored[code] = ignored.get(code, 0) + 1
            rules = tuple(sorted(set(p.codes) - spared))
            groups.setdefault(rules, []).append(
                Path(os.path.relpath(os.path.abspath(file), here)).as_posix())
        entries.append({"configuration": str(p.settings.source) if p.settings.source else None,
                        "files": len(p.files), "rules": sorted(p.codes),
                        "ignored": dict(sorted(ignored.items()))})
    data = {"format": RUN_SUMMARY_FORMAT, "files": sum(len(p.files) for p in projects),
            "rules": sorted({c for p in projects if p.files for c in p.codes}), "projects": entries,
            "checked": [{"rules": list(rules), "files": sorted(files)}
                        for rules, files in sorted(groups.items())]}
    return (json.dumps(data, indent=1) + "\n").encode("utf-8")


def _write_file(path: str, data: bytes, what: str) -> None:
    try:
        write_output(path, data)
    except WriteError as e:
        _fail(f"{path}: cannot write {what}: {e}")


def _run_stdin(project: Project, mode: Mode, force_exclude: bool, diff: bool,
               cache: Optional[Path], jobs: Optional[int]) -> tuple[Optional[RunResult], Optional[bytes]]:
    """(the result, the source after fixes); no result when --force-exclude excludes the name."""
    from retainlint.engine.stdin import check_source

    data = sys.stdin.buffer.read()
    name = project.files[0]
    if force_exclude and excluded(name, project.settings.root, project.excludes):
        return None, data
    findings, fixed_source, fixed = check_source(name, data, project.codes, project.settings,
                                                 mode, project.context, cache, jobs)
    diffs = []
    if diff and fixed_source != data:
        diffs = ["".join(difflib.unified_diff(
            data.decode("utf-8", "replace").splitlines(keepends=True),
            fixed_source.decode("utf-8", "replace").splitlines(keepends=True),
            fromfile=name, tofile=name))]
    return RunResult(1, findings, fixed, diffs), fixed_source


def _accept(findings: list, noqa: bool, baseline_file: Optional[str], err: Console) -> None:
    """--add-noqa and --write-baseline: record today's findings, then exit 0 (2 if a file
    could not be changed)."""
    from retainlint.engine.add_noqa import add_noqa

    problems: list[str] = []
    if noqa:
        added, problems = add_noqa(findings)
        err.print(f"Added {added} noqa directive{'s' if added != 1 else ''}.", highlight=False)
    if baseline_file:
        try:
            count = baseline.write(baseline_file, findings)
        except WriteError as e:
            _fail(f"{baseline_file}: cannot write the baseline: {e}")
        err.print(f"Wrote {count} finding{'s' if count != 1 else ''} to {baseline_file}.",
                  highlight=False)
    for problem in problems:
        err.print(f"retainlint: error: {problem}", highlight=False)
    sys.exit(EXIT_ERROR if problems else EXIT_CLEAN)


def _show_settings(paths: tuple[str, ...], overrides: Overrides, config_path: Optional[Path]) -> None:
    """The resolved settings of the first path, one `key = value` line each (TOML values)."""
    try:
        settings, codes = selection(settings_for(paths[0], overrides, config_path), overrides)
    except ConfigError as e:
        _fail(str(e))
        return
    shown = {
        "file": paths[0],
        "configuration": str(settings.source) if settings.source else "(none: defaults)",
        "root": str(settings.root),
        "rules": list(codes) + (["RL100"] if settings.report_unused_noqa else []),
        "exclude": list(settings.excludes) + list(overrides.exclude),
        "per-file-ignores": {glob: list(c) for glob, c in settings.per_file_ignores},
        "ignored-here": sorted(ignored_here(paths[0], settings)),
        "heavy-types": list(settings.heavy_types),
        "release-methods": list(settings.release_methods),
        "unsafe-fixes": settings.unsafe_fixes,
        "per-object-hooks": settings.per_object_hooks,
        "min-severity": settings.min_severity.value,
    }
    for key, value in shown.items():
        click.echo(f"{key} = {json.dumps(value)}")


@main.command()
@click.argument("selector", required=False)
@click.option("--all", "show_all", is_flag=True, help="Every rule.")
@click.option("--output-format", type=click.Choice(["text", "json"]), default="text")
def rule(selector: Optional[str], show_all: bool, output_format: str) -> None:
    """Explain a rule, given its code or name (RL301, strong-module-keyed-cache)."""
    if not selector and not show_all:
        _fail("give a rule code or name, or --all")
    try:
        rules = list(all_rules()) if show_all else lookup(selector)
    except ConfigError as e:
        _fail(str(e))
        return
    if selector and split_codes(selector) is not None:
        click.echo(f"retainlint: {split_note(split_named([selector])[0])}", err=True)
    if output_format == "json":
        click.echo(json.dumps([
            {"code": r.code, "name": r.name, "summary": r.summary, "severity": r.severity.value,
             "fix": r.fix_applicability.value, "default": r.default_enabled,
             "explanation": r.docs.strip(), "url": r.url()}
            for r in rules
        ], indent=2))
        return
    pages = [f"# {r.code} {r.name}\n\n{r.summary}.\n\n"
             f"Severity: {r.severity.value} ({r.severity.meaning}). "
             f"Fix: {r.fix_applicability.value}. "
             f"Default: {'on' if r.default_enabled else 'off'}.\n{r.docs}" for r in rules]
    if not sys.stdout.isatty():  # a pipe or a file: the markdown itself, as `ruff rule` does
        click.echo("\n\n".join(page.strip() for page in pages))
        return
    from rich.markdown import Markdown  # only here: it costs start-up time

    console = _console(_color("auto"))
    for page in pages:
        console.print(Markdown(page))


# The server's requirement as pyproject's `lsp` extra pins it (tests/cli/test_install_hints.py
# holds them equal). The hint names it, not the extra: retainlint is not on the package index,
# so `pip install 'retainlint[lsp]'` finds nothing.
LSP_REQUIREMENT = "pygls==2.1.1"


@main.command()
def server() -> None:
    """Run the language server for editors (LSP over stdio): diagnostics on open and save,
    safe fixes as quick fixes, rule documentation on hover."""
    try:
        from retainlint.server import serve
    except ImportError as e:
        _fail(f"`retainlint server` needs pygls ({e}): pip install {LSP_REQUIREMENT}")
        return
    serve()




if __name__ == "__main__":  # pragma: no cover
    main()
