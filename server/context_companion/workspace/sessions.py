"""The registry of agent sessions: one conversation of one agent, known by its ``sessionId``.

"Session" means this and nothing else in the code base (the editor connection is the server).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..context.state import Baseline
from ..errors import ParamsError
from ..memory import MemoryResult
from ..prompt.engine import Instruction
from ..settings import AgentProfile, parse_profile

DEFAULT_SESSION = "default"


@dataclass
class AgentSession:
    id: str
    profile: AgentProfile | None  # None: the settings' profile
    instruction: Instruction | None = None  # the last one given (as a result or a push)
    baseline: Baseline = field(default_factory=Baseline)  # what the last turn context showed
    # The folder trees of its environment text, taken at its start: files that appear later do
    # not change them (refreshMemory {"environment": true} and settings changes take them again).
    trees: dict[str, str] | None = None
    # memory.reload = "session": the memory composition its instruction keeps.
    memory: MemoryResult | None = None
    # Memory its agent knows outside the current memory composition: abs path → (display, content).
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)
    seen_at_start: dict[str, tuple[str, str]] = field(default_factory=dict)  # what forceFull goes back to
    # False: its agent gets the memory files another way (getSystemInstruction ``includeMemory: false``, VS Code's
    # chat instructions); its instruction, and the pushes that rebuild it, leave them out.
    include_memory: bool = True


DEFAULT_MAX_SESSIONS = 64


class AgentSessions:
    """Agent sessions by id, least recently used first. A session a request names is started on
    first use; starting one beyond ``max_sessions`` evicts the least recently used (ended
    sessions are gone already). An evicted session that comes back starts afresh: its next turn
    context is full, as after ``forceFull``."""

    def __init__(self, max_sessions: int = DEFAULT_MAX_SESSIONS) -> None:
        self._by_id: OrderedDict[str, AgentSession] = OrderedDict()
        self.max_sessions = max_sessions

    def __len__(self) -> int:
        return len(self._by_id)

    def set_limit(self, max_sessions: int) -> None:
        self.max_sessions = max_sessions
        self._evict(keep=None)

    def _evict(self, keep: str | None) -> None:
        while len(self._by_id) > self.max_sessions:
            oldest = next(iter(self._by_id))
            if oldest == keep:  # pragma: no cover - keep is always the newest
                break
            del self._by_id[oldest]

    def __iter__(self) -> Iterator[AgentSession]:
        return iter(list(self._by_id.values()))

    def find(self, session_id: str) -> AgentSession | None:
        return self._by_id.get(session_id)

    def get(self, session_id: str, profile: Any = None) -> AgentSession:
        """The session with this id, started (with ``profile`` or the settings' one) if unknown.
        Raises :class:`~context_companion.errors.ProfileError` for an invalid profile."""
        parsed = parse_profile(profile, "profile") if profile is not None else None
        agent = self._by_id.get(session_id)
        if agent is None:
            agent = self._by_id[session_id] = AgentSession(session_id, parsed)
            self._evict(keep=session_id)
        else:
            self._by_id.move_to_end(session_id)
            if parsed is not None:
                agent.profile = parsed
        return agent

    def end(self, session_id: str) -> None:
        if self._by_id.pop(session_id, None) is None:
            raise ParamsError(f"sessionId: unknown session {session_id!r}")
