"""Lint one file: prefilter by trigger tokens, parse once, one traversal for all rules,
positions and suppressions only when something was reported."""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
import traceback
import warnings
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional, Sequence

import libcst as cst

from retainlint.core.config import Settings
from retainlint.analysis.context import FileContext
from retainlint.core.finding import (
    INTERNAL_ERROR,
    SOURCE_ERROR,
    Applicability,
    Consequence,
    Finding,
    Position,
    Related,
    Severity,
    source_error,
)
from retainlint.project.index import ProjectIndex, summarize
from retainlint.engine.positions import ranges_of
from retainlint.engine.projects import ignored_here
from retainlint.engine.registry import all_prefilters, catalog
from retainlint.project.prefilter import rules_triggered
from retainlint.analysis.retention_rule import RetentionRule
from retainlint.analysis.rule import LocatedReport, RelatedNode, Rule
from retainlint.core.source import MAX_PARSE_BYTES
from retainlint.engine.suppress import Suppressions
from retainlint.analysis.walk import children

_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=]", re.MULTILINE)
_STATEMENT_TYPES = (cst.SimpleStatementLine, cst.BaseCompoundStatement)


@dataclass
class FileResult:
    path: str
    findings: list[Finding] = field(default_factory=list)
    module: Optional[cst.Module] = None  # kept only when the caller wants to fix
    parsed: bool = False
    suppressions: Optional[Suppressions] = None  # scanned once something was reported

    @property
    def has_errors(self) -> bool:
        return any(f.code in (SOURCE_ERROR[0], INTERNAL_ERROR[0]) for f in self.findings)


def parse(path: str, data: bytes) -> tuple[Optional[cst.Module], Optional[Finding]]:
    module, error, _ = _parse(path, data)
    return module, error


def _parse(path: str, data: bytes
           ) -> tuple[Optional[cst.Module], Optional[Finding], dict[int, int]]:
    """Also returns, for each line whose form feeds libcst was spared, how many
    characters it lost (see `_without_form_feeds`)."""
    if len(data) > MAX_PARSE_BYTES:
        return None, source_error(path, f"file too large to check ({len(data) / 2**20:.1f} MB "
                                        f"> {MAX_PARSE_BYTES >> 20} MB)"), {}
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        return None, source_error(path, "source contains a NUL byte", line), {}
    py_error, refusal = _cpython_first(path, data)
    if refusal is not None:
        return None, refusal, {}
    code, shifts = _without_form_feeds(data) if b"\f" in data else (data, {})
    try:
        return cst.parse_module(code), None, shifts
    except cst.ParserSyntaxError as e:
        # CPython's own message and position are the ones users know; libcst's are vaguer.
        if isinstance(py_error, SyntaxError):
            return None, source_error(path, f"cannot parse: {py_error.msg}",
                                      py_error.lineno or 1, py_error.offset or 1), {}
        valid = " (the file is valid Python; libcst cannot parse it)" if py_error is None else ""
        return None, source_error(path, f"cannot parse: {e.message}{valid}", e.raw_line,
                                  e.raw_column + 1), {}
    except (UnicodeDecodeError, SyntaxError, LookupError) as e:  # bytes or coding cookie
        return None, _decode_error(path, data, e), {}
    except RecursionError:
        return None, source_error(path, "cannot parse: expressions nested too deeply"), {}
    except Exception as e:  # the native parser can raise other errors on odd input
        return None, source_error(path, f"cannot parse: {type(e).__name__}: {e}"), {}


# A form feed in the indentation of a line of code. CPython ignores it (and the blanks
# before it: the count starts again); libcst's tokenizer fails on some ("no matching outer
# block for dedent") and drops or repeats others when it writes the code back.
_FORM_FEED_INDENT = re.compile(rb"^[ \t\f]*\f(?=[ \t]*[^ \t\f\r\n#])", re.MULTILINE)


def _without_form_feeds(data: bytes) -> tuple[bytes, dict[int, int]]:
    """`data` without those form feeds and the blanks before them (the same code for
    CPython), and how many characters each line changed lost."""
    pieces, shifts, done, line = [], {}, 0, 1
    for m in _FORM_FEED_INDENT.finditer(data):
        line += data.count(b"\n", done, m.start())
        pieces.append(data[done:m.start()])
        shifts[line] = m.end() - m.start()
        done = m.end()
    pieces.append(data[done:])
    return b"".join(pieces), shifts


