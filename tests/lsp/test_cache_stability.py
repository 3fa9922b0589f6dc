"""The instruction keeps its bytes through ordinary editing; what varies arrives per turn.

End to end through the real server. The server's clock is moved with the ``clock_shim``
sitecustomize (``CC_TEST_TODAY_FILE``), so the midnight rollover is a file write.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from lsprotocol import types as t

CLI = [sys.executable, "-m", "context_companion"]
SHIM = Path(__file__).resolve().parent / "clock_shim"
NO_ENV = {"environment": {"placement": "off"}}
OLD_LAYOUT = {"environment": {"placement": "systemInstruction"}, "memory": {"onDemandDelivery": "instruction"}}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def clock(tmp_path: Path, day: str) -> dict[str, str]:
    """Server environment whose date.today() is read from a file (rewrite it to move the clock)."""
    today = tmp_path / "today.txt"
    today.write_text(day)
    path = os.pathsep.join(p for p in (str(SHIM), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path, "CC_TEST_TODAY_FILE": str(today)}


def block_offset(text: str, label: str) -> int:
    return text.index(f"--- Context from: {label} ---")


async def quiet(seconds: float = 0.6) -> None:
    """Longer than the debounce (50 ms in tests) and the watcher's delay: a push would be here."""
    await asyncio.sleep(seconds)


# ----------------------------------------------------------------------------- layout


async def test_default_instruction_opens_with_the_preamble_without_environment(start, workspace):
    write(workspace / "AGENTS.md", "Use tabs.\n")
    write(workspace / "main.py", "")
    h = await start(workspace, settings={})
    got = await h.command("contextCompanion.getSystemInstruction", {})
    assert got["text"].startswith("You are an interactive coding agent")
    assert "Today's date" not in got["text"] and "main.py" not in got["text"]
    assert "Context Companion set up" not in got["text"] and "Scratch folder" not in got["text"]
    assert got["text"].endswith("--- End of Context from: AGENTS.md ---")  # memory after the sections
    assert got["environmentContext"].startswith("# Environment\nToday's date:")
    history = await h.command("contextCompanion.getInitialHistory", {})
    [message] = history["messages"]
    assert message["role"] == "user" and "main.py" in message["content"]


async def test_cli_and_server_give_the_same_bytes(start, workspace, tmp_path, config_dir):
    (workspace / ".git").mkdir()
    write(workspace / "AGENTS.md", "Root rules.\n")
    write(workspace / "api" / "AGENTS.md", "Api rules.\n")
    write(workspace / "api" / "x.py", "")
    for placement in ("systemInstruction", "systemInstructionEnd"):
        env = clock(tmp_path, "2026-11-21")
        settings = {"environment": {"placement": placement}}
        h = await start(workspace, settings=settings, env=env)
        h.open("api/x.py")
        h.cursor(h.uri("api/x.py"), 0, 0)
        await quiet(0.3)
        served = await h.command("contextCompanion.getSystemInstruction", {})
        cli_env = {
            k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")
        } | {  # the same user config and home as the server's
            "HOME": str(tmp_path / "home"),
            "CONTEXT_COMPANION_CONFIG_DIR": str(config_dir),
            "CONTEXT_COMPANION_ENVIRONMENT__PLACEMENT": placement,
            **env,
        }
        out = subprocess.run(
            [*CLI, "instruction", "--workspace", str(workspace), "--open", str(workspace / "api" / "x.py"), "--json"],
            capture_output=True,
            text=True,
            env=cli_env,
            timeout=60,
        )
        assert out.returncode == 0, out.stderr
        cli = json.loads(out.stdout)
        assert cli["text"] == served["text"] and cli["etag"] == served["etag"]
        assert "Saturday, 21 November 2026" in served["text"] and "x.py" in served["text"]
        assert [u["path"] for u in cli["memoryUpdates"]] == ["api/AGENTS.md"]


# ----------------------------------------------------------------------------- environment snapshot


