"""A workspace whose path has a space, non-ASCII letters and ``#``, over LSP.

Editors percent-encode such paths in URIs (``file:///…/my%20proj%20%C3%BCn%C3%AF%20%231/…``), some
with lower-case hex digits, and a hand-made client may send them raw. Every feature must work
whatever the spelling: the turn (cursor, selection, context lines, then a delta after an edit and
a cursor move), diagnostics, hover, links and lenses on memory files open in the editor, and the
discovery file of ``serve --tcp``. The bridges: tests/gemini/test_companion_lsp.py,
tests/lsp/test_claude_code.py, tests/mcp/test_mcp_attach.py; the CLI: test_cli_matches_server.py.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import pytest
from lsprotocol import types as t

FOLDER = "my proj ünï #1"
NO_ENV = {"environment": {"placement": "off"}}


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / FOLDER
    ws.mkdir()
    return ws


def spell(path: Path, style: str) -> str:
    """The URI of ``path`` as a client of that style sends it."""
    if style == "vscode":  # every byte but unreserved ones and '/' encoded, upper-case hex
        return path.as_uri()
    if style == "lower-hex":
        return re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), path.as_uri())
    assert style == "raw"  # nothing encoded at all
    return "file://" + str(path)


STYLES = ["vscode", "lower-hex", "raw"]


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def did_open(h, uri: str, text: str, language: str = "plaintext") -> None:
    h.client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=uri, language_id=language, version=1, text=text)
        )
    )


async def settle() -> None:
    await asyncio.sleep(0.3)


@pytest.mark.parametrize("style", STYLES)
async def test_the_turn_has_the_cursor_selection_and_context_lines_then_a_delta_after_an_edit(start, workspace, style):
    text = "import json\n\ndef handler(request):\n    return json.dumps({})\n"
    write(workspace / "api" / "x.py", text)
    write(workspace / "web" / "y.py", "print('web')\n")
    h = await start(workspace, settings={**NO_ENV, "context": {"cursorContextLines": 1}})
    x, y = spell(workspace / "api" / "x.py", style), spell(workspace / "web" / "y.py", style)
    did_open(h, y, "print('web')\n")
    did_open(h, x, text)
    h.cursor(x, 2, 4, [(2, 0, 2, 3)])
    await settle()
    full = await h.command("contextCompanion.getTurnContext", {})
    assert full["kind"] == "full"
    assert full["context"] == {
        "activeFile": {
            "path": str(workspace / "api" / "x.py"),
            "cursor": {"line": 3, "character": 5},
            "selectedText": "def",
            "contextLines": {
                "startLine": 2,
                "endLine": 4,
                "text": "\ndef handler(request):\n    return json.dumps({})",
            },
        },
        "otherOpenFiles": [str(workspace / "web" / "y.py")],
    }

    # An edit (a line inserted at the top), then the cursor moves down with it.
    h.client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=x, version=2),
            content_changes=[
                t.TextDocumentContentChangePartial(
                    range=t.Range(start=t.Position(line=0, character=0), end=t.Position(line=0, character=0)),
                    text="import os\n",
                )
            ],
        )
    )
    h.cursor(x, 3, 4, [(3, 4, 3, 11)])
    await settle()
    delta = await h.command("contextCompanion.getTurnContext", {})
    assert delta["kind"] == "delta"
    path = str(workspace / "api" / "x.py")
    assert delta["context"]["changes"] == {
        "cursorMoved": {
            "path": path,
            "cursor": {"line": 4, "character": 5},
            "contextLines": {
                "startLine": 3,
                "endLine": 5,
                "text": "\ndef handler(request):\n    return json.dumps({})",
            },
        },
        "selectionChanged": {"path": path, "selectedText": "handler"},
    }


@pytest.mark.parametrize("style", STYLES)
async def test_memory_files_open_in_the_editor_get_diagnostics_hover_links_and_a_lens(start, workspace, style):
    write(workspace / "docs" / "style.md", "Prefer small functions.\n")
    text = "# Rules\nSee @docs/style.md and @missing.md.\n"
    write(workspace / "AGENTS.md", text)
    h = await start(workspace, settings=NO_ENV)
    uri = spell(workspace / "AGENTS.md", style)
    did_open(h, uri, text, "markdown")
    published = workspace.joinpath("AGENTS.md").as_uri()  # the server answers in the one spelling
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while published not in h.client.diagnostics:
        assert loop.time() < end, f"no diagnostics; published for {list(h.client.diagnostics)}"
        await asyncio.sleep(0.05)
    diags = h.client.diagnostics[published]
    assert [(d.code, d.range.start.line) for d in diags] == [("import-not-found", 1)]
    assert str(workspace / "missing.md") in diags[0].message

    doc = t.TextDocumentIdentifier(uri=uri)
    links = await h.client.text_document_document_link_async(t.DocumentLinkParams(text_document=doc))
    assert [link.target for link in links] == [(workspace / "docs" / "style.md").as_uri()]
    col = text.splitlines()[1].index("@docs") + 2
    hover = await h.client.text_document_hover_async(
        t.HoverParams(text_document=doc, position=t.Position(line=1, character=col))
    )
    assert hover is not None and "style.md" in hover.contents.value
    lenses = await h.client.text_document_code_lens_async(t.CodeLensParams(text_document=doc))
    assert len(lenses) == 1 and "tokens · included:" in lenses[0].command.title

    # An edit that fixes the import clears the diagnostic (the edit reached the same document).
    h.client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[t.TextDocumentContentChangeWholeDocument(text="# Rules\nSee @docs/style.md.\n")],
        )
    )
    end = loop.time() + 10
    while h.client.diagnostics[published]:
        assert loop.time() < end, "the diagnostic stayed after the edit"
        await asyncio.sleep(0.05)
    h.client.text_document_did_close(t.DidCloseTextDocumentParams(text_document=doc))
    await settle()
    shown = await h.command("contextCompanion.getTurnContext", {"forceFull": True})
    assert shown["context"] == {"otherOpenFiles": []}  # closed under any spelling


async def test_a_cursor_in_a_document_never_opened_is_told_once_in_the_log(start, workspace, capfd):
    """The lost editor state was silent: nothing in the log said the cursor named a document the server
    did not have. Now one line names the URI, once however often the cursor moves there."""
    write(workspace / "x.py", "a = 1\n")
    h = await start(workspace, settings=NO_ENV)
    stray = (workspace / "never opened.py").as_uri()
    for column in range(3):
        h.cursor(stray, 0, column)
    turn = await h.command("contextCompanion.getTurnContext", {"sessionId": "s"})
    assert turn["context"]["activeFile"] == {"path": str(workspace / "never opened.py")}
    told = [line for line in capfd.readouterr().err.splitlines() if "not an open document" in line]
    assert len(told) == 1 and stray in told[0], told
