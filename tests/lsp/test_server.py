"""The real server process, end to end, over stdio."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest
import pytest_asyncio
from inotify_probe import watched_dirs
from lsprotocol import types as t
from pygls.exceptions import JsonRpcException

NO_ENV = {"environment": {"placement": "off"}}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def settle(h, seconds: float = 0.3) -> None:
    """Let notifications sent before reach the server (a request after them proves it)."""
    await asyncio.sleep(seconds)


# ----------------------------------------------------------------------------- initialize


async def test_initialize_advertises_commands_sync_and_features(start, workspace):
    h = await start(workspace)
    caps = h.init_result.capabilities
    assert set(caps.execute_command_provider.commands) >= {
        "contextCompanion.startSession",
        "contextCompanion.endSession",
        "contextCompanion.getSystemInstruction",
        "contextCompanion.refreshMemory",
        "contextCompanion.getTurnContext",
        "contextCompanion.buildMessages",
        "contextCompanion.getInitialHistory",
        "contextCompanion.showMemory",
        "contextCompanion.addMemory",
        "contextCompanion.getCompressionPrompt",
    }
    assert caps.text_document_sync.change == t.TextDocumentSyncKind.Incremental
    assert caps.workspace.workspace_folders.supported is True
    assert caps.position_encoding == t.PositionEncodingKind.Utf16
    assert h.init_result.server_info.name == "context-companion"


async def test_position_encoding_follows_the_client_offer(start, workspace):
    h = await start(workspace, position_encodings=["utf-8", "utf-16"])
    assert h.init_result.capabilities.position_encoding == "utf-8"


# ----------------------------------------------------------------------------- instruction


async def test_get_system_instruction_with_memory_and_if_none_match(start, workspace):
    write(workspace / "AGENTS.md", "Use tabs, never spaces.\n")
    h = await start(workspace, settings=NO_ENV)
    first = await h.command("contextCompanion.getSystemInstruction", {})
    assert first["sessionId"] == "default" and first["unchanged"] is False
    assert "Use tabs, never spaces." in first["text"]
    assert "--- Context from: AGENTS.md ---" in first["text"]
    assert first["tokens"]["total"] > 0 and first["tokens"]["sections"]
    assert first["memoryFiles"][0]["path"] == "AGENTS.md" and first["memoryFiles"][0]["included"] is True
    assert first["environmentContext"] is None
    assert first["prefixStable"] == {"chars": 0, "percent": 0.0}  # nothing was given before
    again = await h.command("contextCompanion.getSystemInstruction", {"ifNoneMatch": first["etag"]})
    kept = {"chars": len(first["text"]), "percent": 100.0}
    assert again == {"sessionId": "default", "etag": first["etag"], "unchanged": True, "prefixStable": kept}


async def test_start_and_end_session_with_profile(start, workspace):
    h = await start(workspace, settings=NO_ENV)
    started = await h.command(
        "contextCompanion.startSession", {"sessionId": "plan", "profile": {"approvalMode": "plan"}}
    )
    assert started["sessionId"] == "plan" and len(started["etag"]) == 32 and started["tokens"]["total"] > 0
    plan = await h.command("contextCompanion.getSystemInstruction", {"sessionId": "plan"})
    default = await h.command("contextCompanion.getSystemInstruction", {})
    assert "Planning Mode" in plan["text"] and "Planning Mode" not in default["text"]
    assert await h.command("contextCompanion.endSession", {"sessionId": "plan"}) == {"ended": "plan"}
    with pytest.raises(JsonRpcException) as info:
        await h.command("contextCompanion.endSession", {"sessionId": "plan"})
    assert info.value.code == -32602 and "unknown session 'plan'" in info.value.message


async def test_refresh_memory_reloads_and_reports_sessions(start, workspace):
    h = await start(workspace, settings={**NO_ENV, "memory": {"watch": False}})
    empty = await h.command("contextCompanion.refreshMemory", {})
    assert empty["sessionsUpdated"] == [] and empty["memoryFiles"] == []
    await h.command("contextCompanion.startSession", {"sessionId": "a"})
    write(workspace / "AGENTS.md", "Fresh fact.\n")
    refreshed = await h.command("contextCompanion.refreshMemory", {})
    assert refreshed["changed"] is True and refreshed["sessionsUpdated"] == ["a"]
    assert [f["path"] for f in refreshed["memoryFiles"]] == ["AGENTS.md"]
    text = (await h.command("contextCompanion.getSystemInstruction", {"sessionId": "a"}))["text"]
    assert "Fresh fact." in text
    assert (await h.command("contextCompanion.refreshMemory", {}))["changed"] is False


async def test_show_memory_add_memory_and_compression_prompt(start, workspace, config_dir):
    write(workspace / "AGENTS.md", "# Project\n")
    h = await start(workspace, settings=NO_ENV)
    shown = await h.command("contextCompanion.showMemory", {})
    assert shown["files"][0]["path"] == "AGENTS.md" and "# Project" in shown["text"]
    added = await h.command("contextCompanion.addMemory", {"fact": "The CI runs on 2 cores.", "scope": "workspace"})
    assert added["path"] == str(workspace / "AGENTS.md")
    assert (workspace / "AGENTS.md").read_text() == "# Project\n\n## Added Memories\n\n- The CI runs on 2 cores.\n" or (
        "- The CI runs on 2 cores." in (workspace / "AGENTS.md").read_text()
    )
    assert (workspace / "AGENTS.md").read_text().startswith("# Project\n")
    glob = await h.command("contextCompanion.addMemory", {"fact": "I prefer short answers."})
    assert Path(glob["path"]) == config_dir / "AGENTS.md"
    text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert "The CI runs on 2 cores." in text and "I prefer short answers." in text
    prompt = await h.command("contextCompanion.getCompressionPrompt", {})
    assert "<state_snapshot>" in prompt["text"] and "<task_state>" in prompt["text"]


async def test_initial_history_follows_environment_placement(start, workspace):
    write(workspace / "main.py", "")
    h = await start(workspace, settings={})  # initialMessage is the default
    history = await h.command("contextCompanion.getInitialHistory", {})
    assert history["messages"][0]["role"] == "user" and "main.py" in history["messages"][0]["content"]
    h2 = await start(workspace, settings={"environment": {"placement": "systemInstruction"}})
    assert (await h2.command("contextCompanion.getInitialHistory", {}))["messages"] == []


# ----------------------------------------------------------------------------- turn context


async def test_turn_context_full_delta_none_pending_and_force_full(start, workspace):
    write(workspace / "a.py", "line one\nline two\nline three\n")
    write(workspace / "b.py", "b\n")
    h = await start(workspace, settings=NO_ENV)
    a = h.open("a.py")
    h.cursor(a, 1, 5, [(1, 0, 1, 4)])
    await settle(h)
    full = await h.command("contextCompanion.getTurnContext", {})
    assert full["kind"] == "full"
    assert full["context"] == {
        "activeFile": {"path": str(workspace / "a.py"), "cursor": {"line": 2, "character": 6}, "selectedText": "line"},
        "otherOpenFiles": [],
    }
    assert full["text"].splitlines()[0] and '"selectedText": "line"' in full["text"]
    assert (await h.command("contextCompanion.getTurnContext", {}))["kind"] == "none"
    b = h.open("b.py")
    h.cursor(b, 0, 1)
    await settle(h)
    pending = await h.command("contextCompanion.getTurnContext", {"pendingToolCall": True})
    assert pending == {"kind": "none", "context": None, "text": None, "memoryUpdates": []}
    delta = await h.command("contextCompanion.getTurnContext", {})
    assert delta["kind"] == "delta"
    assert delta["context"]["changes"] == {
        "filesOpened": [str(workspace / "b.py")],
        "activeFileChanged": {"path": str(workspace / "b.py"), "cursor": {"line": 1, "character": 2}},
    }
    h.cursor(b, 0, 0)
    await settle(h)
    moved = await h.command("contextCompanion.getTurnContext", {})
    assert moved["context"]["changes"] == {
        "cursorMoved": {"path": str(workspace / "b.py"), "cursor": {"line": 1, "character": 1}}
    }
    again = await h.command("contextCompanion.getTurnContext", {"forceFull": True})
    assert again["kind"] == "full" and again["context"]["otherOpenFiles"] == [str(workspace / "a.py")]
    h.close("a.py")
    await settle(h)
    closed = await h.command("contextCompanion.getTurnContext", {})
    assert closed["context"]["changes"] == {"filesClosed": [str(workspace / "a.py")]}


async def test_two_sessions_keep_separate_baselines(start, workspace):
    write(workspace / "a.py", "x\n")
    h = await start(workspace, settings=NO_ENV)
    a = h.open("a.py")
    h.cursor(a, 0, 0)
    await settle(h)
    assert (await h.command("contextCompanion.getTurnContext", {"sessionId": "one"}))["kind"] == "full"
    assert (await h.command("contextCompanion.getTurnContext", {"sessionId": "one"}))["kind"] == "none"
    h.cursor(a, 0, 1)
    await settle(h)
    assert (await h.command("contextCompanion.getTurnContext", {"sessionId": "two"}))["kind"] == "full"
    assert (await h.command("contextCompanion.getTurnContext", {"sessionId": "one"}))["kind"] == "delta"
    assert (await h.command("contextCompanion.getTurnContext", {"sessionId": "two"}))["kind"] == "none"


async def test_utf16_positions_on_a_line_with_emoji(start, workspace):
    write(workspace / "e.txt", "a😀b😀cd\n")
    h = await start(workspace, settings=NO_ENV)
    uri = h.open("e.txt")
    # UTF-16: 'a'=1, '😀'=2 units. Select "b😀c": units 3..7
    h.cursor(uri, 0, 7, [(0, 3, 0, 7)])
    await settle(h)
    full = await h.command("contextCompanion.getTurnContext", {})
    assert full["context"]["activeFile"]["selectedText"] == "b😀c"
    assert full["context"]["activeFile"]["cursor"] == {"line": 1, "character": 6}


async def test_utf8_positions_when_negotiated(start, workspace):
    write(workspace / "e.txt", "é😀x\n")
    h = await start(workspace, settings=NO_ENV, position_encodings=["utf-8"])
    uri = h.open("e.txt")
    h.cursor(uri, 0, 6, [(0, 2, 0, 6)])  # é = 2 bytes, 😀 = 4 bytes
    await settle(h)
    full = await h.command("contextCompanion.getTurnContext", {})
    assert full["context"]["activeFile"]["selectedText"] == "😀"


async def test_selection_follows_incremental_edits_and_is_truncated(start, workspace):
    write(workspace / "s.txt", "hello world\n")
    h = await start(workspace, settings={**NO_ENV, "context": {"maxSelectedChars": 5}})
    uri = h.open("s.txt")
    h.client.text_document_did_change(
        t.DidChangeTextDocumentParams(
            text_document=t.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[
                t.TextDocumentContentChangePartial(range=t.Range(t.Position(0, 0), t.Position(0, 5)), text="HOWDY")
            ],
        )
    )
    h.cursor(uri, 0, 11, [(0, 0, 0, 11)])
    await settle(h)
    full = await h.command("contextCompanion.getTurnContext", {})
    assert full["context"]["activeFile"]["selectedText"] == "HOWDY... [TRUNCATED]"


async def test_out_of_range_cursor_is_clamped_and_unopened_file_records_path_only(start, workspace):
    write(workspace / "c.txt", "ab\ncd\n")
    h = await start(workspace, settings=NO_ENV)
    uri = h.open("c.txt")
    h.cursor(uri, 99, 99)
    await settle(h)
    full = await h.command("contextCompanion.getTurnContext", {})
    assert full["context"]["activeFile"]["cursor"] == {"line": 3, "character": 1}
    h.cursor((workspace / "never-opened.txt").as_uri(), 3, 3)
    await settle(h)
    delta = await h.command("contextCompanion.getTurnContext", {})
    assert delta["context"]["changes"]["activeFileChanged"] == {"path": str(workspace / "never-opened.txt")}


async def test_excluded_files_never_contribute_text(start, workspace):
    write(workspace / ".env", "API_KEY=hunter2\n")
    write(workspace / "notes" / "prod.SECRET", "plan\n")
    h = await start(workspace, settings={**NO_ENV, "context": {"cursorContextLines": 2}})
    uri = h.open(".env")
    h.cursor(uri, 0, 10, [(0, 0, 0, 15)])
    await settle(h)
    full = await h.command("contextCompanion.getTurnContext", {})
    assert full["context"]["activeFile"] == {"path": str(workspace / ".env"), "cursor": {"line": 1, "character": 11}}
    assert "hunter2" not in json.dumps(full)
    uri2 = h.open("notes/prod.SECRET")
    h.cursor(uri2, 0, 0, [(0, 0, 0, 4)])
    await settle(h)
    delta = await h.command("contextCompanion.getTurnContext", {})
    assert "selectedText" not in json.dumps(delta["context"]) and "contextLines" not in json.dumps(delta["context"])


async def test_context_disabled_gives_none(start, workspace):
    write(workspace / "a.py", "x\n")
    h = await start(workspace, settings={**NO_ENV, "context": {"enabled": False}})
    h.cursor(h.open("a.py"), 0, 0)
    await settle(h)
    assert (await h.command("contextCompanion.getTurnContext", {}))["kind"] == "none"


async def test_cursor_context_lines(start, workspace):
    write(workspace / "l.txt", "1\n2\n3\n4\n5\n")
    h = await start(workspace, settings={**NO_ENV, "context": {"cursorContextLines": 1}})
    h.cursor(h.open("l.txt"), 2, 0)
    await settle(h)
    active = (await h.command("contextCompanion.getTurnContext", {}))["context"]["activeFile"]
    assert active["contextLines"] == {"startLine": 2, "endLine": 4, "text": "2\n3\n4"}


# ----------------------------------------------------------------------------- messages


async def test_build_messages_puts_instruction_first_and_context_before_last_user(start, workspace):
    write(workspace / "AGENTS.md", "Memory fact.\n")
    write(workspace / "a.py", "x\n")
    h = await start(workspace, settings=NO_ENV)
    h.cursor(h.open("a.py"), 0, 0)
    await settle(h)
    given = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello", "name": "bot"},
        {"role": "user", "content": [{"type": "text", "text": "fix it"}]},
    ]
    out = (await h.command("contextCompanion.buildMessages", {"messages": given}))["messages"]
    assert out[0]["role"] == "system" and "Memory fact." in out[0]["content"]
    assert out[1:3] == given[:2]
    assert out[3]["role"] == "user" and '"activeFile"' in out[3]["content"]
    assert out[4] == given[2]
    again = (await h.command("contextCompanion.buildMessages", {"messages": given}))["messages"]
    assert [m["content"] for m in again[1:]] == [m["content"] for m in given]  # no change: no context message
    plain = (await h.command("contextCompanion.buildMessages", {"messages": given, "includeTurnContext": False}))[
        "messages"
    ]
    assert len(plain) == 4


async def test_build_messages_without_instruction_adds_no_system_message(start, workspace):
    sections = {
        k: False
        for k in ("preamble", "coreMandates", "primaryWorkflows", "operationalGuidelines", "sandbox", "finalReminder")
    }
    h = await start(workspace, settings={**NO_ENV, "prompt": {"sections": sections}})
    out = await h.command(
        "contextCompanion.buildMessages", {"messages": [{"role": "user", "content": "q"}], "includeTurnContext": False}
    )
    assert out["messages"] == [{"role": "user", "content": "q"}]


# ----------------------------------------------------------------------------- push


async def test_memory_file_edited_on_disk_pushes_exactly_once(start, workspace):
    agents = write(workspace / "AGENTS.md", "v1\n")
    h = await start(workspace, settings=NO_ENV)
    first = await h.command("contextCompanion.getSystemInstruction", {})
    for i in range(5):  # a burst of saves within one debounce window
        agents.write_text(f"v{i + 2}\n")
    pushes = await h.wait_push(1)
    await asyncio.sleep(0.6)
    assert len(h.pushes) == 1
    push = pushes[0]
    assert push["reason"] == "memoryChanged" and push["changedFiles"] == ["AGENTS.md"]
    assert push["changedSections"] == ["memory"] and push["sessions"] == ["default"]
    assert push["etag"] != first["etag"] and push["tokens"]["total"] > 0
    now = await h.command("contextCompanion.getSystemInstruction", {})
    assert now["etag"] == push["etag"] and "v6" in now["text"]
    # an atomic save (temp file + rename) is seen too
    tmp = workspace / ".AGENTS.md.tmp"
    tmp.write_text("atomic\n")
    os.replace(tmp, agents)
    await h.wait_push(2)
    assert "atomic" in (await h.command("contextCompanion.getSystemInstruction", {}))["text"]


async def test_no_push_when_the_etag_does_not_change(start, workspace):
    agents = write(workspace / "AGENTS.md", "same\n")
    h = await start(workspace, settings=NO_ENV)
    await h.command("contextCompanion.getSystemInstruction", {})
    agents.write_text("same\n")
    (workspace / "unrelated.txt").write_text("x")
    await asyncio.sleep(0.8)
    assert h.pushes == []


async def test_jit_memory_included_on_open_and_dropped_on_close(start, workspace):
    (workspace / ".git").mkdir()
    write(workspace / "AGENTS.md", "root rules\n")
    write(workspace / "api" / "AGENTS.md", "api rules\n")
    write(workspace / "api" / "handler.py", "def f(): pass\n")
    h = await start(workspace, settings={**NO_ENV, "memory": {"onDemandDelivery": "instruction"}})
    before = await h.command("contextCompanion.getSystemInstruction", {})
    assert "api rules" not in before["text"]
    h.open("api/handler.py")
    pushes = await h.wait_push(1)
    assert pushes[0]["reason"] == "openFilesChanged" and pushes[0]["changedSections"] == ["memory"]
    opened = await h.command("contextCompanion.getSystemInstruction", {})
    assert "api rules" in opened["text"] and opened["text"].index("root rules") < opened["text"].index("api rules")
    h.close("api/handler.py")
    await h.wait_push(2)
    closed = await h.command("contextCompanion.getSystemInstruction", {})
    assert "api rules" not in closed["text"] and closed["etag"] == before["etag"]


async def test_settings_change_pushes_and_invalid_settings_keep_last_good(start, workspace):
    h = await start(workspace, settings=NO_ENV)
    await h.command("contextCompanion.getSystemInstruction", {})
    h.client.workspace_did_change_configuration(
        t.DidChangeConfigurationParams(
            settings={"contextCompanion": {**NO_ENV, "prompt": {"sections": {"preamble": False}}}}
        )
    )
    push = (await h.wait_push(1))[0]
    assert push["reason"] == "settingsChanged" and "preamble" in push["changedSections"]
    h.client.workspace_did_change_configuration(
        t.DidChangeConfigurationParams(settings={"contextCompanion": {"context": {"maxOpenFiles": "many"}}})
    )
    await settle(h, 0.5)
    assert any("context.maxOpenFiles" in m.message for m in h.client.messages)
    text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert "You are an interactive" not in text  # the last good settings (preamble off) stay


async def test_invalid_initialization_options_show_one_message_and_serve_defaults(start, workspace):
    h = await start(workspace, settings={"memory": {"maxTokens": -1}})
    result = await h.command("contextCompanion.getSystemInstruction", {})
    assert result["text"]
    assert len(h.client.messages) == 1 and "memory.maxTokens" in h.client.messages[0].message


async def test_bad_settings_in_init_options_and_configuration_are_reported_once(start, workspace):
    bad = {"context": {"maxOpenFiles": -3}}
    h = await start(workspace, settings=bad, configuration=bad)
    await settle(h, 0.5)
    assert (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert len(h.client.messages) == 1 and "context.maxOpenFiles" in h.client.messages[0].message


async def test_settings_pulled_with_workspace_configuration(start, workspace):
    h = await start(workspace, configuration={"environment": {"placement": "off"}, "systemPrompt": "Pulled prompt."})
    for _ in range(100):  # the pull is answered after `initialized`, maybe after the first load is done
        text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
        if text == "Pulled prompt.":
            break
        await settle(h, 0.1)
    assert text == "Pulled prompt."


# ----------------------------------------------------------------------------- bad params


BAD_CALLS = [
    ("contextCompanion.startSession", {"sessionId": 5}, "sessionId"),
    ("contextCompanion.startSession", {"profile": {"approvalMode": "sometimes"}}, "approvalMode"),
    ("contextCompanion.endSession", {}, "sessionId: is required"),
    ("contextCompanion.getSystemInstruction", {"ifNoneMatch": 3}, "ifNoneMatch"),
    ("contextCompanion.refreshMemory", {"force": True}, "force: unknown field"),
    ("contextCompanion.getTurnContext", {"forceFull": "yes"}, "forceFull"),
    ("contextCompanion.buildMessages", {}, "messages: is required"),
    ("contextCompanion.buildMessages", {"messages": [{"content": "x"}]}, "messages[0].role"),
    ("contextCompanion.getInitialHistory", {"sessionId": ""}, "sessionId"),
    ("contextCompanion.showMemory", {"x": 1}, "x: unknown field"),
    ("contextCompanion.addMemory", {"fact": "  "}, "fact: must not be empty"),
    ("contextCompanion.addMemory", {"fact": "x", "scope": "team"}, "scope"),
    ("contextCompanion.getCompressionPrompt", ["not", "an object"], "expected at most one argument"),
    ("contextCompanion.getSystemInstruction", "a string", "must be a JSON object"),
    ("contextCompanion.doesNotExist", {}, "doesNotExist"),
]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def refusing_server(module_start, tmp_path_factory):
    """One server for every bad call: each is refused and changes nothing, so each also shows the
    server still answers after all those before it."""
    workspace = tmp_path_factory.mktemp("bad-params") / "ws"
    workspace.mkdir()
    return await module_start(workspace, settings=NO_ENV)


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize(("command", "arg", "expected"), BAD_CALLS)
async def test_bad_params_answer_invalid_params_and_server_stays_up(refusing_server, command, arg, expected):
    h = refusing_server
    args = arg if isinstance(arg, list) else [arg]
    with pytest.raises(JsonRpcException) as info:
        await h.client.workspace_execute_command_async(t.ExecuteCommandParams(command=command, arguments=args))
    assert info.value.code == -32602
    assert expected in info.value.message
    assert (await h.command("contextCompanion.getCompressionPrompt"))["text"]


async def test_malformed_notifications_do_not_crash(start, workspace):
    h = await start(workspace, settings=NO_ENV)
    cursor = "contextCompanion/didChangeCursor"
    h.send_raw({"method": cursor, "params": {"textDocument": {}}})
    h.send_raw(
        {"method": cursor, "params": {"textDocument": {"uri": "file:///x"}, "position": {"line": -1, "character": 0}}}
    )
    h.send_raw({"method": cursor, "params": "nonsense"})
    h.send_raw({"method": cursor})
    h.send_raw({"method": "textDocument/didOpen", "params": {"textDocument": {"uri": 3}}})
    h.send_raw(
        {
            "method": "textDocument/didChange",
            "params": {"textDocument": {"uri": "file:///nope", "version": 1}, "contentChanges": [{"text": "x"}]},
        }
    )
    await settle(h)
    assert (await h.command("contextCompanion.getTurnContext", {}))["kind"] == "full"
    assert h.client.messages == []


async def test_request_with_params_off_the_lsp_schema_gets_an_answer(start, workspace):
    h = await start(workspace, settings=NO_ENV)
    answer = asyncio.get_running_loop().create_future()
    h.client.protocol._request_futures[9999] = answer
    h.send_raw(
        {"id": 9999, "method": "workspace/executeCommand", "params": {"command": {"not": "a string"}, "arguments": 5}}
    )
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(answer, 10)
    assert info.value.code == -32602 and "workspace/executeCommand" in info.value.message
    assert (await h.command("contextCompanion.getCompressionPrompt"))["text"]


async def test_global_memory_dir_created_after_start_is_watched(start, workspace, tmp_path):
    later = tmp_path / "later-config" / "context-companion"
    h = await start(workspace, settings=NO_ENV, env={"CONTEXT_COMPANION_CONFIG_DIR": str(later)})
    await h.command("contextCompanion.getSystemInstruction", {})
    later.mkdir(parents=True)
    await asyncio.sleep(0.3)
    (later / "AGENTS.md").write_text("I like terse answers.\n")
    push = (await h.wait_push(1))[0]
    assert push["reason"] == "memoryChanged"
    assert "I like terse answers." in (await h.command("contextCompanion.getSystemInstruction", {}))["text"]


async def test_the_token_estimate_warning_is_logged_once_per_process(start, workspace, capfd):
    """A settings change makes a new tokenizer (here: a model of the same encoding); the server's
    log said "counts are estimated" again each time."""
    write(workspace / "AGENTS.md", "Use tabs.\n")
    h = await start(workspace, settings=NO_ENV)
    await h.command("contextCompanion.getSystemInstruction", {})
    for n, model in enumerate(("gpt-4o", "gpt-4.1", "o3")):
        changed = {**NO_ENV, "profile": {"model": model}, "systemPrompt": f"Prompt {n}."}
        h.client.workspace_did_change_configuration(
            t.DidChangeConfigurationParams(settings={"contextCompanion": changed})
        )
        for _ in range(100):  # one snapshot: once the prompt is in, so is the new tokenizer
            if f"Prompt {n}." in (await h.command("contextCompanion.getSystemInstruction", {}))["text"]:
                break
            await asyncio.sleep(0.05)
        else:
            raise AssertionError(f"settings {n} never applied")
    told = [line for line in capfd.readouterr().err.splitlines() if "token counts are estimated" in line]
    assert len(told) == 1, told
    assert "turn on tokens.allowDownload (off by default) or set tokens.encodingFile, in " in told[0]
    assert told[0].endswith(
        "/config.toml ([tokens] allowDownload = true) or the environment (CONTEXT_COMPANION_TOKENS__ALLOW_DOWNLOAD=true)"
    )


async def test_warnings_about_skipped_memory_reach_the_client(start, workspace):
    (workspace / "AGENTS.md").write_bytes(b"ok \xff\xfe bytes\n")
    (workspace / ".git").mkdir()
    (workspace / "sub").mkdir()
    (workspace / "sub" / "AGENTS.md").write_text("x" * 300_000)
    h = await start(workspace, settings=NO_ENV)
    shown = await h.command("contextCompanion.showMemory", {})
    assert any("sub/AGENTS.md" in w for w in shown["warnings"]) and any(
        "UTF-8" in w or "utf-8" in w.lower() for w in shown["warnings"]
    )
    result = await h.command("contextCompanion.getSystemInstruction", {})
    assert any("UTF-8" in w or "utf-8" in w.lower() for w in result["warnings"])


async def test_files_opened_before_start_do_not_ride_along_on_a_later_push(start, workspace):
    agents = write(workspace / "AGENTS.md", "v1\n")
    write(workspace / "main.py", "x\n")
    h = await start(workspace, settings=NO_ENV)
    h.open("main.py")  # may arrive before the server has finished starting
    await settle(h)
    await h.command("contextCompanion.getSystemInstruction", {})
    agents.write_text("v2\n")
    push = (await h.wait_push(1))[0]
    assert push["changedFiles"] == ["AGENTS.md"]


async def test_adding_a_workspace_folder_reads_its_memory_and_pushes(start, workspace, tmp_path):
    write(workspace / "AGENTS.md", "first folder\n")
    second = tmp_path / "second"
    write(second / "AGENTS.md", "second folder\n")
    h = await start(workspace, settings=NO_ENV)
    assert "second folder" not in (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    h.client.workspace_did_change_workspace_folders(
        t.DidChangeWorkspaceFoldersParams(
            event=t.WorkspaceFoldersChangeEvent(
                added=[t.WorkspaceFolder(uri=second.as_uri(), name="second")], removed=[]
            )
        )
    )
    push = (await h.wait_push(1))[0]
    assert push["reason"] == "workspaceChanged"
    text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert "first folder" in text and "second folder" in text


async def test_requests_keep_answering_while_memory_reloads(start, workspace):
    for i in range(60):
        write(workspace / f"pkg{i}" / "AGENTS.md", f"pkg {i}\n")
    h = await start(workspace, settings=NO_ENV)
    refresh = asyncio.ensure_future(h.command("contextCompanion.refreshMemory", {}))
    prompt = await h.command("contextCompanion.getCompressionPrompt", {})
    assert prompt["text"]
    assert (await refresh)["memoryFiles"]


async def test_open_files_are_most_recent_first_capped_and_untitled_documents_count(start, workspace):
    for name in ("a.py", "b.py", "c.py"):
        write(workspace / name, f"{name}\n")
    h = await start(workspace, settings={**NO_ENV, "context": {"maxOpenFiles": 3}})
    for name in ("a.py", "b.py", "c.py"):
        h.open(name)
    scratch = "untitled:Untitled-1"
    h.client.text_document_did_open(
        t.DidOpenTextDocumentParams(
            text_document=t.TextDocumentItem(uri=scratch, language_id="plaintext", version=1, text="draft idea\n")
        )
    )
    h.cursor(scratch, 0, 5, [(0, 0, 0, 5)])
    await settle(h)
    full = (await h.command("contextCompanion.getTurnContext", {}))["context"]
    assert full["activeFile"] == {"path": scratch, "cursor": {"line": 1, "character": 6}, "selectedText": "draft"}
    assert full["otherOpenFiles"] == [str(workspace / "c.py"), str(workspace / "b.py")]  # MRU, capped at 3 in all


async def test_the_folder_tree_is_a_snapshot_refreshed_on_request(start, workspace):
    write(workspace / "AGENTS.md", "memory\n")
    write(workspace / "generated" / "out.txt", "x\n")
    h = await start(workspace, settings={"environment": {"placement": "systemInstruction"}})
    first = await h.command("contextCompanion.getSystemInstruction", {})
    assert "generated/" in first["text"]
    (workspace / ".gitignore").write_text("generated/\n")
    write(workspace / "new_module.py", "x = 1\n")
    await asyncio.sleep(0.6)  # the watcher saw both; the tree is not taken again for them
    assert not h.pushes
    assert (await h.command("contextCompanion.getSystemInstruction", {}))["etag"] == first["etag"]
    refreshed = await h.command("contextCompanion.refreshMemory", {"environment": True})
    assert refreshed["changed"] is True and refreshed["sessionsUpdated"] == ["default"]
    now = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert "generated/" not in now and "new_module.py" in now


async def test_ignored_trees_are_not_watched_until_the_ignore_rules_give_them_back(start, workspace):
    write(workspace / ".gitignore", "node_modules/\nbuild/\n")
    (workspace / ".git/objects").mkdir(parents=True)
    for i in range(40):
        (workspace / f"node_modules/pkg{i}/lib").mkdir(parents=True)
    write(workspace / "build/gen/x.py", "")
    write(workspace / "src/AGENTS.md", "src notes\n")
    h = await start(workspace, settings=NO_ENV)
    await h.command("contextCompanion.getSystemInstruction", {})
    assert watched_dirs(workspace, h.server_pid) == {".", "src", ".git"}  # of 87 directories
    h.open("build/gen/x.py")
    await h.command("contextCompanion.getTurnContext", {})
    write(workspace / ".gitignore", "node_modules/\n")  # build/ belongs to the project again
    given_back = {".", "src", ".git", "build", "build/gen"}
    for _ in range(100):
        if watched_dirs(workspace, h.server_pid) == given_back:
            break
        await asyncio.sleep(0.1)
    assert watched_dirs(workspace, h.server_pid) == given_back
    write(workspace / "build/gen/AGENTS.md", "Generated code: never edit by hand.\n")
    for _ in range(100):  # memory of a subfolder comes with the next turn: no push
        turn = await h.command("contextCompanion.getTurnContext", {})
        if turn["memoryUpdates"]:
            break
        await asyncio.sleep(0.1)
    assert [u["path"] for u in turn["memoryUpdates"]] == ["build/gen/AGENTS.md"]
