"""Every message gets an answer, and never a traceback (issue 26, part 2).

JSON-RPC says a request is always answered, and a message that is no valid request is answered
InvalidRequest (-32600) with its id when it can be read, else ``null``; a body the server cannot
parse, ParseError (-32700). LSP has one ``initialize`` and no batches. One server process takes
every example; after each, a valid request still answers and the log has no traceback.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from lsp_pipe_client import CHANGED, LspProcess, RpcError

INVALID_REQUEST = -32600
PARSE_ERROR = -32700
INVALID_PARAMS = -32602
CURSOR = "contextCompanion/didChangeCursor"
DOC = "file:///nonexistent/envelopes.py"

# A request (with an id) to each notification method the server handles, with plausible params.
NOTIFICATION_REQUESTS: list[tuple[str, Any]] = [
    ("$/setTrace", {"value": "off"}),
    (
        "textDocument/didOpen",
        {"textDocument": {"uri": DOC, "languageId": "python", "version": 1, "text": "opened as a request\n"}},
    ),
    (
        "textDocument/didChange",
        {"textDocument": {"uri": DOC, "version": 2}, "contentChanges": [{"text": "changed as a request\n"}]},
    ),
    ("textDocument/didClose", {"textDocument": {"uri": DOC}}),
    (CURSOR, {"textDocument": {"uri": DOC}, "position": {"line": 0, "character": 0}}),
    ("workspace/didChangeConfiguration", {"settings": {"contextCompanion": {}}}),
    ("workspace/didChangeWorkspaceFolders", {"event": {"added": [], "removed": []}}),
    ("$/cancelRequest", {"id": 1}),
    ("initialized", {}),
    ("exit", None),
]


@pytest.fixture(scope="module")
def server(module_spawn, tmp_path_factory) -> LspProcess:
    ws = tmp_path_factory.mktemp("envelopes-ws")
    (ws / "AGENTS.md").write_text("Envelope workspace memory.\n", encoding="utf-8")
    return module_spawn([ws], {"environment": {"placement": "off"}})


@pytest.fixture
def log_mark(server) -> int:
    """Where the shared server's log stood when the test began (each test judges its own part)."""
    return len(server.stderr_text())


def still_serves(proc: LspProcess, mark: int) -> None:
    assert proc.alive(), proc.stderr_text()[-3000:]
    assert proc.command("contextCompanion.getCompressionPrompt", {})["text"]
    log = proc.stderr_text()[mark:]
    assert "Traceback" not in log and "unhashable" not in log, log[-3000:]


def answer_to(proc: LspProcess, body: bytes) -> dict[str, Any]:
    """The one response the server sends to ``body`` (raw bytes of one frame)."""
    start = len(proc.responses)
    proc.send_body(body)
    [reply] = proc.wait_responses(start, 1)
    return reply


def raw(message: Any) -> bytes:
    return json.dumps(message).encode()


@pytest.mark.parametrize(("method", "params"), NOTIFICATION_REQUESTS, ids=[m for m, _ in NOTIFICATION_REQUESTS])
def test_a_request_to_a_notification_method_is_answered_invalid_request(server, log_mark, method, params):
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7001, "method": method}
    if params is not None:
        message["params"] = params
    reply = answer_to(server, raw(message))
    assert reply["id"] == 7001 and reply["error"]["code"] == INVALID_REQUEST, reply
    assert method in reply["error"]["message"] and "notification" in reply["error"]["message"]
    still_serves(server, log_mark)  # and exit sent as a request did not end the server
    # Refused, not served: the document "opened" by a request is not open.
    turn = server.command("contextCompanion.getTurnContext", {"sessionId": "envelopes", "forceFull": True})
    assert DOC not in json.dumps(turn)


