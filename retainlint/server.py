"""`retainlint server`: a language server over stdio (pygls). On open and save a document
is checked as `check --stdin-filename` checks a buffer - within its project, the rest of
the project read from the summary cache - and its findings published as diagnostics; a
safe fix is offered as a quick fix (code action); hovering a finding shows its rule's
documentation."""

from __future__ import annotations

import os
from typing import Optional

from lsprotocol import types
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from retainlint import __version__
from retainlint.core.errors import ConfigError
from retainlint.core.finding import Applicability, Finding, Severity
from retainlint.engine.cache import default_cache_dir
from retainlint.engine.projects import Overrides, project_of
from retainlint.engine.registry import all_rules
from retainlint.engine.runner import Mode

_SEVERITY = {Severity.ERROR: types.DiagnosticSeverity.Error,
             Severity.WARNING: types.DiagnosticSeverity.Warning,
             Severity.INFO: types.DiagnosticSeverity.Information}


def _range(start_line: int, start_column: int, end_line: int, end_column: int) -> types.Range:
    """1-based lines and columns (ours) as a 0-based LSP range."""
    return types.Range(types.Position(max(start_line - 1, 0), max(start_column - 1, 0)),
                       types.Position(max(end_line - 1, 0), max(end_column - 1, 0)))


def _finding_range(f: Finding) -> types.Range:
    return _range(f.start.line, f.start.column, f.end.line, f.end.column)


def _contains(r: types.Range, p: types.Position) -> bool:
    return (r.start.line, r.start.character) <= (p.line, p.character) <= (r.end.line, r.end.character)


class RetainlintServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("retainlint", __version__,
                         text_document_sync_kind=types.TextDocumentSyncKind.Full)
        self.findings: dict[str, list[Finding]] = {}  # uri -> the last check's findings

    def check(self, uri: str) -> None:
        from retainlint.engine.stdin import check_source

        path = to_fs_path(uri)
        if path is None:
            return
        document = self.workspace.get_text_document(uri)
        try:
            project = project_of(os.path.relpath(path), Overrides())
        except ConfigError as e:
            self.window_show_message(types.ShowMessageParams(types.MessageType.Error, str(e)))
            return
        findings, _, _ = check_source(
            project.files[0], document.source.encode("utf-8", "surrogateescape"), project.codes,
            project.settings, Mode(edits=True), project.context,
            default_cache_dir(project.settings.root))
        self.findings[uri] = findings
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=document.version, diagnostics=[
                types.Diagnostic(range=_finding_range(f), message=f.message, source="retainlint",
                                 code=f.code, severity=_SEVERITY.get(f.severity))
                for f in findings]))


def make_server() -> RetainlintServer:
    server = RetainlintServer()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: RetainlintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.check(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: RetainlintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.check(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: RetainlintServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.findings.pop(params.text_document.uri, None)
        ls.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION,
                    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]))
    def code_action(ls: RetainlintServer, params: types.CodeActionParams) -> list[types.CodeAction]:
        uri = params.text_document.uri
        actions = []
        for f in ls.findings.get(uri, []):
            fix = f.fix
            if fix is None or fix.applicability is not Applicability.SAFE or not fix.edits:
                continue  # only safe fixes: a click must not change behaviour
            where = _finding_range(f)
            if not (_contains(params.range, where.start) or _contains(where, params.range.start)):
                continue
            edits = [types.TextEdit(_range(s.line, s.column, e.line, e.column), content)
                     for s, e, content in fix.edits]
            actions.append(types.CodeAction(
                title=f"{fix.message} ({f.code})", kind=types.CodeActionKind.QuickFix,
                edit=types.WorkspaceEdit(changes={uri: edits}), is_preferred=True))
        return actions

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    def hover(ls: RetainlintServer, params: types.HoverParams) -> Optional[types.Hover]:
        rules = {r.code: r for r in all_rules()}
        for f in ls.findings.get(params.text_document.uri, []):
            rule = rules.get(f.code)
            if rule is not None and _contains(_finding_range(f), params.position):
                return types.Hover(contents=types.MarkupContent(
                    kind=types.MarkupKind.Markdown,
                    value=f"**{rule.code} {rule.name}**: {f.message}\n\n{rule.docs.strip()}"),
                    range=_finding_range(f))
        return None

    return server


def serve() -> None:
    make_server().start_io()