async def test_a_file_created_under_an_open_folder_changes_nothing(start, workspace):
    write(workspace / "AGENTS.md", "Use tabs.\n")
    write(workspace / "src" / "app.py", "")
    for settings in ({}, {"environment": {"placement": "systemInstruction"}}):
        h = await start(workspace, settings=settings)
        h.open("src/app.py")
        h.cursor(h.uri("src/app.py"), 0, 0)
        first = await h.command("contextCompanion.getSystemInstruction", {})
        history = await h.command("contextCompanion.getInitialHistory", {})
        write(workspace / "src" / f"new_{len(h.pushes)}_{id(h)}.py", "x = 1\n")
        (workspace / "src" / "gone.txt").write_text("")
        (workspace / "src" / "gone.txt").unlink()
        await quiet()
        again = await h.command("contextCompanion.getSystemInstruction", {})
        assert again["etag"] == first["etag"] and again["prefixStable"]["percent"] == 100.0
        assert await h.command("contextCompanion.getInitialHistory", {}) == history
        assert h.pushes == []


async def test_a_setting_outside_the_environment_keeps_the_session_folder_tree(start, workspace):
    """Files created since a session started stay out of its tree when an unrelated setting changes."""
    end = {"environment": {"placement": "systemInstructionEnd"}}
    write(workspace / "AGENTS.md", "Use tabs.\n")
    h = await start(workspace, settings=end)
    first = await h.command("contextCompanion.getSystemInstruction", {})
    write(workspace / "later_file.py", "x = 1\n")
    await quiet()
    h.client.workspace_did_change_configuration(
        t.DidChangeConfigurationParams(settings={"contextCompanion": {**end, "context": {"maxOpenFiles": 7}}})
    )
    await quiet()
    again = await h.command("contextCompanion.getSystemInstruction", {})
    assert "later_file.py" not in again["text"] and again["etag"] == first["etag"]
    h.client.workspace_did_change_configuration(
        t.DidChangeConfigurationParams(
            settings={"contextCompanion": {"environment": {"placement": "systemInstructionEnd", "maxItems": 150}}}
        )
    )
    await quiet()
    retaken = await h.command("contextCompanion.getSystemInstruction", {})
    assert "later_file.py" in retaken["text"]  # a tree setting changed: the tree is taken again


async def test_midnight_rollover_keeps_the_default_instruction(start, workspace, tmp_path):
    write(workspace / "AGENTS.md", "Use tabs.\n")
    env = clock(tmp_path, "2026-11-21")
    h = await start(workspace, settings={}, env=env)
    old = await start(workspace, settings={"environment": {"placement": "systemInstruction"}}, env=env)
    first = await h.command("contextCompanion.getSystemInstruction", {})
    old_first = await old.command("contextCompanion.getSystemInstruction", {})
    assert "Saturday, 21 November 2026" in old_first["text"]
    (tmp_path / "today.txt").write_text("2026-11-22")
    after = await h.command("contextCompanion.getSystemInstruction", {})
    assert after["etag"] == first["etag"] and after["prefixStable"] == {"chars": len(first["text"]), "percent": 100.0}
    old_after = await old.command("contextCompanion.getSystemInstruction", {})
    # The old layout pays for its date at the top: almost nothing of the prefix survives.
    assert "Sunday, 22 November 2026" in old_after["text"] and old_after["etag"] != old_first["etag"]
    assert old_after["prefixStable"]["chars"] < 40
    # The environment message of a new conversation has the new date; a running one is not touched.
    messages = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    built = await h.command(
        "contextCompanion.buildMessages", {"messages": [*messages, {"role": "user", "content": "x"}]}
    )
    assert not any("November 2026" in str(m["content"]) for m in built["messages"])
    history = await h.command("contextCompanion.getInitialHistory", {})
    assert "Sunday, 22 November 2026" in history["messages"][0]["content"]


async def test_build_messages_adds_the_environment_on_the_first_turn_only(start, workspace):
    write(workspace / "main.py", "")
    h = await start(workspace, settings={})
    first = await h.command("contextCompanion.buildMessages", {"messages": [{"role": "user", "content": "Hi"}]})
    roles = [m["role"] for m in first["messages"]]
    assert roles[:2] == ["system", "user"] and "main.py" in first["messages"][1]["content"]
    assert first["messages"][-1] == {"role": "user", "content": "Hi"} and first["memoryUpdates"] == []
    later = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Go"},
    ]
    second = await h.command("contextCompanion.buildMessages", {"messages": later})
    assert not any("main.py" in str(m["content"]) for m in second["messages"])
    forced = await h.command("contextCompanion.buildMessages", {"messages": later, "includeEnvironment": True})
    assert "main.py" in forced["messages"][1]["content"]
    off = await h.command(
        "contextCompanion.buildMessages", {"messages": [{"role": "user", "content": "Hi"}], "includeEnvironment": False}
    )
    assert not any("main.py" in str(m["content"]) for m in off["messages"])


