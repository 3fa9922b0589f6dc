"""The stub's own behaviour: it records what it is sent and streams events as they are written."""

from __future__ import annotations

import json
import urllib.request

from model_stub import ModelStub, json_reply, sse_reply


def _post(url: str, body: dict) -> tuple[int, bytes]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_records_bodies_and_answers_json_and_sse() -> None:
    with ModelStub() as stub:
        stub.route("POST", r"/json", lambda r: json_reply({"echo": r.json["x"]}))
        stub.route("POST", r"/sse", lambda r: sse_reply([("ping", {"n": 1}), (None, "[DONE]")]))
        assert _post(stub.url + "/json?key=k", {"x": 7}) == (200, b'{"echo": 7}')
        status, body = _post(stub.url + "/sse", {"y": 1})
        assert status == 200
        assert body == b'event: ping\ndata: {"n": 1}\n\ndata: [DONE]\n\n'
        status, body = _post(stub.url + "/nowhere", {})
        assert status == 404 and b"no route for POST /nowhere" in body
        first = stub.wait_for(lambda r: r.path == "/json")
        assert first.json == {"x": 7} and first.query == {"key": ["k"]}
        assert [r.path for r in stub.requests] == ["/json", "/sse", "/nowhere"]
        assert stub.next_seq == 3


def test_every_api_installed_each_model_list_answers_in_its_own_shape(model_stub: ModelStub) -> None:
    # OpenAI-compatible clients (codecompanion) list models at /v1/models; Gemini's list is under
    # /v1beta: with all three APIs on one stub, neither may answer the other's.
    with urllib.request.urlopen(model_stub.url + "/v1/models", timeout=10) as resp:
        openai = json.loads(resp.read())
    assert openai["object"] == "list" and all("id" in m for m in openai["data"])
    with urllib.request.urlopen(model_stub.url + "/v1beta/models", timeout=10) as resp:
        gemini = json.loads(resp.read())
    assert all(m["name"].startswith("models/") for m in gemini["models"])
