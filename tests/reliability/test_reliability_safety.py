"""Safety: no lost or partial memory writes, loopback-only listeners, no shell, no network."""

from __future__ import annotations

import ast
import asyncio
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from context_companion.memory import add_memory
from lsp_pipe_client import SERVER, server_env
from server_faults import shim_env

NO_ENV = {"environment": {"placement": "off"}}
# The encoding files these tests name lie outside the workspace: only the user's own value may (the editor says so).
USER_FILE = ["tokens.encodingFile"]
PACKAGE = Path(__file__).resolve().parents[2] / "server" / "context_companion"
HEADING = "## Added Memories"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ----------------------------------------------------------------------------- addMemory under concurrency


class PartialFileWatch:
    """Reads files over and over while writers run; records any state that is not a whole file.

    A whole file is: the original bytes, then the heading, then complete ``- fact`` lines, each a
    fact that some writer added. A torn write shows up as a truncated line or a missing prefix.
    """

    def __init__(self, files: dict[Path, tuple[bytes, set[str]]]) -> None:
        self.files = files
        self.bad: list[str] = []
        self.reads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _check(self, path: Path, data: bytes) -> None:
        original, facts = self.files[path]
        if not data.startswith(original):
            self.bad.append(f"{path.name}: original bytes changed: {data[:200]!r}")
            return
        rest = data[len(original) :].decode("utf-8").replace("\r\n", "\n")
        if not rest:
            return
        if not rest.endswith("\n"):
            self.bad.append(f"{path.name}: ends mid-line: {rest[-80:]!r}")
            return
        lines = rest.split("\n")[:-1]
        body = [line for line in lines if line and line != HEADING]
        for line in body:
            if not line.startswith("- ") or line[2:] not in facts:
                self.bad.append(f"{path.name}: not a whole fact line: {line!r}")

    def _run(self) -> None:
        while not self._stop.is_set():
            for path in self.files:
                try:
                    data = path.read_bytes()
                except FileNotFoundError:
                    continue
                self.reads += 1
                self._check(path, data)

    def __enter__(self) -> PartialFileWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(5)


