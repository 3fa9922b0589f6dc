"""The stub's Gemini API routes answer what the Gemini CLI asks, in the shape it parses."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest
import stub_gemini
from model_stub import ModelStub


@pytest.fixture
def stub() -> Iterator[ModelStub]:
    stub = ModelStub()
    stub_gemini.install(stub)
    with stub:
        yield stub


def call(stub: ModelStub, path: str, body: dict[str, Any] | None = None) -> tuple[int, str, bytes]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(stub.url + path, data, {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.headers.get("content-type", ""), resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("content-type", ""), err.read()


CHAT = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def test_generate_content_answers_one_text_candidate(stub: ModelStub) -> None:
    status, kind, body = call(stub, "/v1beta/models/gemini-2.5-flash:generateContent?key=k", CHAT)
    reply = json.loads(body)
    assert (status, kind) == (200, "application/json")
    assert reply["candidates"][0]["content"] == {"role": "model", "parts": [{"text": "Stub answer 0: noted."}]}
    assert reply["candidates"][0]["finishReason"] == "STOP"
    assert stub.requests[0].json == CHAT


def test_stream_answers_server_sent_events_when_asked(stub: ModelStub) -> None:
    status, kind, body = call(stub, "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", CHAT)
    assert (status, kind) == (200, "text/event-stream")
    events = [json.loads(line[len("data: ") :]) for line in body.decode().splitlines() if line.startswith("data: ")]
    assert [e["candidates"][0]["content"]["parts"][0]["text"] for e in events] == ["Stub answer 0: noted."]
    status, kind, body = call(stub, "/v1beta/models/gemini-2.5-pro:streamGenerateContent", CHAT)
    assert (status, kind) == (200, "application/json") and isinstance(json.loads(body), list)


def test_a_json_request_gets_json_of_the_requested_shape(stub: ModelStub) -> None:
    """The CLI's model router and next-speaker check ask for JSON; the first enum value answers."""
    schema = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "next_speaker": {"type": "string", "enum": ["user", "model"]},
            "scores": {"type": "array", "items": {"type": "number"}, "minItems": 1},
        },
        "required": ["reasoning", "next_speaker", "scores"],
    }
    body = {**CHAT, "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema}}
    _, _, raw = call(stub, "/v1beta/models/gemini-2.5-flash-lite:generateContent", body)
    text = json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"]
    assert json.loads(text) == {"reasoning": "stub", "next_speaker": "user", "scores": [0]}


def test_count_tokens_and_models(stub: ModelStub) -> None:
    status, _, raw = call(stub, "/v1beta/models/gemini-2.5-pro:countTokens", CHAT)
    assert status == 200 and json.loads(raw)["totalTokens"] >= 1
    status, _, raw = call(stub, "/v1beta/models")
    assert status == 200 and "models/gemini-2.5-pro" in [m["name"] for m in json.loads(raw)["models"]]
    status, _, raw = call(stub, "/v1beta/models/gemini-2.5-flash")
    assert status == 200 and json.loads(raw)["name"] == "models/gemini-2.5-flash"


def test_an_unknown_call_is_a_404_that_names_it(stub: ModelStub) -> None:
    status, _, raw = call(stub, "/v1beta/models/gemini-2.5-pro:embedContent", CHAT)
    assert status == 404 and b"no route for POST /v1beta/models/gemini-2.5-pro:embedContent" in raw
