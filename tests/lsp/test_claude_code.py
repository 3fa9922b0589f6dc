"""Claude Code's IDE integration, as Claude Code reaches it: the lock file in $CLAUDE_CONFIG_DIR/ide,
a WebSocket with the token in x-claude-code-ide-authorization, MCP over it (the official SDK's
client session), and selection_changed after a cursor move over LSP."""

from __future__ import annotations

import asyncio
import contextlib
import json
import stat
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from lsp_harness import Harness, plain
from mcp.client.extension import NotificationBinding
from mcp.client.session import ClientSession
from mcp.shared.message import SessionMessage
from pydantic import BaseModel, ConfigDict
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

ENABLED = {"companion": {"claudeCode": {"enabled": True}}}
HEADER = "x-claude-code-ide-authorization"


class Selection(BaseModel):
    model_config = ConfigDict(extra="allow")
    text: str
    filePath: str
    fileUrl: str
    selection: dict[str, Any]


async def _lock(ide_dir: Path) -> tuple[Path, dict[str, Any]]:
    for _ in range(300):
        for path in ide_dir.glob("*.lock"):
            return path, json.loads(path.read_text())
        await asyncio.sleep(0.05)
    raise AssertionError(f"no lock file in {ide_dir}")


@contextlib.asynccontextmanager
async def _session(port: int, token: str, received: list[Selection]) -> AsyncIterator[ClientSession]:
    """The SDK's client session over a WebSocket (one JSON-RPC message per text frame)."""
    async with connect(f"ws://127.0.0.1:{port}", additional_headers={HEADER: token}, subprotocols=["mcp"]) as ws:  # type: ignore[list-item]
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](32)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](32)

        async def reader() -> None:
            async with read_send:
                async for data in ws:
                    await read_send.send(SessionMessage(types.jsonrpc_message_adapter.validate_json(data)))

        async def writer() -> None:
            async with write_recv:
                async for item in write_recv:
                    await ws.send(item.message.model_dump_json(by_alias=True, exclude_unset=True))

        async def on_selection(params: Selection) -> None:
            received.append(params)

        binding = NotificationBinding(method="selection_changed", params_type=Selection, handler=on_selection)
        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            async with ClientSession(read_recv, write_send, notification_bindings=[binding]) as session:
                await session.initialize()
                yield session
            tg.cancel_scope.cancel()


async def _call(session: ClientSession, name: str, args: dict[str, Any] | None = None) -> Any:
    result = await session.call_tool(name, args or {})
    assert not result.is_error, result
    return json.loads(result.content[0].text)  # type: ignore[union-attr]


async def _told(received: list[Selection], start: int, wanted: Any) -> int:
    """The index of the first notification from ``start`` on that ``wanted`` accepts. The bridge
    tells a client that listed the tools the same state again 0.1, 0.5 and 2 s later, so on a slow
    machine a repeat of the previous state may come first."""
    for _ in range(200):
        for i in range(start, len(received)):
            if wanted(received[i]):
                return i
        await asyncio.sleep(0.025)
    raise AssertionError(f"no such selection_changed after #{start}: {received}")


async def _wait(received: list[Selection], count: int) -> list[Selection]:
    for _ in range(200):
        if len(received) >= count:
            return received
        await asyncio.sleep(0.025)
    raise AssertionError(f"expected {count} selection_changed, got {received}")


@pytest.fixture
def ide_dir(tmp_path: Path) -> Path:
    return tmp_path / "claude-config" / "ide"


async def _started(start: Any, ws: Path, ide_dir: Path) -> Harness:
    harness: Harness = await start(ws, settings=ENABLED, env={"CLAUDE_CONFIG_DIR": str(ide_dir.parent)})
    return harness


