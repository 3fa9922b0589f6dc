"""What ``context-companion hook`` delivers to an agent: the memory that applies now and that the
agent does not read and track itself, once, as the difference to what its session already has.

Per agent session (the hook's ``session_id``) a :class:`HookState` records, by file and by content,
what the agent has: what we delivered, and the files it read itself once at start (taken as they are
at the session's first hook call, and again whenever the prompt comes from a new agent process, which has
read them afresh: an agent that starts a new process each turn does; delivered only when they change within
one process). Each prompt, the files that apply now and the agent does not track itself
(:meth:`.agent_memory.Lacking.untracked`, the decision :func:`.agent_memory.lacking` makes for
``getAgentMemory`` too; copies of one text count as one file there) are compared with that record:

- a file that starts to apply is sent whole, saying why it applies; one whose text the agent already
  has under another name (a twin) is only recorded;
- a changed file is marked as replacing the copy given earlier, and sent as its changed lines (a
  unified diff, with line numbers) where that is smaller than the file, whatever its size: the texts
  given are kept once for all sessions, by content (:class:`TextStore`, bounded by total size);
- a file the agent was given is taken back (one line) only when it is deleted, or its own text changed
  so that it no longer applies; one that stops applying because the editor's files changed (a tab
  closed) stays with the agent, silently, and so does one whose twin still applies.

Nothing new: no text at all.

The text stays under the agent's own limit in its own unit (:data:`HOOK_LIMITS`, :data:`HOOK_UNITS`):
retractions first, then the memory nearest the editor's active file and outward (its folder's, its parent
folders', the rules matching it, the root memory, the global memory, then what other open files bring). What
does not fit comes with the next prompts, in that order, and the text's last line names it as still to come;
a file over :data:`PART_SHARE` of the limit comes in parts (:func:`split_parts`, "part 1 of 3"), as many a
prompt as fit. Plain text (Gemini CLI escapes ``<`` and ``>``). It speaks as the system: it names the editor's
active file (and the open ones briefly), or says that no editor is connected.

:class:`HookSessions` keeps the states, least recently used first, bounded; a lost state means one
full delivery again, never a missed change. Pure: no I/O, no clock. :func:`deliver` changes only the
state it is given (a caller may run it on a copy and keep the copy once the hook has the text) and adds
texts to the store it is given.
"""

from __future__ import annotations

import difflib
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..agents import registry
from ..memory import MemoryBlock
from .agent_memory import Lacking
from .updates import removal_notice

# How much additionalContext each agent takes whole, in the unit it counts (measured with the real agents:
# docs/agents.md; each agent's module says its figures: LIMIT, UNIT). VS Code 1.139.1's own agent (running a
# Claude Code hook: hooks.client.hook_runner) took 60,000 characters: 30,000, our own bound on what one prompt
# adds.
_AGENT_MODULES = tuple(registry.load(agent) for agent in registry.HOOK_AGENTS)
HOOK_LIMITS: dict[str, int] = {**{m.ID: int(m.LIMIT) for m in _AGENT_MODULES}, "vscode": 30_000}
HOOK_UNITS: dict[str, str] = {**{m.ID: str(m.UNIT) for m in _AGENT_MODULES}, "vscode": "characters"}
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

# The texts given, to send a later change as its changed lines: one store shared by every session, by content
# (a text many sessions have is kept once), bounded by its total size, least recently used out first (a text no
# longer kept means one whole delivery of that file again, never a missed change).
MAX_STORED_TEXTS = 2_000_000  # characters of all texts
# A file larger than this share of the agent's limit goes in parts, one or more a prompt ("part 1 of 3 of X").
PART_SHARE = 0.8
MIN_PART = 400  # a part's room below this (a tiny limit): the file is named once instead


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
    return _named(head, paths, room, count)