async def test_adding_a_folder_appends_its_memory_and_keeps_every_label(start, workspace, tmp_path):
    write(workspace / "AGENTS.md", "First folder rules.\n")
    other = tmp_path / "other"
    write(other / "AGENTS.md", "Second folder rules.\n")
    h = await start(workspace, settings={})
    first = await h.command("contextCompanion.getSystemInstruction", {})
    h.client.workspace_did_change_workspace_folders(
        t.DidChangeWorkspaceFoldersParams(
            event=t.WorkspaceFoldersChangeEvent(added=[t.WorkspaceFolder(uri=other.as_uri(), name="other")], removed=[])
        )
    )
    [push] = await h.wait_push(1)
    after = await h.command("contextCompanion.getSystemInstruction", {})
    assert after["text"].startswith(first["text"] + "\n\n")  # appended: nothing before it moved
    assert "--- Context from: AGENTS.md ---" in after["text"]  # the first folder's label as it was
    offset = block_offset(after["text"], "other/AGENTS.md")
    assert push["reason"] == "workspaceChanged" and push["applied"] is True
    assert push["prefixStable"]["chars"] >= offset - 2 and push["prefixStable"]["percent"] == 100.0
    history = await h.command("contextCompanion.getInitialHistory", {})
    assert str(other) in history["messages"][0]["content"]  # the environment names the new folder


# ----------------------------------------------------------------------------- on-demand memory


async def test_jit_memory_arrives_once_as_memory_updates_and_never_changes_the_instruction(start, workspace):
    (workspace / ".git").mkdir()
    write(workspace / "AGENTS.md", "Root rules.\n")
    write(workspace / "api" / "AGENTS.md", "Api rules.\n")
    write(workspace / "api" / "handler.py", "def f(): pass\n")
    write(workspace / ".cursor" / "rules" / "py.mdc", '---\nglobs: "**/*.py"\n---\nPython rule.\n')
    h = await start(workspace, settings=NO_ENV)
    before = await h.command("contextCompanion.getSystemInstruction", {})
    assert (await h.command("contextCompanion.getTurnContext", {}))["memoryUpdates"] == []
    h.open("api/handler.py")
    h.cursor(h.uri("api/handler.py"), 0, 0)
    await quiet()
    assert h.pushes == []  # opening a file does not touch the instruction
    turn = await h.command("contextCompanion.getTurnContext", {})
    updates = {u["path"]: u for u in turn["memoryUpdates"]}
    assert set(updates) == {"api/AGENTS.md", ".cursor/rules/py.mdc"}
    assert updates["api/AGENTS.md"]["content"] == "Api rules."
    assert updates["api/AGENTS.md"]["reason"] == "active file api/handler.py is under api/"
    assert updates["api/AGENTS.md"]["tokens"] > 0 and updates[".cursor/rules/py.mdc"]["content"] == "Python rule."
    assert turn["kind"] == "delta" and "Api rules." in turn["text"] and "Python rule." in turn["text"]
    assert "--- Context from: api/AGENTS.md ---" in turn["text"]
    quiet_turn = await h.command("contextCompanion.getTurnContext", {})
    assert quiet_turn == {"kind": "none", "context": None, "text": None, "memoryUpdates": []}
    # Edited while it applies: its new content, once; the instruction stays.
    write(workspace / "api" / "AGENTS.md", "Api rules, version two.\n")
    await quiet()
    changed = await h.command("contextCompanion.getTurnContext", {})
    assert changed["kind"] == "delta" and changed["context"] == {"changes": {}}
    [update] = changed["memoryUpdates"]
    assert update["content"] == "Api rules, version two." and update["reason"].startswith("changed on disk")
    assert "Api rules, version two." in changed["text"]
    # It stops applying: a one-line notice.
    h.close("api/handler.py")
    await quiet()
    closed = await h.command("contextCompanion.getTurnContext", {})
    notices = {u["path"]: u for u in closed["memoryUpdates"]}
    assert set(notices) == {"api/AGENTS.md", ".cursor/rules/py.mdc"}
    assert (
        "\n" not in notices["api/AGENTS.md"]["content"] and "no longer applies" in notices["api/AGENTS.md"]["content"]
    )
    assert notices["api/AGENTS.md"]["reason"] == "not included: no open file under api/"
    after = await h.command("contextCompanion.getSystemInstruction", {})
    assert after["etag"] == before["etag"] and h.pushes == []