@pytest.mark.parametrize("workspace", ["ws", "my proj ünï #1"], indirect=True)
async def test_lock_file_tools_and_selection_changed(start: Any, workspace: Path, ide_dir: Path) -> None:
    started: list[Any] = []
    h = await _started(start, workspace, ide_dir)
    h.client.feature("contextCompanion/companionStarted")(lambda params: started.append(params))
    (workspace / "AGENTS.md").write_text("# Rules\n\n@missing.md\n", encoding="utf-8")
    (workspace / ".env").write_text("API_TOKEN=hunter2-very-secret\n", encoding="utf-8")
    lock_path, lock = await _lock(ide_dir)

    # the lock file: private, in a private directory, with the fields Claude Code reads
    assert stat.S_IMODE(lock_path.stat().st_mode) == 0o600
    assert stat.S_IMODE(ide_dir.stat().st_mode) == 0o700
    port = int(lock_path.stem)
    assert set(lock) == {"pid", "workspaceFolders", "ideName", "transport", "authToken", "contextCompanion"}
    # which server wrote it (removed by the next server if this one is killed): docs/reliability.md
    assert lock["contextCompanion"]["serverPid"] == lock["pid"]
    assert lock["transport"] == "ws" and lock["workspaceFolders"] == [str(workspace)]
    assert len(lock["authToken"]) >= 40

    received: list[Selection] = []
    async with _session(port, lock["authToken"], received) as session:
        tools = {tool.name for tool in (await session.list_tools()).tools}
        assert {
            "getCurrentSelection",
            "getLatestSelection",
            "getOpenEditors",
            "getWorkspaceFolders",
            "getDiagnostics",
            "openDiff",
        } <= tools

        assert await _call(session, "getCurrentSelection") == {"success": False, "message": "No active editor found"}
        folders = await _call(session, "getWorkspaceFolders")
        assert folders["folders"] == [{"name": workspace.name, "uri": workspace.as_uri(), "path": str(workspace)}]

        app = h.open("app.py", "x = 1\npassword = 'correct-horse-battery'\n", language="python")
        env_uri = h.open(".env", "API_TOKEN=hunter2-very-secret\n")
        agents = h.open("AGENTS.md", language="markdown")
        h.cursor(env_uri, 0, 3, [(0, 0, 0, 20)])  # a secret file: never described
        await asyncio.sleep(0.3)
        assert received == []
        h.cursor(app, 1, 0, [(0, 0, 1, 34)])
        at = await _told(received, 0, lambda s: s.filePath != "")
        first = received[at]
        assert first.filePath == str(workspace / "app.py") and first.fileUrl == app
        assert first.selection == {
            "start": {"line": 0, "character": 0},
            "end": {"line": 1, "character": 34},
            "isEmpty": False,
        }
        assert first.text.startswith("x = 1\npassword = ") and "correct-horse" not in first.text  # redacted

        current = await _call(session, "getCurrentSelection")
        assert current["success"] is True and current["selection"] == first.selection
        h.cursor(app, 0, 2)  # the selection collapses: latest keeps the one with text
        second = received[await _told(received, at + 1, lambda s: s != first)]
        assert second.selection["isEmpty"] is True and second.text == ""
        latest = await _call(session, "getLatestSelection")
        assert latest["selection"] == first.selection

        tabs = (await _call(session, "getOpenEditors"))["tabs"]
        assert [tab["uri"] for tab in tabs] == [app, agents]  # .env is left out
        assert tabs[0]["isActive"] and tabs[0]["label"] == "app.py" and tabs[0]["languageId"] == "python"

        [diagnostics] = await _call(session, "getDiagnostics")
        assert diagnostics["uri"] == agents
        assert any("missing.md" in d["message"] for d in diagnostics["diagnostics"])
        assert await _call(session, "getDiagnostics", {"uri": app}) == []
        unencoded = "file://" + str(workspace / "AGENTS.md")  # a client that does not percent-encode
        assert await _call(session, "getDiagnostics", {"uri": unencoded}) == [diagnostics]

        everything = json.dumps(
            [await _call(session, name) for name in ("getOpenEditors", "getCurrentSelection", "getLatestSelection")]
            + [r.model_dump() for r in received]
        )
        assert ".env" not in everything and "hunter2" not in everything

        bad = await session.call_tool("getDiagnostics", {"uri": 5})
        assert bad.is_error and "uri" in bad.content[0].text  # type: ignore[union-attr]

    assert started and plain(started[-1])["claudeCode"]["env"] == {
        "CLAUDE_CODE_SSE_PORT": str(port),
        "ENABLE_IDE_INTEGRATION": "true",
    }
    await h.client.shutdown_session()
    assert not lock_path.exists()


async def test_open_diff_goes_to_the_editor(start: Any, workspace: Path, ide_dir: Path) -> None:
    h = await _started(start, workspace, ide_dir)
    shown: list[Any] = []

    @h.client.feature("contextCompanion/showDiff")
    def _show(params: Any) -> dict[str, str]:
        shown.append(params)
        return {"outcome": "accepted", "text": "print('edited')\n"}

    lock_path, lock = await _lock(ide_dir)
    target = workspace / "app.py"
    async with _session(int(lock_path.stem), lock["authToken"], []) as session:
        args = {
            "old_file_path": str(target),
            "new_file_path": str(target),
            "new_file_contents": "print('hi')\n",
            "tab_name": "app.py (proposed)",
        }
        result = await session.call_tool("openDiff", args)
        assert [c.text for c in result.content] == ["FILE_SAVED", "print('edited')\n"]  # type: ignore[union-attr]
        assert shown[0].uri == target.as_uri() and shown[0].newText == "print('hi')\n"
        relative = await session.call_tool("openDiff", {**args, "new_file_path": "app.py"})
        assert relative.is_error


