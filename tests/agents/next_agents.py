"""The next three terminal agents the suite runs for real (issue 35): GitHub Copilot CLI, OpenCode and Qwen Code.
Each is driven the way a script drives it, one process per turn of one session (``copilot -p … --session-id`` then
``--resume``; ``opencode run`` then ``--continue``; ``qwen -p … --session-id`` then ``--resume``), against the
recording model stub's OpenAI-compatible chat completions, offline and with no login. Each knows

- its pinned package (``tests/agents/<dir>/package.json`` + lock, installed on first use) and its executable;
- the scratch user state that trusts the project and keeps it offline, and the environment pointing it at the stub;
- how to read the requests it sends: which one carries the prompt the user typed (side requests such as a title
  have no tools), its system message (the cached prefix) and the text its hooks added to the turn.

Where each puts hook text (checked with the pinned versions, docs/agents.md): Copilot CLI appends it to the user
message as ``<system_reminder>…</system_reminder>``; OpenCode's plugin adds it as one more part of the user message;
Qwen Code as a part ``<qwen:user-prompt-submit-context>…</qwen:user-prompt-submit-context>``, ``<``/``>`` escaped.
"""

from __future__ import annotations

import html
import json
import os
import re
import subprocess
import uuid
from pathlib import Path
from typing import Any

import node_packages
import pytest
from model_stub import ModelStub, Recorded

HERE = Path(__file__).parent
MODEL = "stub-model"