@pytest.mark.parametrize(
    ("message", "answer_id", "words"),
    [
        ({"jsonrpc": "2.0", "id": 7101, "method": None}, 7101, "method must be"),
        ({"jsonrpc": "2.0", "id": 7102, "method": 5, "params": {}}, 7102, "method must be"),
        ({"jsonrpc": "2.0", "id": 7103, "method": ""}, 7103, "method must be"),
        ({"jsonrpc": "2.0", "id": 7104}, 7104, "needs a method"),
        (
            {"jsonrpc": "1.0", "id": 7105, "method": "workspace/executeCommand", "params": {"command": "x"}},
            7105,
            '"jsonrpc" must be "2.0"',
        ),
        ({"id": 7106, "method": "workspace/executeCommand"}, 7106, '"jsonrpc" must be "2.0"'),
        ({"jsonrpc": "2.0", "id": {}, "method": "shutdown"}, None, "id must be an integer or a string"),
        ({"jsonrpc": "2.0", "id": [], "method": "shutdown"}, None, "id must be an integer or a string"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "shutdown"}, None, "id must be an integer or a string"),
        ({"jsonrpc": "2.0", "id": True, "method": "shutdown"}, None, "id must be an integer or a string"),
        ({"jsonrpc": "2.0", "id": None, "method": "shutdown"}, None, "id must be an integer or a string"),
        ({"jsonrpc": "1.0", "method": CURSOR}, None, '"jsonrpc" must be "2.0"'),
        ({"jsonrpc": "2.0", "method": 5, "params": {}}, None, "method must be"),
        ("just a string", None, "must be a JSON object"),
        (None, None, "must be a JSON object"),
        (42, None, "must be a JSON object"),
    ],
    ids=lambda v: json.dumps(v)[:40] if not isinstance(v, str) or v.startswith("{") else v[:20],
)
def test_a_malformed_message_is_answered_invalid_request_with_its_id_or_null(
    server, log_mark, message, answer_id, words
):
    reply = answer_to(server, raw(message))
    assert "id" in reply and reply["id"] == answer_id, reply  # null is written out, as JSON-RPC wants
    assert reply["error"]["code"] == INVALID_REQUEST and words in reply["error"]["message"], reply
    still_serves(server, log_mark)  # a shutdown with a bad id did not shut the server down


METHOD_NOT_FOUND = -32601