def _form_feeds_back(result: FileResult, shifts: dict[int, int]) -> None:
    """Positions in the file as it is, not as libcst saw it. The fixes are offered as help
    only: libcst would write the file back without its form feeds."""
    def moved(p: Position) -> Position:
        return Position(p.line, p.column + shifts.get(p.line, 0))

    for f in result.findings:
        if f.code in (SOURCE_ERROR[0], INTERNAL_ERROR[0]):
            continue
        f.start, f.end = moved(f.start), moved(f.end)
        f.related = [replace(r, start=moved(r.start), end=moved(r.end))
                     if r.path == result.path else r for r in f.related]
        if f.fix is not None and f.fix.applicability is not Applicability.NONE:
            f.fix.applicability = Applicability.NONE
            f.fix.message += " (not applied by --fix: form feeds in this file's indentation)"
    result.module = None


_BRACKETS = re.compile(rb"[][(){}]")
_TOO_DEEP = "cannot parse: code nested too deeply"


def _bracket_depth(data: bytes) -> int:
    """Deepest bracket nesting, counting brackets in strings and comments too."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(data):
        if m.group() in b"([{":
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


def _cpython_first(path: str, data: bytes) -> tuple[Optional[BaseException], Optional[Finding]]:
    """Ask CPython's parser before libcst's. libcst's native parser overflows its stack on
    deeply nested code - a segfault that kills the whole run, pool workers included - and
    takes quadratic time on long chains; CPython bounds nesting (200 brackets, ~3000
    levels) and fails fast. Returns CPython's error (None if it compiles) and a refusal
    when the input is too deep to hand to libcst. Compiling executes nothing."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not ours to print
            compile(data, path, "exec", dont_inherit=True)
    except (RecursionError, MemoryError):
        return None, source_error(path, _TOO_DEEP)
    except SyntaxError as e:
        if e.msg.startswith("too many"):  # nested parentheses, levels of indentation, ...
            return e, source_error(path, f"cannot parse: {e.msg}", e.lineno or 1, e.offset or 1)
        # Perhaps syntax newer than this Python that libcst knows: libcst gets to try,
        # but never with more nesting than CPython would accept.
        if _bracket_depth(data) > 200:
            return e, source_error(path, "cannot parse: too many nested parentheses")
        return e, None
    except Exception as e:  # noqa: BLE001 - libcst gets to try; it reports its own error
        return e, None
    # CPython keeps `a and b and ...` flat, libcst nests it one level per operand.
    if len(_BOOL_OPS.findall(data)) > 1000 and _bool_chain(data) > 1000:
        return None, source_error(path, _TOO_DEEP)
    return None, None


_BOOL_OPS = re.compile(rb"\b(?:and|or)\b")


def _bool_chain(data: bytes) -> int:
    longest = 0
    try:
        tree = ast.parse(data)
    except (RecursionError, MemoryError):
        return 1 << 30
    except Exception:  # noqa: BLE001 - compile() accepted it; nothing deep to see
        return 0
    for node in ast.walk(tree):
        if isinstance(node, ast.BoolOp):
            longest = max(longest, len(node.values))
    return longest


def _decode_error(path: str, data: bytes, error: Exception) -> Finding:
    try:
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError:  # also raised for undecodable bytes in the first two lines
            if _COOKIE.search(b"\n".join(data.splitlines()[:2])):
                raise
            encoding = "utf-8"
        data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        column = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        return source_error(path, f"cannot decode source as {e.encoding}: {e.reason}", line, column)
    except (SyntaxError, LookupError) as e:
        return source_error(path, f"cannot decode source: {e}")
    return source_error(path, f"cannot decode source: {error}")


def lint_bytes(
    path: str,
    data: bytes,
    rules: Sequence[type[Rule]],
    settings: Settings,
    keep_module: bool = False,
    index: Optional[ProjectIndex] = None,
) -> FileResult:
    """`index`: the project this file belongs to; without one, the file on its own."""
    result = FileResult(path)
    _lint_file(result, data, rules, settings, keep_module, index)
    _one_code_per_line(result, rules)
    if settings.report_unused_noqa and not result.has_errors:
        suppressions = result.suppressions or Suppressions.scan(data.decode("utf-8", "replace"))
        result.findings += suppressions.unused(path, catalog())
    return result


