"""``context-companion hook`` without an editor: the memory composed from disk, and the quiet prompt.

With no editor's server for the folder, the hook composes the delivery itself (:func:`compose_from_disk`)
for the repository holding the agent's working folder (the nearest folder above with ``.git``, else that
folder): the root memory, the rules that need no open file, and the memory of the folders down to where
the agent runs. Each session's state lives in ``<state dir>/hook-sessions.json`` (owner-only; the state dir
is the user's runtime folder, or the user's state folder when no runtime folder can be trusted). Its lock
is held only to read the file and to merge one session back once the text was printed: hooks of other
agents and projects never wait for a composition.

Most prompts change nothing. A composition records what it depended on (:mod:`.quiet`); a session
given everything is *quiet* at that record, and its next prompt is answered by :func:`quiet_answer` with a
few ``stat`` calls, without importing the domain (``docs/performance.md``, "The hook without an editor").
"""

from __future__ import annotations

import json
import os
import stat

from ..ownership import find_marker
from ..procs import mine, read_private_json, runtime_folder
from . import quiet as hook_quiet

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

STATE_FILE = "hook-sessions.json"
RULE_LIMIT = 500  # rule files of the project read a prompt (memory.rule_budget.DEFAULT_LIMIT; light, not imported)
PROMPT_EVENTS = ("UserPromptSubmit", "BeforeAgent")  # workspace.hooks.PROMPT_EVENTS (not imported: light)


def _never() -> bool:
    return False


class DiskFailure(Exception):
    """One line for stderr (the hook prints it and exits 0)."""


def project_root(cwd: str) -> str:
    """The repository holding ``cwd`` (the nearest folder above with ``.git``, never another user's, never
    above a ``GIT_CEILING_DIRECTORIES`` folder: :func:`..ownership.find_marker`), else ``cwd``."""
    return find_marker(cwd, (".git",)).root or cwd


def state_directory() -> str:
    """Where the sessions' state is kept (not created here): the user's runtime folder when it is a folder
    of this user's (or not made yet), else ``<user state dir>/context-companion``."""
    directory = runtime_folder()
    if directory is not None:
        try:
            st = os.lstat(directory)
        except FileNotFoundError:
            return directory
        except OSError:
            pass
        else:
            if stat.S_ISDIR(st.st_mode) and mine(st):
                return directory
    from platformdirs import user_state_dir

    return user_state_dir("context-companion", appauthor=False)


class DiskAnswer:
    """A delivery from disk, committed (the state file, the quiet record) once it is printed."""

    def __init__(self, text: str, commit: Any = None) -> None:
        self.text = text
        self._commit = commit

    def printed(self) -> None:
        if self._commit is not None:
            self._commit()


def _key(request: dict[str, str], root: str) -> str:
    return hook_quiet.key_of(request["agent"], root, request["cwd"])


def quiet_answer(request: dict[str, str]) -> DiskAnswer | None:
    """Nothing to say, found without composing: the session is quiet at a record nothing has moved since.
    None when that cannot be told this way (then compose)."""
    if request["event"] not in PROMPT_EVENTS or not os.path.isdir(request["cwd"]):
        return None
    root = project_root(request["cwd"])
    if hook_quiet.is_quiet(state_directory(), _key(request, root), request["sessionId"]):
        return DiskAnswer("")
    return None


def exclusive(fd: int) -> None:
    """Hold an exclusive lock on the open file ``fd`` until it is closed: ``flock``, or on Windows (no
    ``fcntl``) ``msvcrt.locking`` of its first byte (it retries for 10 s, then raises OSError)."""
    try:
        import fcntl
    except ImportError:
        import msvcrt

        msvcrt.locking(fd, msvcrt.LK_LOCK, 1)  # type: ignore[attr-defined,unused-ignore]
        return
    fcntl.flock(fd, fcntl.LOCK_EX)


