"""OpenAI API routes for the model stub:

- chat completions (``POST /v1/chat/completions``, streamed as server-sent events when the body asks
  for ``"stream": true``, else one JSON object), what OpenAI-compatible clients such as
  codecompanion.nvim call;
- the model list (``GET /v1/models``, which those clients call to pick a model);
- the Responses API (``POST /v1/responses``), what Codex CLI calls (``wire_api = "responses"``): always
  server-sent events, ``response.created`` … ``response.completed``, one assistant message.

The answer is always a short assistant text, so a test reads what the agent *sent*; the reply only has
to be well-formed enough for the agent to finish its turn and accept the next one. The Responses answer
names the request's sequence number (``RESPONSE_TEXT``), so a test can wait for it on the screen."""

from __future__ import annotations

import time
from typing import Any

from model_stub import ModelStub, Recorded, Reply, json_reply, sse_reply

MODEL = "stub-model"
ANSWER = "Noted."
RESPONSE_TEXT = "Stub response {seq}: noted."


def _usage(body: dict[str, Any]) -> dict[str, int]:
    prompt = sum(len(str(m.get("content") or "")) // 4 for m in body.get("messages") or [] if isinstance(m, dict))
    return {"prompt_tokens": prompt, "completion_tokens": 2, "total_tokens": prompt + 2}


def chat_completions(rec: Recorded) -> Reply:
    body = rec.json
    if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
        return json_reply(
            {"error": {"message": "model stub: the body needs a messages list", "type": "invalid_request_error"}}, 400
        )
    model = str(body.get("model") or MODEL)
    ident = f"chatcmpl-stub-{rec.seq}"
    created = int(time.time())
    usage = _usage(body)
    if not body.get("stream"):
        return json_reply(
            {
                "id": ident,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": ANSWER}, "finish_reason": "stop"}],
                "usage": usage,
            }
        )

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        return {
            "id": ident,
            "object": "chat.completion.chunk",
            "created": created,
            "model": model,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    events: list[tuple[str | None, Any]] = [
        (None, chunk({"role": "assistant", "content": ""}, None)),
        (None, chunk({"content": ANSWER}, None)),
        (None, chunk({}, "stop")),
    ]
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        events.append(
            (
                None,
                {
                    "id": ident,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "choices": [],
                    "usage": usage,
                },
            )
        )
    events.append((None, "[DONE]"))
    return sse_reply(events)


def models(rec: Recorded) -> Reply:
    return json_reply({"object": "list", "data": [{"id": MODEL, "object": "model", "created": 0, "owned_by": "stub"}]})


def _input_chars(body: dict[str, Any]) -> int:
    return len(str(body.get("instructions") or "")) + len(str(body.get("input") or ""))


def responses(rec: Recorded) -> Reply:
    """``POST /v1/responses``: one assistant message as the Responses API's event stream (Codex
    asks with ``"stream": true``; it is the only form the stub answers)."""
    body = rec.json
    if not isinstance(body, dict) or not isinstance(body.get("input"), (list, str)):
        return json_reply(
            {"error": {"message": "model stub: the body needs an input list", "type": "invalid_request_error"}}, 400
        )
    if not body.get("stream"):
        return json_reply(
            {"error": {"message": "model stub: /v1/responses answers streams only", "type": "invalid_request_error"}},
            400,
        )
    text = RESPONSE_TEXT.format(seq=rec.seq)
    ident, item_id = f"resp_stub{rec.seq:06d}", f"msg_stub{rec.seq:06d}"
    model = str(body.get("model") or MODEL)
    prompt = _input_chars(body) // 4
    usage = {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + 5,
    }
    part = {"type": "output_text", "text": text, "annotations": []}
    item = {"id": item_id, "type": "message", "role": "assistant", "status": "completed", "content": [part]}
    head = {"id": ident, "object": "response", "created_at": int(time.time()), "model": model, "output": []}
    where = {"item_id": item_id, "output_index": 0, "content_index": 0}
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": dict(head, status="in_progress")}),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": dict(item, status="in_progress", content=[]),
            },
        ),
        (
            "response.content_part.added",
            dict(where, type="response.content_part.added", part=dict(part, text="")),
        ),
        ("response.output_text.delta", dict(where, type="response.output_text.delta", delta=text)),
        ("response.output_text.done", dict(where, type="response.output_text.done", text=text)),
        ("response.content_part.done", dict(where, type="response.content_part.done", part=part)),
        ("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
        (
            "response.completed",
            {
                "type": "response.completed",
                "response": dict(head, status="completed", output=[item], usage=usage),
            },
        ),
    ]
    return sse_reply(events)


def install(stub: ModelStub) -> None:
    """Registers this API's routes on ``stub``."""
    stub.route("POST", r"/v1/chat/completions", chat_completions)
    stub.route("POST", r"/v1/responses", responses)
    stub.route("GET", r"/v1/models", models)