class TextStore:
    """Texts by fingerprint, shared by every session's state, least recently used first, at most
    ``max_chars`` characters in all (:data:`MAX_STORED_TEXTS`)."""

    def __init__(self, max_chars: int = MAX_STORED_TEXTS) -> None:
        self.max_chars = max_chars
        self._texts: OrderedDict[str, str] = OrderedDict()
        self._size = 0

    def __len__(self) -> int:
        return len(self._texts)

    def __contains__(self, fp: object) -> bool:
        return fp in self._texts

    @property
    def size(self) -> int:
        return self._size

    def get(self, fp: str) -> str | None:
        text = self._texts.get(fp)
        if text is not None:
            self._texts.move_to_end(fp)
        return text

    def put(self, fp: str, text: str) -> None:
        if len(text) > self.max_chars:
            return
        if fp in self._texts:
            self._texts.move_to_end(fp)
            return
        self._texts[fp] = text
        self._size += len(text)
        while self._size > self.max_chars:
            _fp, old = self._texts.popitem(last=False)
            self._size -= len(old)

    def keep_only(self, wanted: set[str]) -> None:
        """Drop the texts no state refers to any more."""
        for fp in [fp for fp in self._texts if fp not in wanted]:
            self._size -= len(self._texts.pop(fp))

    def to_json(self) -> dict[str, str]:
        return dict(self._texts)

    @classmethod
    def from_json(cls, raw: Any, max_chars: int = MAX_STORED_TEXTS) -> TextStore:
        store = cls(max_chars)
        if isinstance(raw, dict):
            for fp, text in raw.items():
                if isinstance(fp, str) and isinstance(text, str) and fingerprint(text) == fp:
                    store.put(fp, text)
        return store


@dataclass
class HookState:
    """What one agent session has: abs path → (display path, content fingerprint), with what decided
    where each file applies when it was given (``scopes``), the files named once as not deliverable
    (``left``: abs path → fingerprint, not named again until they change), the files being sent in parts
    (``parts``: abs path → [fingerprint, parts sent]) and the agent's process that read its own files at
    start (``process``: pid and start time; a new one has read them afresh). The texts themselves are in
    the :class:`TextStore` all sessions share."""

    given: dict[str, tuple[str, str]] = field(default_factory=dict)
    started: bool = False  # the files the agent read at start are recorded
    left: dict[str, str] = field(default_factory=dict)
    scopes: dict[str, str] = field(default_factory=dict)
    parts: dict[str, tuple[str, int]] = field(default_factory=dict)
    process: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "given": {p: list(v) for p, v in self.given.items()},
            "started": self.started,
            "left": dict(self.left),
            "scopes": dict(self.scopes),
            "parts": {p: list(v) for p, v in self.parts.items()},
            "process": self.process,
        }

    @classmethod
    def from_json(cls, raw: Any) -> HookState:
        """A state read back from the state file (also one written before ``left``, ``scopes``, ``parts`` and
        ``process`` existed); anything malformed is a fresh state."""
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

        parts: dict[str, tuple[str, int]] = {}
        raw_parts = raw.get("parts")
        for path, value in raw_parts.items() if isinstance(raw_parts, dict) else ():
            if (
                isinstance(value, list)
                and len(value) == 2
                and isinstance(value[0], str)
                and isinstance(value[1], int)
                and not isinstance(value[1], bool)
                and value[1] > 0
            ):
                parts[str(path)] = (value[0], value[1])
        process = raw.get("process")
        return cls(
            given,
            raw.get("started") is True,
            strings("left"),
            strings("scopes"),
            parts,
            process if isinstance(process, str) else "",
        )

    def record(self, path: str, block: MemoryBlock, texts: TextStore | None = None) -> None:
        """The agent has ``block``'s text now (given by us, read at start, or the same as a twin's)."""
        fp = fingerprint(block.content)
        self.given[path] = (block.path, fp)
        self.scopes[path] = block.scope
        self.left.pop(path, None)
        self.parts.pop(path, None)
        if texts is not None:
            texts.put(fp, block.content)

    def forget(self, path: str) -> None:
        self.given.pop(path, None)
        self.scopes.pop(path, None)

    def fingerprints(self) -> set[str]:
        """The texts this state may diff against."""
        return {fp for _d, fp in self.given.values()}

    def _prune(self) -> None:
        self.scopes = {p: s for p, s in self.scopes.items() if p in self.given}


