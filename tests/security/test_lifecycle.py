"""The LSP lifecycle as an attacker (or a broken client) drives it: requests before
``initialize`` and after ``shutdown``, ``exit`` without ``shutdown``, a request in flight when
``shutdown`` arrives, a handler that fails. Every request gets an answer; no answer carries a
traceback or a path of the server's own code; the log has no traceback for errors answered on
purpose."""

from __future__ import annotations

import json
import os

import context_companion
import pygls
from sockets_support import RpcFailure, with_shims

SERVER_NOT_INITIALIZED = -32002
INVALID_REQUEST = -32600
REQUEST_CANCELLED = -32800
CODE_DIRS = (os.path.dirname(context_companion.__file__), os.path.dirname(pygls.__file__), "site-packages")


def no_internals(reply: dict) -> None:
    text = json.dumps(reply)
    assert "Traceback" not in text and "traceback" not in text, text
    assert not any(d in text for d in CODE_DIRS), text


def test_requests_before_initialize_get_server_not_initialized(tmp_path, stdio):
    s = stdio()
    for method, params in [
        ("workspace/executeCommand", {"command": "contextCompanion.showMemory", "arguments": []}),
        ("textDocument/hover", {"textDocument": {"uri": "file:///x"}, "position": {"line": 0, "character": 0}}),
        ("shutdown", None),
        ("no/suchMethod", {}),
    ]:
        reply = s.answer(s.request_id(method, params))
        assert reply["error"]["code"] == SERVER_NOT_INITIALIZED, reply
        assert method in reply["error"]["message"] and "initialize" in reply["error"]["message"]
        no_internals(reply)
    s.notify(
        "textDocument/didOpen", {"textDocument": {"uri": "file:///x", "languageId": "t", "version": 1, "text": ""}}
    )
    s.initialize(tmp_path)  # still possible; the dropped notification did no harm
    assert s.command("contextCompanion.getCompressionPrompt")["text"]
    assert "Traceback" not in s.stderr


def test_requests_after_shutdown_get_invalid_request_and_exit_is_clean(tmp_path, stdio):
    s = stdio()
    s.initialize(tmp_path)
    assert s.request("shutdown") is None
    for method in ("workspace/executeCommand", "shutdown", "initialize"):
        reply = s.answer(s.request_id(method, {"command": "contextCompanion.showMemory", "arguments": []}))
        assert reply["error"]["code"] == INVALID_REQUEST, reply
        assert "shutting down" in reply["error"]["message"]
    s.notify("exit")
    assert s.wait_exit() == 0
    assert "Traceback" not in s.stderr


def test_exit_without_shutdown_exits_with_status_1(tmp_path, stdio):
    before = stdio()
    before.notify("exit")
    assert before.wait_exit() == 1
    after = stdio()
    after.initialize(tmp_path)
    after.notify("exit")
    assert after.wait_exit() == 1
    assert "Traceback" not in after.stderr


def test_a_request_in_flight_during_shutdown_is_answered_or_cancelled(tmp_path, stdio):
    (tmp_path / "AGENTS.md").write_text("# Memory\n" + "".join(f"- fact {i}\n" for i in range(2000)))
    s = stdio()
    params = {"processId": None, "capabilities": {}, "workspaceFolders": [{"uri": tmp_path.as_uri(), "name": "w"}]}
    s.request("initialize", params)
    s.notify("initialized", {})
    # Sent while the server is still loading: these wait for it, so shutdown finds them in flight.
    pending = [
        s.request_id("workspace/executeCommand", {"command": name, "arguments": []})
        for name in ("contextCompanion.refreshMemory", "contextCompanion.getSystemInstruction")
    ]
    assert s.request("shutdown") is None
    for msg_id in pending:
        reply = s.answer(msg_id)
        assert "result" in reply or reply["error"]["code"] == REQUEST_CANCELLED, reply
        no_internals(reply)
    s.notify("exit")
    assert s.wait_exit() == 0
    assert "Traceback" not in s.stderr and "CancelledError" not in s.stderr


def test_a_buggy_handler_answers_internal_error_without_traceback_or_code_paths(tmp_path, stdio, server_env):
    s = stdio(with_shims(server_env, "buggy_handler"))
    s.initialize(tmp_path)
    reply = s.answer(s.request_id("test/crash", {}))
    assert reply["error"]["code"] == -32603
    assert "unexpected state" in reply["error"]["message"]
    no_internals(reply)
    assert s.command("contextCompanion.getCompressionPrompt")["text"]  # still serving


def test_invalid_params_are_logged_in_one_line_without_a_traceback(tmp_path, stdio):
    s = stdio()
    s.initialize(tmp_path)
    try:
        s.command("contextCompanion.getTurnContext", {"forceFull": "yes"})
    except RpcFailure as exc:
        assert exc.code == -32602
    else:
        raise AssertionError("accepted a bad forceFull")
    s.command("contextCompanion.getCompressionPrompt")
    log = s.stderr
    assert "Traceback" not in log
    assert [line for line in log.splitlines() if "forceFull" in line] != []
    assert all(line.startswith("20") for line in log.splitlines() if "forceFull" in line)  # one record per line
