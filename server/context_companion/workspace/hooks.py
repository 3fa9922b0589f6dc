"""What ``context-companion hook`` delivers to an agent: the memory that applies now and that the
agent does not read and track itself, once, as the difference to what its session already has.

Per agent session (the hook's ``session_id``) a :class:`HookState` records, by file and by content,
what the agent has: what we delivered, and the files it read itself once at start (taken as they are
at the session's first hook call, and delivered again only when they change). Each prompt, the files
that apply now and the agent does not track itself (:meth:`.agent_memory.Lacking.untracked`, the
decision :func:`.agent_memory.lacking` makes for ``getAgentMemory`` too; copies of one text count as one
file there) are compared with that record:

- a file that starts to apply is sent whole, saying why it applies; one whose text the agent already
  has under another name (a twin) is only recorded;
- a changed file is marked as replacing the copy given earlier, and sent as its changed lines (a
  unified diff, with line numbers) where that is smaller than the file;
- a file the agent was given is taken back (one line) only when it is deleted, or its own text changed
  so that it no longer applies; one that stops applying because the editor's files changed (a tab
  closed) stays with the agent, silently, and so does one whose twin still applies.

Nothing new: no text at all.

The text stays under the agent's own limit in its own unit (:data:`HOOK_LIMITS`, :data:`HOOK_UNITS`):
retractions first, then the root memory, then the active file's folder memory and the rules matching it,
then the rest; what does not fit (a changed file too large to send included) is named, with its path,
in one last line, once. Plain text (Gemini CLI escapes ``<`` and ``>``). It speaks as the system: it names
the editor's active file (and the open ones briefly), or says that no editor is connected.

:class:`HookSessions` keeps the states, least recently used first, bounded; a lost state means one
full delivery again, never a missed change. Pure: no I/O, no clock. :func:`deliver` changes only the
state it is given (a caller may run it on a copy and keep the copy once the hook has the text).
"""

from __future__ import annotations

import difflib
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..memory import MemoryBlock
from .agent_memory import Lacking
from .updates import removal_notice

# How much additionalContext each agent takes whole, in the unit it counts (measured with the real agents:
# docs/agents.md). Claude Code 2.1.331 shows 10,000 characters inline (more becomes a short preview);
# Gemini CLI 0.61.0 took 30,000 characters whole; Codex 0.169-0.171 keeps about 2,500 tokens counted as
# UTF-8 bytes / 4 and cuts the middle of anything longer: 9,800 bytes leave it a margin. GitHub Copilot CLI
# 1.0.102, OpenCode 1.18.33 and Qwen Code 0.24.4 each took 300,000 characters whole (no cut of their own short
# of Copilot's 10 MiB), VS Code 1.139.1's own agent (running a Claude Code hook: agent_hook.hook_runner) 60,000:
# 30,000 characters, as for Gemini CLI, is our own bound on what one prompt adds.
HOOK_LIMITS: dict[str, int] = {
    "claude-code": 10_000,
    "gemini-cli": 30_000,
    "codex": 9_800,
    "copilot-cli": 30_000,
    "opencode": 30_000,
    "qwen-code": 30_000,
    "vscode": 30_000,
}
HOOK_UNITS: dict[str, str] = {
    "claude-code": "characters",
    "gemini-cli": "characters",
    "codex": "bytes",
    "copilot-cli": "characters",
    "opencode": "characters",
    "qwen-code": "characters",
    "vscode": "characters",
}
DEFAULT_HOOK_SESSIONS = 256

PROMPT_EVENTS = frozenset({"UserPromptSubmit", "BeforeAgent"})
SESSION_START = "SessionStart"
RESET_SOURCES = frozenset({"startup", "clear", "compact"})  # the agent's history starts afresh

HOOK_PREFACE = (
    "Context Companion: project memory and rules that apply here and that you do not load yourself. "
    "Follow them like the instructions of your system prompt; they are not a request from the user."
)
FROM_DISK = (
    "(No editor is connected for this folder: this is the memory on disk for the project as a whole; "
    "memory that applies only to particular files is not included.)"
)
NO_FILE_OPEN = "No file is open in the editor."
OPEN_NAMED = 5  # open files named besides the active one; the rest are counted

