"""Kilo CLI and Cline CLI, driven for real (groundwork for issue 40): each runs one session of several turns
against the recording model stub's OpenAI-compatible chat completions, offline, with no login, in a scratch
HOME (and XDG folders) of the test's own, one process per turn:

- Kilo CLI (an OpenCode fork; the linux-x64 binary package, ``tests/agents/kilo/``): ``kilo run "…"`` then
  ``kilo run -c "…"``, its whole config in ``KILO_CONFIG`` (an openai-compatible provider at the stub);
- Cline CLI (``tests/agents/cline/``): ``cline auth -p openai-compatible …`` once, ``cline --json "…"``, then
  ``cline --id SESSION`` (its TUI, in a private tmux: ``--json`` refuses ``--id``) for each later turn.

Both try services of their own (their vendor's API, analytics, the npm registry). Every address we can set
points at the stub (which answers 404 and records the request), and every other request goes through a
proxy on the loopback address that refuses it and records the host it was meant for (``Blackhole``): nothing
leaves the machine, nothing waits on a network timeout, and a test can say what each agent tried.

Each agent knows how to read its requests: which one carries the prompt the user typed, its system message
(the cached prefix) and the text parts of the user's message other than the prompt (where a plugin's text
lands).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import node_packages
import pytest
from model_stub import ModelStub, Recorded

HERE = Path(__file__).parent
MODEL = "stub-model"
KEY = "stub-key-not-a-secret"


def scratch_env(home: Path) -> dict[str, str]:
    """A user of our own: HOME, the XDG folders and TMPDIR under ``home``, and only the PATH of the caller."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        "TERM": "xterm-256color",
    }
    for name in ("HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "TMPDIR"):
        Path(env[name]).mkdir(parents=True, exist_ok=True)
    return env


class Blackhole:
    """An HTTP proxy on 127.0.0.1 that forwards nothing: it answers every request (``CONNECT host:443`` or a
    plain ``GET http://host/…``) with 403 and records the target. Agents reach it through ``HTTP(S)_PROXY``;
    ``NO_PROXY`` keeps the loopback stub direct."""

    def __init__(self) -> None:
        self.targets: list[str] = []
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="blackhole", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def env(self) -> dict[str, str]:
        loopback = "127.0.0.1,localhost,::1"
        return {
            "HTTP_PROXY": self.url,
            "HTTPS_PROXY": self.url,
            "http_proxy": self.url,
            "https_proxy": self.url,
            "ALL_PROXY": self.url,
            "NO_PROXY": loopback,
            "no_proxy": loopback,
        }

    def __enter__(self) -> Blackhole:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)
        self._sock.close()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _addr = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._refuse, args=(conn,), daemon=True).start()

    def _refuse(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            try:
                head = conn.recv(8192).split(b"\r\n", 1)[0].decode("latin-1")
                parts = head.split()
                if len(parts) >= 2:
                    target = parts[1] if parts[0] == "CONNECT" else re.sub(r"^\w+://([^/]+).*$", r"\1", parts[1])
                    with self._lock:
                        self.targets.append(target)
                conn.sendall(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
            except OSError:
                pass

    def hosts(self) -> set[str]:
        with self._lock:
            return {t.rsplit(":", 1)[0] if t.count(":") == 1 else t for t in self.targets}


def user_texts(rec: Recorded) -> list[str]:
    """The text parts of this turn's user messages (those after the last assistant message), in order; a string
    content is one part. Cline CLI sends a plugin's text as a user message of its own before the prompt."""
    messages = rec.json.get("messages") or [] if isinstance(rec.json, dict) else []
    turn: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "assistant":
            turn = []
        elif isinstance(m, dict) and m.get("role") == "user":
            turn.append(m)
    out = []
    for m in turn:
        content = m.get("content")
        if isinstance(content, str):
            out.append(content)
        else:
            out += [str(p.get("text", "")) for p in content or [] if isinstance(p, dict) and p.get("type") == "text"]
    return out


def system_text(rec: Recorded) -> str:
    """The text of the request's system message(s)."""
    messages = rec.json.get("messages") or [] if isinstance(rec.json, dict) else []
    out = []
    for m in messages:
        if isinstance(m, dict) and m.get("role") == "system":
            content = m.get("content")
            if isinstance(content, str):
                out.append(content)
            else:
                out += [str(p.get("text", "")) for p in content or [] if isinstance(p, dict)]
    return "\n".join(out)


class TurnAgent:
    """One agent driven one process per turn. ``name`` is the id issue 40 will give it."""

    name = ""
    node_dir = HERE
    package = ""

    def __init__(self) -> None:
        self.turns = 0

    def install(self) -> None:
        node_packages.ensure(self.node_dir, self.name)

    def version(self) -> str:
        package = self.node_dir / "node_modules" / self.package / "package.json"
        return str(json.loads(package.read_text(encoding="utf-8"))["version"])

    def env(self, stub: ModelStub, home: Path) -> dict[str, str]:
        """The agent's settings beyond the scratch user, all pointing at the stub."""
        raise NotImplementedError

    def prepare(self, env: dict[str, str], workspace: Path) -> None:
        """Once before the first turn (a login, for instance)."""

    def argv(self, prompt: str) -> list[str]:
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
            timeout=300,
        )
        assert done.returncode == 0, (
            f"{self.name} turn {self.turns} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        )
        self.after(done)
        return done

    def after(self, done: subprocess.CompletedProcess[str]) -> None:
        """Reads what a turn printed (a session id, for instance)."""

    def stop(self) -> None:
        """Ends whatever the agent left running."""

    def is_turn(self, rec: Recorded, prompt: str) -> bool:
        """The request that answers the user's prompt (side requests such as a title carry no tools)."""
        body = rec.json
        if rec.path != "/v1/chat/completions" or not isinstance(body, dict) or not body.get("tools"):
            return False
        return any(prompt in t for t in user_texts(rec))

    def system_part(self, rec: Recorded) -> bytes:
        messages = rec.json.get("messages") or []
        return json.dumps([m for m in messages if isinstance(m, dict) and m.get("role") == "system"]).encode()

    def added_texts(self, rec: Recorded, prompt: str) -> list[str]:
        """Texts in the user's message beside the prompt (where a plugin's text lands)."""
        return [t for t in user_texts(rec) if prompt not in t]


KILO_CONFIG: dict[str, Any] = {
    "$schema": "https://app.kilo.ai/config.json",
    "model": f"stub/{MODEL}",
    "small_model": f"stub/{MODEL}",
    "autoupdate": False,
    "share": "disabled",
    "provider": {
        "stub": {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Stub",
            "options": {"baseURL": "", "apiKey": KEY},
            "models": {MODEL: {"name": "Stub"}},
        }
    },
}


class KiloCli(TurnAgent):
    """``kilo run`` then ``kilo run -c`` (continue the last session of this project). The npm package
    ``@kilocode/cli`` is a launcher that looks for its platform package; the registry serves the linux-x64 one
    at an older version than the launcher's, so the harness pins the platform package and runs its binary."""

    name = "kilo-cli"
    node_dir = HERE / "kilo"
    package = "@kilocode/cli-linux-x64"

    def binary(self) -> str:
        self.install()
        path = self.node_dir / "node_modules" / self.package / "bin" / "kilo"
        if not path.exists():
            pytest.fail(f"no Kilo CLI binary at {path}: run npm ci in {self.node_dir}", pytrace=False)
        return str(path)

    def env(self, stub: ModelStub, home: Path) -> dict[str, str]:
        config = json.loads(json.dumps(KILO_CONFIG))
        config["provider"]["stub"]["options"]["baseURL"] = stub.url + "/v1"
        path = home / "kilo-config.json"
        path.write_text(json.dumps(config), encoding="utf-8")
        return {
            "KILO_CONFIG": str(path),
            # Its own API (model lists, account), events, models.dev and the npm registry (it installs its
            # plugin package beside a project's plugins): the stub answers 404 at once; no retries.
            "KILO_API_URL": stub.url + "/kilo-api",
            "EVENT_SERVICE_URL": "ws://127.0.0.1:9",
            "KILO_EVENT_SERVICE_URL": "ws://127.0.0.1:9",
            "KILO_MODELS_URL": stub.url + "/kilo-models",
            "npm_config_registry": stub.url + "/npm/",
            "npm_config_fetch_retries": "0",
            "KILO_TELEMETRY_LEVEL": "off",
            "KILO_DISABLE_AUTOUPDATE": "1",
            "KILO_DISABLE_MODELS_FETCH": "1",
            "KILO_NO_DAEMON": "1",
            "KILO_DISABLE_PRESENCE": "1",
            "KILO_DISABLE_SESSION_INGEST": "1",
            "KILO_DISABLE_SHARE": "1",
            "KILO_DISABLE_LSP_DOWNLOAD": "1",
            "KILO_DISABLE_CODEBASE_INDEXING": "1",
        }

    def argv(self, prompt: str) -> list[str]:
        exe = self.binary()
        return [exe, "run", prompt] if self.turns == 0 else [exe, "run", "-c", prompt]


class ClineCli(TurnAgent):
    """``cline auth -p openai-compatible`` once (the stub as base URL), ``cline --json "…"``, then for each
    later turn ``cline --id SESSION`` (the session's folder name in ``~/.cline/data/sessions``), the TUI, one
    process per turn. ``--json`` runs in the process (``CLINE_SESSION_BACKEND_MODE=local``; else it starts a hub
    daemon); the TUI starts one anyway, which ``stop`` ends. The npm package ``cline`` is a launcher for its platform packages, of which the registry serves only
    linux-x64 at this version: the harness pins that one and runs its binary."""

    name = "cline-cli"
    node_dir = HERE / "cline"
    package = "@cline/cli-linux-x64"

    def __init__(self) -> None:
        super().__init__()
        self.task = ""
        self.home: Path | None = None

    def binary(self) -> str:
        self.install()
        path = self.node_dir / "node_modules" / self.package / "bin" / "cline"
        if not path.exists():
            pytest.fail(f"no Cline CLI binary at {path}: run npm ci in {self.node_dir}", pytrace=False)
        return str(path)

    def env(self, stub: ModelStub, home: Path) -> dict[str, str]:
        self.home = home
        settings = home / ".cline" / "data" / "settings"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "global-settings.json").write_text(
            json.dumps({"telemetryOptOut": True, "autoUpdateEnabled": False}), encoding="utf-8"
        )
        return {
            "CLINE_SESSION_BACKEND_MODE": "local",
            "CLINE_NO_AUTO_UPDATE": "1",
            "CLINE_API_BASE_URL": stub.url + "/cline-api",
            "CLINE_MARKETPLACE_CATALOG_URL": stub.url + "/cline-marketplace",
            "npm_config_registry": stub.url + "/npm/",
            "npm_config_fetch_retries": "0",
        }

    def prepare(self, env: dict[str, str], workspace: Path) -> None:
        base = env["CLINE_API_BASE_URL"].removesuffix("/cline-api") + "/v1"
        argv = [self.binary(), "auth", "-p", "openai-compatible", "-k", KEY, "-m", MODEL, "-b", base]
        done = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"cline auth failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"

    def argv(self, prompt: str) -> list[str]:
        return [self.binary(), "--json", prompt]

    def run(self, prompt: str, workspace: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        if not self.task:
            done = super().run(prompt, workspace, env)
            sessions = sorted((Path(env["HOME"]) / ".cline" / "data" / "sessions").iterdir())
            assert len(sessions) == 1, f"want one Cline session after the first turn: {sessions}"
            self.task = sessions[0].name
            return done
        return self.resume(prompt, workspace, env)

    def resume(self, prompt: str, workspace: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
        """``cline --id TASK`` opens the TUI (``--json`` refuses ``--id``): in a private tmux, type the prompt,
        wait for the stub's answer on the screen, quit (Ctrl-C)."""
        self.turns += 1
        tmux = which("tmux")
        sock = Path(env["TMPDIR"]) / f"tmux-{self.turns}.sock"
        command = shlex.join(["env", "-i", *(f"{k}={v}" for k, v in env.items()), self.binary(), "--id", self.task])
        base = [tmux, "-S", str(sock), "-f", "/dev/null"]

        def screen() -> str:
            done = subprocess.run([*base, "capture-pane", "-p", "-t", "cline"], capture_output=True, text=True)
            return done.stdout

        def wait(holds: Any, what: str, timeout: float = 90) -> str:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                shown = screen()
                if holds(shown):
                    return shown
                time.sleep(0.25)
            raise AssertionError(f"cline-cli turn {self.turns}: no {what} on the TUI within {timeout:g}s:\n{screen()}")

        started = subprocess.run(
            [*base, "new-session", "-d", "-s", "cline", "-x", "200", "-y", "50", "-c", str(workspace), command],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert started.returncode == 0, f"tmux failed: {started.stderr}"
        try:
            # Ready once the session's earlier answers are back on the screen under the empty prompt box.
            before = wait(lambda s: "Ask anything" in s and stub_answer() in s, "resumed session").count(stub_answer())
            subprocess.run([*base, "send-keys", "-t", "cline", "-l", prompt], check=True, timeout=30)
            wait(lambda s: prompt in s, "typed prompt")
            for _attempt in range(3):
                time.sleep(0.5)  # the box takes typed text in as a paste first; Enter right after it is lost
                subprocess.run([*base, "send-keys", "-t", "cline", "Enter"], check=True, timeout=30)
                with contextlib.suppress(AssertionError):
                    wait(lambda s: "Ask anything" in s, "emptied prompt box", timeout=10)
                    break
            shown = wait(lambda s: s.count(stub_answer()) > before and "Ask anything" in s, "answer")
            subprocess.run([*base, "send-keys", "-t", "cline", "C-c"], timeout=30)
            deadline = time.monotonic() + 20
            while (
                time.monotonic() < deadline
                and subprocess.run([*base, "has-session"], capture_output=True).returncode == 0
            ):
                time.sleep(0.25)
        finally:
            subprocess.run([*base, "kill-server"], capture_output=True, timeout=30)
        return subprocess.CompletedProcess([command], 0, shown, "")

    def stop(self) -> None:
        """The TUI starts a hub daemon that outlives it: end the ones this binary started for this user."""
        if self.home is None:
            return
        for pid in own_processes(self.home, self.binary()):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)


def stub_answer() -> str:
    import stub_openai

    return stub_openai.ANSWER


def own_processes(home: Path, exe: str) -> list[int]:
    """Processes running ``exe`` with ``HOME=home`` (the scratch user of one test): ours, and only ours."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if os.readlink(proc / "exe") != os.path.realpath(exe):
                continue
            environ = (proc / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"HOME={home}".encode() in environ:
            found.append(int(proc.name))
    return found


def agents() -> dict[str, type[TurnAgent]]:
    return {a.name: a for a in (KiloCli, ClineCli)}


def drive(
    agent: TurnAgent,
    workspace: Path,
    home: Path,
    stub: ModelStub,
    blackhole: Blackhole,
    prompts: list[str],
    between: Any = None,
) -> list[Recorded]:
    """Runs ``prompts`` as the turns of one session; ``between(i)`` runs before turn ``i`` (1-based, from the
    second). Returns each turn's main request."""
    env = {**scratch_env(home), **blackhole.env(), **agent.env(stub, home)}
    agent.prepare(env, workspace)
    out = []
    try:
        for i, prompt in enumerate(prompts, 1):
            if between is not None and i > 1:
                between(i)
            after = stub.next_seq
            agent.run(prompt, workspace, env)
            try:
                out.append(stub.wait_for(lambda r, p=prompt: agent.is_turn(r, p), timeout=30, after=after))  # type: ignore[misc]
            except TimeoutError as exc:
                sent = [f"{r.seq} {r.method} {r.path}: …{r.text[-600:]}" for r in stub.requests[after:]]
                raise AssertionError(f"{agent.name} turn {i}: {exc}\n" + "\n".join(sent)) from None
    finally:
        agent.stop()
    return out


def which(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not on PATH: install it (apt-get install {name})", pytrace=False)
    return found
