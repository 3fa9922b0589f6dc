"""A client that mints session ids cannot grow the server without bound, nor its pushes.

Each agent session holds an instruction and a turn baseline; ``server.maxSessions`` caps them
(least recently used evicted first), and ``systemInstructionChanged`` names at most 16 sessions
next to their count.
"""

from __future__ import annotations

import pytest
from context_companion.workspace.sessions import AgentSessions
from sockets_support import RpcFailure

CHANGED = "contextCompanion/systemInstructionChanged"


def test_ten_thousand_minted_ids_keep_at_most_max_sessions():
    sessions = AgentSessions(64)
    sessions.get("editor-chat")
    for i in range(10_000):
        sessions.get(f"minted-{i}")
        if i % 50 == 0:
            sessions.get("editor-chat")  # in use: never the least recently used
    assert len(sessions) == 64
    assert sessions.find("editor-chat") is not None
    assert sessions.find("minted-0") is None and sessions.find("minted-9999") is not None


def test_the_least_recently_used_session_is_evicted_and_comes_back_fresh(tmp_path, stdio):
    (tmp_path / "AGENTS.md").write_text("# Memory\n")
    s = stdio()
    s.initialize(tmp_path, {"server": {"maxSessions": 3}})
    for name in ("a", "b", "c"):
        s.command("contextCompanion.startSession", {"sessionId": name})
        assert s.command("contextCompanion.getTurnContext", {"sessionId": name})["kind"] == "full"
    assert s.command("contextCompanion.getTurnContext", {"sessionId": "a"})["kind"] == "none"  # a is used: b is oldest
    s.command("contextCompanion.startSession", {"sessionId": "d"})
    with pytest.raises(RpcFailure) as info:
        s.command("contextCompanion.endSession", {"sessionId": "b"})
    assert info.value.code == -32602 and "unknown session 'b'" in info.value.message
    assert s.command("contextCompanion.getTurnContext", {"sessionId": "a"})["kind"] == "none"  # kept its baseline
    # b asked again is a new session: full context, and now c (the oldest) made room.
    assert s.command("contextCompanion.getTurnContext", {"sessionId": "b"})["kind"] == "full"
    with pytest.raises(RpcFailure):
        s.command("contextCompanion.endSession", {"sessionId": "c"})


def test_a_push_names_at_most_16_sessions_and_gives_the_count(tmp_path, stdio):
    (tmp_path / "AGENTS.md").write_text("# Memory\nfirst\n")
    s = stdio()
    s.initialize(tmp_path)
    for i in range(40):
        s.command("contextCompanion.getSystemInstruction", {"sessionId": f"chat-{i:02d}"})
    (tmp_path / "AGENTS.md").write_text("# Memory\nsecond\n")
    push = s.wait_notifications(CHANGED)[-1]
    assert push["sessionCount"] == 40
    assert len(push["sessions"]) == 16 and set(push["sessions"]) <= {f"chat-{i:02d}" for i in range(40)}


def test_reading_the_turn_context_resource_evicts_no_session(tmp_path, monkeypatch):
    """The MCP turn-context resource is computed in a session that is never registered: at the
    server.maxSessions limit it pushes no agent's session (and its baseline) out."""
    import json

    from context_companion.bridges.mcp_server import TURN_CONTEXT_URI, McpBridge
    from context_companion.workspace.companion import Companion

    class Source:
        async def ready(self) -> Companion:
            return companion

        def texts(self) -> dict[str, str]:
            return {}

        def applied(self, change: object) -> None:
            pass

    monkeypatch.setenv("CONTEXT_COMPANION_SERVER__MAX_SESSIONS", "2")
    monkeypatch.setenv("CONTEXT_COMPANION_CONFIG_DIR", str(tmp_path / "cfg"))
    (tmp_path / "AGENTS.md").write_text("Rules.\n")
    companion = Companion.open([tmp_path])
    for name in ("a", "b"):
        companion.turn_context(name, {})
    text, _mime = McpBridge(Source(), mode="legacy")._content(companion, TURN_CONTEXT_URI)
    assert json.loads(text)["kind"] == "full"
    assert companion.sessions.find("a") is not None and companion.sessions.find("b") is not None
    assert companion.turn_context("a", {}).kind == "none"  # a kept its baseline
