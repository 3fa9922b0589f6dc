"""Every rule format through the language server: activation per open file, duplicates, explainMemory."""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException
from rule_formats_repo import make_repo
from test_language_features import wait_diagnostics

NO_ENV = {"environment": {"placement": "off"}}


def _files(result):
    return {f["path"]: f for f in result["files"]}


async def test_formats_follow_open_files_and_duplicates_show_once(start, tmp_path):
    ws = make_repo(tmp_path / "repo")
    h = await start(ws, settings=NO_ENV)
    first = _files(await h.command("contextCompanion.showMemory", {}))
    assert first["AGENTS.override.md"]["included"] and not first["AGENTS.md"]["included"]
    assert not first[".kiro/steering/py.md"]["included"]
    assert first[".windsurf/rules/always.md"]["duplicateOf"] == ".cursor/rules/gen.mdc"

    h.open("pkg/mod.py", "import os\n", "python")
    h.open("src/db.sql", "SELECT 1;\n", "sql")
    shown = await h.command("contextCompanion.showMemory", {})
    files = _files(shown)
    for path in (
        ".kiro/steering/py.md",
        ".clinerules/02-py.md",
        "pkg/.cursor/rules/pkg.mdc",
        "pkg/.windsurf/rules/pkg.md",
        ".continue/rules/sql.md",
        ".github/instructions/py.instructions.md",
    ):
        assert files[path]["included"], path
    assert files[".continue/rules/sql.md"]["reason"] == "rule: regex '^SELECT' matches the text of src/db.sql"
    assert shown["text"].count("Use tabs, never spaces.") == 1

    # The copy gets a hint; the Continue rule without a name gets a warning and still counts.
    copy = h.open(".clinerules/01-all.md", "Use tabs, never spaces.\n", "markdown")
    hint = await wait_diagnostics(h, copy)
    assert [(d.code, d.severity) for d in hint] == [("duplicate-rule", 4)]
    assert ".cursor/rules/gen.mdc" in hint[0].message
    noname = h.open(".continue/rules/noname.md", None, "markdown")
    assert [d.code for d in await wait_diagnostics(h, noname)] == ["frontmatter-missing-name"]


@pytest.mark.parametrize(
    ("agent", "expected"),
    [
        ("codex", ["AGENTS.override.md"]),
        ("gemini-cli", ["GEMINI.md"]),
        ("zed", [".rules"]),
        ("claude-code", ["CLAUDE.md", "pkg/CLAUDE.md", ".claude/rules/any-py.md"]),
        ("kiro", ["AGENTS.md", ".kiro/steering/py.md", ".kiro/steering/tech.md"]),
        ("continue", ["AGENTS.md", ".continue/rules/always.md", ".continue/rules/noname.md"]),
        ("vscode", ["AGENTS.md", "CLAUDE.md", ".github/copilot-instructions.md"]),
    ],
)
async def test_explain_memory_per_agent(start, tmp_path, agent, expected):
    ws = make_repo(tmp_path / "repo")
    h = await start(ws, settings=NO_ENV)
    result = await h.command("contextCompanion.explainMemory", {"agent": agent, "activeFile": "pkg/mod.py"})
    assert result["agent"] == agent and result["docs"][0].startswith("https://")
    assert [f["path"] for f in result["files"]] == expected
    assert result["tokens"] == sum(f["tokens"] for f in result["files"]) > 0


async def test_explain_memory_rejects_an_unknown_agent_and_takes_the_short_names(start, tmp_path):
    h = await start(make_repo(tmp_path / "repo"), settings=NO_ENV)
    for short, agent in (("claude", "claude-code"), ("Gemini", "gemini-cli")):
        result = await h.command("contextCompanion.explainMemory", {"agent": short})
        assert result["agent"] == agent
    with pytest.raises(JsonRpcException) as info:
        await h.command("contextCompanion.explainMemory", {"agent": "vim"})
    assert info.value.code == -32602
    assert "agent" in info.value.message and "'claude-code'" in info.value.message
