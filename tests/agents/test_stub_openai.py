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
