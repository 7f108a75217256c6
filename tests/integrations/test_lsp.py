"""`retainlint server`, driven by a real LSP client (pygls') over stdio: diagnostics on
open and save, a safe fix as a quick fix whose edits fix the file, hover with the rule's
documentation, a clean shutdown."""

import asyncio
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

from lsprotocol import types
from markdown_it import MarkdownIt
from pygls.lsp.client import BaseLanguageClient

from conftest import BUGGY, BUGGY_SAFE_FIX, CLEAN, SAFE_FIX_LINE

CROSS = Path(__file__).resolve().parents[2] / "fixtures" / "RL101" / "cross_file"


def apply_edits(text, edits):
    """Apply LSP text edits (0-based lines and characters) to `text`, last first."""
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def at(p):
        return offsets[p.line] + p.character if p.line < len(lines) else offsets[-1]

    for e in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        text = text[:at(e.range.start)] + e.new_text + text[at(e.range.end):]
    return text


async def session(workdir, steps):
    client = BaseLanguageClient("test-client", "1")
    published = asyncio.Queue()

    @client.feature(types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def diagnostics(params):
        published.put_nowait(params)

    await client.start_io(sys.executable, "-m", "retainlint", "server", cwd=str(workdir))
    try:
        await asyncio.wait_for(client.initialize_async(types.InitializeParams(
            capabilities=types.ClientCapabilities(), root_uri=workdir.as_uri())), 60)
        client.initialized(types.InitializedParams())
        return await steps(client, published)
    finally:
        await asyncio.wait_for(client.shutdown_async(None), 60)
        client.exit(None)
        await asyncio.wait_for(client.stop(), 60)


def opened(client, path, text, version=1):
    client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
        uri=path.as_uri(), language_id="python", version=version, text=text)))


def test_diagnostics_quick_fix_and_hover(tmp_path):
    work = tmp_path / "proj"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    path = work / "registry.py"
    path.write_text(CLEAN)  # the editor's buffer, not the saved file, is what is checked
    unsafe = work / "wrapper.py"  # RL501: its fix is unsafe, so no quick fix is offered

    async def actions_for(client, diagnostics):
        return await asyncio.wait_for(client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(diagnostics.uri),
                range=diagnostics.diagnostics[0].range,
                context=types.CodeActionContext(diagnostics=diagnostics.diagnostics))), 60)

    async def steps(client, published):
        opened(client, path, BUGGY_SAFE_FIX)
        first = await asyncio.wait_for(published.get(), 120)
        actions = await actions_for(client, first)
        hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(path.as_uri()), types.Position(2, 3))), 60)
        opened(client, unsafe, BUGGY)
        second = await asyncio.wait_for(published.get(), 120)
        return first, actions, hover, second, await actions_for(client, second)

    first, actions, hover, second, unsafe_actions = asyncio.run(session(work, steps))
    assert first.uri == path.as_uri()
    [d] = first.diagnostics
    assert (d.code, d.source, d.severity) == ("RL301", "retainlint", types.DiagnosticSeverity.Error)
    assert (d.range.start.line, d.range.start.character) == (2, 0)  # line 3, column 1
    [action] = actions
    assert action.kind == types.CodeActionKind.QuickFix and "RL301" in action.title
    fixed = apply_edits(BUGGY_SAFE_FIX, action.edit.changes[path.as_uri()])
    assert SAFE_FIX_LINE in fixed.splitlines() and "import weakref" in fixed.splitlines()
    compile(fixed, "registry.py", "exec")
    assert "Why it leaks" in hover.contents.value and "strong-module-keyed-cache" in hover.contents.value
    assert second.uri == unsafe.as_uri() and [d.code for d in second.diagnostics] == ["RL501"]
    assert not unsafe_actions, unsafe_actions  # a click must not change behaviour


def test_cross_file_finding_and_save(tmp_path):
    work = tmp_path / "proj"
    shutil.copytree(CROSS, work)
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    runner = work / "app" / "runner.py"
    source = runner.read_text()

    async def steps(client, published):
        opened(client, runner, source)
        first = await asyncio.wait_for(published.get(), 120)
        # Saved without the bound methods: the diagnostics go.
        clean = source.replace("model.forward", "model")
        client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(version=2, uri=runner.as_uri()),
            [types.TextDocumentContentChangeWholeDocument(text=clean)]))
        runner.write_text(clean)
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(runner.as_uri())))
        second = await asyncio.wait_for(published.get(), 120)
        return first, second

    first, second = asyncio.run(session(work, steps))
    # The cached function is in another file: the server sees the whole project.
    assert [(d.code, d.range.start.line + 1) for d in first.diagnostics] == [("RL101", 9), ("RL101", 10)]
    assert list(second.diagnostics) == []


