"""What ``context-companion hook`` delivers to an agent: the memory that applies now and that the
agent does not read and track itself, once, as the difference to what its session already has.

Per agent session (the hook's ``session_id``) a :class:`HookState` records, by file and content
hash, what the agent has: what we delivered, and the files it read itself once at start (taken as
they are at the session's first hook call, and delivered again only when they change). Each
prompt, the files that apply now and the agent does not track itself (:meth:`.agent_memory.Lacking.untracked`,
the decision :func:`.agent_memory.lacking` makes for ``getAgentMemory`` too) are compared with that
record (:func:`.updates.diff`): new or changed files are sent whole, a file that stops applying gets
one line. Nothing new: no text at all.

The text stays under the agent's limit (:data:`HOOK_LIMITS`): removals first, then the active
file's folder memory and the rules matching it, then the root memory, then the rest; what does not
fit is named, with its path, in one last line. Plain text (Gemini CLI escapes ``<`` and ``>``).

:class:`HookSessions` keeps the states, least recently used first, bounded; a lost state means one
full delivery again, never a missed change. Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..memory import MemoryBlock
from .agent_memory import Lacking
from .updates import MEMORY_PREFACE, MemoryUpdate, diff

# Characters of additionalContext an agent takes whole. Claude Code 2.1.331 passes about 10,000
# and turns 50,000 into a short preview; Gemini CLI and Codex took 10,000 whole in our runs.
HOOK_LIMITS: dict[str, int] = {"claude-code": 9_500, "gemini-cli": 9_500, "codex": 9_500}
DEFAULT_HOOK_SESSIONS = 256

PROMPT_EVENTS = frozenset({"UserPromptSubmit", "BeforeAgent"})
SESSION_START = "SessionStart"
RESET_SOURCES = frozenset({"startup", "clear", "compact"})  # the agent's history starts afresh

FROM_DISK = (
    "(No editor is connected for this folder: this is the memory on disk for the project itself; memory for "
    "the files open in an editor is not included.)"
)


def fingerprint(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]


def left_out_line(paths: Sequence[str], limit: int, room: int | None = None) -> str:
    """The last line naming what did not fit; within ``room`` characters it names as many paths as
    fit and counts the rest."""
    head = f"Left out to stay under {limit:,} characters; read these files yourself: "
    line = head + ", ".join(paths)
    if room is None or len(line) <= room:
        return line
    shown: list[str] = []
    for i, path in enumerate(paths):
        more = f" and {len(paths) - i} more (context-companion memory lists them)"
        if len(head + ", ".join([*shown, path])) + len(more) > room:
            return head + ", ".join(shown) + more
        shown.append(path)
    return head + ", ".join(shown)  # pragma: no cover - the whole line fitted after all


@dataclass
class HookState:
    """What one agent session has: abs path → (display path, content fingerprint)."""

    given: dict[str, tuple[str, str]] = field(default_factory=dict)
    started: bool = False  # the files the agent read at start are recorded

    def to_json(self) -> dict[str, Any]:
        return {"given": {p: list(v) for p, v in self.given.items()}, "started": self.started}

    @classmethod
    def from_json(cls, raw: Any) -> HookState:
        """A state read back from the state file; anything malformed is a fresh state."""
        if not isinstance(raw, dict) or not isinstance(raw.get("given"), dict):
            return cls()
        given: dict[str, tuple[str, str]] = {}
        for path, value in raw["given"].items():
            if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
                given[str(path)] = (value[0], value[1])
        return cls(given, raw.get("started") is True)


@dataclass(frozen=True, slots=True)
class HookRequest:
    agent: str  # claude-code, gemini-cli, codex
    event: str  # hook_event_name
    session_id: str
    source: str = ""  # SessionStart's source
    cwd: str = ""


@dataclass(frozen=True, slots=True)
class Delivery:
    text: str  # "" when there is nothing new
    files: tuple[str, ...] = ()  # display paths sent whole
    removed: tuple[str, ...] = ()  # display paths said to no longer apply
    left_out: tuple[str, ...] = ()  # abs paths named in the last line


@dataclass(frozen=True, slots=True)
class HookOutcome:
    """A delivery and the session state it leads to, not yet committed: the state changes only once
    the hook has received the delivery (:meth:`HookSessions.commit`), so a hook that gave up waiting
    (a server stopped for seconds, a deadline passed) never loses what was meant for it."""

    delivery: Delivery
    key: tuple[str, str] | None = None  # (agent, session id); None: nothing to commit
    base: HookState | None = None  # the session's state the delivery was computed from (None: none yet)
    state: HookState | None = None  # the state once the hook has the delivery


def working_copy(state: HookState | None) -> HookState:
    """A copy of ``state`` to compute a delivery on (a fresh state for a session not known yet)."""
    return HookState() if state is None else HookState.from_json(state.to_json())


class HookSessions:
    """Hook states by (agent, session id), least recently used first, at most ``limit``."""

    def __init__(self, limit: int = DEFAULT_HOOK_SESSIONS) -> None:
        self.limit = limit
        self._by_key: OrderedDict[tuple[str, str], HookState] = OrderedDict()

    def __len__(self) -> int:
        return len(self._by_key)

    def get(self, agent: str, session_id: str) -> HookState:
        key = (agent, session_id)
        state = self._by_key.get(key)
        if state is None:
            state = self._by_key[key] = HookState()
            while len(self._by_key) > self.limit:
                self._by_key.popitem(last=False)
        else:
            self._by_key.move_to_end(key)
        return state

    def peek(self, agent: str, session_id: str) -> HookState | None:
        """The session's state, or None; nothing is created or reordered."""
        return self._by_key.get((agent, session_id))

    def commit(self, outcome: HookOutcome) -> bool:
        """Make ``outcome``'s state the session's, unless the session moved on since the delivery was
        computed (another hook of the session committed, or it was reset): then the next prompt
        computes afresh. Returns whether it was committed."""
        if outcome.key is None or outcome.state is None:
            return False
        if self._by_key.get(outcome.key) is not outcome.base:
            return False
        self._by_key[outcome.key] = outcome.state
        self._by_key.move_to_end(outcome.key)
        while len(self._by_key) > self.limit:
            self._by_key.popitem(last=False)
        return True

    def reset(self, agent: str, session_id: str) -> None:
        self._by_key.pop((agent, session_id), None)

    def to_json(self) -> list[Any]:
        return [[a, s, state.to_json()] for (a, s), state in self._by_key.items()]

    @classmethod
    def from_json(cls, raw: Any, limit: int = DEFAULT_HOOK_SESSIONS) -> HookSessions:
        sessions = cls(limit)
        for item in raw if isinstance(raw, list) else []:
            if isinstance(item, list) and len(item) == 3 and isinstance(item[0], str) and isinstance(item[1], str):
                sessions._by_key[(item[0], item[1])] = HookState.from_json(item[2])
        while len(sessions._by_key) > limit:
            sessions._by_key.popitem(last=False)
        return sessions


