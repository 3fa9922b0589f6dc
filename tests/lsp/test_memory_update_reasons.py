"""A memory update that takes a file back names the real reason (issue 39): a file a setting no longer reads is not
said to be deleted. End to end through the real server; the editor changes the setting while it runs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lsprotocol import types as t

NO_ENV = {"environment": {"placement": "off"}}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def turn_after(h, predicate, timeout: float = 10.0) -> dict:
    """The first turn context whose memory updates satisfy ``predicate`` (the watcher needs a moment)."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        turn = await h.command("contextCompanion.getTurnContext", {})
        if predicate(turn["memoryUpdates"]) or asyncio.get_running_loop().time() > deadline:
            return turn
        await asyncio.sleep(0.2)


async def test_a_name_dropped_from_memory_file_names_is_taken_back_with_that_reason(start, workspace):
    (workspace / ".git").mkdir()
    write(workspace / "AGENTS.md", "Root rules.\n")
    write(workspace / "api" / "CLAUDE.md", "Api notes for Claude.\n")
    write(workspace / "api" / "QWEN.md", "Api notes for Qwen.\n")
    write(workspace / "api" / "handler.py", "def f(): pass\n")
    h = await start(workspace, settings=NO_ENV)
    await h.command("contextCompanion.getSystemInstruction", {})
    h.open("api/handler.py")
    h.cursor(h.uri("api/handler.py"), 0, 0)
    first = await turn_after(h, lambda u: len(u) == 2)
    assert {u["path"] for u in first["memoryUpdates"]} == {"api/CLAUDE.md", "api/QWEN.md"}

    changed = {**NO_ENV, "memory": {"fileNames": ["AGENTS.md", "QWEN.md"]}}
    h.client.workspace_did_change_configuration(t.DidChangeConfigurationParams(settings={"contextCompanion": changed}))
    dropped = await turn_after(h, lambda u: any(x["path"] == "api/CLAUDE.md" for x in u))
    [update] = dropped["memoryUpdates"]
    assert update["path"] == "api/CLAUDE.md"
    assert update["reason"] == "no longer a memory file name in the settings (memory.fileNames)"
    assert update["content"] == (
        "api/CLAUDE.md no longer applies (no longer a memory file name in the settings (memory.fileNames)): "
        "disregard what it said."
    )

    (workspace / "api" / "QWEN.md").unlink()
    deleted = await turn_after(h, lambda u: any(x["path"] == "api/QWEN.md" for x in u))
    assert [u["reason"] for u in deleted["memoryUpdates"]] == ["the file no longer exists"]