@pytest.mark.parametrize("params", ["left out", None, {}], ids=["no params", "null params", "object params"])
def test_an_unknown_method_is_answered_method_not_found_with_or_without_params(server, log_mark, params):
    """JSON-RPC lets params be left out: an unknown method is MethodNotFound whatever its params (it
    was InvalidParams when they were left out)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 7301, "method": "someTool/doesNotExist"}
    if params != "left out":
        message["params"] = params
    reply = answer_to(server, raw(message))
    assert reply["id"] == 7301 and reply["error"]["code"] == METHOD_NOT_FOUND, reply
    assert "someTool/doesNotExist" in reply["error"]["message"]
    still_serves(server, log_mark)


def test_an_integer_too_long_to_read_still_gets_an_answer(server, log_mark):
    """A 5,000-digit id (over Python's 4,300-digit limit for reading integers) made the whole message
    unreadable: it was never answered. Now the id is refused like any other bad id, and such an integer
    inside params fails the params' schema with the request's own id."""
    huge = b"7" * 5000
    reply = answer_to(server, b'{"jsonrpc": "2.0", "id": ' + huge + b', "method": "shutdown"}')
    assert reply["id"] is None and reply["error"]["code"] == INVALID_REQUEST, reply
    assert reply["error"]["message"] == (
        "id must be an integer or a string, got an integer too long to read (5,000 digits)"
    )
    body = (
        b'{"jsonrpc": "2.0", "id": 7302, "method": "textDocument/hover", "params": {"textDocument": {"uri": "'
        + DOC.encode()
        + b'"}, "position": {"line": '
        + huge
        + b', "character": 0}}}'
    )
    reply = answer_to(server, body)
    assert reply["id"] == 7302 and reply["error"]["code"] == INVALID_PARAMS, reply
    still_serves(server, log_mark)


def test_a_batch_is_refused_and_each_request_in_it_answered(server, log_mark):
    start = len(server.responses)
    batch = [
        {"jsonrpc": "2.0", "id": 7201, "method": "workspace/executeCommand", "params": {"command": "x"}},
        {"jsonrpc": "2.0", "method": CURSOR, "params": {}},
        {"jsonrpc": "2.0", "id": "b", "method": "shutdown"},
    ]
    server.send_body(raw(batch))
    replies = server.wait_responses(start, 2)
    assert [r["id"] for r in replies] == [7201, "b"]
    assert all(r["error"]["code"] == INVALID_REQUEST and "batch" in r["error"]["message"] for r in replies)
    for notifications_only in ([{"jsonrpc": "2.0", "method": CURSOR, "params": {}}], []):
        reply = answer_to(server, raw(notifications_only))
        assert reply["id"] is None and reply["error"]["code"] == INVALID_REQUEST
    still_serves(server, log_mark)


def test_a_request_nested_too_deep_to_parse_is_answered_parse_error_with_its_id(server, log_mark):
    deep = b"[" * 10_000 + b"]" * 10_000
    body = b'{"jsonrpc": "2.0", "id": 7301, "method": "workspace/executeCommand", "params": ' + deep + b"}"
    reply = answer_to(server, body)
    assert reply["id"] == 7301 and reply["error"]["code"] == PARSE_ERROR, reply
    assert "nested too deeply" in reply["error"]["message"]
    notification = b'{"jsonrpc": "2.0", "method": "' + CURSOR.encode() + b'", "params": ' + deep + b"}"
    reply = answer_to(server, notification)
    assert reply["id"] is None and reply["error"]["code"] == PARSE_ERROR
    still_serves(server, log_mark)


def test_a_second_initialize_is_refused_and_the_workspace_stays(server, log_mark):
    before = [f["path"] for f in server.command("contextCompanion.showMemory", {})["files"]]
    start = len(server.responses)
    server.send(
        {
            "id": 7401,
            "method": "initialize",
            "params": {"processId": None, "rootUri": "file:///", "capabilities": {}, "workspaceFolders": None},
        }
    )
    [reply] = server.wait_responses(start, 1)
    assert reply["id"] == 7401 and reply["error"]["code"] == INVALID_REQUEST, reply
    assert "already initialized" in reply["error"]["message"]
    after = server.command("contextCompanion.showMemory", {})
    assert [f["path"] for f in after["files"]] == before
    assert "Envelope workspace memory." in server.command("contextCompanion.getSystemInstruction", {})["text"]
    still_serves(server, log_mark)


@pytest.mark.parametrize("bad_id", [{}, [], {"id": 1}, [1, 2]])
def test_cancel_request_with_an_id_that_is_no_id_is_ignored_quietly(server, log_mark, bad_id):
    server.notify("$/cancelRequest", {"id": bad_id})
    still_serves(server, log_mark)  # no "unhashable type" traceback in the log
    assert server.notifications_of("window/showMessage") == []


@pytest.mark.parametrize(
    ("args", "words"),
    [
        ([{"verbose": True}], "contextCompanion.companionStatus: verbose: unknown field"),
        (["status"], "contextCompanion.companionStatus: the argument must be a JSON object"),
        ([{}, 2], "contextCompanion.companionStatus: expected at most one argument"),
    ],
)
def test_companion_status_rejects_what_every_command_rejects(server, args, words):
    with pytest.raises(RpcError) as info:
        server.command("contextCompanion.companionStatus", *args)
    assert info.value.code == INVALID_PARAMS and info.value.message.startswith(words), info.value.message
    for fine in ([], [{}], [None]):
        status = server.command("contextCompanion.companionStatus", *fine)
        assert set(status) == {"geminiCli", "claudeCode"}


def test_a_new_session_that_asks_for_its_turn_right_after_did_open_gets_no_push(spawn, tmp_path):
    """The docs: with the default settings opening a file never changes the instruction, so no
    ``openFilesChanged`` push. A session that only asked for a turn context was pushed a first
    instruction (every section "changed") 25 ms after a didOpen."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Workspace memory.\n", encoding="utf-8")
    (ws / "a.py").write_text("x = 1\n", encoding="utf-8")
    proc = spawn([ws])
    proc.command("contextCompanion.getCompressionPrompt", {})  # booted
    proc.open((ws / "a.py").as_uri(), "x = 1\n", "python")
    turn = proc.command("contextCompanion.getTurnContext", {"sessionId": "fresh", "forceFull": True})
    assert turn["kind"] == "full"
    proc.command("contextCompanion.getSystemInstruction", {"sessionId": "marker"})
    (ws / "AGENTS.md").write_text("Workspace memory, edited.\n", encoding="utf-8")
    pushes = proc.wait_notification(CHANGED)
    assert [(p["reason"], p["sessions"]) for p in pushes] == [("memoryChanged", ["marker"])], pushes
