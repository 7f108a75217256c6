"""`retainlint server`, driven by a real LSP client (pygls') over stdio: diagnostics on
open and save, a safe fix as a quick fix whose edits fix the file, hover with the rule's
documentation, a clean shutdown."""

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

from lsprotocol import types
from pygls.lsp.client import BaseLanguageClient

from conftest import BUGGY, CLEAN

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
    path = work / "wrapper.py"
    path.write_text(CLEAN)  # the editor's buffer, not the saved file, is what is checked

    async def steps(client, published):
        opened(client, path, BUGGY)
        first = await asyncio.wait_for(published.get(), 120)
        actions = await asyncio.wait_for(client.text_document_code_action_async(
            types.CodeActionParams(
                text_document=types.TextDocumentIdentifier(path.as_uri()),
                range=first.diagnostics[0].range,
                context=types.CodeActionContext(diagnostics=first.diagnostics))), 60)
        hover = await asyncio.wait_for(client.text_document_hover_async(types.HoverParams(
            types.TextDocumentIdentifier(path.as_uri()), types.Position(6, 12))), 60)
        return first, actions, hover

    first, actions, hover = asyncio.run(session(work, steps))
    assert first.uri == path.as_uri()
    [d] = first.diagnostics
    assert (d.code, d.source, d.severity) == ("RL501", "retainlint", types.DiagnosticSeverity.Error)
    assert (d.range.start.line, d.range.start.character) == (6, 8)  # line 7, column 9
    [action] = actions
    assert action.kind == types.CodeActionKind.QuickFix and "RL501" in action.title
    fixed = apply_edits(BUGGY, action.edit.changes[path.as_uri()])
    assert "self._bytecode_hook_handle = " in fixed and ".remove()" in fixed
    compile(fixed, "wrapper.py", "exec")
    assert "Why it leaks" in hover.contents.value and "discarded-hook-handle" in hover.contents.value


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