@dataclass(frozen=True, slots=True)
class HookRequest:
    agent: str  # an id of agents.registry.HOOK_AGENTS, or "vscode"
    event: str  # hook_event_name
    session_id: str
    source: str = ""  # SessionStart's source
    cwd: str = ""
    process: str = ""  # the agent's process ("pid:start time", :func:`agent_process`); "" when not known


@dataclass(frozen=True, slots=True)
class Delivery:
    text: str  # "" when there is nothing new
    files: tuple[str, ...] = ()  # display paths sent whole
    removed: tuple[str, ...] = ()  # display paths said to no longer apply
    left_out: tuple[str, ...] = ()  # abs paths named in the last line
    changed: tuple[str, ...] = ()  # display paths sent as their changed lines
    size: int = 0  # the text's size in the agent's unit
    unit: str = "characters"
    parts: tuple[str, ...] = ()  # "part 2 of 3 of <display path>" for each part sent
    pending: tuple[str, ...] = ()  # abs paths still to come on the next prompts (nearest first)


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
    """Hook states by (agent, session id), least recently used first, at most ``limit``, and the texts
    they were given (one :class:`TextStore` for all of them)."""

    def __init__(self, limit: int = DEFAULT_HOOK_SESSIONS, texts: TextStore | None = None) -> None:
        self.limit = limit
        self._by_key: OrderedDict[tuple[str, str], HookState] = OrderedDict()
        self.texts = TextStore() if texts is None else texts

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

    def adopt_texts(self, state: HookState, texts: TextStore) -> None:
        """Keep the texts ``state`` refers to that ``texts`` holds (a state computed elsewhere)."""
        for fp in state.fingerprints():
            text = texts.get(fp)
            if text is not None:
                self.texts.put(fp, text)

    def to_json(self) -> dict[str, Any]:
        """The sessions and the texts any of them refers to (each text once)."""
        wanted: set[str] = set()
        for state in self._by_key.values():
            wanted |= state.fingerprints()
        self.texts.keep_only(wanted)
        return {
            "sessions": [[a, s, state.to_json()] for (a, s), state in self._by_key.items()],
            "texts": self.texts.to_json(),
        }

    @classmethod
    def from_json(cls, raw: Any, limit: int = DEFAULT_HOOK_SESSIONS) -> HookSessions:
        """Sessions read back (also the list a state file held before the shared texts existed)."""
        texts = TextStore.from_json(raw.get("texts")) if isinstance(raw, dict) else TextStore()
        items = raw.get("sessions") if isinstance(raw, dict) else raw
        sessions = cls(limit, texts)
        for item in items if isinstance(items, list) else []:
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
    rank: tuple[int, int]
    path: str  # abs path
    display: str
    texts: tuple[str, ...]  # the forms it can be sent in, preferred (smallest) first
    block: MemoryBlock | None = None  # None: a line that is always sent (a retraction, a note)
    changed: bool = False
    retract: bool = False
    chunks: tuple[str, ...] = ()  # the text in parts, when no form fits one prompt (``texts`` then unused)
    done: int = 0  # parts the agent has of ``chunks``
    note: str = ""


def _rank(block: MemoryBlock) -> tuple[int, int]:
    """Nearest first, then outward: the memory of the active file's folder and the folders above it (deepest
    first; where the agent runs, without an editor), the rules matching the active file, the root memory, the
    global memory, then what other open files bring."""
    depth = block.path.count("/")
    if block.tier == "jit" and (block.for_active or block.reason.endswith("where the agent runs")):
        return (1, -depth)
    if block.for_active:
        return (2, -depth)
    if block.tier == "workspace":
        return (3, -depth)
    if block.tier == "global":
        return (4, 0)
    return (5, -depth)


