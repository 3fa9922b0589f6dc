"""OpenAI API routes for the model stub: chat completions (``POST /v1/chat/completions``, streamed as
server-sent events when the body asks for ``"stream": true``, else one JSON object) and the model list
(``GET /v1/models``, which OpenAI-compatible clients such as codecompanion.nvim call to pick a model).

The answer is always the same short assistant text, so a test reads what the agent *sent*; the reply
only has to be well-formed enough for the agent to finish its turn and accept the next one."""

from __future__ import annotations

import time
from typing import Any

from model_stub import ModelStub, Recorded, Reply, json_reply, sse_reply

MODEL = "stub-model"
ANSWER = "Noted."


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


def install(stub: ModelStub) -> None:
    """Registers this API's routes on ``stub``."""
    stub.route("POST", r"/v1/chat/completions", chat_completions)
    stub.route("GET", r"/v1/models", models)
