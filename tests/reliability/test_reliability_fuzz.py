"""Protocol fuzz: one server process takes every example of a test.

* Every command with random, missing and wrong-typed arguments answers a result or JSON-RPC
  InvalidParams (-32602) with a message naming the command, never InternalError, never silence.
* Malformed notifications (wrong shapes for every notification the server handles, unknown
  methods, params that are not objects, bodies that are not JSON) are ignored: no crash, no popup.
* After each example, a valid request still answers.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from context_companion.lsp.server import COMMANDS  # every command the server advertises
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsp_pipe_client import LspProcess, RpcError

INVALID_PARAMS = -32602
METHOD_NOT_FOUND = -32601
OUTCOMES: dict[str, int] = {}  # what the fuzzed commands answered, for the figures
BOUNDED = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)

FIELDS = [
    "sessionId", "profile", "ifNoneMatch", "forceFull", "pendingToolCall", "messages", "includeTurnContext",
    "fact", "scope", "session_id", "force_full", "SessionId", "", "x",
]  # fmt: skip

scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
    | st.sampled_from(["default", "global", "workspace", "plan", "user", "", " ", "\u0000", "😀" * 3])
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(FIELDS) | st.text(max_size=6), inner, max_size=4)
    ),
    max_leaves=12,
)
plausible = {
    "sessionId": st.sampled_from(["default", "fuzz", "x" * 201, ""]) | json_values,
    "profile": st.fixed_dictionaries(
        {},
        optional={
            "model": st.sampled_from(["gpt-4o", "", "no-such-model"]),
            "approvalMode": st.sampled_from(["plan", "yolo", "sometimes"]),
            "tools": st.lists(st.sampled_from(["shell", "grep", ""]), max_size=3),
        },
    )
    | json_values,
    "messages": st.lists(
        st.fixed_dictionaries(
            {},
            optional={
                "role": st.sampled_from(["user", "assistant", "system", ""]) | json_values,
                "content": json_values,
            },
        ),
        max_size=3,
    )
    | json_values,
    "fact": st.text(max_size=40) | json_values,
    "scope": st.sampled_from(["global", "workspace", "team"]) | json_values,
}


@st.composite
def argument_objects(draw: st.DrawFn) -> Any:
    keys = draw(st.lists(st.sampled_from(FIELDS), max_size=4, unique=True))
    return {k: draw(plausible.get(k, json_values)) for k in keys}


arguments = st.one_of(
    st.just([]),
    st.builds(lambda a: [a], argument_objects()),
    st.builds(lambda a, b: [a, b], argument_objects(), json_values),
    st.builds(lambda a: [a], json_values),
)


@pytest.fixture(scope="module")
def fuzz_server(module_spawn, tmp_path_factory) -> LspProcess:
    ws = tmp_path_factory.mktemp("fuzz-ws")
    (ws / "AGENTS.md").write_text("Fuzz workspace memory.\n", encoding="utf-8")
    (ws / "a.py").write_text("print('a')\n", encoding="utf-8")
    return module_spawn([ws], {"environment": {"placement": "off"}})


def still_answers(proc: LspProcess) -> None:
    assert proc.alive(), proc.stderr_text()[-3000:]
    assert proc.command("contextCompanion.getCompressionPrompt", {})["text"]


@BOUNDED
@given(command=st.sampled_from(COMMANDS), args=arguments)
def test_every_command_answers_a_result_or_invalid_params(fuzz_server, command, args):
    try:
        result = fuzz_server.command(command, *args)
    except RpcError as exc:
        OUTCOMES[str(exc.code)] = OUTCOMES.get(str(exc.code), 0) + 1
        assert exc.code == INVALID_PARAMS, f"{command}{args!r} → {exc.code} {exc.message}"
        assert exc.message.startswith(command + ":"), exc.message
        assert "Traceback" not in exc.message
    else:
        OUTCOMES["result"] = OUTCOMES.get("result", 0) + 1
        assert isinstance(result, dict), result
    still_answers(fuzz_server)


@BOUNDED
@given(
    params=st.one_of(
        st.fixed_dictionaries(
            {"command": st.sampled_from(COMMANDS) | st.text(max_size=20)}, optional={"arguments": json_values}
        ),
        json_values,
    )
)
def test_execute_command_with_params_off_the_schema_answers_invalid_params(fuzz_server, params):
    try:
        result = fuzz_server.request("workspace/executeCommand", params)
    except RpcError as exc:
        assert exc.code == INVALID_PARAMS, f"{params!r} → {exc.code} {exc.message}"
        assert exc.message
    else:
        assert isinstance(result, dict), result
    still_answers(fuzz_server)


def test_unknown_command_and_unknown_method(fuzz_server):
    with pytest.raises(RpcError) as info:
        fuzz_server.command("contextCompanion.noSuchThing", {})
    assert info.value.code == INVALID_PARAMS and "noSuchThing" in info.value.message
    with pytest.raises(RpcError) as info:
        fuzz_server.request("contextCompanion/noSuchRequest", {})
    assert info.value.code == METHOD_NOT_FOUND
    still_answers(fuzz_server)


URIS = st.sampled_from(
    [
        "file:///nonexistent/fuzz.py",
        "untitled:Untitled-1",
        "",
        "not a uri",
        "file://",
        "http://example.com/x",
        "file:///%ZZ",
    ]
) | st.text(max_size=10)
positions = (
    st.fixed_dictionaries(
        {}, optional={"line": json_values | st.integers(-5, 2**40), "character": json_values | st.integers(-5, 2**40)}
    )
    | json_values
)
ranges = st.fixed_dictionaries({}, optional={"start": positions, "end": positions}) | json_values
NOTIFICATIONS = {
    "contextCompanion/didChangeCursor": st.fixed_dictionaries(
        {},
        optional={
            "textDocument": st.fixed_dictionaries({}, optional={"uri": URIS | json_values}) | json_values,
            "position": positions,
            "selections": st.lists(ranges, max_size=3) | json_values,
        },
    ),
    "textDocument/didOpen": st.fixed_dictionaries(
        {},
        optional={
            "textDocument": st.fixed_dictionaries(
                {},
                optional={
                    "uri": URIS,
                    "languageId": json_values,
                    "version": json_values,
                    "text": st.text(max_size=30) | json_values,
                },
            )
            | json_values
        },
    ),
    "textDocument/didChange": st.fixed_dictionaries(
        {},
        optional={
            "textDocument": st.fixed_dictionaries({}, optional={"uri": URIS, "version": json_values}) | json_values,
            "contentChanges": st.lists(
                st.fixed_dictionaries({}, optional={"range": ranges, "text": st.text(max_size=10) | json_values}),
                max_size=3,
            )
            | json_values,
        },
    ),
    "textDocument/didClose": st.fixed_dictionaries(
        {}, optional={"textDocument": st.fixed_dictionaries({}, optional={"uri": URIS}) | json_values}
    ),
    "textDocument/didSave": st.fixed_dictionaries({}, optional={"textDocument": json_values, "text": json_values}),
    "workspace/didChangeWorkspaceFolders": st.fixed_dictionaries(
        {},
        optional={
            "event": st.fixed_dictionaries(
                {},
                optional={
                    "added": st.lists(
                        st.fixed_dictionaries(
                            {
                                "uri": st.sampled_from(
                                    ["file:///nonexistent/folder", "untitled:x", "http://example.com/"]
                                ),
                                "name": st.text(max_size=5),
                            }
                        ),
                        max_size=2,
                    )
                    | json_values,
                    "removed": st.lists(
                        st.fixed_dictionaries(
                            {
                                "uri": st.sampled_from(["file:///nonexistent/folder", "file:///elsewhere"]),
                                "name": st.text(max_size=5),
                            }
                        ),
                        max_size=2,
                    )
                    | json_values,
                },
            )
            | json_values
        },
    ),
    "$/cancelRequest": st.fixed_dictionaries({}, optional={"id": json_values}),
    "$/setTrace": st.fixed_dictionaries({}, optional={"value": json_values}),
    "contextCompanion/noSuchNotification": json_values,
}
notification = st.sampled_from(sorted(NOTIFICATIONS)).flatmap(
    lambda m: st.tuples(st.just(m), NOTIFICATIONS[m] | json_values | st.just(None))
)


@BOUNDED
@given(batch=st.lists(notification, min_size=1, max_size=6))
def test_malformed_notifications_are_ignored(fuzz_server, batch):
    # An open document, so that random didChange ranges and cursors land on real text.
    fuzz_server.open("file:///nonexistent/fuzz.py", "abc\n😀 é\r\nlast")
    for method, params in batch:
        fuzz_server.notify(method, params)
    still_answers(fuzz_server)
    turn = fuzz_server.command("contextCompanion.getTurnContext", {"sessionId": "fuzz-notes", "forceFull": True})
    assert turn["kind"] == "full"
    assert fuzz_server.notifications_of("window/showMessage") == []


RAW_BODIES = [
    b"{not json",
    b"[1, 2, 3]",
    b'"just a string"',
    b"null",
    b'{"jsonrpc": "2.0"}',
    b'{"jsonrpc": "2.0", "method": 5, "params": {}}',
    b'{"jsonrpc": "1.0", "method": "contextCompanion/didChangeCursor"}',
    json.dumps({"jsonrpc": "2.0", "method": "contextCompanion/didChangeCursor", "params": {"x": "\udcff"}}).encode(),
    '{"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": "é"}'.encode("latin-1"),
    b"\xff\xfe\x00garbage",
]


@pytest.mark.parametrize("body", RAW_BODIES, ids=range(len(RAW_BODIES)))
def test_bodies_that_are_not_json_rpc_are_skipped(fuzz_server, body):
    fuzz_server.write_bytes(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    still_answers(fuzz_server)


def test_fuzzed_server_still_serves_the_real_workflow(fuzz_server, figures):
    """After everything above, the same process still does its job."""
    if OUTCOMES:
        figures["fuzz: random command calls answered (result / -32602)"] = (
            f"{OUTCOMES.get('result', 0)} / {OUTCOMES.get(str(INVALID_PARAMS), 0)}"
        )
    result = fuzz_server.command("contextCompanion.getSystemInstruction", {"sessionId": "after-fuzz"})
    assert "Fuzz workspace memory." in result["text"]
    assert fuzz_server.alive()
