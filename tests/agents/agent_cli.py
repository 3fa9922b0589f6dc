"""The three terminal agents the suite runs for real, one class each: Claude Code, Gemini CLI and
Codex CLI. Each knows

- its pinned executable (installed from ``tests/agents/<agent>/package.json`` on first use) and the
  command line a user types in the editor's terminal;
- the scratch user state that keeps its first-run dialogs away, and the environment that points it at
  the recording model stub (``model_stub.py``) with a dummy key;
- how to read the requests it sends its model: which request carries a prompt the user typed (side
  requests such as a title for the conversation do not), its cached system part, the texts its hooks
  added to a turn, and what the screen shows once a turn is answered.

What each agent does with hook output (checked with the pinned versions, docs/agents.md):

- Claude Code: a ``role: "system"`` message after the prompt holds ``<Event> hook additional context:
  <text>`` (on the first turn inside the message that also carries Claude's environment section);
- Gemini CLI: a part ``<hook_context>text</hook_context>`` in the user turn, ``<`` and ``>`` escaped;
- Codex CLI: a developer message after the prompt. Codex runs a project's hooks only once the user
  trusted them: its TUI asks ("Hooks need review") and :meth:`Codex.accept_hooks` answers as a user
  does, through the review screen. Nothing here writes that trust.
"""

from __future__ import annotations

import html
import json
import platform
import re
from pathlib import Path
from typing import Any

import node_packages
import pytest
from editor_terminal import EditorTerminal
from model_stub import ModelStub, Recorded
from stub_anthropic import REPLY_OK, last_user_blocks

HERE = Path(__file__).parent


class Agent:
    """One terminal agent. ``name`` is the agent's id in our CLI (``setup --agent NAME``)."""

    name = ""
    node_dir = HERE

    def install(self) -> None:
        node_packages.ensure(self.node_dir, self.name)

    def version(self) -> str:
        raise NotImplementedError

    def command(self) -> list[str]:
        """The command line that starts it in a terminal."""
        raise NotImplementedError

    def seed(self, home: Path, workspace: Path, stub: ModelStub) -> None:
        """User state in the scratch ``home`` that skips first-run dialogs and points it at ``stub``."""
        raise NotImplementedError

    def env(self, stub: ModelStub) -> dict[str, str]:
        """What the editor's terminal needs for this agent to reach ``stub``."""
        raise NotImplementedError

    def wait_ready(self, editor: EditorTerminal) -> None:
        """Waits until the agent takes a prompt (after :meth:`accept_hooks`, when it has one)."""
        raise NotImplementedError

    def accept_hooks(self, editor: EditorTerminal) -> None:
        """Answers the agent's own question about new hooks, as a user does (only Codex asks)."""

    def is_turn(self, rec: Recorded, prompt: str) -> bool:
        """Whether ``rec`` is the model request of the turn the user started with ``prompt``."""
        raise NotImplementedError

    def system_part(self, rec: Recorded) -> bytes:
        """The part of the request the agent keeps fixed for the provider's prompt cache."""
        raise NotImplementedError

    def hook_texts(self, rec: Recorded, prompt: str) -> list[str]:
        """The texts the agent's hooks added to the turn of ``prompt`` (unescaped, in order)."""
        raise NotImplementedError

    def answered(self, rec: Recorded, prompt: str) -> str:
        """A regular expression the screen matches once the turn of ``rec`` is answered."""
        raise NotImplementedError

    # The screen shows an answer of the stub (gone once a new conversation has started).
    ANSWER_SHOWN = ""

    def clear(self, editor: EditorTerminal) -> None:
        """Starts a new conversation in the same process (``/clear``; Codex: ``/new``) and waits until
        the screen no longer shows the old one. Enter while the command's completion is highlighted
        may only complete it: pressed again when nothing happened."""
        editor.send("/clear")
        self._wait_cleared(editor)

    def _wait_cleared(self, editor: EditorTerminal) -> None:
        gone = rf"^(?![\s\S]*{self.ANSWER_SHOWN})"
        for _ in range(3):
            try:
                editor.wait_screen(gone, timeout=10)
                return
            except AssertionError:
                editor.keys("Enter")
        editor.wait_screen(gone, timeout=10)