async def test_force_full_and_build_messages_deliver_memory_again(start, workspace):
    write(workspace / "AGENTS.md", "Root rules.\n")
    write(workspace / "api" / "AGENTS.md", "Api rules.\n")
    write(workspace / "api" / "handler.py", "")
    h = await start(workspace, settings=NO_ENV)
    h.open("api/handler.py")
    await quiet(0.3)
    built = await h.command("contextCompanion.buildMessages", {"messages": [{"role": "user", "content": "Fix it"}]})
    assert [u["path"] for u in built["memoryUpdates"]] == ["api/AGENTS.md"]
    assert "Api rules." in built["messages"][-2]["content"] and "Api rules." not in built["messages"][0]["content"]
    assert (await h.command("contextCompanion.getTurnContext", {}))["memoryUpdates"] == []
    full = await h.command("contextCompanion.getTurnContext", {"forceFull": True})
    assert full["kind"] == "full" and [u["path"] for u in full["memoryUpdates"]] == ["api/AGENTS.md"]
    pending = await h.command("contextCompanion.getTurnContext", {"pendingToolCall": True})
    assert pending["memoryUpdates"] == []


# ----------------------------------------------------------------------------- reload


async def test_live_reload_pushes_with_the_prefix_kept(start, workspace):
    (workspace / ".git").mkdir()
    write(workspace / "AGENTS.md", "Root rules.\n")
    write(workspace / "pkg" / "AGENTS.md", "Package rules.\n")
    write(workspace / "pkg" / "mod.py", "")
    h = await start(workspace, settings={"memory": {"boundaryMarkers": []}}, folders=[workspace / "pkg"])
    first = await h.command("contextCompanion.getSystemInstruction", {})
    write(workspace / "pkg" / "AGENTS.md", "Package rules, edited.\n")
    [push] = await h.wait_push(1)
    assert push["applied"] is True and push["reason"] == "memoryChanged"
    assert push["prefixStable"]["chars"] >= block_offset(first["text"], "AGENTS.md")
    now = await h.command("contextCompanion.getSystemInstruction", {})
    assert "Package rules, edited." in now["text"] and now["etag"] == push["etag"]


async def test_session_reload_keeps_the_instruction_and_delivers_edits(start, workspace):
    write(workspace / "AGENTS.md", "Root rules.\n")
    h = await start(workspace, settings={**NO_ENV, "memory": {"reload": "session"}})
    first = await h.command("contextCompanion.getSystemInstruction", {})
    assert (await h.command("contextCompanion.getTurnContext", {}))["memoryUpdates"] == []
    write(workspace / "AGENTS.md", "Root rules, edited.\n")
    [push] = await h.wait_push(1)
    assert push["applied"] is False and push["etag"] == first["etag"] and push["changedFiles"] == ["AGENTS.md"]
    assert push["prefixStable"]["percent"] == 100.0
    kept = await h.command("contextCompanion.getSystemInstruction", {})
    assert kept["etag"] == first["etag"] and "Root rules, edited." not in kept["text"]
    turn = await h.command("contextCompanion.getTurnContext", {})
    [update] = turn["memoryUpdates"]
    assert update["path"] == "AGENTS.md" and update["content"] == "Root rules, edited." and "edited" in turn["text"]
    refreshed = await h.command("contextCompanion.refreshMemory", {})
    assert refreshed["changed"] is True
    applied = await h.command("contextCompanion.getSystemInstruction", {})
    assert "Root rules, edited." in applied["text"] and applied["etag"] != first["etag"]
    assert (await h.command("contextCompanion.getTurnContext", {}))["memoryUpdates"] == []