async def test_handshakes_without_the_token_or_with_a_foreign_host_are_refused(
    start: Any, workspace: Path, ide_dir: Path
) -> None:
    await _started(start, workspace, ide_dir)
    lock_path, lock = await _lock(ide_dir)
    url = f"ws://127.0.0.1:{lock_path.stem}"
    for headers, status in (
        ({}, 401),
        ({HEADER: "wrong"}, 401),
        ({HEADER: lock["authToken"], "Host": f"evil.example:{lock_path.stem}"}, 403),
        ({HEADER: lock["authToken"], "Origin": "http://evil.example"}, 403),
    ):
        with pytest.raises(InvalidStatus) as refused:
            async with connect(url, additional_headers=headers):
                pass
        assert refused.value.response.status_code == status, headers
    # one Host naming another site (DNS rebinding), sent as the only Host header
    reader, writer = await asyncio.open_connection("127.0.0.1", int(lock_path.stem))
    writer.write(
        (
            f"GET / HTTP/1.1\r\nHost: evil.example:{lock_path.stem}\r\nUpgrade: websocket\r\n"
            "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"{HEADER}: {lock['authToken']}\r\n\r\n"
        ).encode()
    )
    assert (await reader.readline()).split()[1] == b"403"
    writer.close()


async def test_on_by_default_and_gone_when_turned_off(start: Any, workspace: Path, ide_dir: Path) -> None:
    h = await start(workspace, env={"CLAUDE_CONFIG_DIR": str(ide_dir.parent)})
    lock_path, lock = await _lock(ide_dir)
    assert lock["workspaceFolders"] == [str(workspace)]
    off = await start(
        workspace,
        settings={"companion": {"claudeCode": {"enabled": False}}},
        env={"CLAUDE_CONFIG_DIR": str(ide_dir.parent / "off")},
    )
    await off.command("contextCompanion.showMemory", {})  # the boot is done
    assert not (ide_dir.parent / "off" / "ide").exists()
    assert lock_path.exists() and h is not None


async def test_a_client_that_connects_late_is_told_where_the_editor_is(
    start: Any, workspace: Path, ide_dir: Path
) -> None:
    """With nobody connected the cursor is not followed; the client that connects hears the
    selection as it is then, once."""
    h = await _started(start, workspace, ide_dir)
    lock_path, lock = await _lock(ide_dir)
    app = h.open("app.py", "x = 1\ny = 2\n", language="python")
    h.cursor(app, 0, 0, [(0, 0, 0, 5)])
    await asyncio.sleep(0.3)
    h.cursor(app, 1, 0, [(1, 0, 1, 5)])
    await asyncio.sleep(0.3)
    received: list[Selection] = []
    async with _session(int(lock_path.stem), lock["authToken"], received) as session:
        [told] = await _wait(received, 1)
        assert told.filePath == str(workspace / "app.py") and told.text == "y = 2"
        assert (await _call(session, "getCurrentSelection"))["text"] == "y = 2"


async def test_a_client_that_lists_the_tools_is_told_again_shortly_after(
    start: Any, workspace: Path, ide_dir: Path
) -> None:
    """Claude Code subscribes to selection_changed only after it has listed the tools, and drops
    what came before: the editor's state is told again after tools/list, the newest state each time."""
    h = await _started(start, workspace, ide_dir)
    lock_path, lock = await _lock(ide_dir)
    app = h.open("app.py", "x = 1\ny = 2\n", language="python")
    h.cursor(app, 0, 0, [(0, 0, 0, 5)])
    await asyncio.sleep(0.3)
    received: list[Selection] = []
    async with _session(int(lock_path.stem), lock["authToken"], received) as session:
        await _wait(received, 1)  # on initialized
        await session.list_tools()
        await _wait(received, 2)  # again, once the tools were listed
        assert {(s.filePath, s.text) for s in received} == {(str(workspace / "app.py"), "x = 1")}
        h.cursor(app, 1, 0, [(1, 0, 1, 5)])
        for _ in range(200):
            if received[-1].text == "y = 2" and len(received) >= 4:
                break
            await asyncio.sleep(0.025)
        # the move itself, then the later re-tellings carry the new selection, never the old one
        assert [s.text for s in received[2:]] == ["y = 2"] * (len(received) - 2), [s.text for s in received]


