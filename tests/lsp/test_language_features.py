"""Diagnostics, document links, hover and code lens on memory and rule files, over LSP."""

from __future__ import annotations

import asyncio

from lsprotocol import types as t

NO_ENV = {"environment": {"placement": "off"}}


async def wait_diagnostics(h, uri: str, timeout: float = 10.0):
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while uri not in h.client.diagnostics:
        if loop.time() > end:
            raise AssertionError(f"no diagnostics for {uri}")
        await asyncio.sleep(0.05)
    return h.client.diagnostics[uri]


async def test_import_diagnostics_links_hover_and_lens(start, workspace):
    (workspace / "docs").mkdir()
    (workspace / "docs" / "style.md").write_text("Prefer small functions.\n")
    text = "# Rules\nSee @docs/style.md and @missing.md.\n"
    (workspace / "AGENTS.md").write_text(text)
    h = await start(workspace, settings=NO_ENV)
    uri = h.open("AGENTS.md", text, "markdown")
    diags = await wait_diagnostics(h, uri)
    assert len(diags) == 1
    d = diags[0]
    assert d.code == "import-not-found" and "missing.md" in d.message
    assert d.range.start.line == 1 and d.range.start.character == text.splitlines()[1].index("@missing.md")

    links = await h.client.text_document_document_link_async(
        t.DocumentLinkParams(text_document=t.TextDocumentIdentifier(uri=uri))
    )
    assert [l.target for l in links] == [(workspace / "docs" / "style.md").as_uri()]
    col = text.splitlines()[1].index("@docs") + 2
    hover = await h.client.text_document_hover_async(
        t.HoverParams(text_document=t.TextDocumentIdentifier(uri=uri), position=t.Position(line=1, character=col))
    )
    assert hover is not None and "style.md" in hover.contents.value and "token" in hover.contents.value
    lenses = await h.client.text_document_code_lens_async(
        t.CodeLensParams(text_document=t.TextDocumentIdentifier(uri=uri))
    )
    assert len(lenses) == 1 and lenses[0].range.start.line == 0
    assert "tokens · included:" in lenses[0].command.title


async def test_creating_the_missing_import_clears_the_diagnostic(start, workspace):
    text = "Read @later.md\n"
    (workspace / "AGENTS.md").write_text(text)
    h = await start(workspace, settings=NO_ENV)
    uri = h.open("AGENTS.md", text, "markdown")
    assert len(await wait_diagnostics(h, uri)) == 1
    (workspace / "later.md").write_text("now here\n")
    loop = asyncio.get_running_loop()
    end = loop.time() + 10
    while h.client.diagnostics[uri]:
        assert loop.time() < end, "diagnostic not cleared"
        await asyncio.sleep(0.05)


async def test_rule_frontmatter_errors_and_non_memory_files_get_nothing(start, workspace):
    rule = workspace / ".cursor" / "rules" / "py.mdc"
    rule.parent.mkdir(parents=True)
    text = "---\nglobs: [unclosed\n---\nBody\n"
    rule.write_text(text)
    (workspace / "main.py").write_text("x = 1\n")
    h = await start(workspace, settings=NO_ENV)
    uri = h.open(".cursor/rules/py.mdc", text, "markdown")
    diags = await wait_diagnostics(h, uri)
    assert diags and diags[0].code == "frontmatter-invalid"
    other = h.open("main.py", "x = 1\n", "python")
    links = await h.client.text_document_document_link_async(
        t.DocumentLinkParams(text_document=t.TextDocumentIdentifier(uri=other))
    )
    assert not links
    assert other not in h.client.diagnostics


async def test_an_import_that_only_repeats_an_included_file_gets_a_hint(start, workspace):
    (workspace / "AGENTS.md").write_text("Shared rules.\n")
    text = "# Claude\n@AGENTS.md\n"
    (workspace / "CLAUDE.md").write_text(text)
    h = await start(workspace, settings=NO_ENV)
    uri = h.open("CLAUDE.md", text, "markdown")
    diags = await wait_diagnostics(h, uri)
    assert [(d.severity, d.code, d.range.start.line) for d in diags] == [
        (t.DiagnosticSeverity.Hint, "import-repeated", 1)
    ]
    assert diags[0].message.startswith("Already included from AGENTS.md")
    shown = await h.command("contextCompanion.showMemory", {})
    claude = next(f for f in shown["files"] if f["path"] == "CLAUDE.md")
    assert claude["repeatedImports"] == [{"path": "AGENTS.md", "duplicateOf": "AGENTS.md"}]
    # Nothing but a heading is left once the repeated import is out: not a block of its own (issue 33: a title
    # alone reached agents as a block), and said so.
    assert claude["included"] is False and "only repeats AGENTS.md" in claude["reason"], claude
    instruction = await h.command("contextCompanion.getSystemInstruction", {})
    assert instruction["text"].count("Shared rules.") == 1 and "# Claude" not in instruction["text"]
    sections = {s["id"]: s["tokens"] for s in instruction["tokens"]["sections"]}
    assert shown["tokens"] == sections["memory"] > 0


async def test_npm_scopes_and_decorators_in_prose_get_no_diagnostic(start, workspace):
    text = "# Rules\nUse @cline/llms, not @types/node; see @pytest.fixture; ask @octocat.\nAlso @./gone.md\n"
    (workspace / "AGENTS.md").write_text(text)
    h = await start(workspace, settings=NO_ENV)
    uri = h.open("AGENTS.md", text, "markdown")
    diags = await wait_diagnostics(h, uri)
    assert [(d.code, d.range.start.line) for d in diags] == [("import-not-found", 2)]  # only the path
    shown = await h.command("contextCompanion.showMemory", {})
    assert shown["warnings"] == ["AGENTS.md: import ./gone.md failed: not found"]
    assert "Use @cline/llms, not @types/node; see @pytest.fixture; ask @octocat." in shown["text"]


async def test_requests_on_a_memory_file_the_editor_has_not_open_read_nothing_from_disk(start, workspace):
    import os

    (workspace / "AGENTS.md").write_text("Open one.\n")
    (workspace / "sub").mkdir()
    os.mkfifo(workspace / "sub" / "AGENTS.md")  # reading it would block the server until a writer came
    h = await start(workspace, settings=NO_ENV)
    await h.command("contextCompanion.getSystemInstruction", {})
    closed = t.TextDocumentIdentifier(uri=(workspace / "sub" / "AGENTS.md").as_uri())
    hover = h.client.text_document_hover_async(
        t.HoverParams(text_document=closed, position=t.Position(line=0, character=0))
    )
    assert await asyncio.wait_for(hover, 10) is None
    lens = await asyncio.wait_for(h.client.text_document_code_lens_async(t.CodeLensParams(text_document=closed)), 10)
    assert not lens
    links = t.DocumentLinkParams(text_document=closed)
    assert not await asyncio.wait_for(h.client.text_document_document_link_async(links), 10)