def compose_from_disk(request: dict[str, str], expired: Callable[[], bool] | None = None) -> DiskAnswer:
    """The delivery for ``request`` composed from disk (see the module docstring). Bounded whatever the tree:
    at most :data:`RULE_LIMIT` rule files of the project are read, and the reading stops once ``expired()``
    (the hook's time budget); what is left is said once, and the next prompt reads on (:mod:`..memory.rule_budget`)."""
    from pathlib import Path

    from ..discovery import private_dir, write_private
    from ..memory.rule_budget import RuleBudget
    from ..tokens import ESTIMATE, Tokenizer
    from ..workspace.companion import Companion
    from ..workspace.hooks import RESET_SOURCES, HookOutcome, HookRequest, HookSessions
    from ..workspace.snapshot import WorkspaceSnapshot

    if not os.path.isdir(request["cwd"]):
        raise DiskFailure(f"cwd: {request['cwd']} is not a directory")
    root = project_root(request["cwd"])
    try:
        directory = private_dir(Path(state_directory()))
    except OSError:
        from platformdirs import user_state_dir

        directory = private_dir(Path(user_state_dir("context-companion", appauthor=False)))
    path = directory / STATE_FILE
    lock_path = directory / (STATE_FILE + ".lock")

    def locked(work: Any) -> Any:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "rb") as lock:
            exclusive(lock.fileno())  # hooks of several agents at once: one file, read and written in turn
            return work()

    session = [request["agent"], request["sessionId"]]
    key = _key(request, root)
    stored = locked(lambda: read_private_json(path, max_bytes=64 << 20))
    # The project's own folder and the folders down to where the agent runs, never a walk: the root memory, the
    # rules that need no open file and the memory the agent read where it started are all the disk path delivers,
    # and a walk of a big folder (``/tmp``, ``/``) would cost seconds a prompt.
    rel = os.path.relpath(request["cwd"], root)
    parts = [] if rel == "." else rel.split(os.sep)
    chain = tuple("/".join(parts[: i + 1]) for i in range(len(parts)))
    hook_request = HookRequest(
        request["agent"],
        request["event"],
        request["sessionId"],
        request["source"],
        request["cwd"],
        request.get("agentProcess", ""),
    )
    start = hook_quiet.resume_at(directory, key)
    budget = RuleBudget(RULE_LIMIT, expired or _never, start)
    with hook_quiet.Recorder(skip=(str(directory),)) as recorder:
        snapshot = WorkspaceSnapshot.resolve([Path(root)])
        companion = Companion(snapshot, tokenizer=Tokenizer(ESTIMATE), walk_below=chain, rule_budget=budget)
        companion.hooks = HookSessions.from_json(stored)
        outcome = companion.hook_outcome(hook_request, from_disk=True)
        quiet = False
        if outcome.key is not None:
            # The same composition once the session has this delivery: nothing more to say (else, a state that
            # would deliver again, the session is not marked quiet and the next prompt composes).
            companion.hooks.commit(outcome)
            quiet = companion.hook_outcome(hook_request, from_disk=True).delivery.text == ""
    # Stopped by the deadline: not quiet (the next prompt reads on from where this one stopped).
    record = recorder.record() if quiet and not budget.cut else None
    resume = budget.next_start or 0
    forgets = request["event"] == "SessionStart" and request["source"] in RESET_SOURCES
    if outcome.key is None and not forgets:
        return DiskAnswer(outcome.delivery.text)

    def merge() -> None:
        now = HookSessions.from_json(read_private_json(path, max_bytes=64 << 20))
        before = json.dumps(now.to_json()).encode("utf-8")
        if outcome.key is None:  # a SessionStart that starts the history afresh
            now.reset(*session)
            hook_quiet.forget(directory, key, request["sessionId"])
        else:
            base = now.peek(*session)
            was = None if outcome.base is None else outcome.base.to_json()
            if (None if base is None else base.to_json()) != was:
                return  # another hook of this session wrote first: the next prompt composes afresh
            now.commit(HookOutcome(outcome.delivery, outcome.key, base, outcome.state))
            assert outcome.state is not None
            now.adopt_texts(outcome.state, companion.hooks.texts)  # the texts it was given, kept once for all
            if record is not None:
                hook_quiet.mark_quiet(directory, key, request["sessionId"], record)
            else:
                hook_quiet.forget(directory, key, request["sessionId"])
            if resume != start:
                hook_quiet.set_resume(directory, key, resume)
        after = json.dumps(now.to_json()).encode("utf-8")
        if after != before or not os.path.exists(path):  # an unchanged prompt writes nothing
            write_private(path, after)

    return DiskAnswer(outcome.delivery.text, lambda: locked(merge))