async def test_companion_status_reports_claude_code(start: Any, workspace: Path, ide_dir: Path) -> None:
    """``companionStatus`` says whether Claude Code's integration runs, on which port, with which lock
    file, and how many Claude Codes are connected; off, it says so."""
    h = await _started(start, workspace, ide_dir)
    lock_path, lock = await _lock(ide_dir)
    status = await h.command("contextCompanion.companionStatus")
    assert status["claudeCode"] == {
        "running": True,
        "port": int(lock_path.stem),
        "lockFile": str(lock_path),
        "connectedClients": 0,
        "listening": True,
    }
    assert "geminiCli" in status  # the Gemini companion's entry is still there
    received: list[Selection] = []
    async with _session(int(lock_path.stem), lock["authToken"], received) as session:
        await session.list_tools()
        status = await h.command("contextCompanion.companionStatus")
        assert status["claudeCode"]["connectedClients"] == 1
    for _ in range(100):  # the server sees the socket close a moment later
        status = await h.command("contextCompanion.companionStatus")
        if status["claudeCode"]["connectedClients"] == 0:
            break
        await asyncio.sleep(0.05)
    assert status["claudeCode"]["connectedClients"] == 0

    off = await start(
        workspace,
        settings={"companion": {"claudeCode": {"enabled": False}}},
        env={"CLAUDE_CONFIG_DIR": str(ide_dir.parent / "off")},
    )
    assert (await off.command("contextCompanion.companionStatus"))["claudeCode"] == {
        "running": False,
        "port": None,
        "lockFile": None,
        "connectedClients": 0,
        "listening": False,
    }


async def test_open_diffs_waiting_in_the_editor_are_capped(start: Any, workspace: Path, ide_dir: Path) -> None:
    """A Claude Code cannot open diff after diff without end: past MAX_OPEN_DIFFS waiting for the user
    the next openDiff is an error naming the cap; once one is decided, a new one may open."""
    from context_companion.workspace.commands import MAX_OPEN_DIFFS

    h = await _started(start, workspace, ide_dir)
    decide: asyncio.Queue[None] = asyncio.Queue()
    shown: list[Any] = []

    @h.client.feature("contextCompanion/showDiff")
    async def _show(params: Any) -> dict[str, str]:
        shown.append(params)
        await decide.get()
        return {"outcome": "rejected"}

    lock_path, lock = await _lock(ide_dir)
    async with _session(int(lock_path.stem), lock["authToken"], []) as session:

        async def open_diff(i: int) -> Any:
            path = str(workspace / f"f{i}.py")
            args = {"old_file_path": path, "new_file_path": path, "new_file_contents": f"{i}\n", "tab_name": f"f{i}"}
            return await session.call_tool("openDiff", args)

        waiting = [asyncio.ensure_future(open_diff(i)) for i in range(MAX_OPEN_DIFFS)]
        for _ in range(200):
            if len(shown) == MAX_OPEN_DIFFS:
                break
            await asyncio.sleep(0.02)
        assert len(shown) == MAX_OPEN_DIFFS
        refused = await asyncio.wait_for(open_diff(MAX_OPEN_DIFFS), 10)  # answered at once, not left waiting
        assert refused.is_error
        assert f"{MAX_OPEN_DIFFS} diffs are already waiting" in refused.content[0].text  # type: ignore[union-attr]
        assert len(shown) == MAX_OPEN_DIFFS  # the editor never saw it
        decide.put_nowait(None)
        done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED, timeout=10)
        assert done
        again = asyncio.ensure_future(open_diff(MAX_OPEN_DIFFS + 1))
        for _ in range(200):
            if len(shown) == MAX_OPEN_DIFFS + 1:
                break
            await asyncio.sleep(0.02)
        assert len(shown) == MAX_OPEN_DIFFS + 1
        for _ in range(MAX_OPEN_DIFFS):
            decide.put_nowait(None)
        results = await asyncio.wait_for(asyncio.gather(*waiting, again), 20)
        assert all(not r.is_error for r in results)


async def test_a_start_still_pending_at_shutdown_never_happens(
    tmp_path: Path, ide_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``shutdown`` may come while the boot is still loading: the reconcile the boot does afterwards
    must start no server and write no lock file."""
    from types import SimpleNamespace

    from context_companion.lsp.claude_code_endpoint import ClaudeCodeEndpoint
    from context_companion.settings import Settings

    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(ide_dir.parent))
    sent: list[Any] = []
    ls = SimpleNamespace(
        companion=SimpleNamespace(snapshot=SimpleNamespace(settings=Settings(), folders=(tmp_path,))),
        protocol=SimpleNamespace(notify=lambda method, params: sent.append((method, params))),
        show_error=lambda message: sent.append(message),
    )
    endpoint = ClaudeCodeEndpoint()
    endpoint.shutdown()  # as lifecycle.shutdown does
    await endpoint.reconcile(ls)  # type: ignore[arg-type]
    assert not endpoint.running and sent == []
    assert not ide_dir.is_dir() or not list(ide_dir.glob("*.lock"))
    await endpoint.close()
