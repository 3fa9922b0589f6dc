"""Every rule format through the language server: activation per open file, duplicates, explainMemory."""

from __future__ import annotations

import json

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


# Cursor rules organised in sub-folders of .cursor/rules, .md rules beside .mdc ones, and a
# .cursor/rules directory of a sub-directory (with a sub-folder of its own) that applies below it.
CURSOR_FOLDERS = {
    ".git/HEAD": "ref: refs/heads/main\n",
    "AGENTS.md": "ROOT AGENTS\n",
    ".cursor/rules/general.mdc": "---\nalwaysApply: true\n---\nCURSOR GENERAL\n",
    ".cursor/rules/frontend/react.mdc": "---\nglobs: web/**/*.tsx\n---\nCURSOR REACT\n",
    ".cursor/rules/frontend/components/button.md": "---\nglobs: web/**/*.tsx\n---\nCURSOR BUTTON\n",
    ".cursor/rules/backend/api.md": "# API\nCURSOR API, A PLAIN MARKDOWN RULE\n",
    ".cursor/rules/backend/db.mdc": "---\ndescription: Database migrations\n---\nCURSOR DB\n",
    "services/.cursor/rules/python/style.mdc": "---\nalwaysApply: true\n---\nSERVICES PY STYLE\n",
    "services/pay/main.py": "print()\n",
    "web/app.tsx": "export {}\n",
    "lib/util.py": "x = 1\n",
}
CURSOR_RULES = sorted(p for p in CURSOR_FOLDERS if ".cursor/rules/" in p)


def cursor_repo(root):
    for rel, text in CURSOR_FOLDERS.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


async def test_cursor_rules_in_sub_folders_are_read_listed_and_explained(start, tmp_path):
    ws = cursor_repo(tmp_path / "repo")
    h = await start(ws, settings=NO_ENV)
    files = _files(await h.command("contextCompanion.showMemory", {}))
    assert sorted(p for p in files if ".cursor/" in p) == CURSOR_RULES
    assert files[".cursor/rules/general.mdc"]["included"]
    assert files[".cursor/rules/backend/api.md"]["reason"].startswith("not included: no globs, alwaysApply")
    assert files[".cursor/rules/backend/db.mdc"]["reason"] == "not included: only a description (listed)"

    h.open("web/app.tsx", "export {}\n", "typescriptreact")
    files = _files(await h.command("contextCompanion.showMemory", {}))
    for rel in (".cursor/rules/frontend/react.mdc", ".cursor/rules/frontend/components/button.md"):
        assert files[rel]["included"] and files[rel]["reason"] == "rule: glob 'web/**/*.tsx' matches web/app.tsx"
    assert not files["services/.cursor/rules/python/style.mdc"]["included"]  # no file under services/ is open
    h.open("services/pay/main.py", "print()\n", "python")
    shown = await h.command("contextCompanion.showMemory", {})
    style = _files(shown)["services/.cursor/rules/python/style.mdc"]
    assert style["included"] and style["reason"] == "rule: services/pay/main.py is under services/"
    assert "SERVICES PY STYLE" in shown["text"] and "CURSOR BUTTON" in shown["text"]

    async def explain(agent):
        return await h.command("contextCompanion.explainMemory", {"agent": agent, "activeFile": "web/app.tsx"})

    cursor = await explain("cursor")
    assert [f["path"] for f in cursor["files"]] == [
        "AGENTS.md",
        ".cursor/rules/frontend/react.mdc",
        ".cursor/rules/general.mdc",
        "services/.cursor/rules/python/style.mdc",  # services/pay/main.py is open
        ".cursor/rules/frontend/components/button.md",
    ]
    assert [f["path"] for f in cursor["listed"]] == [".cursor/rules/backend/db.mdc"]
    # Cline reads Cursor's .mdc rules, in sub-folders too, but not its .md ones (its docs: ".mdc files").
    cline = await explain("cline")
    loaded = [f["path"] for f in cline["files"]]
    assert ".cursor/rules/frontend/react.mdc" in loaded and ".cursor/rules/frontend/components/button.md" not in loaded
    claude = await explain("claude-code")
    assert not [f for f in claude["files"] if ".cursor/" in f["path"]]
    assert {n["reason"] for n in claude["notLoaded"] if ".cursor/" in n["path"]} == {
        "Claude Code does not read .cursor/rules"
    }

    # A sub-folder of rules added while the server runs is read too.
    await h.command("contextCompanion.getSystemInstruction", {})  # a session, to be told of changes
    deploy = ws / ".cursor/rules/ops/deploy.mdc"
    deploy.parent.mkdir()
    deploy.write_text("---\nalwaysApply: true\n---\nCURSOR OPS DEPLOY\n", encoding="utf-8")
    pushed = await h.wait_push()
    assert ".cursor/rules/ops/deploy.mdc" in pushed[-1]["changedFiles"]
    assert _files(await h.command("contextCompanion.showMemory", {}))[".cursor/rules/ops/deploy.mdc"]["included"]


def test_the_cli_lists_and_explains_cursor_rules_in_sub_folders(tmp_path, config_dir):
    from test_cli_matches_server import cli

    ws = cursor_repo(tmp_path / "repo")
    listing = json.loads(
        cli(tmp_path, config_dir, "memory", "--workspace", str(ws), "--open", "web/app.tsx", "--json").stdout
    )
    shown = {f["path"]: f["included"] for f in listing["files"]}
    assert sorted(p for p in shown if ".cursor/" in p) == CURSOR_RULES
    assert shown[".cursor/rules/frontend/components/button.md"] and not shown[".cursor/rules/backend/api.md"]
    table = cli(tmp_path, config_dir, "explain", "--agent", "cursor", "--workspace", str(ws), "--open", "web/app.tsx")
    assert "+ .cursor/rules/frontend/components/button.md" in table.stdout
    assert "? .cursor/rules/backend/db.mdc" in table.stdout
