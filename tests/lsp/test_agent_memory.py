"""``contextCompanion.getAgentMemory`` through the language server: the memory VS Code's chat does not read
itself (what the extension puts into its chat instructions file), and ``contextCompanion/memoryChanged``,
which tells the editor that memory changed even when no session's instruction did."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import plain
from pygls.exceptions import JsonRpcInvalidParams
from rule_formats_repo import write_tree

NO_ENV = {"environment": {"placement": "off"}}
MEMORY_CHANGED = "contextCompanion/memoryChanged"

FILES = {
    ".git/HEAD": "ref: refs/heads/main\n",
    "AGENTS.md": "- Root marker ROOT-AAA.\n",
    "CLAUDE.md": "- Claude marker CLAUDE-EEE.\n",
    "GEMINI.md": "- Gemini marker GEMINI-DDD.\n",
    "pkg/AGENTS.md": "- Sub-folder marker PKG-BBB.\n",
    "pkg/mod.py": "def main():\n    return 42\n",
    ".cursor/rules/py.mdc": '---\nglobs: "**/*.py"\nalwaysApply: false\n---\n- Cursor rule marker CURSOR-CCC.\n',
    ".github/copilot-instructions.md": "- Copilot repo marker GHREPO-HHH.\n",
    ".github/instructions/py.instructions.md": '---\napplyTo: "**/*.py"\n---\n- Copilot rule marker GHINSTR-GGG.\n',
    ".claude/rules/py.md": '---\npaths:\n  - "**/*.py"\n---\n- Claude rule marker CLRULE-FFF.\n',
    ".env": "API_KEY=sk-do-not-leak-1234\n",
}
READ_BY_VSCODE = ("ROOT-AAA", "CLAUDE-EEE", "GHREPO-HHH")
FOR_PY = ("PKG-BBB", "CURSOR-CCC", "GHINSTR-GGG", "CLRULE-FFF")


def make_workspace(root: Path) -> Path:
    return write_tree(root, FILES)


async def test_vscode_gets_each_file_it_does_not_read_once_and_nothing_it_reads(start, tmp_path):
    h = await start(make_workspace(tmp_path / "ws"), settings=NO_ENV)

    closed = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert [f["path"] for f in closed["files"]] == ["GEMINI.md"]
    assert sorted(closed["readByAgent"]) == [".github/copilot-instructions.md", "AGENTS.md", "CLAUDE.md"]

    h.open("pkg/mod.py", None, "python")
    shown = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    text = shown["text"]
    assert shown["agent"] == "vscode" and shown["tokens"] > 0
    for marker in ("GEMINI-DDD", *FOR_PY):
        assert text.count(marker) == 1, marker
    for marker in READ_BY_VSCODE:
        assert marker not in text, marker
    assert "sk-do-not-leak" not in text
    assert {f["path"] for f in shown["files"]} == {
        "GEMINI.md",
        "pkg/AGENTS.md",
        ".cursor/rules/py.mdc",
        ".github/instructions/py.instructions.md",
        ".claude/rules/py.md",
    }

    again = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert again["text"] == text and again["etag"] == shown["etag"]

    # The user's VS Code settings decide what it reads itself.
    own = await h.command(
        "contextCompanion.getAgentMemory",
        {"agent": "vscode", "vscode": {"useClaudeMdFile": False, "useInstructionFiles": False}},
    )
    assert own["text"].count("CLAUDE-EEE") == 1 and own["text"].count("GHREPO-HHH") == 1
    assert "ROOT-AAA" not in own["text"]

    # A selection makes VS Code attach the active file, and with it the applyTo / paths rules that match it.
    uri = h.uri("pkg/mod.py")
    h.cursor(uri, 0, 8, [(0, 4, 0, 8)])
    selected = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert "GHINSTR-GGG" not in selected["text"] and "CLRULE-FFF" not in selected["text"]
    assert {".github/instructions/py.instructions.md", ".claude/rules/py.md"} <= set(selected["readByAgent"])
    assert selected["text"].count("PKG-BBB") == 1 and selected["text"].count("CURSOR-CCC") == 1
    h.cursor(uri, 0, 8, [])
    bare = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert bare["text"] == text

    h.close("pkg/mod.py")
    after = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert after["text"] == closed["text"] and not any(m in after["text"] for m in FOR_PY)


async def test_agent_memory_rejects_vscode_settings_for_another_agent(start, tmp_path):
    h = await start(make_workspace(tmp_path / "ws"), settings=NO_ENV)
    with pytest.raises(JsonRpcInvalidParams) as info:
        await h.command("contextCompanion.getAgentMemory", {"agent": "codex", "vscode": {}})
    assert str(info.value) == 'vscode: only allowed with agent "vscode"'
    with pytest.raises(JsonRpcInvalidParams) as info:
        await h.command("contextCompanion.getAgentMemory", {"agent": "vscode", "vscode": {"useAgentsMdFile": "yes"}})
    assert "useAgentsMdFile" in str(info.value)


async def _wait_naming(events: list[dict[str, Any]], path: str, timeout: float = 10.0) -> dict[str, Any]:
    """The first ``contextCompanion/memoryChanged`` whose ``changedFiles`` names ``path``, found by what it
    says, not by when it came: another change (opening a document) has its own notification."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        for event in events:
            if path in event["changedFiles"]:
                return event
        assert asyncio.get_running_loop().time() < deadline, f"no contextCompanion/memoryChanged for {path}: {events}"
        await asyncio.sleep(0.05)


