"""Gemini API routes for the model stub: what ``@google/gemini-cli`` calls when
``GOOGLE_GEMINI_BASE_URL`` points at the stub.

- ``POST /{version}/models/{model}:generateContent`` answers one candidate;
- ``POST /{version}/models/{model}:streamGenerateContent`` answers the same as server-sent events
  (``?alt=sse``, what the CLI asks for) or as a JSON array otherwise;
- ``POST /{version}/models/{model}:countTokens`` answers a token estimate;
- ``GET /{version}/models`` and ``GET /{version}/models/{model}`` list and describe models.

A call that asks for JSON (``generationConfig.responseMimeType`` ``application/json``, as the CLI's
model router and next-speaker check do) is answered with a JSON value of the requested shape, built
from ``responseJsonSchema`` / ``responseSchema``: required properties, the first ``enum`` value (the
router's "flash", the next-speaker check's "user"). A plain reply would make the CLI retry and the
prompt never finish. Everything else gets a short text answer naming the request's sequence number.
"""

from __future__ import annotations

import json
from typing import Any

from model_stub import ModelStub, Recorded, Reply, json_reply, sse_reply

VERSION = r"/v1(?:alpha|beta)?\d*"
MODEL = r"(?:models|tunedModels)/[^/:]+"
# The model list and model look-ups answer only under Gemini's beta/alpha versions: plain
# ``GET /v1/models`` is OpenAI's model list (stub_openai), which OpenAI-compatible clients call.
LISTING_VERSION = r"/v1(?:alpha|beta)\d*"
REPLY_TEXT = "Stub answer {seq}: noted."


def instance(schema: Any, depth: int = 0) -> Any:
    """The smallest value of the shape a JSON schema (OpenAPI or JSON Schema style) asks for."""
    if not isinstance(schema, dict) or depth > 8:
        return None
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return instance(schema[key][0], depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    kind = str(kind or ("object" if "properties" in schema else "string")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        required = schema.get("required") or list(props)
        return {name: instance(props.get(name, {}), depth + 1) for name in required}
    if kind == "array":
        least = int(schema.get("minItems") or 0)
        return [instance(schema.get("items", {}), depth + 1) for _ in range(least)]
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return "stub"


def answer_text(rec: Recorded) -> str:
    body = rec.json if isinstance(rec.json, dict) else {}
    config = body.get("generationConfig") or body.get("config") or {}
    if str(config.get("responseMimeType", "")).lower() == "application/json":
        schema = config.get("responseJsonSchema") or config.get("responseSchema") or {}
        return json.dumps(instance(schema))
    return REPLY_TEXT.format(seq=rec.seq)


def _model(rec: Recorded) -> str:
    name = rec.path.rsplit("/", 1)[-1]
    return name.split(":", 1)[0]


def response(rec: Recorded) -> dict[str, Any]:
    text = answer_text(rec)
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {
            "promptTokenCount": len(rec.body) // 4,
            "candidatesTokenCount": 5,
            "totalTokenCount": len(rec.body) // 4 + 5,
        },
        "modelVersion": _model(rec),
        "responseId": f"stub-{rec.seq}",
    }


def generate(rec: Recorded) -> Reply:
    return json_reply(response(rec))


def stream(rec: Recorded) -> Reply:
    whole = response(rec)
    if rec.query.get("alt", [""])[0] == "sse":
        return sse_reply([(None, whole)])
    return json_reply([whole])


def count_tokens(rec: Recorded) -> Reply:
    return json_reply({"totalTokens": max(1, len(rec.body) // 4)})


def _model_info(name: str) -> dict[str, Any]:
    return {
        "name": f"models/{name}",
        "displayName": name,
        "inputTokenLimit": 1048576,
        "outputTokenLimit": 65536,
        "supportedGenerationMethods": ["generateContent", "countTokens"],
    }


def list_models(rec: Recorded) -> Reply:
    return json_reply(
        {"models": [_model_info(n) for n in ("gemini-2.5-pro", "gemini-2.5-flash", "gemini-2.5-flash-lite")]}
    )


def get_model(rec: Recorded) -> Reply:
    return json_reply(_model_info(_model(rec)))


def install(stub: ModelStub) -> None:
    """Registers this API's routes on ``stub``."""
    stub.route("POST", rf"{VERSION}/{MODEL}:generateContent", generate)
    stub.route("POST", rf"{VERSION}/{MODEL}:streamGenerateContent", stream)
    stub.route("POST", rf"{VERSION}/{MODEL}:countTokens", count_tokens)
    stub.route("GET", rf"{LISTING_VERSION}/models", list_models)
    stub.route("GET", rf"{LISTING_VERSION}/{MODEL}", get_model)