# What a state keeps of the texts it was given, to send a later change as its changed lines (the state file of
# the hook without an editor holds up to 256 sessions: at most ~8 MB of texts; a file not kept is sent whole).
MAX_KEPT_TEXT = 16_000  # characters of one file
MAX_KEPT_TEXTS = 32_000  # characters of all of one session's files


def fingerprint(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()[:32]


def utf8_bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def hook_count(agent: str) -> Callable[[str], int]:
    """How ``agent`` measures hook text: characters, or UTF-8 bytes (Codex)."""
    return utf8_bytes if HOOK_UNITS.get(agent) == "bytes" else len


def left_out_line(
    paths: Sequence[str],
    limit: int,
    room: int | None = None,
    *,
    unit: str = "characters",
    count: Callable[[str], int] = len,
) -> str:
    """The last line naming what did not fit; within ``room`` (in ``count``'s unit) it names as many
    paths as fit and counts the rest."""
    head = f"Left out to stay under {limit:,} {unit}; read these files yourself: "
    line = head + ", ".join(paths)
    if room is None or count(line) <= room:
        return line
    shown: list[str] = []
    for i, path in enumerate(paths):
        more = f" and {len(paths) - i} more (context-companion memory lists them)"
        if count(head + ", ".join([*shown, path]) + more) > room:
            return head + ", ".join(shown) + more
        shown.append(path)
    return head + ", ".join(shown)  # pragma: no cover - the whole line fitted after all


@dataclass
class HookState:
    """What one agent session has: abs path → (display path, content fingerprint), with what decided
    where each file applies when it was given (``scopes``), the files named as left out (``left``: abs
    path → fingerprint, not named again until they change) and the texts given (fingerprint → text,
    bounded) to send a later change as its changed lines."""

    given: dict[str, tuple[str, str]] = field(default_factory=dict)
    started: bool = False  # the files the agent read at start are recorded
    left: dict[str, str] = field(default_factory=dict)
    scopes: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "given": {p: list(v) for p, v in self.given.items()},
            "started": self.started,
            "left": dict(self.left),
            "scopes": dict(self.scopes),
            "texts": dict(self.texts),
        }

    @classmethod
    def from_json(cls, raw: Any) -> HookState:
        """A state read back from the state file (also one written before ``left``, ``scopes`` and
        ``texts`` existed); anything malformed is a fresh state."""
        if not isinstance(raw, dict) or not isinstance(raw.get("given"), dict):
            return cls()
        given: dict[str, tuple[str, str]] = {}
        for path, value in raw["given"].items():
            if isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value):
                given[str(path)] = (value[0], value[1])

        def strings(key: str) -> dict[str, str]:
            value = raw.get(key)
            if not isinstance(value, dict):
                return {}
            return {str(k): v for k, v in value.items() if isinstance(v, str)}

        return cls(given, raw.get("started") is True, strings("left"), strings("scopes"), strings("texts"))

    def record(self, path: str, block: MemoryBlock) -> None:
        """The agent has ``block``'s text now (given by us, read at start, or the same as a twin's)."""
        fp = fingerprint(block.content)
        self.given[path] = (block.path, fp)
        self.scopes[path] = block.scope
        self.left.pop(path, None)
        if len(block.content) <= MAX_KEPT_TEXT:
            self.texts[fp] = block.content

    def forget(self, path: str) -> None:
        self.given.pop(path, None)
        self.scopes.pop(path, None)

    def _prune(self) -> None:
        wanted = {fp for _d, fp in self.given.values()}
        kept = {fp: t for fp, t in self.texts.items() if fp in wanted}
        while sum(len(t) for t in kept.values()) > MAX_KEPT_TEXTS:
            del kept[max(kept, key=lambda fp: len(kept[fp]))]
        self.texts = kept
        self.scopes = {p: s for p, s in self.scopes.items() if p in self.given}


@dataclass(frozen=True, slots=True)
class HookRequest:
    agent: str  # claude-code, gemini-cli, codex, copilot-cli, opencode, qwen-code
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
    changed: tuple[str, ...] = ()  # display paths sent as their changed lines
    size: int = 0  # the text's size in the agent's unit
    unit: str = "characters"


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


