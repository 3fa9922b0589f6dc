"""Turn context: the full editor state on a session's first turn, then only what changed.

``full``  → ``{"activeFile": {...}, "otherOpenFiles": [...]}``
``delta`` → ``{"changes": {"filesOpened", "filesClosed", "activeFileChanged", "cursorMoved",
"selectionChanged"}}`` with only the keys that changed
``none``  → nothing changed (or a tool call is pending: the baseline does not move)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from .state import Baseline, TurnState

Kind = Literal["full", "delta", "none"]

FULL_PREFACE = "Here is what I have open in my editor right now, for context. It is not a request; my next message is."
DELTA_PREFACE = "My editor changed since my last message; here is what changed, for context. It is not a request."


@dataclass(frozen=True, slots=True)
class TurnContext:
    kind: Kind
    context: dict[str, Any] | None
    text: str | None
    memory_updates: tuple[dict[str, Any], ...] = ()  # memory delivered with this turn (wire form)

    def to_wire(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "context": self.context,
            "text": self.text,
            "memoryUpdates": list(self.memory_updates),
        }


def with_memory(turn: TurnContext, memory_text: str, updates: Sequence[dict[str, Any]]) -> TurnContext:
    """``turn`` carrying memory updates too: in ``memoryUpdates`` and appended to ``text`` (agents
    that inject only the text must see them). A turn with nothing else to say becomes an empty delta."""
    if not updates:
        return turn
    if turn.kind == "none" or turn.text is None:
        return TurnContext("delta", {"changes": {}}, memory_text, tuple(updates))
    return TurnContext(turn.kind, turn.context, f"{turn.text}\n\n{memory_text}", tuple(updates))


def delta(prev: TurnState, cur: TurnState) -> dict[str, Any]:
    """The ``changes`` object between two states (empty dict when nothing the model sees changed)."""
    changes: dict[str, Any] = {}
    before, after = set(prev.open_paths), set(cur.open_paths)
    opened = [p for p in cur.open_paths if p not in before]
    closed = [p for p in prev.open_paths if p not in after]
    if opened:
        changes["filesOpened"] = opened
    if closed:
        changes["filesClosed"] = closed
    a, b = prev.active, cur.active
    if (a.path if a else None) != (b.path if b else None):
        changes["activeFileChanged"] = b.to_wire() if b else None
    elif a is not None and b is not None:
        if a.cursor != b.cursor or a.context_lines != b.context_lines:
            moved: dict[str, Any] = {"path": b.path}
            if b.cursor is not None:
                moved["cursor"] = {"line": b.cursor[0], "character": b.cursor[1]}
            elif a.cursor is not None:
                # The position is no longer known (it was in a file that is excluded or closed now).
                moved["cursor"] = None
            if a.context_lines != b.context_lines:
                moved["contextLines"] = b.context_lines  # None: the lines are gone (excluded, or switched off)
            changes["cursorMoved"] = moved
        if (a.selected_text or "") != (b.selected_text or ""):
            changes["selectionChanged"] = {"path": b.path, "selectedText": b.selected_text or ""}
    return changes


def apply_delta(full: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """Replay ``changes`` onto a full context (what a client or the model can do).

    The result equals the next full context up to the order of ``otherOpenFiles``.
    """
    active = dict(full["activeFile"]) if full.get("activeFile") else None
    open_paths = ([active["path"]] if active else []) + list(full.get("otherOpenFiles", []))
    open_paths = [p for p in open_paths if p not in set(changes.get("filesClosed", []))]
    open_paths += [p for p in changes.get("filesOpened", []) if p not in open_paths]
    if "activeFileChanged" in changes:
        active = dict(changes["activeFileChanged"]) if changes["activeFileChanged"] else None
    if active is not None:
        if "cursorMoved" in changes:
            moved = changes["cursorMoved"]
            if "cursor" in moved:
                if moved["cursor"] is None:
                    active.pop("cursor", None)
                else:
                    active["cursor"] = moved["cursor"]
            if "contextLines" in moved:
                if moved["contextLines"] is None:
                    active.pop("contextLines", None)
                else:
                    active["contextLines"] = moved["contextLines"]
        if "selectionChanged" in changes:
            text = changes["selectionChanged"]["selectedText"]
            if text:
                active["selectedText"] = text
            else:
                active.pop("selectedText", None)
    out: dict[str, Any] = {}
    if active is not None:
        out["activeFile"] = active
    out["otherOpenFiles"] = [p for p in open_paths if not active or p != active["path"]]
    return out


def _message(preface: str, payload: dict[str, Any]) -> str:
    return f"{preface}\n```json\n{json.dumps(payload, indent=2, ensure_ascii=False)}\n```"


def next_turn(
    baseline: Baseline, current: TurnState, *, force_full: bool = False, pending_tool_call: bool = False
) -> TurnContext:
    """Compute the turn context and move the baseline (unless a tool call is pending)."""
    if pending_tool_call:
        return TurnContext("none", None, None)
    if force_full or baseline.state is None:
        baseline.state = current
        baseline.turns += 1
        payload = current.to_full()
        return TurnContext("full", payload, _message(FULL_PREFACE, payload))
    changes = delta(baseline.state, current)
    baseline.state = current
    baseline.turns += 1
    if not changes:
        return TurnContext("none", None, None)
    payload = {"changes": changes}
    return TurnContext("delta", payload, _message(DELTA_PREFACE, payload))
