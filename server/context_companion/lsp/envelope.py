"""What makes a JSON value a message LSP accepts, and the id to answer a bad one with.

LSP speaks JSON-RPC 2.0 one message per frame: an object with ``"jsonrpc": "2.0"``, a string
``method`` (with an integer or string ``id`` for a request, none for a notification), or a
response (``id`` with ``result`` or ``error``). JSON-RPC says a request that is invalid is
answered InvalidRequest (-32600), with its id when it can be read, else ``null``; a body the
server cannot parse is answered ParseError (-32700). Batches (JSON arrays) do not exist in LSP.

Pure functions on parsed JSON (and, for a body too deep to parse, on its bytes); the protocol
(:class:`~.protocol.Protocol`) sends the answers. Imports nothing of ``lsp/``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

INVALID_REQUEST = -32600
PARSE_ERROR = -32700


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a message is not one LSP accepts, and the id its answer carries (None: JSON ``null``).
    ``answer`` is False for a malformed *response*: a response is never answered."""

    reason: str
    msg_id: int | str | None
    answer: bool = True


class HugeInteger:
    """An integer too long for Python to read (over ``sys.get_int_max_str_digits()`` digits, 4,300 by
    default), kept as its digit count: a message holding one is still answered (:func:`parse`)."""

    __slots__ = ("digits",)

    def __init__(self, text: str) -> None:
        self.digits = len(text.lstrip("-"))


def _bounded_int(text: str) -> int | HugeInteger:
    try:
        return int(text)
    except ValueError:
        return HugeInteger(text)


def parse(body: bytes | str) -> Any:
    """The JSON value of a frame's body. An integer too long to read becomes a :class:`HugeInteger`
    (an id that is one is refused as any other bad id; elsewhere it fails the params' schema), instead
    of the whole message being unreadable and its request never answered. Raises what ``json.loads``
    raises otherwise."""
    try:
        return json.loads(body)
    except ValueError as exc:
        if "integer string conversion" not in str(exc):
            raise
    return json.loads(body, parse_int=_bounded_int)


def valid_id(value: Any) -> bool:
    """An id LSP allows: an integer or a string (JSON ``true`` is no integer)."""
    return isinstance(value, (int, str)) and not isinstance(value, bool)


def _shown(value: Any) -> str:
    if isinstance(value, HugeInteger):
        return f"an integer too long to read ({value.digits:,} digits)"
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 40 else text[:37] + "..."


def _kind(value: Any) -> str:
    return {
        type(None): "null",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
    }.get(type(value), "a value")


def refusal(data: Any, notifications: Collection[str]) -> Refusal | None:
    """Why ``data`` (a parsed message) is not a message LSP accepts, or None when it is one.

    ``notifications``: the methods that are notifications; a request (with an id) to one of them
    is refused, as JSON-RPC says a request must be answered and a notification never is."""
    if isinstance(data, list):
        return Refusal("batches (JSON arrays) are not part of LSP: send each message on its own", None)
    if not isinstance(data, dict):
        return Refusal(f"a message must be a JSON object, not {_kind(data)}", None)
    has_id = "id" in data
    msg_id = data.get("id")
    answer_id = msg_id if valid_id(msg_id) else None
    is_response = "method" not in data and ("result" in data or "error" in data)
    if data.get("jsonrpc") != "2.0":
        return Refusal(f'"jsonrpc" must be "2.0", got {_shown(data.get("jsonrpc"))}', answer_id, not is_response)
    if has_id and not valid_id(msg_id) and not (is_response and msg_id is None):
        return Refusal(f"id must be an integer or a string, got {_shown(msg_id)}", None, not is_response)
    if is_response:
        return None
    if "method" not in data:
        return Refusal("a message needs a method (request, notification) or a result or error (response)", answer_id)
    method = data["method"]
    if not isinstance(method, str) or not method:
        return Refusal(f"method must be a non-empty string, got {_shown(method)}", answer_id)
    if has_id and method in notifications:
        return Refusal(f"{method} is a notification: send it without an id", answer_id)
    return None


def batch_ids(data: list[Any], notifications: Collection[str]) -> list[int | str]:
    """The ids of the requests inside a batch, each to be answered (in order, once each)."""
    out: list[int | str] = []
    for item in data:
        if isinstance(item, dict) and "method" in item and valid_id(item.get("id")) and item["id"] not in out:
            out.append(item["id"])
    return out


# A JSON string (escapes included) or a bracket: enough to find the top level of a document
# without parsing it.
_TOKEN = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.DOTALL)
_COLON = re.compile(rb"\s*:\s*")
_SCALAR = re.compile(rb'-?\d+(?![\d.eE])|"(?:[^"\\]|\\.)*"', re.DOTALL)


def top_level_id(body: bytes) -> int | str | None:
    """The ``id`` of a JSON object read without parsing it (for a body nested too deep for the
    parser), when it is an integer or a string written at the top level; else None."""
    depth = 0
    for match in _TOKEN.finditer(body):
        first = body[match.start()]
        if first in b"{[":
            if depth == 0 and first != ord("{"):
                return None  # not an object
            depth += 1
        elif first in b"}]":
            depth -= 1
            if depth <= 0:
                return None
        elif depth == 1 and match.group() == b'"id"':
            colon = _COLON.match(body, match.end())
            if colon is None:
                continue  # a value, not a key
            value = _SCALAR.match(body, colon.end())
            if value is None:
                return None
            try:
                parsed = json.loads(value.group())
            except ValueError:
                return None
            return parsed if valid_id(parsed) else None
    return None