# ---------------------------------------------------------------------------------------- Claude


class ClaudeCode(Agent):
    name = "claude-code"
    ANSWER_SHOWN = re.escape(REPLY_OK)
    node_dir = HERE / "claude"
    API_KEY = "sk-ant-stub-0000000000-context-companion-test"
    # What Claude Code 2.1 puts before a hook's additional context, and the sections of its own that
    # can follow it in the same message.
    HOOK_HEAD = re.compile(r"(?:UserPromptSubmit|SessionStart) hook additional context: ")
    OWN_SECTION = re.compile(
        r"\n\n(?:# Environment\n|Today's date is |# MCP Server Instructions|The user (?:opened|selected) )"
    )

    def binary(self) -> Path:
        """The native executable from the platform package (npm's install script only copies it over
        a placeholder; the tests install with --ignore-scripts)."""
        self.install()
        machine = platform.machine().lower()
        arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(machine)
        system = platform.system().lower()
        path = self.node_dir / "node_modules" / "@anthropic-ai" / f"claude-code-{system}-{arch}" / "claude"
        if not path.exists():
            pytest.fail(
                f"no Claude Code binary for {system}-{arch} at {path}: run npm ci in {self.node_dir}", pytrace=False
            )
        return path

    def version(self) -> str:
        package = self.node_dir / "node_modules" / "@anthropic-ai" / "claude-code" / "package.json"
        return str(json.loads(package.read_text(encoding="utf-8"))["version"])

    def command(self) -> list[str]:
        return [str(self.binary())]

    def seed(self, home: Path, workspace: Path, stub: ModelStub) -> None:
        seed_claude_home(home, workspace)

    def env(self, stub: ModelStub) -> dict[str, str]:
        return claude_env(stub)

    def wait_ready(self, editor: EditorTerminal) -> None:
        editor.wait_screen(r"Claude Code v2\.1", timeout=60)
        editor.wait_screen(r"for shortcuts|mode on", timeout=60)

    def is_turn(self, rec: Recorded, prompt: str) -> bool:
        body = rec.json
        if rec.path != "/v1/messages" or not isinstance(body, dict) or "tools" not in body:
            return False
        return prompt in [str(b.get("text", "")) for b in last_user_blocks(body) if b.get("type") == "text"]

    def system_part(self, rec: Recorded) -> bytes:
        return json.dumps(rec.json["system"]).encode()

    def hook_texts(self, rec: Recorded, prompt: str) -> list[str]:
        out: list[str] = []
        for text in _texts_after(self._messages(rec), prompt, "system"):
            for head in self.HOOK_HEAD.finditer(text):
                start = head.end()
                follows = self.OWN_SECTION.search(text, start)
                nxt = self.HOOK_HEAD.search(text, start)
                ends = [m.start() for m in (follows, nxt) if m is not None]
                out.append(text[start : min(ends, default=len(text))])
        return out

    def answered(self, rec: Recorded, prompt: str) -> str:
        return re.escape(prompt[:40]) + r"[\s\S]*" + re.escape(REPLY_OK)

    @staticmethod
    def _messages(rec: Recorded) -> list[tuple[str, list[str]]]:
        out = []
        for message in rec.json.get("messages") or []:
            content = message.get("content")
            blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
            texts = [str(b.get("text", "")) for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
            out.append((str(message.get("role")), texts))
        return out


def seed_claude_home(home: Path, workspace: Path) -> None:
    """User state that keeps Claude Code's onboarding, key and trust dialogs away."""
    home.mkdir(parents=True, exist_ok=True)
    state = {
        "hasCompletedOnboarding": True,
        "customApiKeyResponses": {"approved": [ClaudeCode.API_KEY[-20:]], "rejected": []},
        "projects": {str(workspace): {"hasTrustDialogAccepted": True}},
    }
    (home / ".claude.json").write_text(json.dumps(state), encoding="utf-8")


def claude_env(stub: ModelStub) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": stub.url,
        "ANTHROPIC_API_KEY": ClaudeCode.API_KEY,
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


# ---------------------------------------------------------------------------------------- Gemini

GEMINI_SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
    "ide": {"enabled": True, "hasSeenNudge": True},
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


def gemini_env(stub: ModelStub) -> dict[str, str]:
    """A dummy key and the stub's URL; ``SSH_CONNECTION`` because these machines have ``/.dockerenv``,
    which otherwise makes the CLI dial ``host.docker.internal`` (docs/editors/gemini-cli.md)."""
    return {
        "GEMINI_API_KEY": "stub-key-not-a-secret",
        "GOOGLE_GEMINI_BASE_URL": stub.url,
        "SSH_CONNECTION": "127.0.0.1 0 127.0.0.1 0",
    }


def seed_gemini_home(home: Path) -> None:
    """``~/.gemini/settings.json`` that skips every dialog (no hooks: ``setup`` writes those)."""
    (home / ".gemini").mkdir(parents=True, exist_ok=True)
    (home / ".gemini" / "settings.json").write_text(json.dumps(GEMINI_SETTINGS), encoding="utf-8")


class GeminiCli(Agent):
    name = "gemini-cli"
    ANSWER_SHOWN = r"Stub answer \d+: noted"
    node_dir = HERE / "gemini"
    HOOK_CONTEXT = re.compile(r"<hook_context>(.*?)</hook_context>", re.S)

    def version(self) -> str:
        package = self.node_dir / "node_modules" / "@google" / "gemini-cli" / "package.json"
        return str(json.loads(package.read_text(encoding="utf-8"))["version"])

    def command(self) -> list[str]:
        self.install()
        return [str(self.node_dir / "node_modules" / ".bin" / "gemini")]

    def seed(self, home: Path, workspace: Path, stub: ModelStub) -> None:
        seed_gemini_home(home)

    def env(self, stub: ModelStub) -> dict[str, str]:
        return gemini_env(stub)

    def wait_ready(self, editor: EditorTerminal) -> None:
        editor.wait_screen(r"Type your message", timeout=90)

    @staticmethod
    def _parts(content: Any) -> list[str]:
        return [p["text"] for p in (content or {}).get("parts", []) if isinstance(p, dict) and "text" in p]

    def is_turn(self, rec: Recorded, prompt: str) -> bool:
        body = rec.json
        if not rec.path.endswith(":streamGenerateContent") or not isinstance(body, dict) or not body.get("contents"):
            return False
        last = body["contents"][-1]
        return last.get("role") == "user" and prompt in self._parts(last)

    def system_part(self, rec: Recorded) -> bytes:
        return json.dumps(rec.json.get("systemInstruction")).encode()

    def hook_texts(self, rec: Recorded, prompt: str) -> list[str]:
        out = []
        for text in self._parts(rec.json["contents"][-1]):
            out += [html.unescape(m.group(1)) for m in self.HOOK_CONTEXT.finditer(text)]
        return out

    def answered(self, rec: Recorded, prompt: str) -> str:
        return rf"Stub answer {rec.seq}: noted"


# ----------------------------------------------------------------------------------------- Codex

CODEX_KEY_ENV = "CODEX_STUB_API_KEY"
CODEX_CONFIG = """\
model = "stub-model"
model_provider = "stub"
approval_policy = "never"
sandbox_mode = "read-only"
check_for_update_on_startup = false

[features]
plugins = false

[analytics]
enabled = false

[model_providers.stub]
name = "model stub"
base_url = {base_url}
env_key = "{key_env}"
wire_api = "responses"

[projects.{workspace}]
trust_level = "trusted"
"""


class Codex(Agent):
    """Codex CLI's TUI, started with ``--no-daemon`` (else a background app-server outlives it),
    with ``~/.codex/config.toml`` pointing at the stub's Responses API and trusting the workspace (so
    Codex loads the project's ``.codex/hooks.json``). Offline: plugins (``git ls-remote``), analytics
    and the update check are off."""

    name = "codex"
    node_dir = HERE / "codex"
    ANSWER_SHOWN = r"Stub response \d+: noted"

    def version(self) -> str:
        package = self.node_dir / "node_modules" / "@openai" / "codex" / "package.json"
        return str(json.loads(package.read_text(encoding="utf-8"))["version"])

    def command(self) -> list[str]:
        self.install()
        return [str(self.node_dir / "node_modules" / ".bin" / "codex"), "--no-daemon"]

    def seed(self, home: Path, workspace: Path, stub: ModelStub) -> None:
        seed_codex_home(home, workspace, stub)

    def env(self, stub: ModelStub) -> dict[str, str]:
        return {CODEX_KEY_ENV: "stub-key-not-a-secret"}

    def wait_ready(self, editor: EditorTerminal) -> None:
        editor.wait_screen(r"Ask Codex to do anything", timeout=60)

    def accept_hooks(self, editor: EditorTerminal) -> None:
        """The TUI's "Hooks need review" dialog: "Review hooks", then trust them all on the review
        screen (which names each hook's command), then close it."""
        editor.wait_screen(r"Hooks need review", timeout=60)
        editor.wait_screen(r"1\. Review hooks", timeout=10)
        editor.keys("Enter")
        editor.wait_screen(r"t trust all", timeout=30)
        editor.keys("t")
        editor.wait_screen(r"enter details · esc close", timeout=30)
        editor.keys("Escape")

    def is_turn(self, rec: Recorded, prompt: str) -> bool:
        body = rec.json
        if rec.path != "/v1/responses" or not isinstance(body, dict) or not body.get("tools"):
            return False
        users = [i for i in body.get("input") or [] if isinstance(i, dict) and i.get("role") == "user"]
        return bool(users) and prompt in self._texts(users[-1])

    @staticmethod
    def _texts(item: dict[str, Any]) -> list[str]:
        content = item.get("content")
        if isinstance(content, str):
            return [content]
        return [str(c.get("text", "")) for c in content or [] if isinstance(c, dict)]

    def system_part(self, rec: Recorded) -> bytes:
        """No ``instructions`` field: the fixed developer message ``input[0]`` (and ``instructions``
        should a version send one)."""
        body = rec.json
        return json.dumps({"instructions": body.get("instructions"), "input[0]": body["input"][0]}).encode()

    def hook_texts(self, rec: Recorded, prompt: str) -> list[str]:
        """The developer messages of this turn: after the previous answer (on the first turn of a
        conversation, after Codex's own opening user message: AGENTS.md and the environment). A
        SessionStart hook's lands before the prompt, a UserPromptSubmit hook's after it."""
        items = [i for i in rec.json.get("input") or [] if isinstance(i, dict)]
        answers = [i for i, item in enumerate(items) if item.get("role") == "assistant"]
        start = answers[-1] if answers else next(i for i, item in enumerate(items) if item.get("role") == "user")
        return [t for item in items[start + 1 :] if item.get("role") == "developer" for t in self._texts(item)]

    def answered(self, rec: Recorded, prompt: str) -> str:
        return rf"Stub response {rec.seq}: noted"

    def clear(self, editor: EditorTerminal) -> None:
        """``/new``; in a git repository Codex first asks where the new conversation runs: the
        current worktree (the first choice)."""
        editor.send("/new")
        editor.wait_screen(r"Where should the new conversation run", timeout=30)
        editor.keys("Enter")
        self._wait_cleared(editor)
        self.wait_ready(editor)


def seed_codex_home(home: Path, workspace: Path, stub: ModelStub) -> None:
    """``~/.codex/config.toml``: the stub as the model provider, the workspace trusted, offline."""
    (home / ".codex").mkdir(parents=True, exist_ok=True)
    config = CODEX_CONFIG.format(
        base_url=json.dumps(stub.url + "/v1"), key_env=CODEX_KEY_ENV, workspace=json.dumps(str(workspace))
    )
    (home / ".codex" / "config.toml").write_text(config, encoding="utf-8")


AGENTS: dict[str, Agent] = {a.name: a for a in (ClaudeCode(), GeminiCli(), Codex())}


def _texts_after(messages: list[tuple[str, list[str]]], prompt: str, role: str) -> list[str]:
    """The texts of the ``role`` messages after the last user message that holds ``prompt``."""
    at = max(i for i, (r, texts) in enumerate(messages) if r == "user" and prompt in texts)
    return [t for r, texts in messages[at + 1 :] if r == role for t in texts]