def _units(text: str) -> list[str]:
    """``text`` in the pieces a part may end after: paragraphs (a blank line ends one, a heading starts one and
    stays with the paragraph under it)."""
    units: list[str] = []
    current = ""
    titled = False  # ``current`` holds only headings (and blank lines) so far
    for line in text.splitlines(keepends=True):
        if line.startswith("#") and current.strip() and not titled:
            units.append(current)
            current = ""
        if not current.strip():
            titled = line.startswith("#")
        elif not line.startswith("#") and line.strip():
            titled = False
        current += line
        if not line.strip() and current.strip() and not titled:
            units.append(current)
            current = ""
    if current:
        units.append(current)
    return units


def _cut(text: str, room: int, count: Callable[[str], int]) -> list[str]:
    """``text`` in pieces of at most ``room`` (in ``count``'s unit): its lines, a line too long by characters."""
    pieces: list[str] = []
    for line in text.splitlines(keepends=True):
        while count(line) > room:
            low, high = 1, len(line)
            while low < high:  # the longest head of the line that fits
                mid = (low + high + 1) // 2
                if count(line[:mid]) <= room:
                    low = mid
                else:
                    high = mid - 1
            pieces.append(line[:low])
            line = line[low:]
        if line:
            pieces.append(line)
    return pieces


def split_parts(text: str, room: int, count: Callable[[str], int] = len) -> list[str]:
    """``text`` in parts of at most ``room`` each (in ``count``'s unit), each ending before a heading or after a
    blank line (a paragraph longer than ``room``: at a line, a line longer than that: inside it); joined, the
    parts are ``text``."""
    atoms: list[str] = []
    for unit in _units(text):
        atoms.extend([unit] if count(unit) <= room else _cut(unit, room, count))
    parts: list[str] = []
    current = ""
    for atom in atoms:
        if current and count(current) + count(atom) > room:
            parts.append(current)
            current = ""
        current += atom
    if current:
        parts.append(current)
    return parts


def _part_text(block: MemoryBlock, index: int, total: int, chunk: str, note: str) -> str:
    title = f"{block.path}, part {index} of {total} (applies: {why_it_applies(block)}{note})"
    end = (
        f"--- End of Context from: {block.path} (part {total} of {total}: the whole file is given) ---"
        if index == total
        else f"--- End of part {index} of {total} of {block.path}; part {index + 1} follows ---"
    )
    return f"--- Context from: {title} ---\n{chunk.rstrip(chr(10))}\n{end}"


def _parts_left(piece: _Piece) -> str:
    total = len(piece.chunks)
    if not total:
        return ""
    if piece.done + 1 == total:
        return f" (part {total} of {total})"
    return f" (parts {piece.done + 1} to {total} of {total})"


def _part_room(block: MemoryBlock, limit: int, count: Callable[[str], int]) -> int:
    """Room for the text of one part (what the frame around it takes set aside, the same every prompt)."""
    frame = 2 * count(block.path) + 400
    return int(limit * PART_SHARE) - frame


def still_to_come_line(
    paths: Sequence[str],
    limit: int,
    room: int | None = None,
    *,
    unit: str = "characters",
    count: Callable[[str], int] = len,
) -> str:
    """The last line naming what comes with the next prompts (nearest first); within ``room`` it names as many
    as fit and counts the rest."""
    head = f"Still to come with your next prompts (each stays under {limit:,} {unit}; read them yourself if you need them now): "
    return _named(head, paths, room, count)