def assert_each_fact_once(path: Path, original: bytes, facts: list[str]) -> None:
    data = path.read_bytes()
    assert data.startswith(original)
    text = data.decode("utf-8").replace("\r\n", "\n")
    assert text.count(HEADING) == 1
    for fact in facts:
        assert text.count(f"- {fact}\n") == 1, fact
    assert not [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")], "temporary files left behind"


async def test_add_memory_many_parallel_requests_lose_no_fact_and_never_leave_a_partial_file(
    start, workspace, config_dir
):
    original = b"# Project\r\n\r\nKeep this line exactly.\r\n"
    (workspace / "AGENTS.md").write_bytes(original)
    h = await start(workspace, settings=NO_ENV)
    ws_facts = [f"workspace fact {i}: 😀 é, with a comma" for i in range(40)]
    global_facts = [f"global fact {i}" for i in range(40)]
    global_file = config_dir / "AGENTS.md"
    files = {workspace / "AGENTS.md": (original, set(ws_facts)), global_file: (b"", set(global_facts))}
    with PartialFileWatch(files) as watch:
        calls = [h.command("contextCompanion.addMemory", {"fact": f, "scope": "workspace"}) for f in ws_facts]
        calls += [h.command("contextCompanion.addMemory", {"fact": f}) for f in global_facts]
        results = await asyncio.gather(*calls)
    assert watch.reads > 0 and watch.bad == []
    assert {r["path"] for r in results} == {str(workspace / "AGENTS.md"), str(global_file)}
    assert_each_fact_once(workspace / "AGENTS.md", original, ws_facts)
    assert_each_fact_once(global_file, b"", global_facts)
    assert b"\r\n- workspace fact 0" in (workspace / "AGENTS.md").read_bytes()  # CRLF kept
    text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert all(f in text for f in ws_facts + global_facts)


def test_add_memory_from_many_threads_loses_no_fact_and_never_leaves_a_partial_file(tmp_path):
    ws = tmp_path / "ws"
    global_dir = tmp_path / "global"
    original = b"Notes without a final newline"
    write(ws / "AGENTS.md", "").write_bytes(original)
    facts = {t: [f"thread {t} fact {i}" for i in range(25)] for t in range(8)}
    all_facts = [f for fs in facts.values() for f in fs]
    errors: list[BaseException] = []
    barrier = threading.Barrier(8)

    def writer(t: int) -> None:
        try:
            barrier.wait()
            for fact in facts[t]:
                add_memory(fact, "workspace", global_dir=global_dir, workspace_folder=ws)
        except BaseException as exc:
            errors.append(exc)

    # The original ends without a newline: the first insertion adds one, so only the text is the prefix.
    watch_files = {ws / "AGENTS.md": (original, set(all_facts))}
    with PartialFileWatch(watch_files) as watch:
        threads = [threading.Thread(target=writer, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
    assert errors == []
    assert watch.reads > 0 and watch.bad == [], watch.bad[:5]
    assert_each_fact_once(ws / "AGENTS.md", original, all_facts)


# ----------------------------------------------------------------------------- listeners


def listening(pid: int) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket ``pid`` listens on, from /proc (no connection made:
    pygls' TCP server serves one client and exits, so a probe would end it)."""
    inodes = set()
    try:
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                target = os.readlink(f"/proc/{pid}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except FileNotFoundError:
        return []
    out = []
    for table, family in (("tcp", socket.AF_INET), ("tcp6", socket.AF_INET6)):
        with open(f"/proc/net/{table}", encoding="ascii") as fh:
            next(fh)
            for row in fh:
                parts = row.split()
                local, state, inode = parts[1], parts[3], parts[9]
                if state != "0A" or inode not in inodes:  # 0A: LISTEN
                    continue
                addr_hex, port_hex = local.split(":")
                raw = bytes.fromhex(addr_hex)
                raw = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
                out.append((socket.inet_ntop(family, raw), int(port_hex, 16)))
    return out


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def serve_and_look(
    tmp_path: Path, args: list[str], env: dict[str, str] | None = None
) -> tuple[list[tuple[str, int]], str]:
    """Start ``serve ARGS``, wait for its listening socket, return what it listens on, stop it."""
    (tmp_path / "home").mkdir(exist_ok=True)
    stderr_path = tmp_path / f"serve-{len(list(tmp_path.glob('serve-*')))}.stderr"
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            [*SERVER, *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=err,
            env=server_env(tmp_path / "home", tmp_path / "config", env),
            cwd=tmp_path,
        )
        try:
            found: list[tuple[str, int]] = []
            deadline = time.monotonic() + 15
            while not found and proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
                found = listening(proc.pid)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
    return found, stderr_path.read_text(encoding="utf-8", errors="replace")


def test_tcp_listens_on_loopback_only_unless_host_says_otherwise(tmp_path):
    port = free_port()
    found, log = serve_and_look(tmp_path, ["--tcp", "--port", str(port)])
    assert found == [("127.0.0.1", port)], log
    port = free_port("0.0.0.0")
    found, log = serve_and_look(tmp_path, ["--tcp", "--host", "0.0.0.0", "--port", str(port)])
    assert found == [("0.0.0.0", port)], log


def test_tcp_port_0_lets_the_system_pick_a_free_port(tmp_path):
    found, log = serve_and_look(tmp_path, ["--tcp", "--port", "0"])
    assert len(found) == 1, log
    address, port = found[0]
    assert address == "127.0.0.1"
    assert port not in (0, 2087), f"--port 0 listened on {port}, the default port, not a free one"


def test_ws_listens_on_loopback_only_unless_host_says_otherwise(tmp_path):
    """The websockets package is optional (pip install 'context-companion[ws]') and not among the
    dev dependencies: a stand-in whose serve() listens on the address it is given shows which
    address the --ws transport asks for."""
    port = free_port()
    found, log = serve_and_look(tmp_path, ["--ws", "--port", str(port)], shim_env("fake_websockets"))
    assert found == [("127.0.0.1", port)], log
    port = free_port("0.0.0.0")
    found, log = serve_and_look(
        tmp_path, ["--ws", "--host", "0.0.0.0", "--port", str(port)], shim_env("fake_websockets")
    )
    assert found == [("0.0.0.0", port)], log


def test_ws_without_the_websockets_package_is_a_one_line_error(tmp_path):
    env = server_env(tmp_path / "home", tmp_path / "config", shim_env("no_websockets"))
    done = subprocess.run(
        [*SERVER, "--ws", "--port", str(free_port())], env=env, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "context-companion[ws]" in done.stderr
    assert done.stdout == ""


# ----------------------------------------------------------------------------- no shell, no network (static)

BANNED_MODULES = {
    "subprocess", "pty", "socket", "ssl", "urllib.request", "http.client", "http.server", "ftplib", "smtplib",
    "telnetlib", "xmlrpc", "requests", "httpx", "aiohttp", "urllib3", "webbrowser", "multiprocessing", "blobfile",
    "websockets",
}  # fmt: skip
BANNED_CALLS = {
    "system", "popen", "execv", "execve", "execl", "execle", "execlp", "execvp", "execvpe", "spawnv", "spawnve",
    "spawnl", "spawnlp", "posix_spawn", "posix_spawnp", "fork", "forkpty", "create_subprocess_exec",
    "create_subprocess_shell", "subprocess_exec", "subprocess_shell", "open_connection", "create_connection",
    "connect", "connect_ex", "urlopen", "getaddrinfo", "gethostbyname", "startfile",
}  # fmt: skip
# Reviewed exceptions: (file, what, why).
ALLOWED = {
    ("lsp/transport.py", "import websockets"): "checks the optional package is there before --ws listens",
    ("lsp/sockets.py", "import websockets"): "the --ws listener (serve, ConnectionClosed); it never connects out",
    (
        "bridges/http_host.py",
        "import socket",
    ): "binds the MCP HTTP endpoint to 127.0.0.1 itself (a bind error is a clear message, not uvicorn's exit); every request needs the bearer token and a loopback Host",
    (
        "bridges/listener.py",
        "import socket",
    ): "binds the bridges' ports to 127.0.0.1 and listens (accepting is left to their servers, which check the token); it never connects out",
    (
        "tokens/__init__.py",
        "call get_encoding",
    ): "tiktoken download, only under `if self.allow_download` (tokens.allowDownload)",
    (
        "bridges/gemini/discovery.py",
        "import subprocess",
    ): "`ps -o ppid= -p <pid>` (fixed argv, no shell) for the parent PID where /proc does not exist",
    (
        "bridges/claude_code.py",
        "import websockets",
    ): "the Claude Code IDE listener on 127.0.0.1 (serve, header checks in process_request); it never connects out",
    (
        "bridges/claude_code_mcp.py",
        "import websockets",
    ): "ConnectionClosed only: the MCP side reads and writes the sockets the Claude Code listener accepted",
    (
        "bridges/http_host.py",
        "import urllib.request",
    ): "proves_token: asks an endpoint of an owner-only discovery file, on loopback only (checked), for its proof of the token, without sending the token",
    (
        "hooks/client.py",
        "import socket",
    ): "`context-companion hook` asks the editor's server on 127.0.0.1 (the port and token of its owner-only discovery file)",
    (
        "hooks/client.py",
        "call create_connection",
    ): "to 127.0.0.1 only (the address is fixed in the code), the port of the hooks' owner-only discovery file",
    (
        "hooks/client.py",
        "call connect",
    ): "the hooks' Unix domain socket in this user's 0700 runtime folder, owned by this user and listened on by the "
    "announced pid (peer credentials checked); nothing else is connected to",
    (
        "bridges/hook_channel.py",
        "import socket",
    ): "the hooks' channel: a Unix domain socket in the 0700 runtime folder whose peers are checked to be this user "
    "(SO_PEERCRED), else 127.0.0.1 where the platform has no AF_UNIX; it never connects out",
    (
        "procs.py",
        "import socket",
    ): "peer_credentials: reads SO_PEERCRED/LOCAL_PEERCRED of a socket already connected; opens and connects nothing",
}


def _findings() -> list[tuple[str, str, int]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            else:
                names = []
            for name in names:
                for banned in BANNED_MODULES:
                    if name == banned or name.startswith(banned + "."):
                        out.append((rel, f"import {banned}", node.lineno))
            if isinstance(node, ast.Call):
                func = node.func
                attr = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
                if attr in BANNED_CALLS:
                    out.append((rel, f"call {attr}", node.lineno))
                if attr == "get_encoding":
                    out.append((rel, "call get_encoding", node.lineno))
    return out


def test_no_module_imports_a_shell_or_network_library_or_calls_one():
    unexpected = [f for f in _findings() if (f[0], f[1]) not in ALLOWED]
    assert unexpected == [], unexpected


def test_the_one_tiktoken_download_is_behind_allow_download():
    path = PACKAGE / "tokens" / "__init__.py"
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = []
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "allow_download" in ast.unparse(node.test):
            guarded += [n for stmt in node.body for n in ast.walk(stmt) if isinstance(n, ast.Call)]
    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get_encoding"
    ]
    assert calls and all(c in guarded for c in calls)


# ----------------------------------------------------------------------------- no shell, no network (running)


def _audit(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    log = tmp_path / "audit.log"
    return log, shim_env("audit", CC_AUDIT_LOG=str(log))


def _events(log: Path) -> str:
    return log.read_text(encoding="utf-8") if log.exists() else ""


def test_a_whole_session_neither_starts_a_process_nor_reaches_the_network(spawn, tmp_path, tiny_encoding):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    write(ws / "AGENTS.md", "Root memory. @docs/style.md\n")
    write(ws / "docs" / "style.md", "Use tabs.\n")
    write(ws / "api" / "AGENTS.md", "API memory.\n")
    write(ws / "api" / "handler.py", "def f():\n    pass\n")
    write(ws / ".cursor" / "rules" / "py.mdc", "---\nglobs: '**/*.py'\n---\nPython rule.\n")
    write(ws / ".gitignore", "build/\n")
    log, env = _audit(tmp_path)
    proc = spawn([ws], {"environment": {"placement": "systemInstruction"}}, env=env)
    c = proc.command
    assert "Root memory." in c("contextCompanion.getSystemInstruction", {})["text"]
    c(
        "contextCompanion.startSession",
        {"sessionId": "s", "profile": {"model": "gpt-4o", "tools": ["shell"], "approvalMode": "plan"}},
    )
    handler = (ws / "api" / "handler.py").as_uri()
    proc.open(handler, "def f():\n    pass\n", "python")
    proc.cursor(handler, 1, 4, [(0, 0, 1, 4)])
    assert c("contextCompanion.getTurnContext", {"sessionId": "s"})["kind"] == "full"
    c("contextCompanion.buildMessages", {"sessionId": "s", "messages": [{"role": "user", "content": "hi"}]})
    c("contextCompanion.getInitialHistory", {})
    c("contextCompanion.showMemory", {})
    c("contextCompanion.addMemory", {"fact": "Audited fact.", "scope": "workspace"})
    c("contextCompanion.addMemory", {"fact": "Audited global fact."})
    c("contextCompanion.refreshMemory", {})
    c("contextCompanion.getCompressionPrompt", {})
    agents = (ws / "AGENTS.md").as_uri()
    proc.open(agents, (ws / "AGENTS.md").read_text(), "markdown")
    proc.request("textDocument/hover", {"textDocument": {"uri": agents}, "position": {"line": 0, "character": 16}})
    proc.request("textDocument/documentLink", {"textDocument": {"uri": agents}})
    proc.request("textDocument/codeLens", {"textDocument": {"uri": agents}})
    (ws / "docs" / "style.md").write_text("Use spaces.\n", encoding="utf-8")
    proc.wait_notification("contextCompanion/systemInstructionChanged", 1, timeout=15)
    ranks = tmp_path / "tiny.tiktoken"
    import base64

    ranks.write_text(
        "\n".join(f"{base64.b64encode(t).decode()} {r}" for t, r in tiny_encoding._mergeable_ranks.items())
    )
    proc.notify(
        "workspace/didChangeConfiguration",
        {
            "settings": {
                "tokens": {"encoding": "cl100k_base", "encodingFile": str(ranks)},
                "memory": {"debounceMs": 20},
                "userValues": USER_FILE,
            }
        },
    )
    assert proc.wait_for(
        lambda: c("contextCompanion.getSystemInstruction", {})["tokens"]["encoding"] == "cl100k_base", 10
    )
    other = tmp_path / "other"
    write(other / "AGENTS.md", "Other folder.\n")
    proc.notify(
        "workspace/didChangeWorkspaceFolders",
        {"event": {"added": [{"uri": other.as_uri(), "name": "other"}], "removed": []}},
    )
    assert proc.wait_for(lambda: "Other folder." in c("contextCompanion.getSystemInstruction", {})["text"], 10)
    assert proc.stop() == 0
    assert _events(log) == "", _events(log)


def test_the_cli_neither_starts_a_process_nor_reaches_the_network(tmp_path):
    ws = tmp_path / "ws"
    write(ws / "AGENTS.md", "Memory.\n")
    log, env = _audit(tmp_path)
    full_env = server_env(tmp_path / "home", tmp_path / "config", env)
    for args in (
        ["instruction", "--workspace", str(ws), "--json"],
        ["memory", "--workspace", str(ws)],
        ["compression-prompt"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "context_companion", *args], env=full_env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
    assert _events(log) == "", _events(log)


def test_the_audit_hook_sees_the_opt_in_download(spawn, tmp_path):
    """The control experiment: with tokens.allowDownload the tokenizer tries tiktoken's download
    (offline here), and the hook records it, so the hook does see a network reach."""
    ws = tmp_path / "ws"
    ws.mkdir()
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    log, env = _audit(tmp_path)
    proc = spawn([ws], {**NO_ENV, "tokens": {"allowDownload": True}}, env={**env, "TIKTOKEN_CACHE_DIR": str(empty)})
    tokens = proc.command("contextCompanion.getSystemInstruction", {})["tokens"]
    assert tokens["estimated"] is True
    events = _events(log)
    assert "EVENT socket.getaddrinfo" in events or "EVENT socket.connect" in events, events[:2000]


def test_an_encoding_file_setting_holding_a_url_does_not_reach_the_network(spawn, tmp_path):
    """tokens.encodingFile names a local ranks file; a URL there must not be fetched (tiktoken's
    loader would: requests.get for http(s)://) unless tokens.allowDownload says so."""
    ws = tmp_path / "ws"
    ws.mkdir()
    empty = tmp_path / "empty-cache"
    empty.mkdir()
    log, env = _audit(tmp_path)
    settings = {
        **NO_ENV,
        "tokens": {"encodingFile": "https://example.invalid/o200k_base.tiktoken"},
        "userValues": USER_FILE,
    }
    proc = spawn([ws], settings, env={**env, "TIKTOKEN_CACHE_DIR": str(empty)})
    tokens = proc.command("contextCompanion.getSystemInstruction", {})["tokens"]
    assert tokens["estimated"] is True and "example.invalid" in tokens["reason"]
    assert _events(log) == "", _events(log)[:2000]