def _one_code_per_line(result: FileResult, rules: Sequence[type[Rule]]) -> None:
    """Leave out a finding whose rule defers to another code reported on the same line."""
    deferring = {r.code: r.defers_to for r in rules if r.defers_to}
    if not deferring or len(result.findings) < 2:
        return
    reported = {(f.start.line, f.code) for f in result.findings}
    result.findings = [f for f in result.findings if not any(
        (f.start.line, code) in reported for code in deferring.get(f.code, ()))]


def _lint_file(result: FileResult, data: bytes, rules: Sequence[type[Rule]], settings: Settings,
               keep_module: bool, index: Optional[ProjectIndex]) -> None:
    path = result.path
    if index is None:
        index = ProjectIndex(filter(None, [summarize(path, data, all_prefilters())]), settings.heavy_types)
    ignored = ignored_here(path, settings)
    passed = set(rules_triggered(data, [r.prefilter for r in rules], settings, index, path))
    active = [r for r in rules if r.prefilter in passed and r.code not in ignored]
    if not active:
        return
    model_only = [r for r in active if issubclass(r, RetentionRule)]
    if len(model_only) == len(active) and _lint_facts(result, data, model_only, index):
        return
    module, error, shifts = _parse(path, data)
    if error is not None:
        result.findings.append(error)
        return
    assert module is not None  # `_parse` returns a module or an error
    result.parsed = True
    if keep_module:
        result.module = module
    source = module.code if shifts else data.decode(module.encoding)
    lint_module(result, module, source, active, settings, index)
    if shifts:
        _form_feeds_back(result, shifts)


class _FactsContext:
    """What a check that reads only the index's facts asks of its file (`RetentionRule`)."""

    def __init__(self, path: str, index: ProjectIndex) -> None:
        self.path = path
        self.index = index
        self.located: list[LocatedReport] = []


def _lint_facts(result: FileResult, data: bytes, rules: Sequence[type[RetentionRule]],
                index: ProjectIndex) -> bool:
    """Runs checks that read only the retention model, without a libcst tree: the index
    has the file's facts, from its `ast`. False (nothing done) for a file whose text needs
    what `_parse` does first (a coding cookie other than UTF-8, form feeds, no summary)."""
    if b"\f" in data or os.path.abspath(result.path) not in index.files:
        return False
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        return False
    ctx = _FactsContext(result.path, index)
    for rule in rules:
        try:
            rule(ctx).report_model()  # type: ignore[arg-type]  # the part of a context it reads
        except Exception as e:
            result.findings.append(_crash(result.path, rule, e))
    if ctx.located:
        result.suppressions = Suppressions.scan(source)
        _add_located(result, ctx.located, result.suppressions)
    return True


def lint_module(result: FileResult, module: cst.Module, source: str,
                rules: Sequence[type[Rule]], settings: Settings, index: ProjectIndex) -> None:
    """`source`: the file's text, which `module` was parsed from."""
    ctx = FileContext(result.path, module, source, settings, index)
    instances = [r(ctx) for r in rules]
    try:
        _lint(result, ctx, instances, source)
    finally:
        # Cycles run through the context (its heavy oracle, the reports' rules) and
        # through what the rules collected: emptied, the file's tree is freed now, not
        # by the next collection, which had to walk all of it.
        ctx.close()
        for rule in instances:
            vars(rule).clear()


