"""`retainlint server`: a language server over stdio (pygls). On open and save a document
is checked as `check --stdin-filename` checks a buffer - within its project, the rest of
the project read from the summary cache - and its findings at the config's `min-severity`
or above (info findings only when it asks for them) published as diagnostics; a
safe fix is offered as a quick fix (code action); hovering a finding shows its rule's
documentation."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import sys
from threading import Event
from typing import BinaryIO, Optional

from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdinAsyncReader, StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path

from retainlint import __version__
from retainlint.core.errors import ConfigError
from retainlint.core.finding import Applicability, Finding, Severity
from retainlint.engine.cache import default_cache_dir
from retainlint.engine.projects import Overrides, project_of
from retainlint.engine.registry import all_rules
from retainlint.engine.runner import Mode
from retainlint.output.escape import code_span

log = logging.getLogger("retainlint.server")

# A message longer than this is skipped unread: the biggest buffer worth checking is a
# few times the size cap of a source file, escaped as JSON.
MAX_MESSAGE_BYTES = 64 << 20
_CONTENT_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r?\n?$", re.IGNORECASE)

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
        # Only a document the client has open, from its buffer: `get_text_document` would
        # read any other from disk (a save notification can name a link to a device).
        if path is None or uri not in self.workspace.text_documents:
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
        # As `check` shows them: the levels below the config's `min-severity` (info, by
        # default) are left out, quick fixes and hovers included.
        floor = project.settings.min_severity.rank
        findings = [f for f in findings if f.severity.rank <= floor]
        self.findings[uri] = findings
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, version=document.version, diagnostics=[
                types.Diagnostic(range=_finding_range(f), message=f.message, source="retainlint",
                                 code=f.code, severity=_SEVERITY.get(f.severity))
                for f in findings]))


    def start_io(self, stdin: Optional[BinaryIO] = None, stdout: Optional[BinaryIO] = None) -> None:
        """Serve over stdio until the client exits, answering malformed messages as
        JSON-RPC says rather than stopping (see `_serve`)."""
        self._stop_event = Event()
        writer = StdoutWriter(stdout or sys.stdout.buffer)
        self.protocol.set_writer(writer)
        try:
            asyncio.run(self._serve(StdinAsyncReader(stdin or sys.stdin.buffer, self.thread_pool),
                                    writer))
        except BrokenPipeError:
            log.error("the client is gone")
        except (KeyboardInterrupt, SystemExit):
            pass
        finally:
            self.shutdown()  # type: ignore[no-untyped-call]

    async def _serve(self, reader: StdinAsyncReader, writer: StdoutWriter) -> None:
        """Read framed messages and hand them to the protocol. A body that is not JSON is
        answered with a parse error, JSON that is not a message with an invalid-request
        error (id null, as JSON-RPC 2.0 says); a header block without a usable
        Content-Length is skipped up to the next header, even one run into the bytes
        before it; a message past `MAX_MESSAGE_BYTES` is skipped unread."""
        assert self._stop_event is not None
        while not self._stop_event.is_set():
            length, ended = await _header_block(reader)
            if ended:
                return
            if length is None:
                continue
            if length > MAX_MESSAGE_BYTES:
                log.error("message of %d bytes skipped", length)
                if not await _skip(reader, length):
                    return
                continue
            body = await reader.readexactly(length)
            if len(body) < length:
                return
            try:
                message = json.loads(body, object_hook=self.protocol.structure_message)
            except (ValueError, RecursionError):  # not JSON, not UTF-8, nested too deeply
                _send_error(writer, -32700, "Parse error")
                continue
            if not hasattr(message, "jsonrpc"):
                _send_error(writer, -32600, "Invalid Request")
                continue
            try:
                self.protocol.handle_message(message)
            except Exception as e:  # noqa: BLE001 - one message's failure is not the server's end
                log.exception("message not handled")
                self.report_server_error(e, JsonRpcException)


async def _header_block(reader: StdinAsyncReader) -> tuple[Optional[int], bool]:
    """The Content-Length of the next header block (None: none usable), and whether the
    input ended."""
    length: Optional[int] = None
    while True:
        line = await reader.readline()
        if not line:
            return None, True
        if not line.strip():
            return length, False
        at = line.find(b"Content-Length:")
        if at < 0:
            continue  # another header, or the rest of a body that could not be read
        if at > 0:
            length = None  # a header run into garbage: a new block starts here
        m = _CONTENT_LENGTH.match(line, at)
        length = int(m.group(1)) if m else None


async def _skip(reader: StdinAsyncReader, length: int) -> bool:
    while length > 0:
        chunk = await reader.readexactly(min(length, 1 << 20))
        if not chunk:
            return False
        length -= len(chunk)
    return True


def _send_error(writer: StdoutWriter, code: int, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": code, "message": message}}).encode()
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


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
                    # the message quotes checked code: a span it cannot close
                    value=f"**{rule.code} {rule.name}**: {code_span(f.message)}\n\n{rule.docs.strip()}"),
                    range=_finding_range(f))
        return None

    return server


def serve() -> None:
    make_server().start_io()
