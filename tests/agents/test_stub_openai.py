"""The OpenAI routes of the model stub answer the way OpenAI-compatible clients parse them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import stub_openai
from model_stub import ModelStub


def _call(url: str, body: dict | None = None) -> tuple[int, str, bytes]:
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data, {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers.get("content-type", ""), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("content-type", ""), err.read()


def test_chat_completions_stream_plain_and_models() -> None:
    with ModelStub() as stub:
        stub_openai.install(stub)
        messages = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]

        status, ctype, raw = _call(stub.url + "/v1/chat/completions", {"model": "m1", "messages": messages})
        assert status == 200 and ctype == "application/json"
        answer = json.loads(raw)
        assert answer["object"] == "chat.completion" and answer["model"] == "m1"
        assert answer["choices"][0]["message"] == {"role": "assistant", "content": stub_openai.ANSWER}

        body = {"model": "m1", "messages": messages, "stream": True, "stream_options": {"include_usage": True}}
        status, ctype, raw = _call(stub.url + "/v1/chat/completions", body)
        assert status == 200 and ctype == "text/event-stream"
        datas = [line[len("data: ") :] for line in raw.decode().splitlines() if line.startswith("data: ")]
        assert datas[-1] == "[DONE]"
        chunks = [json.loads(d) for d in datas[:-1]]
        text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
        assert text == stub_openai.ANSWER
        assert [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]][-1] == "stop"
        assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["total_tokens"] > 0

        status, _, raw = _call(stub.url + "/v1/models")
        assert status == 200 and [m["id"] for m in json.loads(raw)["data"]] == [stub_openai.MODEL]

        status, _, raw = _call(stub.url + "/v1/chat/completions", {"model": "m1"})
        assert status == 400 and b"messages" in raw
        assert [r.path for r in stub.requests].count("/v1/chat/completions") == 3


def sse_events(raw: bytes) -> list[tuple[str, dict]]:
    """``(event name, data)`` of each server-sent event, as an SSE client splits them."""
    out = []
    for block in raw.decode().split("\n\n"):
        lines = block.splitlines()
        if not lines:
            continue
        name = next(line[len("event: ") :] for line in lines if line.startswith("event: "))
        data = "\n".join(line[len("data: ") :] for line in lines if line.startswith("data: "))
        out.append((name, json.loads(data)))
    return out


def test_responses_stream_one_assistant_message_the_way_codex_reads_it() -> None:
    with ModelStub() as stub:
        stub_openai.install(stub)
        developer = {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "be brief"}]}
        user = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}
        body = {"model": "stub-model", "stream": True, "input": [developer, user], "tools": []}

        status, ctype, raw = _call(stub.url + "/v1/responses", body)
        assert status == 200 and ctype == "text/event-stream"
        events = sse_events(raw)
        names = [name for name, _ in events]
        assert names[0] == "response.created" and names[-1] == "response.completed"
        assert names.index("response.output_item.added") < names.index("response.output_text.delta")
        assert names.index("response.output_text.delta") < names.index("response.output_item.done")
        assert all(data["type"] == name for name, data in events)  # Codex reads "type", not the event line
        text = stub_openai.RESPONSE_TEXT.format(seq=0)
        assert "".join(d["delta"] for n, d in events if n == "response.output_text.delta") == text
        item = next(d["item"] for n, d in events if n == "response.output_item.done")
        assert item["type"] == "message" and item["role"] == "assistant"
        assert item["content"] == [{"type": "output_text", "text": text, "annotations": []}]
        done = events[-1][1]["response"]
        assert done["status"] == "completed" and done["id"] == events[0][1]["response"]["id"]
        assert done["output"] == [item] and done["usage"]["total_tokens"] > done["usage"]["input_tokens"] > 0

        # what the agent sent is recorded as sent
        assert stub.requests[0].path == "/v1/responses" and stub.requests[0].json == body

        # the answer names the request, so a test can wait for it on the screen
        _, _, raw = _call(stub.url + "/v1/responses", body)
        assert stub_openai.RESPONSE_TEXT.format(seq=1) in raw.decode()

        status, _, raw = _call(stub.url + "/v1/responses", {"model": "stub-model", "stream": True})
        assert status == 400 and b"input" in raw
        status, _, raw = _call(stub.url + "/v1/responses", dict(body, stream=False))
        assert status == 400 and b"streams only" in raw