def _lint(result: FileResult, ctx: FileContext, instances: list[Rule], source: str) -> None:
    module = ctx.module
    crashes: list[Finding] = []
    instances = [r for r in instances if r.applies()]
    if not instances:
        return
    dispatcher = _Dispatcher(ctx, instances, crashes)
    try:
        dispatcher.walk(module)
    except RecursionError:
        result.findings.append(source_error(result.path, "cannot check: code nested too deeply"))
        return
    result.findings.extend(crashes)
    if ctx.located:
        result.suppressions = Suppressions.scan(source)
        _add_located(result, ctx.located, result.suppressions)
    if not ctx.reports:
        return
    wanted = [node for report in ctx.reports
              for node in (report.node, report.statement,
                           *(rel.node for rel in report.related if not isinstance(rel, Related)))
              if node is not None]
    wanted += [edge for node in wanted for edge in _header_edges(node)]
    positions = ranges_of(module, wanted, source)
    suppressions = result.suppressions = result.suppressions or Suppressions.scan(source)
    for report in ctx.reports:
        rng = positions[report.node]
        start = Position(rng.start.line, rng.start.column + 1)
        end = Position(rng.end.line, rng.end.column + 1)
        statement = _statement_of(report, positions, rng)
        statement_line = positions[statement].start.line if statement is not None else start.line
        if suppressions.silences(_noqa_lines(report, positions, rng), report.rule.code,
                                 report.rule.name):
            continue
        related: list[Related] = []
        # `Rule.report` takes either (a location in another file is already a Related).
        mentioned: Sequence[RelatedNode | Related] = report.related
        for rel in mentioned:
            if isinstance(rel, Related):  # already a location (in another file)
                related.append(rel)
                continue
            r = positions.get(rel.node)
            if r is not None:
                related.append(
                    Related(rel.message, result.path, Position(r.start.line, r.start.column + 1),
                            Position(r.end.line, r.end.column + 1))
                )
        result.findings.append(
            Finding(
                code=report.rule.code,
                name=report.rule.name,
                message=report.message,
                path=result.path,
                start=start,
                end=end,
                severity=report.severity,
                fix=report.fix,
                related=related,
                noqa_line=statement_line,
                consequence=_with_evidence(report.consequence, related),
            )
        )


def _with_evidence(consequence: Optional[Consequence], related: list[Related]) -> Optional[Consequence]:
    """A consequence whose rule names no evidence of its own is shown by the finding's
    related locations (where the holder was made, where the object was stored)."""
    if consequence is None or consequence.evidence or not related:
        return consequence
    return replace(consequence, evidence=tuple(related))


def _add_located(result: FileResult, located: list[LocatedReport],
                 suppressions: Suppressions) -> None:
    for report in located:
        where = report.where
        if suppressions.silences(list(where.noqa_lines), report.rule.code, report.rule.name):
            continue
        result.findings.append(Finding(
            code=report.rule.code, name=report.rule.name, message=report.message,
            path=result.path, start=Position(*where.start), end=Position(*where.end),
            severity=report.severity, noqa_line=where.noqa_lines[0],
            consequence=report.consequence))


def _noqa_lines(report: Any, positions: Any, rng: Any) -> list[int]:
    """Where a `# noqa` silences a finding: the lines of the statement it is on, and of
    the code of this file its message names (related locations). A compound statement
    (def, class, if, with, ...) counts by its header alone, decorators to the colon:
    a noqa on a `def` line is about the def, never about what its body does."""
    lines = _lines(report.node, positions, rng)
    statement = _statement_of(report, positions, rng)
    if statement is not None:
        lines += _lines(statement, positions, positions[statement])
    for rel in report.related:
        where = positions.get(rel.node) if not isinstance(rel, Related) else None
        if where is not None:
            lines += _lines(rel.node, positions, where)
    return lines


def _statement_of(report: Any, positions: Any, rng: Any) -> Optional[cst.CSTNode]:
    """The finding's statement, unless it is a compound statement the finding lies in
    the body of (a rule reporting from `leave_FunctionDef` names the function): then the
    finding's own lines stand for its statement."""
    statement: Optional[cst.CSTNode] = report.statement
    if isinstance(statement, cst.BaseCompoundStatement) and \
            rng.start.line not in _lines(statement, positions, positions[statement]):
        return None
    return statement


def _lines(node: cst.CSTNode, positions: Any, where: Any) -> list[int]:
    """Every line `node` spans; a compound statement's header lines only."""
    if not isinstance(node, cst.BaseCompoundStatement):
        return list(range(where.start.line, where.end.line + 1))
    first, last = where.start.line, where.start.line
    decorators = getattr(node, "decorators", ())
    if decorators and decorators[0] in positions:
        first = positions[decorators[0]].start.line
    edges = _header_edges(node)
    if edges and edges[-1] in positions:
        last = max(last, positions[edges[-1]].start.line)
    return list(range(first, last + 1))


