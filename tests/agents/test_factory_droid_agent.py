"""Factory Droid gets the memory it does not read itself through its ``UserPromptSubmit`` hook, set up only by
``context-companion setup --agent droid`` (the project's ``.factory/settings.json``). The real agent (the linux-x64
binary of ``@factory/cli``, ``tests/agents/droid/``) runs one session of three turns in one process, the way its
TUI and its SDK drive it: ``droid exec --input-format stream-jsonrpc`` (``droid.initialize_session``, then
``droid.add_user_message`` per turn; a plain ``droid exec "…"`` runs no ``UserPromptSubmit`` hook, and
``droid exec -s`` asks Factory's servers for the session). Its model is the recording stub, a ``customModels``
entry in ``~/.factory/settings.json``; every other address it tries (Factory's API, telemetry) goes through a
proxy that refuses it (``kilo_cline.Blackhole``). The editor's server runs (Neovim with our plugin,
``editor_terminal.py``) with ``src/app.py`` active and the excluded ``.env`` open beside it.

The workspace carries one marker word per file: a root ``AGENTS.md`` and ``CLAUDE.md`` (Droid reads both itself,
once, at the session's start), a ``CLAUDE.local.md``, a ``.cursor/rules`` glob rule matching the active file and
``src/AGENTS.md`` (the active file's folder; Droid reads none of these).

1. first turn: every text that applies is in the request exactly once, read by Droid or added by the hook, and
   nothing Droid reads itself comes from us; the hook's text is a user message of its own, never the system part;
2. nothing changed: the hook adds nothing;
3. after a line is added to the root ``AGENTS.md`` (Droid keeps the copy it read at the start): the hook text
   carries that file's changed lines, not the file again, and the new line is in the request once.

Through turns 1-3 the system message is byte-identical. The ``.env`` secret never reaches a request.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import node_packages
import pytest
from editor_terminal import EditorTerminal
from kilo_cline import Blackhole, user_texts
from model_stub import ModelStub, Recorded
from nvim_harness import ACTIVE_FILE_LUA, lua_str
from test_agent_memory_hooks import context_companion, make_workspace

HERE = Path(__file__).parent
NODE_DIR = HERE / "droid"
PACKAGE = "@factory/cli-linux-x64"
MODEL = "stub-model"
MODEL_ID = "custom:Stub-0"  # "custom:" + displayName + "-" + the entry's index in customModels

SECRET = "sk-stub-never-in-a-request-6620"
ROOT, ROOT_EDIT = "ROOT-MEMORY-DROID", "ROOT-EDIT-DROID"
CLAUDE_OWN, LOCAL = "CLAUDE-OWN-DROID", "CLAUDE-LOCAL-DROID"
CURSOR_RULE, SRC = "CURSOR-RULE-DROID", "SRC-MEMORY-DROID"
MARKERS = (ROOT, ROOT_EDIT, CLAUDE_OWN, LOCAL, CURSOR_RULE, SRC)
READS_ITSELF = {ROOT, CLAUDE_OWN}  # as measured with 0.225.2 (agents/factory_droid.py)

WORKSPACE = {
    "AGENTS.md": f"# Project\n\n{ROOT}: otters review every pull request.\n\n"
    + "".join(f"- Rule {i}: keep each change small and say why in its commit message.\n" for i in range(12)),
    "CLAUDE.md": f"# Working here\n\n{CLAUDE_OWN}: changelog entries are written in the imperative.\n",
    "CLAUDE.local.md": f"# Mine\n\n{LOCAL}: I run the slow tests before lunch.\n",
    ".cursor/rules/python-style.mdc": (
        "---\ndescription: Python style\nglobs: src/**/*.py\nalwaysApply: false\n---\n\n"
        f"{CURSOR_RULE}: every function has type hints.\n"
    ),
    "src/AGENTS.md": f"# src\n\n{SRC}: src holds the application code.\n",
    "src/app.py": 'def greet(name: str) -> str:\n    return f"hello {name}"\n',
    ".env": f"API_KEY={SECRET}\n",
    ".gitignore": ".env\n",
}
REMINDER = "<system-reminder>"  # how Droid opens the parts it adds itself (tools, environment, its memory)


def binary() -> str:
    node_packages.ensure(NODE_DIR, "Factory Droid")
    path = NODE_DIR / "node_modules" / PACKAGE / "bin" / "droid"
    if not path.exists():
        pytest.fail(f"no Factory Droid binary at {path}: run npm ci in {NODE_DIR}", pytrace=False)
    return str(path)


def version() -> str:
    package = NODE_DIR / "node_modules" / PACKAGE / "package.json"
    return str(json.loads(package.read_text(encoding="utf-8"))["version"])


def seed(home: Path, stub: ModelStub) -> None:
    """The user's own Droid settings: the stub as a custom model (no login)."""
    model = {
        "model": MODEL,
        "displayName": "Stub",
        "baseUrl": stub.url + "/v1",
        "apiKey": "stub-key-not-a-secret",
        "provider": "generic-chat-completion-api",
        "maxOutputTokens": 4096,
    }
    (home / ".factory").mkdir(parents=True, exist_ok=True)
    (home / ".factory" / "settings.json").write_text(json.dumps({"customModels": [model]}), encoding="utf-8")