async def test_memory_changed_is_sent_for_a_sub_folder_file_that_no_instruction_holds(start, tmp_path):
    ws = make_workspace(tmp_path / "ws")
    h = await start(ws, settings={**NO_ENV, "capabilities": {"memoryChanged": True}})
    events: list[dict[str, Any]] = []
    h.client.feature(MEMORY_CHANGED)(lambda params: events.append(plain(params)))
    # Answered once the server has loaded: from here on, opening a document is a change it tells. (A
    # document opened while it loads is part of the first answer, and no notification says so.)
    closed = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert "PKG-BBB" not in closed["text"]

    h.open("pkg/mod.py", None, "python")  # brings pkg/AGENTS.md and the Python rules into VS Code's memory
    mod = str(ws / "pkg" / "mod.py")
    opened = await _wait_naming(events, mod)
    assert opened == {"reason": "openFilesChanged", "changedFiles": [mod]}
    before = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert "PKG-BBB" in before["text"]
    await h.command("contextCompanion.getSystemInstruction", {})

    (ws / "pkg" / "AGENTS.md").write_text("- Sub-folder marker PKG-XYZ.\n", encoding="utf-8")
    event = await _wait_naming(events, "pkg/AGENTS.md")
    assert event == {"reason": "memoryChanged", "changedFiles": ["pkg/AGENTS.md"]}
    assert events == [opened, event]  # each change told once, on its own
    assert h.pushes == []  # the instruction does not hold pkg/AGENTS.md: only memoryChanged tells
    after = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert "PKG-XYZ" in after["text"] and "PKG-BBB" not in after["text"] and after["etag"] != before["etag"]


async def test_turn_context_leaves_memory_out_when_asked(start, tmp_path):
    h = await start(make_workspace(tmp_path / "ws"), settings=NO_ENV)
    h.open("pkg/mod.py", None, "python")
    bare = await h.command("contextCompanion.getTurnContext", {"sessionId": "chat", "includeMemory": False})
    assert bare["kind"] == "full" and bare["memoryUpdates"] == []
    assert "pkg/mod.py" in bare["text"] and "PKG-BBB" not in bare["text"]
    # The memory was not counted as delivered: a session that asks for it still gets it.
    full = await h.command("contextCompanion.getTurnContext", {"sessionId": "chat"})
    assert "PKG-BBB" in full["text"] and {u["path"] for u in full["memoryUpdates"]} >= {"pkg/AGENTS.md"}


async def test_the_selection_reaches_the_turn_context_in_a_folder_with_a_space(start, tmp_path):
    ws = tmp_path / "chat workspace"
    (ws / "pkg").mkdir(parents=True)
    (ws / "pkg" / "mod.py").write_text("def main():\n    return 42\n", encoding="utf-8")
    h = await start(ws, settings=NO_ENV)
    uri = h.open("pkg/mod.py", None, "python")
    assert "%20" in uri  # as editors send it
    h.cursor(uri, 0, 8, [(0, 4, 0, 8)])
    turn = await h.command("contextCompanion.getTurnContext", {"sessionId": "chat"})
    active = turn["context"]["activeFile"]
    assert active["path"] == str(ws / "pkg" / "mod.py")
    assert active["selectedText"] == "main" and active["cursor"] == {"line": 1, "character": 9}