def _user_texts(rec: Recorded) -> list[str]:
    """The text parts of the request's last user message."""
    body = rec.json
    users = [m for m in body.get("messages") or [] if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        return []
    content = users[-1].get("content")
    if isinstance(content, str):
        return [content]
    return [str(p.get("text", "")) for p in content or [] if isinstance(p, dict) and p.get("type") == "text"]


class NextAgent:
    """One agent; ``name`` is its id in our CLI (``setup --agent NAME``)."""

    name = ""
    node_dir = HERE
    package = ""

    def __init__(self) -> None:
        self.session = ""
        self.turns = 0

    def install(self) -> None:
        node_packages.ensure(self.node_dir, self.name)

    def version(self) -> str:
        package = self.node_dir / "node_modules" / self.package / "package.json"
        return str(json.loads(package.read_text(encoding="utf-8"))["version"])

    def seed(self, home: Path, workspace: Path, stub: ModelStub) -> None:
        """User state in the scratch ``home`` (trust, offline, no first-run questions)."""

    def env(self, stub: ModelStub, workspace: Path) -> dict[str, str]:
        raise NotImplementedError

    def argv(self, prompt: str) -> list[str]:
        """The command line of the next turn of the one session."""
        raise NotImplementedError

    def run(self, prompt: str, workspace: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        argv = self.argv(prompt)
        self.turns += 1
        done = subprocess.run(
            argv,
            cwd=workspace,
            env={**env, "PWD": str(workspace)},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert done.returncode == 0, (
            f"{self.name} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
        )
        return done

    def is_turn(self, rec: Recorded, prompt: str) -> bool:
        body = rec.json
        if rec.path != "/v1/chat/completions" or not isinstance(body, dict) or not body.get("tools"):
            return False
        return any(prompt in t for t in _user_texts(rec))

    def system_part(self, rec: Recorded) -> bytes:
        messages = rec.json.get("messages") or []
        systems = [m for m in messages if isinstance(m, dict) and m.get("role") == "system"]
        return json.dumps(systems[:1]).encode()

    def hook_texts(self, rec: Recorded, prompt: str) -> list[str]:
        raise NotImplementedError


class CopilotCli(NextAgent):
    """``copilot -p`` with a bring-your-own-model provider (the stub), no GitHub login (``COPILOT_OFFLINE``). A
    project's hooks run only in a folder Copilot CLI trusts: ``~/.copilot/config.json`` says so, as the CLI
    writes it when the user answers its trust question."""

    name = "copilot-cli"
    node_dir = HERE / "copilot"
    package = "@github/copilot"
    REMINDER = re.compile(r"<system_reminder>\n?(.*?)\n?</system_reminder>", re.S)

    def seed(self, home: Path, workspace: Path, stub: ModelStub) -> None:
        (home / ".copilot").mkdir(parents=True, exist_ok=True)
        config = {"trustedFolders": [str(workspace)], "firstLaunchAt": "2026-01-01T00:00:00.000Z"}
        (home / ".copilot" / "config.json").write_text(json.dumps(config), encoding="utf-8")

    def env(self, stub: ModelStub, workspace: Path) -> dict[str, str]:
        return {
            "COPILOT_PROVIDER_BASE_URL": stub.url + "/v1",
            "COPILOT_PROVIDER_TYPE": "openai",
            "COPILOT_PROVIDER_API_KEY": "stub-key-not-a-secret",
            "COPILOT_MODEL": MODEL,
            "COPILOT_OFFLINE": "true",
            "COPILOT_AUTO_UPDATE": "false",
            # It unpacks its 235 MB package into $XDG_CACHE_HOME/copilot on first run: once, beside the install.
            "XDG_CACHE_HOME": str(self.node_dir / "node_modules" / ".cache"),
        }

    def argv(self, prompt: str) -> list[str]:
        self.install()
        exe = str(self.node_dir / "node_modules" / ".bin" / "copilot")
        if not self.session:
            self.session = str(uuid.uuid4())
            return [exe, "-p", prompt, "--session-id", self.session, "--no-auto-update"]
        return [exe, "-p", prompt, "--resume", self.session, "--no-auto-update"]

    def hook_texts(self, rec: Recorded, prompt: str) -> list[str]:
        texts = [t for t in _user_texts(rec) if prompt in t]
        return [m.group(1) for t in texts for m in self.REMINDER.finditer(t.split(prompt, 1)[1])]


OPENCODE_CONFIG = {
    "$schema": "https://opencode.ai/config.json",
    "model": f"stub/{MODEL}",
    "autoupdate": False,
    "share": "disabled",
    "provider": {
        "stub": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Stub",
            "options": {"baseURL": "", "apiKey": "stub-key-not-a-secret"},
            "models": {MODEL: {"name": "Stub"}},
        }
    },
}


class OpenCode(NextAgent):
    """``opencode run`` with its whole config in ``OPENCODE_CONFIG_CONTENT`` (an OpenAI-compatible provider at
    the stub; the models list is not fetched). It takes its project folder from ``$PWD``. The package's own
    launcher needs its install script (the suite installs with ``--ignore-scripts``): the platform binary runs."""

    name = "opencode"
    node_dir = HERE / "opencode"
    package = "opencode-ai"

    def binary(self) -> str:
        self.install()
        arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(os.uname().machine.lower())
        path = self.node_dir / "node_modules" / f"opencode-{os.uname().sysname.lower()}-{arch}" / "bin" / "opencode"
        if not path.exists():
            pytest.fail(f"no OpenCode binary at {path}: run npm ci in {self.node_dir}", pytrace=False)
        return str(path)

    def env(self, stub: ModelStub, workspace: Path) -> dict[str, str]:
        config = json.loads(json.dumps(OPENCODE_CONFIG))
        config["provider"]["stub"]["options"]["baseURL"] = stub.url + "/v1"
        return {
            "OPENCODE_CONFIG_CONTENT": json.dumps(config),
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
        }

    def argv(self, prompt: str) -> list[str]:
        first = not self.session
        self.session = "continue"
        return [self.binary(), "run", prompt] if first else [self.binary(), "run", "--continue", prompt]

    def hook_texts(self, rec: Recorded, prompt: str) -> list[str]:
        return [t for t in _user_texts(rec) if prompt not in t]


class QwenCode(NextAgent):
    """``qwen -p`` with the OpenAI-compatible auth type at the stub; its own memory saving is off (it sends a
    request of its own after each turn) and so is anything that would call out."""

    name = "qwen-code"
    node_dir = HERE / "qwen"
    package = "@qwen-code/qwen-code"
    CONTEXT = re.compile(r"<qwen:user-prompt-submit-context>\n?(.*?)\n?</qwen:user-prompt-submit-context>", re.S)

    def seed(self, home: Path, workspace: Path, stub: ModelStub) -> None:
        settings = {
            "security": {"auth": {"selectedType": "openai"}},
            "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
            "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False},
            "general": {"enableAutoUpdate": False},
        }
        (home / ".qwen").mkdir(parents=True, exist_ok=True)
        (home / ".qwen" / "settings.json").write_text(json.dumps(settings), encoding="utf-8")

    def env(self, stub: ModelStub, workspace: Path) -> dict[str, str]:
        return {"OPENAI_BASE_URL": stub.url + "/v1", "OPENAI_API_KEY": "stub-key-not-a-secret", "OPENAI_MODEL": MODEL}

    def argv(self, prompt: str) -> list[str]:
        self.install()
        exe = str(self.node_dir / "node_modules" / ".bin" / "qwen")
        if not self.session:
            self.session = str(uuid.uuid4())
            return [exe, "-p", prompt, "--auth-type", "openai", "--session-id", self.session]
        return [exe, "-p", prompt, "--auth-type", "openai", "--resume", self.session]

    def hook_texts(self, rec: Recorded, prompt: str) -> list[str]:
        return [html.unescape(m.group(1)) for t in _user_texts(rec) for m in self.CONTEXT.finditer(t)]


def agents() -> dict[str, type[NextAgent]]:
    return {a.name: a for a in (CopilotCli, OpenCode, QwenCode)}


def body_text(rec: Recorded) -> str:
    """The request as the model reads it: its JSON with strings unescaped (a marker counted once per copy)."""
    data: Any = rec.json
    return json.dumps(data, ensure_ascii=False)