class Droid:
    """One ``droid exec --input-format stream-jsonrpc`` process: one session, a turn per ``turn``."""

    def __init__(self, workspace: Path, env: dict[str, str]) -> None:
        self.workspace = workspace
        self.proc = subprocess.Popen(
            [binary(), "exec", "--input-format", "stream-jsonrpc", "--output-format", "stream-jsonrpc"],
            cwd=workspace,
            env={**env, "PWD": str(workspace)},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        self.messages: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr or []), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout or []:
            with contextlib.suppress(ValueError):
                message = json.loads(line)
                with self._cond:
                    self.messages.append(message)
                    self._cond.notify_all()
        with self._cond:
            self._cond.notify_all()

    def _wait(self, holds: Any, what: str, timeout: float = 120) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                found = next((m for m in self.messages if holds(m)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise AssertionError(
                        f"Factory Droid: no {what} (exit {self.proc.poll()}):\n"
                        + "\n".join(json.dumps(m)[:300] for m in self.messages[-10:])
                        + "\n"
                        + "".join(self.stderr)[-3000:]
                    )
                self._cond.wait(min(left, 0.5))

    def call(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        ident = str(uuid.uuid4())
        request = {"jsonrpc": "2.0", "factoryApiVersion": "1.0.0", "type": "request", "id": ident}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({**request, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        answer = self._wait(lambda m: m.get("type") == "response" and m.get("id") == ident, f"answer to {method}")
        assert "error" not in answer, f"Factory Droid: {method} failed: {answer['error']}"
        return answer

    def start(self) -> None:
        self.call("droid.initialize_session", {"machineId": "test", "cwd": str(self.workspace), "modelId": MODEL_ID})

    def completed(self) -> int:
        with self._cond:
            return sum(1 for m in self.messages if _notification(m).get("type") == "agent_turn_completed")

    def turn(self, prompt: str) -> None:
        done = self.completed()
        self.call("droid.add_user_message", {"text": prompt})
        self._wait(lambda _m: self.completed() > done, "completed turn")

    def stop(self) -> None:
        if self.proc.stdin is not None:
            with contextlib.suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.terminate()
            self.proc.wait(10)


def _notification(message: dict[str, Any]) -> dict[str, Any]:
    params = message.get("params")
    inner = params.get("notification") if isinstance(params, dict) else None
    return inner if isinstance(inner, dict) else {}


def is_turn(rec: Recorded, prompt: str) -> bool:
    """The request that answers ``prompt``: its last user message is the prompt."""
    body = rec.json
    if rec.path != "/v1/chat/completions" or not isinstance(body, dict):
        return False
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    return bool(users) and users[-1].get("content") == prompt


def hook_texts(rec: Recorded, prompt: str) -> list[str]:
    """This turn's user messages besides the prompt and Droid's own ``<system-reminder>`` parts: the hook's."""
    return [t for t in user_texts(rec) if t != prompt and not t.startswith(REMINDER)]


def system_part(rec: Recorded) -> bytes:
    messages = rec.json.get("messages") or []
    return json.dumps([m for m in messages if isinstance(m, dict) and m.get("role") == "system"]).encode()


def counts(rec: Recorded) -> dict[str, int]:
    text = json.dumps(rec.json, ensure_ascii=False)
    return {marker: text.count(marker) for marker in MARKERS}


@dataclass
class Run:
    droid: Droid
    editor: EditorTerminal
    stub: ModelStub
    blackhole: Blackhole
    turns: list[tuple[str, Recorded, str]] = field(default_factory=list)

    def turn(self, label: str, prompt: str) -> tuple[Recorded, str]:
        after = self.stub.next_seq
        self.droid.turn(prompt)
        try:
            rec = self.stub.wait_for(lambda r: is_turn(r, prompt), timeout=30, after=after)
        except TimeoutError as exc:
            sent = [f"{r.seq} {r.path}: …{r.text[-800:]}" for r in self.stub.requests[after:]]
            raise AssertionError(f"turn {label}: {exc}\n" + "\n".join(sent)) from None
        hooked = "\n".join(hook_texts(rec, prompt))
        self.turns.append((label, rec, hooked))
        return rec, hooked

    def wait_memory(self, holds: Any, what: str, timeout: float = 30) -> None:
        self.editor.wait_memory(holds, what, timeout)


@pytest.fixture
def run(tmp_path: Path, model_stub: ModelStub) -> Iterator[Run]:
    binary()
    ws = make_workspace(tmp_path / "project", WORKSPACE)
    home = (tmp_path / "home").resolve()
    seed(home, model_stub)
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    editor = EditorTerminal(ws, home, env={"PATH": path})
    with Blackhole() as blackhole:
        env = {**editor.env, **blackhole.env()}
        done = subprocess.run(
            [context_companion(env), "setup", "--agent", "droid", "--workspace", str(ws)],
            env=env,
            cwd=ws,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, f"setup --agent droid failed: {done.stderr}"
        droid: Droid | None = None
        try:
            editor.start(["src/app.py", ".env"])
            active = str(ws / "src" / "app.py")
            editor.wait_lua(ACTIVE_FILE_LUA + f"return f and f.path == {lua_str(active)}", "src/app.py active")
            droid = Droid(ws, env)
            droid.start()
            yield Run(droid, editor, model_stub, blackhole)
        finally:
            if droid is not None:
                droid.stop()
            editor.stop()


def test_factory_droid_gets_what_it_lacks_once_then_nothing_then_the_edit_with_its_system_part_kept(
    run: Run, agent_figures: Any
) -> None:
    ws = run.editor.workspace
    settings = json.loads((ws / ".factory" / "settings.json").read_text(encoding="utf-8"))
    assert set(settings["hooks"]) == {"SessionStart", "UserPromptSubmit"}  # what setup wrote, nothing else
    applies = {ROOT, CLAUDE_OWN, LOCAL, CURSOR_RULE, SRC}

    first, hooked = run.turn("1", "Turn one: tell me what to keep in mind for this file.")
    found = counts(first)
    assert all(found[m] == 1 for m in applies) and found[ROOT_EDIT] == 0, f"turn 1: want each text once: {found}"
    own = [m for m in READS_ITSELF if m in hooked]
    assert not own, f"turn 1: we sent what Factory Droid reads itself: {own}\n{hooked}"
    assert all(m in hooked for m in applies - READS_ITSELF), f"turn 1: not every missing text is in the hook:\n{hooked}"
    assert not any(m in system_part(first).decode() for m in MARKERS), "turn 1: memory in the system part"

    second, quiet = run.turn("2", "Turn two: anything else to know.")
    assert quiet == "", f"turn 2: nothing changed, yet the hook added:\n{quiet}"
    assert counts(second) == found, f"turn 2: {counts(second)} != {found}"

    with (ws / "AGENTS.md").open("a", encoding="utf-8") as fh:
        fh.write(f"{ROOT_EDIT}: one more rule.\n")
    run.wait_memory(lambda r: ROOT_EDIT in str(r), "the edited AGENTS.md")
    third, edited = run.turn("3", "Turn three: tell me what changed.")
    assert ROOT_EDIT in edited and "AGENTS.md" in edited, f"turn 3: the edit is not in the hook text:\n{edited}"
    assert ROOT not in edited.replace(ROOT_EDIT, "") and "Rule 0:" not in edited, f"turn 3: want the change:\n{edited}"
    assert counts(third)[ROOT_EDIT] == 1, f"turn 3: {counts(third)}"

    systems = [system_part(rec) for _label, rec, _hooked in run.turns]
    for rec in run.stub.requests:
        assert SECRET not in rec.text, f"the .env secret is in {rec.method} {rec.path} (request {rec.seq})"
    for label, _rec, text in run.turns:
        assert ".env" not in text, f"turn {label}: the hook text names the excluded .env:\n{text}"
    agent_figures("factory-droid", "version", version())
    agent_figures("factory-droid", "system part (bytes)", len(systems[0]))
    agent_figures(
        "factory-droid", "hook context per turn (chars)", ", ".join(f"{t}: {len(h)}" for t, _r, h in run.turns)
    )
    agent_figures("factory-droid", "tried beyond loopback (refused)", ", ".join(sorted(run.blackhole.hosts())))
    assert all(s == systems[0] for s in systems), "the system part changed between turns"


HOOK_SCRIPT = """import json, pathlib, sys
sys.stdin.read()
text = pathlib.Path(sys.argv[1]).read_text(encoding="utf-8")
print(json.dumps({"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": text}}))
"""
SIZES = (30_000, 300_000)


def long_text(size: int) -> str:
    """Exactly ``size`` characters: numbered words between two markers, so a cut shows where."""
    head, tail = f"LONG-START-{size} ", f" LONG-END-{size}"
    words = " ".join(f"w{i:06d}" for i in range(size // 8 + 1))
    return (head + words)[: size - len(tail)] + tail


def test_how_long_a_hook_text_arrives_whole(tmp_path: Path, model_stub: ModelStub, agent_figures: Any) -> None:
    """A hook of the test's own in the project's .factory/settings.json: its additionalContext of 30,000 and
    300,000 characters, each whole in its turn (our bound, agents/factory_droid.LIMIT, is 30,000)."""
    ws = make_workspace(tmp_path / "project", {"AGENTS.md": "# Project\n"})
    home = (tmp_path / "home").resolve()
    seed(home, model_stub)
    script, text = tmp_path / "hook.py", tmp_path / "text.txt"
    script.write_text(HOOK_SCRIPT, encoding="utf-8")
    command = subprocess.list2cmdline([sys.executable, str(script), str(text)])
    hooks = {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": command}]}]}
    (ws / ".factory").mkdir()
    (ws / ".factory" / "settings.json").write_text(json.dumps({"hooks": hooks}), encoding="utf-8")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("CONTEXT_COMPANION_", "FACTORY_", "DROID_", "CLAUDE_"))
    }
    env.update({"HOME": str(home), "TMPDIR": str(home), "XDG_CONFIG_HOME": str(home / ".config")})
    arrived = []
    with Blackhole() as blackhole:
        droid = Droid(ws, {**env, **blackhole.env()})
        try:
            droid.start()
            for size in SIZES:
                text.write_text(long_text(size), encoding="utf-8")
                prompt = f"A long hook text of {size} characters."
                after = model_stub.next_seq
                droid.turn(prompt)
                rec = model_stub.wait_for(lambda r, p=prompt: is_turn(r, p), timeout=30, after=after)  # type: ignore[misc]
                added = "\n".join(hook_texts(rec, prompt))
                arrived.append(f"{size}: {'whole' if long_text(size) in added else 'cut'}")
                assert long_text(size) in added, f"Factory Droid: {arrived[-1]} ({len(added)} characters arrived)"
        finally:
            droid.stop()
    agent_figures("factory-droid", "hook text arrives", "; ".join(arrived))
