"""Assembling the message list sent to a model: the instruction as a fresh system
message first, the caller's messages unchanged, and the turn context just before the last user
message. Nothing is stored, and the input is never mutated."""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any


def build_messages(
    system_text: str,
    messages: Sequence[dict[str, Any]],
    turn_text: str | None,
    environment_text: str | None = None,
) -> list[dict[str, Any]]:
    """``environment_text``: the environment message, placed first after the system message."""
    out: list[dict[str, Any]] = []
    if system_text:
        out.append({"role": "system", "content": system_text})
    if environment_text:
        out.append({"role": "user", "content": environment_text})
    body = [copy.deepcopy(m) for m in messages]
    if turn_text:
        last_user = max((i for i, m in enumerate(body) if m.get("role") == "user"), default=None)
        note = {"role": "user", "content": turn_text}
        if last_user is None:
            body.append(note)
        else:
            body.insert(last_user, note)
    out += body
    return out