def _named(head: str, paths: Sequence[str], room: int | None, count: Callable[[str], int]) -> str:
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
    texts: TextStore | None = None,
    process: str = "",
) -> Delivery:
    """The text for this prompt, and ``state`` brought up to date (the only thing changed besides ``texts``,
    which only gains texts). ``lacks``: what applies for the editor's files now and how the agent has it
    (:func:`.agent_memory.lacking`); ``limit`` in ``count``'s unit; ``active``, ``open_files``: the editor's
    files as the text names them; ``texts``: the texts given, shared by all sessions; ``process``: the agent's
    process (a new one has read its own files afresh: nothing of them is sent)."""
    texts = TextStore() if texts is None else texts
    own = lacks.tracked()
    now = lacks.untracked()
    for path in [p for p in state.given if p in own]:
        state.forget(path)  # the agent reads it itself now: not ours to withdraw
    new_process = bool(process) and bool(state.process) and process != state.process
    if not state.started or new_process:
        state.started = True
        at_start = lacks.read_at_start()
        for path, block in now.items():
            if path in at_start:
                state.record(path, block, texts)
    if process:
        state.process = process
    head = [HOOK_PREFACE, FROM_DISK if from_disk else editor_line(active, open_files)]
    size = sum(count(h) + 2 for h in head)
    reserve = limit // 10 + 2  # for the last line, when something waits
    pieces, twins = _what_is_new(state, now, lacks.every, count, texts, limit, lacks.gone_reason, lacks.not_read)
    for key, note in lacks.notes.items():  # rule files not read (the disk path's bounds): said once each
        if state.left.get(key) != fingerprint(note):
            pieces.append(_Piece((0, 0), key, key, (note,)))
    state.left = {p: fp for p, fp in state.left.items() if p in now or p in lacks.notes}
    state.parts = {p: v for p, v in state.parts.items() if p in now}
    for path, block in twins:
        state.record(path, block, texts)
    state._prune()
    if not pieces:
        return Delivery("", unit=unit)
    pieces.sort(key=lambda p: p.rank)
    empty_room = limit - size - reserve
    parts: list[str] = []
    sent: list[_Piece] = []
    waiting: list[_Piece] = []
    never: list[_Piece] = []
    labels: list[str] = []
    for piece in pieces:
        if piece.block is None:
            parts.append(piece.texts[0])  # retractions and notes: one line each, always said
            size += count(piece.texts[0]) + 2
            sent.append(piece)
            continue
        if piece.chunks:
            total = len(piece.chunks)
            forms = [_part_text(piece.block, i + 1, total, c, piece.note) for i, c in enumerate(piece.chunks)]
            if any(count(f) + 2 > empty_room for f in forms[piece.done :]):
                never.append(piece)
                continue
            while piece.done < total and size + count(forms[piece.done]) + 2 + reserve <= limit:
                parts.append(forms[piece.done])
                size += count(forms[piece.done]) + 2
                piece.done += 1
                labels.append(f"part {piece.done} of {total} of {piece.display}")
            (sent if piece.done == total else waiting).append(piece)
            continue
        fits = next((t for t in piece.texts if size + count(t) + 2 + reserve <= limit), None)
        if fits is None:
            (never if count(piece.texts[0]) + 2 > empty_room else waiting).append(piece)
            continue
        parts.append(fits)
        size += count(fits) + 2
        sent.append(piece)
    tail = []
    room = max(limit - size - 2, 0)
    if waiting:
        named = [
            p.path + _parts_left(p) + (" (changed on disk since it was given)" if p.changed else "") for p in waiting
        ]
        tail.append(still_to_come_line(named, limit, room, unit=unit, count=count))
        room = max(room - count(tail[-1]) - 2, 0)
    if never:
        named = [p.path + (" (changed on disk since it was given)" if p.changed else "") for p in never]
        tail.append(left_out_line(named, limit, room, unit=unit, count=count))
    text = "\n\n".join([*head, *parts, *tail])
    for piece in sent:
        if piece.block is not None:
            state.record(piece.path, piece.block, texts)
        elif piece.retract:
            state.forget(piece.path)
        elif piece.path in lacks.notes:
            state.left[piece.path] = fingerprint(piece.texts[0])
    for piece in waiting:
        if piece.chunks and piece.done:
            assert piece.block is not None
            state.parts[piece.path] = (fingerprint(piece.block.content), piece.done)
    for piece in never:
        assert piece.block is not None
        state.left[piece.path] = fingerprint(piece.block.content)
    state._prune()
    whole = {p.path for p in sent if p.block is not None and (p.chunks or p.texts[-1] in parts)}
    return Delivery(
        text,
        tuple(p.display for p in sent if p.path in whole),
        tuple(p.display for p in sent if p.retract),
        tuple(p.path for p in never),
        tuple(p.display for p in sent if p.block is not None and p.path not in whole),
        count(text),
        unit,
        tuple(labels),
        tuple(p.path for p in waiting),
    )