def _header_edges(node: cst.CSTNode) -> list[cst.CSTNode]:
    """The nodes whose positions bound a compound statement's header: its first
    decorator, and what follows its colon (the rest of that line)."""
    if not isinstance(node, cst.BaseCompoundStatement):
        return []
    edges: list[cst.CSTNode] = list(getattr(node, "decorators", ()))[:1]
    body = getattr(node, "body", None)  # `match` has cases instead: its first line
    if isinstance(body, cst.IndentedBlock):
        edges.append(body.header)  # the comment and newline after the colon
    elif isinstance(body, cst.SimpleStatementSuite):
        edges.append(body)
    return edges


# A rule's `visit_<Node>` or `leave_<Node>` method, with its rule.
_Handler = tuple[Rule, Callable[[cst.CSTNode], object]]
# The `visit_` and `leave_` handlers for one type of node, and the scope stacks it goes on:
# `scope.statements`, `.classes`, `.functions`; each only ever gets nodes of its own type.
_Plan = tuple[Optional[list[_Handler]], Optional[list[_Handler]], tuple[list[Any], ...]]


class _Dispatcher:
    """One traversal for all rules. Keeps the scope stacks every rule sees, and turns a
    rule that raises into an internal-error finding without stopping the others.

    Uses the fast read-only walk (`retainlint.analysis.walk`); rules still write libcst-style
    `visit_<Node>` / `leave_<Node>` methods, and children come in field order."""

    def __init__(self, ctx: FileContext, rules: list[Rule], crashes: list[Finding]) -> None:
        self.ctx = ctx
        self.crashes = crashes
        self.visits: dict[str, list[_Handler]] = {}
        self.leaves: dict[str, list[_Handler]] = {}
        for rule in rules:
            for attr in dir(type(rule)):
                if attr.startswith("visit_") or attr.startswith("leave_"):
                    table = self.visits if attr[0] == "v" else self.leaves
                    table.setdefault(attr.split("_", 1)[1], []).append((rule, getattr(rule, attr)))
        self.dead: set[int] = set()
        self.plans: dict[type[cst.CSTNode], _Plan] = {}

    def _call(self, handlers: list[_Handler], node: cst.CSTNode) -> None:
        for rule, method in handlers:
            if id(rule) in self.dead:
                continue
            try:
                method(node)
            except RecursionError:
                raise
            except Exception as e:
                self.dead.add(id(rule))
                self.crashes.append(_crash(self.ctx.path, rule, e))

    def walk(self, node: cst.CSTNode) -> None:
        plan = self.plans.get(type(node)) or self._plan(type(node))
        visits, leaves, stacks = plan
        for stack in stacks:
            stack.append(node)
        if visits:
            self._call(visits, node)
        for child in children(node):
            self.walk(child)
        if leaves:
            self._call(leaves, node)
        for stack in stacks:
            stack.pop()

    def _plan(self, kind: type[cst.CSTNode]) -> _Plan:
        """What visiting a node of this type involves: the rules' `visit_` and `leave_`
        handlers, and the scope stacks it goes on (worked out once per type)."""
        scope = self.ctx.scope
        stacks: list[list[Any]] = []
        if issubclass(kind, _STATEMENT_TYPES):
            stacks.append(scope.statements)
            if kind is cst.ClassDef:
                stacks.append(scope.classes)
            elif kind is cst.FunctionDef:
                stacks.append(scope.functions)
        plan = self.plans[kind] = (self.visits.get(kind.__name__), self.leaves.get(kind.__name__),
                                   tuple(stacks))
        return plan


def _crash(path: str, rule: Any, error: Exception) -> Finding:
    """A rule that raised: an internal-error finding instead of a stopped run."""
    where = traceback.extract_tb(error.__traceback__)[-1]
    return Finding(
        code=INTERNAL_ERROR[0],
        name=INTERNAL_ERROR[1],
        message=(f"internal error in rule {rule.code} ({rule.name}): "
                 f"{type(error).__name__}: {error} (at {where.name}:{where.lineno}); please report it"),
        path=path, start=Position(1, 1), end=Position(1, 1), severity=Severity.ERROR)
