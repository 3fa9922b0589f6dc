"""Ollama routes for the model stub, as VS Code's chat uses them: VS Code 1.139's built-in Copilot Chat
takes an Ollama model from ``User/chatLanguageModels.json`` without a sign-in. It asks ``GET /api/version``
(0.6.4 or later), ``GET /api/tags`` (the models) and ``POST /api/show`` (a model's capabilities: ``tools``
makes it usable in agent mode), then sends the chat to Ollama's OpenAI-compatible
``POST /v1/chat/completions``, streamed.

The chat answer is ``stub_openai``'s short text, except when the last message is the user's and asks for a
tool by name (``call <tool name>``) and that tool is in the request's ``tools``: then the answer is a call
of that tool with ``{}``, so the test sees the agent run it and send the result in its next request."""

from __future__ import annotations

import re
import time
from typing import Any

import stub_openai
from model_stub import ModelStub, Recorded, Reply, json_reply, sse_reply

VERSION = "0.12.0"
MODEL = "stub-model:latest"
_CALL = re.compile(r"\bcall ([A-Za-z0-9_.-]+)")


def version(_: Recorded) -> Reply:
    return json_reply({"version": VERSION})


def tags(_: Recorded) -> Reply:
    return json_reply(
        {
            "models": [
                {
                    "name": MODEL,
                    "model": MODEL,
                    "modified_at": "2026-11-01T00:00:00Z",
                    "size": 1,
                    "digest": "0" * 64,
                    "details": {"format": "gguf", "family": "stub", "parameter_size": "1B", "quantization_level": "Q4"},
                }
            ]
        }
    )


def show(rec: Recorded) -> Reply:
    body = rec.json if isinstance(rec.json, dict) else {}
    name = str(body.get("model") or body.get("name") or MODEL)
    return json_reply(
        {
            "modelfile": "",
            "template": "{{ .Prompt }}",
            "details": {"format": "gguf", "family": "stub", "parameter_size": "1B", "quantization_level": "Q4"},
            "model_info": {"general.architecture": "stub", "stub.context_length": 128000},
            "capabilities": ["completion", "tools"],
            "model": name,
        }
    )


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text") or "") for p in content if isinstance(p, dict))
    return ""


def requested_tool(body: dict[str, Any]) -> str | None:
    """The tool the last (user) message asks for with ``call <name>``, when the request offers it."""
    messages = body.get("messages") or []
    if not messages or not isinstance(messages[-1], dict) or messages[-1].get("role") != "user":
        return None
    match = _CALL.search(_text(messages[-1].get("content")))
    if match is None:
        return None
    offered = {str((t.get("function") or {}).get("name")) for t in body.get("tools") or [] if isinstance(t, dict)}
    return match.group(1) if match.group(1) in offered else None


def chat_completions(rec: Recorded) -> Reply:
    body = rec.json
    tool = requested_tool(body) if isinstance(body, dict) and body.get("stream") else None
    if tool is None:
        return stub_openai.chat_completions(rec)
    assert isinstance(body, dict)
    ident = f"chatcmpl-stub-{rec.seq}"
    created = int(time.time())
    model = str(body.get("model") or MODEL)

    def chunk(delta: dict[str, Any], finish: str | None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return {"id": ident, "object": "chat.completion.chunk", "created": created, "model": model, "choices": [choice]}

    call = {"index": 0, "id": f"call_stub_{rec.seq}", "type": "function", "function": {"name": tool, "arguments": "{}"}}
    return sse_reply(
        [
            (None, chunk({"role": "assistant", "content": None, "tool_calls": [call]}, None)),
            (None, chunk({}, "tool_calls")),
            (None, "[DONE]"),
        ]
    )


def install(stub: ModelStub) -> None:
    """Registers Ollama's routes and its OpenAI-compatible chat on ``stub`` (before any other chat route)."""
    stub.route("GET", r"/api/version", version)
    stub.route("GET", r"/api/tags", tags)
    stub.route("POST", r"/api/show", show)
    stub.route("POST", r"/v1/chat/completions", chat_completions)
    stub.route("GET", r"/v1/models", stub_openai.models)