def _rank(update: MemoryUpdate, blocks: Mapping[str, MemoryBlock]) -> int:
    if update.removed:
        return 0
    block = blocks.get(update.abs_path)
    if block is None:
        return 4
    if block.for_active:
        return 1
    if block.tier in ("workspace", "global"):
        return 2
    return 3


def deliver(
    state: HookState,
    lacks: Lacking,
    *,
    limit: int,
    count: Callable[[str], int] = len,
    from_disk: bool = False,
) -> Delivery:
    """The text for this prompt, and ``state`` brought up to date. ``lacks``: what applies for the editor's
    files now and how the agent has it (:func:`.agent_memory.lacking`)."""
    every = lacks.every
    own = lacks.tracked()
    now = lacks.untracked()
    for path in [p for p in state.given if p in own]:
        del state.given[path]  # the agent reads it itself now: not ours to withdraw
    if not state.started:
        state.started = True
        at_start = lacks.read_at_start()
        for path, block in now.items():
            if path in at_start:
                state.given[path] = (block.path, fingerprint(block.content))
    updates = diff(state.given, now, every, count, fingerprint)
    state.given = {p: (b.path, fingerprint(b.content)) for p, b in now.items()}
    if not updates:
        return Delivery("")
    ordered = sorted(updates, key=lambda u: _rank(u, now))
    head = [MEMORY_PREFACE, *([FROM_DISK] if from_disk else [])]
    parts: list[str] = []
    size = sum(len(h) + 2 for h in head)
    sent: list[MemoryUpdate] = []
    left: list[MemoryUpdate] = []
    reserve = min(len(left_out_line([u.abs_path for u in updates], limit)), limit // 5) + 2
    for update in ordered:
        piece = update.render()
        if size + len(piece) + 2 + reserve <= limit or update.removed:
            parts.append(piece)
            size += len(piece) + 2
            sent.append(update)
        else:
            left.append(update)
    tail = [left_out_line([u.abs_path for u in left], limit, max(limit - size - 2, 0))] if left else []
    return Delivery(
        "\n\n".join([*head, *parts, *tail]),
        tuple(u.path for u in sent if not u.removed),
        tuple(u.path for u in sent if u.removed),
        tuple(u.abs_path for u in left),
    )