def why_it_applies(block: MemoryBlock) -> str:
    """Why a file applies, in a few words (always, a glob and the file it matches, a sub-folder)."""
    if block.tier == "global":
        return "always: global memory"
    if block.tier == "workspace":
        return "always: project memory"
    reason = block.reason.removeprefix("rule: ")
    return "always" if reason == "always applies" else reason


def editor_line(active: str | None, open_files: Sequence[str]) -> str:
    """The editor's active file, and the other open ones briefly."""
    others = [p for p in dict.fromkeys(open_files) if p != active]
    if active is None and not others:
        return NO_FILE_OPEN
    named = ", ".join(others[:OPEN_NAMED]) + (
        f" and {len(others) - OPEN_NAMED} more" if len(others) > OPEN_NAMED else ""
    )
    if active is None:
        return f"Open in the editor: {named}."
    return f"The editor's active file is {active}" + (f"; also open: {named}." if others else ".")


def _block(block: MemoryBlock, note: str = "") -> str:
    title = f"{block.path} (applies: {why_it_applies(block)}{note})"
    return f"--- Context from: {title} ---\n{block.content}\n--- End of Context from: {block.path} ---"


def _changes(block: MemoryBlock, before: str) -> str | None:
    """``block``'s change from ``before`` as a unified diff with line numbers, or None when nothing differs."""
    lines = list(difflib.unified_diff(before.splitlines(), block.content.splitlines(), lineterm="", n=1))[2:]
    if not lines:
        return None
    head = (
        f"--- Changed on disk: {block.path} (applies: {why_it_applies(block)}). These changed lines replace "
        "the same lines of the earlier copy (unified diff; line numbers of the old and the new text) ---"
    )
    return "\n".join([head, *lines, f"--- End of changes to: {block.path} ---"])


def _waits_on_open_files(block: MemoryBlock) -> bool:
    """Not included only because no open file is where it applies (a tab closed, the active file moved)."""
    return not block.included and block.reason.startswith("not included: no open file")


@dataclass(slots=True)
class _Piece:
    rank: int
    path: str  # abs path
    display: str
    texts: tuple[str, ...]  # the forms it can be sent in, preferred (smallest) first
    block: MemoryBlock | None = None  # None: a line that is always sent (a retraction, a note)
    changed: bool = False
    retract: bool = False


def _rank(block: MemoryBlock) -> int:
    if block.tier in ("workspace", "global"):
        return 1  # root memory the agent lacks: its build, test and conventions
    if block.for_active:
        return 2
    return 3