MAX_PLANNED_PROMPTS = 20


def delivery_plan(
    lacks: Lacking,
    *,
    limit: int,
    count: Callable[[str], int] = len,
    unit: str = "characters",
    active: str | None = None,
    open_files: Sequence[str] = (),
    prompts: int = MAX_PLANNED_PROMPTS,
) -> list[Delivery]:
    """What a new session's hook would deliver prompt after prompt while nothing changes, until it has all that
    applies (at most ``prompts`` prompts): ``explain`` shows it."""
    state = HookState()
    texts = TextStore()
    plan: list[Delivery] = []
    for _ in range(prompts):
        delivery = deliver(
            state, lacks, limit=limit, count=count, unit=unit, active=active, open_files=open_files, texts=texts
        )
        if not delivery.text:
            break
        plan.append(delivery)
    return plan


def _what_is_new(
    state: HookState,
    now: Mapping[str, MemoryBlock],
    every: Mapping[str, MemoryBlock],
    count: Callable[[str], int],
    texts: TextStore,
    limit: int,
    gone_reason: Callable[[str], str],
    not_read: Callable[[str], bool] = lambda _path: False,
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
            continue  # named as not deliverable, unchanged since
        twin = given_fps.get(fp)
        if twin is not None and twin != path:
            twins.append((path, block))  # the agent has this text already, as another file's
            if before is not None:  # this file changed into a copy of that one: one line says so
                note = f"{block.path} changed on disk: its text is now the one given earlier as {state.given[twin][0]}."
                pieces.append(_Piece((0, 0), path, block.path, (note,)))
            continue
        note = "; changed on disk: this text replaces the earlier copy" if before else ""
        whole = _block(block, note)
        old = texts.get(before[1]) if before is not None else None
        diff = _changes(block, old) if old is not None else None
        forms = (diff, whole) if diff is not None and count(diff) < count(whole) else (whole,)
        piece = _Piece(_rank(block), path, block.path, forms, block, before is not None, note=note)
        room = _part_room(block, limit, count)
        if count(forms[0]) > int(limit * PART_SHARE) and room >= MIN_PART:
            piece.chunks = tuple(split_parts(block.content, room, count))
            if len(piece.chunks) == 1:
                piece.chunks = ()  # pragma: no cover - the frame alone made it too large
            progress = state.parts.get(path)
            if progress is not None and progress[0] == fp and progress[1] < len(piece.chunks):
                piece.done = progress[1]
        pieces.append(piece)
        if before is not None:
            changing.add(path)
    for path, (display, fp) in list(state.given.items()):
        if path in now:
            continue
        if fp in now_fps:
            state.forget(path)  # a twin that still applies carries its text: nothing to take back
            continue
        was = every.get(path)
        if was is None and not_read(path):
            continue  # in a rule folder read only in part: it may be there still, unread this time
        if was is not None and _waits_on_open_files(was) and was.scope == state.scopes.get(path, was.scope):
            continue  # the editor's files changed, not the file: the agent keeps what it was given
        if was is None:
            reason = gone_reason(path)
        elif was.included:
            reason = "it is empty now" if not was.content.strip() else "context.exclude leaves it out now"
        else:
            reason = was.reason.removeprefix("not included: ") or "it changed"
        pieces.append(_Piece((0, 0), path, display, (removal_notice(display, reason),), retract=True))
        changing.add(path)
    for path, block in twins:
        twin = given_fps[fingerprint(block.content)]
        if twin in changing:
            name = state.given[twin][0]
            note = f"{block.path} applies too ({why_it_applies(block)}): its text is the one given earlier as {name}."
            pieces.append(_Piece((0, 0), path, block.path, (note,)))
    return pieces, twins
