"""The Ollama routes of the model stub answer the way VS Code's chat asks them, and call a tool on request."""

from __future__ import annotations

import json
import urllib.request

import stub_ollama
from model_stub import ModelStub


def _call(url: str, body: dict | None = None) -> tuple[int, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data, {"content-type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return resp.status, resp.read()


def _stream(raw: bytes) -> list[dict]:
    datas = [line[len("data: ") :] for line in raw.decode().splitlines() if line.startswith("data: ")]
    assert datas[-1] == "[DONE]"
    return [json.loads(d) for d in datas[:-1]]


def test_ollama_endpoints_and_a_tool_call_on_request() -> None:
    with ModelStub() as stub:
        stub_ollama.install(stub)
        version = json.loads(_call(stub.url + "/api/version")[1])["version"]
        assert tuple(int(p) for p in version.split(".")) >= (0, 6, 4)  # VS Code's lowest Ollama
        assert [m["name"] for m in json.loads(_call(stub.url + "/api/tags")[1])["models"]] == [stub_ollama.MODEL]
        shown = json.loads(_call(stub.url + "/api/show", {"model": stub_ollama.MODEL})[1])
        assert "tools" in shown["capabilities"]

        tools = [{"type": "function", "function": {"name": "contextCompanion_turnContext", "parameters": {}}}]
        ask = {"role": "user", "content": [{"type": "text", "text": "please call contextCompanion_turnContext"}]}
        chunks = _stream(
            _call(stub.url + "/v1/chat/completions", {"stream": True, "messages": [ask], "tools": tools})[1]
        )
        call = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
        assert call["function"] == {"name": "contextCompanion_turnContext", "arguments": "{}"}
        assert chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"

        # Not offered, or the tool already answered: plain text.
        for messages, offered in (([ask], []), ([ask, {"role": "tool", "content": "x", "tool_call_id": "c"}], tools)):
            body = {"stream": True, "messages": messages, "tools": offered}
            text = "".join(
                c["choices"][0]["delta"].get("content") or ""
                for c in _stream(_call(stub.url + "/v1/chat/completions", body)[1])
            )
            assert text == "Noted."