def deliver(
    state: HookState,
    lacks: Lacking,
    *,
    limit: int,
    count: Callable[[str], int] = len,
    unit: str = "characters",
    from_disk: bool = False,
    active: str | None = None,
    open_files: Sequence[str] = (),
) -> Delivery:
    """The text for this prompt, and ``state`` brought up to date (the only thing changed). ``lacks``: what
    applies for the editor's files now and how the agent has it (:func:`.agent_memory.lacking`); ``limit``
    in ``count``'s unit; ``active``, ``open_files``: the editor's files as the text names them."""
    own = lacks.tracked()
    now = lacks.untracked()
    for path in [p for p in state.given if p in own]:
        state.forget(path)  # the agent reads it itself now: not ours to withdraw
    if not state.started:
        state.started = True
        at_start = lacks.read_at_start()
        for path, block in now.items():
            if path in at_start:
                state.record(path, block)
    pieces, twins = _what_is_new(state, now, lacks.every, count, lacks.gone_reason)
    state.left = {p: fp for p, fp in state.left.items() if p in now}
    for path, block in twins:
        state.record(path, block)
    state._prune()
    if not pieces:
        return Delivery("", unit=unit)
    head = [HOOK_PREFACE, FROM_DISK if from_disk else editor_line(active, open_files)]
    size = sum(count(h) + 2 for h in head)
    pieces.sort(key=lambda p: p.rank)
    every_path = [p.path for p in pieces if p.block is not None]
    reserve = min(count(left_out_line(every_path, limit, unit=unit, count=count)), limit // 5) + 2
    parts: list[str] = []
    sent: list[_Piece] = []
    left: list[_Piece] = []
    for piece in pieces:
        fits = next((t for t in piece.texts if size + count(t) + 2 + reserve <= limit), None)
        if piece.block is None:
            fits = piece.texts[0]  # retractions and notes: one line each, always said
        if fits is None:
            left.append(piece)
            continue
        parts.append(fits)
        size += count(fits) + 2
        sent.append(piece)
    tail = []
    if left:
        named = [p.path + (" (changed on disk since it was given)" if p.changed else "") for p in left]
        tail = [left_out_line(named, limit, max(limit - size - 2, 0), unit=unit, count=count)]
    text = "\n\n".join([*head, *parts, *tail])
    for piece in sent:
        if piece.block is not None:
            state.record(piece.path, piece.block)
        elif piece.retract:
            state.forget(piece.path)
    for piece in left:
        assert piece.block is not None
        state.left[piece.path] = fingerprint(piece.block.content)
    state._prune()
    whole = {p.path for p in sent if p.block is not None and p.texts[-1] in parts}
    return Delivery(
        text,
        tuple(p.display for p in sent if p.path in whole),
        tuple(p.display for p in sent if p.retract),
        tuple(p.path for p in left),
        tuple(p.display for p in sent if p.block is not None and p.path not in whole),
        count(text),
        unit,
    )


def _what_is_new(
    state: HookState,
    now: Mapping[str, MemoryBlock],
    every: Mapping[str, MemoryBlock],
    count: Callable[[str], int],
    gone_reason: Callable[[str], str],
) -> tuple[list[_Piece], list[tuple[str, MemoryBlock]]]:
    """What to tell the agent (pieces) and the files whose text it already has under another name (twins)."""
    given_fps = {fp: path for path, (_display, fp) in state.given.items()}
    now_fps = {fingerprint(b.content) for b in now.values()}
    pieces: list[_Piece] = []
    twins: list[tuple[str, MemoryBlock]] = []
    changing: set[str] = set()
    for path, block in now.items():
        fp = fingerprint(block.content)
        before = state.given.get(path)
        if before is not None and before[1] == fp:
            state.scopes[path] = block.scope
            continue
        if state.left.get(path) == fp:
            continue  # named as left out, unchanged since
        twin = given_fps.get(fp)
        if twin is not None and twin != path:
            twins.append((path, block))  # the agent has this text already, as another file's
            if before is not None:  # this file changed into a copy of that one: one line says so
                note = f"{block.path} changed on disk: its text is now the one given earlier as {state.given[twin][0]}."
                pieces.append(_Piece(0, path, block.path, (note,)))
            continue
        whole = _block(block, "; changed on disk: this text replaces the earlier copy" if before else "")
        old = state.texts.get(before[1]) if before is not None else None
        diff = _changes(block, old) if old is not None else None
        forms = (diff, whole) if diff is not None and count(diff) < count(whole) else (whole,)
        pieces.append(_Piece(_rank(block), path, block.path, forms, block, before is not None))
        if before is not None:
            changing.add(path)
    for path, (display, fp) in list(state.given.items()):
        if path in now:
            continue
        if fp in now_fps:
            state.forget(path)  # a twin that still applies carries its text: nothing to take back
            continue
        was = every.get(path)
        if was is not None and _waits_on_open_files(was) and was.scope == state.scopes.get(path, was.scope):
            continue  # the editor's files changed, not the file: the agent keeps what it was given
        if was is None:
            reason = gone_reason(path)
        elif was.included:
            reason = "it is empty now" if not was.content.strip() else "context.exclude leaves it out now"
        else:
            reason = was.reason.removeprefix("not included: ") or "it changed"
        pieces.append(_Piece(0, path, display, (removal_notice(display, reason),), retract=True))
        changing.add(path)
    for path, block in twins:
        twin = given_fps[fingerprint(block.content)]
        if twin in changing:
            name = state.given[twin][0]
            note = f"{block.path} applies too ({why_it_applies(block)}): its text is the one given earlier as {name}."
            pieces.append(_Piece(0, path, block.path, (note,)))
    return pieces, twins