async def test_system_instruction_leaves_memory_out_when_asked_and_keeps_its_bytes_through_edits(start, tmp_path):
    """VS Code's chat has the memory in its system message (chat instructions): our instruction tool asks
    with ``includeMemory: false`` and gets the sections alone, whose bytes no memory edit moves; the session
    keeps that choice, so an edit pushes nothing to it."""
    ws = make_workspace(tmp_path / "ws")
    h = await start(ws, settings=NO_ENV)
    h.open("pkg/mod.py", None, "python")
    full = await h.command("contextCompanion.getSystemInstruction", {"sessionId": "full"})
    bare = await h.command("contextCompanion.getSystemInstruction", {"sessionId": "chat", "includeMemory": False})
    for marker in ("ROOT-AAA", "GEMINI-DDD", "CLAUDE-EEE", "GHREPO-HHH"):  # the instruction's memory
        assert full["text"].count(marker) == 1, marker
        assert marker not in bare["text"], marker
    assert bare["memoryFiles"] == [] and full["memoryFiles"]
    head = full["text"][: full["text"].index("--- Context from:")]
    assert bare["text"].startswith(head.rstrip())
    assert "memory files (AGENTS.md, CLAUDE.md, GEMINI.md, rule files) are not repeated here" in bare["text"]
    assert bare["tokens"]["total"] < full["tokens"]["total"]

    (ws / "AGENTS.md").write_text("- Root marker ROOT-ZZZ.\n", encoding="utf-8")
    pushes = await h.wait_push()
    again = await h.command(
        "contextCompanion.getSystemInstruction",
        {"sessionId": "chat", "includeMemory": False, "ifNoneMatch": bare["etag"]},
    )
    assert again == {
        "sessionId": "chat",
        "etag": bare["etag"],
        "unchanged": True,
        "prefixStable": again["prefixStable"],
    }
    assert again["prefixStable"]["percent"] == 100.0
    assert [p["sessions"] for p in pushes] == [["full"]]  # the edit moved nothing the chat session was given

    # Asked without the flag, the same session gets its memory again.
    back = await h.command("contextCompanion.getSystemInstruction", {"sessionId": "chat"})
    assert "ROOT-ZZZ" in back["text"] and back["etag"] != bare["etag"]


async def test_a_memory_file_matching_context_exclude_is_never_delivered(start, tmp_path):
    """One decision for the chat instructions and the agent hooks: a rule file whose name matches
    ``context.exclude`` (``**/*secret*`` by default) reaches neither, as the protocol says of both."""
    ws = make_workspace(tmp_path / "ws")
    (ws / ".cursor" / "rules" / "secrets.mdc").write_text(
        "---\nalwaysApply: true\n---\n- Secret-handling marker SECRET-RULE-777.\n", encoding="utf-8"
    )
    h = await start(ws, settings=NO_ENV)
    shown = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert "GEMINI-DDD" in shown["text"] and "SECRET-RULE-777" not in shown["text"]
    assert ".cursor/rules/secrets.mdc" not in {f["path"] for f in shown["files"]}


async def test_vscode_gets_no_copy_of_a_text_it_reads_under_another_name(start, tmp_path):
    """A rule kept twice (Cursor's folder and Copilot's file, same text) and GEMINI.md as a link to AGENTS.md:
    VS Code reads its own copy and AGENTS.md, so neither the other copy nor the link is in the snapshot."""
    files = {
        ".git/HEAD": "ref: refs/heads/main\n",
        "AGENTS.md": "- Root marker ROOT-AAA.\n",
        ".cursor/rules/all.mdc": "---\nalwaysApply: true\n---\n- Twin marker TWIN-XYZ.\n",
        ".github/copilot-instructions.md": "- Twin marker TWIN-XYZ.\n",
        ".cursor/rules/own.mdc": "---\nalwaysApply: true\n---\n- Cursor only OWN-QQQ.\n",
    }
    ws = write_tree(tmp_path / "ws", files)
    (ws / "GEMINI.md").symlink_to("AGENTS.md")
    h = await start(ws, settings=NO_ENV)
    shown = await h.command("contextCompanion.getAgentMemory", {"agent": "vscode"})
    assert [f["path"] for f in shown["files"]] == [".cursor/rules/own.mdc"]
    assert "TWIN-XYZ" not in shown["text"] and "ROOT-AAA" not in shown["text"]
