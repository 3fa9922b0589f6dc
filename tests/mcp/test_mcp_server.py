"""``context-companion mcp`` driven by the official MCP Python SDK client, over stdio and HTTP."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_helpers import edit, http_server

TOOLS = {"get_system_instruction", "get_turn_context", "build_messages", "show_memory", "add_memory"}
INSTRUCTION = "context-companion://instruction"
TURN = "context-companion://turn-context"
AGENTS = "context-companion://memory/AGENTS.md"


def _structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    assert isinstance(result.structured_content, dict)
    return result.structured_content


async def test_every_tool_is_listed_with_its_schema_and_answers(stdio_client: Any, ws: Path) -> None:
    async with stdio_client() as client:
        assert "standalone" in (client.instructions or "")
        tools = {t.name: t for t in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        props = tools["get_system_instruction"].input_schema["properties"]
        assert {"session", "ifNoneMatch"} <= set(props)
        assert tools["add_memory"].input_schema["required"] == ["text"]
        assert tools["add_memory"].input_schema["properties"]["scope"]["enum"] == ["global", "workspace"]
        assert tools["build_messages"].input_schema["required"] == ["messages"]
        notes = tools["add_memory"].annotations
        assert notes is not None and notes.destructive_hint is False and notes.idempotent_hint is False
        assert tools["show_memory"].annotations.read_only_hint is True

        first = await client.call_tool("get_system_instruction", {})
        head = _structured(first)
        assert "Indent with tabs." in first.content[0].text
        assert head["unchanged"] is False and head["tokens"]["total"] > 0 and head["changedSections"] == []
        assert head["text"] == first.content[0].text  # for clients that give the model the structured content
        again = _structured(await client.call_tool("get_system_instruction", {"ifNoneMatch": head["etag"]}))
        assert again["unchanged"] is True and again["etag"] == head["etag"] and "text" not in again

        turn = _structured(await client.call_tool("get_turn_context", {"session": "s1"}))
        assert turn["kind"] == "full"
        assert _structured(await client.call_tool("get_turn_context", {"session": "s1"}))["kind"] == "none"

        given = [{"role": "user", "content": "hi", "name": "kept"}]
        built = _structured(await client.call_tool("build_messages", {"messages": given}))["messages"]
        assert built[0]["role"] == "system" and "Indent with tabs." in built[0]["content"]
        assert built[-1] == given[0]

        shown = _structured(await client.call_tool("show_memory", {}))
        [agents] = [f for f in shown["files"] if f["path"] == "AGENTS.md"]
        assert agents["tier"] == "workspace" and agents["included"] and agents["reason"] and agents["tokens"] > 0
        assert shown["dropped"] == [] and shown["tokens"] > 0 and "Indent with tabs." in shown["text"]

        added = _structured(
            await client.call_tool("add_memory", {"text": "Run the tests with tox.", "scope": "workspace"})
        )
        assert Path(added["path"]) == ws / "AGENTS.md"
        assert "Run the tests with tox." in (ws / "AGENTS.md").read_text()
        after = _structured(await client.call_tool("get_system_instruction", {}))
        assert after["etag"] != head["etag"] and after["changedSections"]


async def test_resources_templates_and_prompt(stdio_client: Any) -> None:
    async with stdio_client() as client:
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        assert {INSTRUCTION, TURN, AGENTS} <= set(listed)
        assert listed[INSTRUCTION].mime_type == "text/markdown"
        assert listed[TURN].mime_type == "application/json"
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["context-companion://memory/{path}"]

        instruction = (await client.read_resource(INSTRUCTION)).contents[0]
        assert "Indent with tabs." in instruction.text
        turn = json.loads((await client.read_resource(TURN)).contents[0].text)
        assert turn["kind"] == "full"
        agents = (await client.read_resource(AGENTS)).contents[0]
        assert agents.text == "# Project rules\n\n- Indent with tabs.\n"
        with pytest.raises(MCPError, match="not a memory file"):
            await client.read_resource("context-companion://memory/../../etc/passwd")

        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts] == ["refreshed_system_instruction"]
        prompt = await client.get_prompt("refreshed_system_instruction", {})
        assert "Indent with tabs." in prompt.messages[0].content.text


async def _updates_after_edit(notes: list[tuple[float, str]], ws: Path, uri: str) -> None:
    """Edit AGENTS.md; the first update must arrive within 2 s and exactly one must arrive."""
    written = edit(ws / "AGENTS.md", "# Project rules\n\n- Indent with four spaces.\n")
    deadline = written + 2.0
    while not any(u == uri for _, u in notes) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    got = [t for t, u in notes if u == uri]
    assert got, "no resources/updated within 2 s"
    assert got[0] - written <= 2.0
    await asyncio.sleep(1.0)  # a second notification for the same edit would arrive by now
    assert [u for _, u in notes].count(uri) == 1, notes


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")  # the 2025 way, still used
async def test_subscribed_instruction_is_updated_once_per_edit(stdio_client: Any, ws: Path) -> None:
    notes: list[tuple[float, str]] = []

    async def on_message(message: Any) -> None:
        if getattr(message, "method", None) == "notifications/resources/updated":
            notes.append((time.monotonic(), str(message.params.uri)))

    async with stdio_client("legacy", on_message=on_message) as client:
        await client.session.subscribe_resource(INSTRUCTION)
        await _updates_after_edit(notes, ws, INSTRUCTION)
        assert "four spaces" in (await client.read_resource(INSTRUCTION)).contents[0].text
        # Saving the same content again changes nothing: no notification.
        edit(ws / "AGENTS.md", (ws / "AGENTS.md").read_text())
        await asyncio.sleep(1.0)
        assert len(notes) == 1


async def test_listen_stream_gets_the_update_on_a_2026_connection(stdio_client: Any, ws: Path) -> None:
    async with stdio_client("auto") as client:
        assert client.protocol_version.startswith("2026")
        notes: list[tuple[float, str]] = []
        async with client.listen(resource_subscriptions=[INSTRUCTION]) as sub:

            async def collect() -> None:
                async for event in sub:
                    notes.append((time.monotonic(), event.uri))

            task = asyncio.create_task(collect())
            try:
                await _updates_after_edit(notes, ws, INSTRUCTION)
            finally:
                task.cancel()


async def test_new_memory_file_changes_the_resource_list(stdio_client: Any, ws: Path) -> None:
    seen: list[str] = []

    async def on_message(message: Any) -> None:
        seen.append(str(getattr(message, "method", "")))

    async with stdio_client("legacy", on_message=on_message) as client:
        await client.list_resources()
        (ws / "CLAUDE.md").write_text("- Answer briefly.\n", encoding="utf-8")
        for _ in range(1000):  # up to 10 s: the watcher debounces and batches
            if "notifications/resources/list_changed" in seen:
                break
            await asyncio.sleep(0.01)
        assert "notifications/resources/list_changed" in seen
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        assert "context-companion://memory/CLAUDE.md" in uris


@pytest.mark.parametrize(
    ("tool", "arguments", "expected"),
    [
        ("get_system_instruction", {"session": 5}, "get_system_instruction: session: Input should be a valid string"),
        ("get_system_instruction", {"ifNoneMatch": ["x"]}, "ifNoneMatch: Input should be a valid string"),
        ("get_system_instruction", {"session": ""}, "session: String should have at least 1 character"),
        ("get_turn_context", {"session": "x" * 201}, "session: String should have at most 200 characters"),
        ("get_turn_context", {"bogus": 1}, "get_turn_context: bogus: unknown field"),
        ("build_messages", {}, "build_messages: messages: is required"),
        ("build_messages", {"messages": "hi"}, "messages: Input should be a valid list"),
        ("build_messages", {"messages": [{"content": "no role"}]}, "messages[0].role: is required"),
        ("build_messages", {"messages": [{"role": "user"}] * 10_001}, "messages: List should have at most 10000 items"),
        ("add_memory", {}, "add_memory: text: is required"),
        ("add_memory", {"text": 3}, "add_memory: text: Input should be a valid string"),
        ("add_memory", {"text": "  "}, "add_memory: text: must not be empty"),
        ("add_memory", {"text": "x", "scope": "elsewhere"}, "scope: Input should be 'global' or 'workspace'"),
        ("show_memory", {"all": True}, "show_memory: all: unknown field"),
        ("no_such_tool", {}, "unknown tool 'no_such_tool'"),
    ],
)
async def test_bad_input_is_a_tool_error_naming_the_field(
    stdio_client: Any, tool: str, arguments: dict[str, Any], expected: str
) -> None:
    async with stdio_client() as client:
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        assert expected in result.content[0].text
        assert "Traceback" not in result.content[0].text
        alive = _structured(await client.call_tool("show_memory", {}))  # the server is still serving
        assert any(f["path"] == "AGENTS.md" for f in alive["files"])


async def test_a_session_named_for_the_first_time_is_started(stdio_client: Any) -> None:
    async with stdio_client() as client:
        fresh = _structured(await client.call_tool("get_turn_context", {"session": "never-seen"}))
        assert fresh["kind"] == "full"


async def test_read_only_refuses_add_memory(stdio_client: Any, ws: Path) -> None:
    before = (ws / "AGENTS.md").read_text()
    async with stdio_client("legacy", "--read-only") as client:
        result = await client.call_tool("add_memory", {"text": "Never.", "scope": "workspace"})
        assert result.is_error and "--read-only" in result.content[0].text
        assert "Read-only" in (client.instructions or "")
    assert (ws / "AGENTS.md").read_text() == before


async def test_memory_elsewhere_standalone_keeps_memory_files_out_of_the_instruction(
    stdio_client: Any, ws: Path
) -> None:
    async with stdio_client("legacy", "--memory-elsewhere") as client:
        first = await client.call_tool("get_system_instruction", {})
        head = _structured(first)
        assert "Indent with tabs." not in first.content[0].text and "are not repeated here" in first.content[0].text
        edit(ws / "AGENTS.md", "# Project rules\n\n- Indent with spaces.\n")
        for _ in range(200):  # until the watcher applied the edit (an explicit ask gets the memory)
            whole = await client.call_tool("get_system_instruction", {"session": "other", "includeMemory": True})
            if "Indent with spaces." in whole.content[0].text:
                break
            await asyncio.sleep(0.05)
        assert "Indent with spaces." in whole.content[0].text
        again = _structured(await client.call_tool("get_system_instruction", {"ifNoneMatch": head["etag"]}))
        assert again["unchanged"] is True  # a memory edit does not move an instruction without memory
        built = _structured(await client.call_tool("build_messages", {"messages": [{"role": "user", "content": "hi"}]}))
        assert "Indent with" not in json.dumps(built)


async def test_http_serves_with_the_token_from_the_discovery_file(ws: Path, server_env: dict[str, str]) -> None:
    async with http_server(ws, server_env) as entry:
        assert entry["transport"] == "mcp-http"
        assert entry["url"] == f"http://127.0.0.1:{entry['port']}/mcp"
        assert entry["url"] in entry["stderr"] and entry["token"] not in entry["stderr"]
        assert entry["workspaceFolders"] == [str(ws)] and entry["pid"] > 0
        assert stat.S_IMODE(os.stat(entry["path"]).st_mode) == 0o600
        assert entry["path"].name == f"server-{entry['pid']}-{entry['port']}.json"

        http = create_mcp_http_client(headers={"Authorization": f"Bearer {entry['token']}"})
        from mcp.client.streamable_http import streamable_http_client

        async with http, Client(streamable_http_client(entry["url"], http_client=http), mode="legacy") as client:
            assert {t.name for t in (await client.list_tools()).tools} == TOOLS
            first = await client.call_tool("get_system_instruction", {})
            assert "Indent with tabs." in first.content[0].text

        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        async with httpx2.AsyncClient() as raw:
            for headers, status in (
                ({}, 401),
                ({"Authorization": "Bearer wrong"}, 401),
                ({"Authorization": f"Bearer {entry['token']}", "Host": "evil.example:80"}, 403),
                ({"Authorization": f"Bearer {entry['token']}", "Origin": "https://evil.example"}, 403),
            ):
                response = await raw.post(entry["url"], json=body, headers=headers)
                assert response.status_code == status, (headers, response.text)
    assert not entry["path"].exists()  # removed when the server stops