def test_a_save_of_a_document_that_is_not_open_reads_nothing(tmp_path):
    """Only what the client has open is checked: a file merely saved (a link to a device,
    a file the editor never showed) is not read from disk."""
    work = tmp_path / "proj"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    unopened = work / "unopened.py"
    unopened.write_text(BUGGY)
    path = work / "wrapper.py"
    path.write_text(BUGGY)

    async def steps(client, published):
        client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(unopened.as_uri())))
        opened(client, path, BUGGY)
        return await asyncio.wait_for(published.get(), 120)

    first = asyncio.run(session(work, steps))
    assert first.uri == path.as_uri()  # nothing was published for the unopened file
    assert [d.code for d in first.diagnostics] == ["RL501"]


def _frame(body: bytes) -> bytes:
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def _request(id_, method, params=None) -> bytes:
    return _frame(json.dumps({"jsonrpc": "2.0", "id": id_, "method": method,
                              "params": params if params is not None else {}}).encode())


def _answers(proc, wanted: set, limit=120.0) -> dict:
    """The JSON-RPC messages the server writes, by id, until every id in `wanted` came."""
    found: dict = {}
    buffer = b""
    deadline = time.monotonic() + limit
    while not wanted <= set(found) and time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.5)
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 1 << 16)
        if not chunk:
            break
        buffer += chunk
        while b"\r\n\r\n" in buffer:
            head, rest = buffer.split(b"\r\n\r\n", 1)
            length = int(re.search(rb"Content-Length: (\d+)", head).group(1))
            if len(rest) < length:
                break
            message, buffer = json.loads(rest[:length]), rest[length:]
            if "id" in message and "method" not in message:
                found.setdefault(message["id"], []).append(message)
    return found


def test_malformed_messages_are_answered_and_the_server_keeps_serving(tmp_path):
    """JSON-RPC: a body that is not JSON gets a parse error (id null), a message that is
    not a request an invalid-request error; a header block without a usable
    Content-Length is skipped up to the next message. Requests after each are answered."""
    proc = subprocess.Popen([sys.executable, "-m", "retainlint", "server"], cwd=tmp_path,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        proc.stdin.write(_request(1, "initialize", {"capabilities": {},
                                                    "rootUri": tmp_path.as_uri()}))
        proc.stdin.write(_frame(b'{"jsonrpc": "2.0", "method": "initialized", "params": {}}'))
        proc.stdin.write(_frame(b"{not json"))
        proc.stdin.write(_request(2, "shutdown_probe_unknown"))
        proc.stdin.write(_frame(b"[1, 2]"))
        proc.stdin.write(b"Content-Length: abc\r\n\r\n{}")  # no usable length
        proc.stdin.write(_request(3, "textDocument/hover", {
            "textDocument": {"uri": (tmp_path / "x.py").as_uri()},
            "position": {"line": 0, "character": 0}}))
        proc.stdin.write(b"Content-Type: application/json\r\n\r\n{}")  # no length at all
        proc.stdin.write(_request(4, "shutdown", None))
        proc.stdin.flush()
        found = _answers(proc, {None, 1, 2, 3, 4})
    finally:
        proc.kill()
        proc.wait()
    errors = sorted(m["error"]["code"] for m in found.get(None, []))
    assert errors == [-32700, -32600], found.get(None)  # parse error, invalid request
    assert found[2][0]["error"]["code"] == -32601  # method not found: answered, not dropped
    assert found[3][0]["result"] is None  # a hover where nothing was found
    assert found[4][0]["result"] is None  # shutdown answered: still serving


def test_hover_quotes_checked_code_in_a_code_span_it_cannot_close(tmp_path):
    work = tmp_path / "proj"
    work.mkdir()
    subprocess.run(["git", "init", "-q"], cwd=work, check=True)
    path = work / "tags.py"
    source = ("import weakref\n\n_meta = weakref.WeakKeyDictionary()\n\n\ndef tag(obj):\n"
              "    _meta[obj] = {\"owner\": obj, \"note\": "
              "\"`[click](http://evil.example)<img src=x>`\"}\n")

    async def steps(client, published):
        opened(client, path, source)
        first = await asyncio.wait_for(published.get(), 120)
        d = first.diagnostics[0]
        return d, await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(path.as_uri()), d.range.start)), 60)

    d, hover = asyncio.run(session(work, steps))
    assert d.code == "RL304" and "evil.example" in d.message
    html = MarkdownIt("commonmark").render(hover.contents.value)
    assert "<a " not in html and "<img" not in html, html
    assert "[click](http://evil.example)" in html  # shown as it is written, as code
