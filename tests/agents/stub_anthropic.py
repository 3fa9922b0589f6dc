"""Anthropic's Messages API for the model stub: ``POST /v1/messages`` (a whole JSON message, or
server-sent events when the request says ``"stream": true``) and ``POST /v1/messages/count_tokens``.

The answer is worked out from the request alone, so a test steers it through the prompt it types:

- the last user turn carries ``tool_result`` blocks → a short text (the test reads the results from
  the recorded request);
- a line ``stub:tool <name> <JSON input>`` in the last user turn, and ``<name>`` is one of the
  request's ``tools`` → a ``tool_use`` block calling it with that input (side requests that offer no
  such tool, e.g. a title for the conversation, get text);
- anything else → the text ``stub: ok``.

Token counts are a rough figure (bytes / 4): nothing here is a tokenizer.
"""

from __future__ import annotations

import json
import re
from typing import Any

from model_stub import ModelStub, Recorded, Reply, json_reply, sse_reply

TOOL_LINE = re.compile(r"^stub:tool (\S+) (\{.*\})\s*$", re.MULTILINE)
REPLY_OK = "stub: ok"
REPLY_AFTER_TOOL = "stub: tool result received"


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content or [] if isinstance(b, dict)]


def last_user_blocks(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of the request's last user turn."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            return _blocks(message.get("content"))
    return []


def tool_names(body: dict[str, Any]) -> list[str]:
    return [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]


def tool_use_id(seq: int) -> str:
    """The id of the tool_use block the stub answers to the request numbered ``seq``."""
    return f"toolu_stub{seq:06d}"


def _answer(body: dict[str, Any], seq: int) -> tuple[list[dict[str, Any]], str]:
    """The content blocks of the reply and its stop reason."""
    blocks = last_user_blocks(body)
    if any(b.get("type") == "tool_result" for b in blocks):
        return [{"type": "text", "text": REPLY_AFTER_TOOL}], "end_turn"
    offered = tool_names(body)
    for block in blocks:
        if block.get("type") != "text":
            continue
        for match in TOOL_LINE.finditer(str(block.get("text", ""))):
            name, raw = match.group(1), match.group(2)
            if name in offered:
                call = {"type": "tool_use", "id": tool_use_id(seq), "name": name, "input": json.loads(raw)}
                return [call], "tool_use"
    return [{"type": "text", "text": REPLY_OK}], "end_turn"


def _usage(rec: Recorded) -> dict[str, int]:
    return {"input_tokens": max(1, len(rec.body) // 4), "output_tokens": 5}


def _message(rec: Recorded, body: dict[str, Any]) -> dict[str, Any]:
    content, stop = _answer(body, rec.seq)
    return {
        "id": f"msg_stub{rec.seq:06d}",
        "type": "message",
        "role": "assistant",
        "model": body.get("model", "claude-stub"),
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": _usage(rec),
    }


def _events(message: dict[str, Any]) -> list[tuple[str | None, Any]]:
    start = dict(message, content=[], stop_reason=None, usage=dict(message["usage"], output_tokens=1))
    events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
    for index, block in enumerate(message["content"]):
        if block["type"] == "text":
            opening: dict[str, Any] = {"type": "text", "text": ""}
            delta: dict[str, Any] = {"type": "text_delta", "text": block["text"]}
        else:
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        events += [
            ("content_block_start", {"type": "content_block_start", "index": index, "content_block": opening}),
            ("ping", {"type": "ping"}),
            ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": index}),
        ]
    events += [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": message["usage"]["output_tokens"]},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


def install(stub: ModelStub) -> None:
    """Registers this API's routes on ``stub``."""

    def messages(rec: Recorded) -> Reply:
        body = rec.json
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            return json_reply(
                {"type": "error", "error": {"type": "invalid_request_error", "message": "messages: required"}}, 400
            )
        message = _message(rec, body)
        if body.get("stream"):
            return sse_reply(_events(message))
        return json_reply(message)

    def count_tokens(rec: Recorded) -> Reply:
        return json_reply({"input_tokens": max(1, len(rec.body) // 4)})

    stub.route("POST", r"/v1/messages/count_tokens", count_tokens)
    stub.route("POST", r"/v1/messages", messages)
