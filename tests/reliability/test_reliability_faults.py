"""Faults, each tried for real against the server process.

Where the fault cannot be produced for real on a test machine without touching machine-wide
settings (the inotify watch limit) or because the tests run as root (chmod 000 does not stop
root), a shim loaded into the server process (shims/sitecustomize.py) makes the system call
fail the way the kernel would for an ordinary user; everything else is the real thing.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from lsp_pipe_client import CHANGED, LspProcess
from server_faults import shim_env

NO_ENV = {"environment": {"placement": "off"}}
# The encoding files these tests name lie outside the workspace: only the user's own value may (the editor says so).
USER_FILE = ["tokens.encodingFile"]
# Subfolder memory inside the instruction, so a test can read it there.
INSTRUCTION_JIT = {**NO_ENV, "memory": {"onDemandDelivery": "instruction"}}
GET = "contextCompanion.getSystemInstruction"


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def memory_files(proc: LspProcess) -> dict[str, dict]:
    return {f["path"]: f for f in proc.command("contextCompanion.showMemory", {})["files"]}


def wait_text(proc: LspProcess, needle: str, present: bool = True, timeout: float = 15.0) -> str:
    """Poll the instruction until ``needle`` is (or is no longer) in it; returns the text."""
    deadline = time.monotonic() + timeout
    while True:
        text = proc.command(GET, {})["text"]
        if (needle in text) == present or time.monotonic() > deadline:
            return text
        time.sleep(0.1)


# ----------------------------------------------------------------------------- watching


def test_inotify_watch_limit_falls_back_to_polling_and_changes_are_still_seen(spawn, tmp_path):
    ws = tmp_path / "ws"
    agents = write(ws / "AGENTS.md", "version one\n")
    (ws / ".git").mkdir()
    os.symlink(ws, ws / "loop")  # polling must not walk into this
    proc = spawn([ws], INSTRUCTION_JIT, env=shim_env("inotify_limit"))
    assert "version one" in proc.command(GET, {})["text"]
    assert proc.wait_for(lambda: "falling back to polling" in proc.stderr_text(), 10), proc.stderr_text()
    assert "inotify watch limit reached" in proc.stderr_text()

    agents.write_text("version two, seen by polling\n", encoding="utf-8")
    push = proc.wait_notification(CHANGED, 1, timeout=15)[0]
    assert push["reason"] == "memoryChanged" and push["changedFiles"] == ["AGENTS.md"]
    assert "version two, seen by polling" in proc.command(GET, {})["text"]

    # A new directory with a memory file appears: the poller lists new directories too.
    write(ws / "api" / "AGENTS.md", "api rules\n")
    write(ws / "api" / "handler.py", "pass\n")
    proc.open((ws / "api" / "handler.py").as_uri(), "pass\n")
    assert "api rules" in wait_text(proc, "api rules")


def test_workspace_folder_deleted_while_watched(spawn, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "AGENTS.md", "root memory\n")
    write(ws / "api" / "AGENTS.md", "api memory\n")
    write(ws / "api" / "x.py", "x = 1\n")
    proc = spawn([ws], INSTRUCTION_JIT)
    proc.open((ws / "api" / "x.py").as_uri(), "x = 1\n")
    text = wait_text(proc, "api memory")
    assert "root memory" in text and "api memory" in text

    shutil.rmtree(ws)
    push = proc.wait_notification(CHANGED, 1, timeout=15)[-1]
    assert push["reason"] in ("workspaceChanged", "memoryChanged")
    text = proc.command(GET, {})["text"]
    assert "root memory" not in text and "api memory" not in text
    assert memory_files(proc) == {}
    # Every command still answers.
    assert proc.command("contextCompanion.getTurnContext", {})["kind"] == "full"
    assert proc.command("contextCompanion.refreshMemory", {})["memoryFiles"] == []

    # The folder comes back (a branch switch, a re-clone): refreshMemory picks it up.
    write(ws / "AGENTS.md", "root memory, restored\n")
    refreshed = proc.command("contextCompanion.refreshMemory", {})
    assert [f["path"] for f in refreshed["memoryFiles"]] == ["AGENTS.md"]
    assert "root memory, restored" in proc.command(GET, {})["text"]
    assert proc.alive()


# ----------------------------------------------------------------------------- unreadable, odd and large files


def test_memory_file_made_unreadable_is_skipped_and_comes_back(spawn, tmp_path):
    ws = tmp_path / "ws"
    agents = write(ws / "AGENTS.md", "readable memory\n")
    claude = write(ws / "CLAUDE.md", "locked away\n")
    claude.chmod(0o000)
    proc = spawn([ws], NO_ENV, env=shim_env("nonroot_read"))
    files = memory_files(proc)
    assert files["AGENTS.md"]["included"] is True
    assert files["CLAUDE.md"]["included"] is False
    assert files["CLAUDE.md"]["reason"] == "skipped: unreadable (Permission denied)"
    assert "locked away" not in proc.command(GET, {})["text"]

    # Made unreadable while the server runs. A permission change alone is not a watched event
    # (watchdog reports it as "attrib", which the memory watcher filters out), so ask for a refresh.
    agents.chmod(0o000)
    refreshed = proc.command("contextCompanion.refreshMemory", {})
    assert refreshed["changed"] is True
    assert {f["path"]: f["reason"] for f in refreshed["memoryFiles"]}[
        "AGENTS.md"
    ] == "skipped: unreadable (Permission denied)"
    assert "readable memory" not in proc.command(GET, {})["text"]

    agents.chmod(0o644)
    claude.chmod(0o644)
    proc.command("contextCompanion.refreshMemory", {})
    text = proc.command(GET, {})["text"]
    assert "readable memory" in text and "locked away" in text


def test_fifo_and_directory_named_like_memory_files_do_not_hang(spawn, tmp_path):
    ws = tmp_path / "ws"
    agents = write(ws / "AGENTS.md", "plain memory\n")
    os.mkfifo(ws / "GEMINI.md")  # opening it for reading would block forever
    (ws / "CLAUDE.md").mkdir()
    proc = spawn([ws], NO_ENV)
    assert "plain memory" in proc.command(GET, {})["text"]
    files = memory_files(proc)
    assert files["AGENTS.md"]["included"] is True
    assert files["GEMINI.md"]["reason"] == "skipped: not a regular file"
    assert files["CLAUDE.md"]["reason"] == "skipped: not a regular file (a directory)"

    agents.unlink()
    os.mkfifo(agents)  # swapped for a FIFO while watched
    push = proc.wait_notification(CHANGED, 1, timeout=15)[0]
    assert push["changedFiles"] == ["AGENTS.md"]
    assert "plain memory" not in proc.command(GET, {})["text"]
    assert memory_files(proc)["AGENTS.md"]["reason"] == "skipped: not a regular file"
    assert proc.command("contextCompanion.refreshMemory", {})["memoryFiles"]


def test_non_utf8_memory_is_read_with_replacements_and_binary_memory_is_skipped(spawn, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "AGENTS.md", "Caf\xe9 cr\xe8me, stay in Latin-1.\n".encode("latin-1"))
    write(ws / "CLAUDE.md", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    write(ws / "GEMINI.md", "\ufeffBOM and UTF-8: caf\u00e9\r\n".encode("utf-8"))
    proc = spawn([ws], NO_ENV)
    result = proc.command(GET, {})
    text = result["text"]
    assert "Caf\ufffd cr\ufffdme, stay in Latin-1." in text
    assert "BOM and UTF-8: café" in text and "\ufeff" not in text
    assert "IHDR" not in text and "\x00" not in text
    files = {f["path"]: f for f in result["memoryFiles"]}
    assert files["AGENTS.md"]["included"] is True
    assert files["CLAUDE.md"]["included"] is False and files["CLAUDE.md"]["reason"] == "skipped: binary file (NUL byte)"
    # "non-UTF-8 bytes are replaced and warned about" (issue 3): the warning must reach the user.
    shown = proc.command("contextCompanion.showMemory", {})
    visible = repr(shown) + repr(result) + proc.stderr_text()
    assert "not valid UTF-8" in visible, "the replacement is not reported anywhere the user can see"


def test_50_mb_memory_file_is_cut_with_a_marker_and_the_server_stays_responsive(spawn, tmp_path, figures):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    line = "Remember to keep the build green, always and forever. " * 2 + "\n"
    big = ws / "docs" / "AGENTS.md"
    big.parent.mkdir(parents=True)
    with open(big, "w", encoding="utf-8") as fh:
        for _ in range(50 * 1024 * 1024 // len(line) + 1):
            fh.write(line)
    assert big.stat().st_size >= 50 * 1024 * 1024
    write(ws / "AGENTS.md", "small root memory\n")
    write(ws / "docs" / "guide.md", "guide\n")
    proc = spawn([ws], INSTRUCTION_JIT)  # the cut JIT file is read in the instruction's text
    proc.open((ws / "docs" / "guide.md").as_uri(), "guide\n")
    files = memory_files(proc)
    assert files["docs/AGENTS.md"]["included"] is True  # JIT under docs/: cut, not dropped
    assert files["docs/AGENTS.md"]["cut"].startswith("memory.maxFileBytes (262144): ")
    text = proc.command(GET, {})["text"]
    assert "[… cut here by memory.maxFileBytes (262144)" in text and len(text.encode()) < 400_000

    # The user opens the 50 MB file in the editor: the server keeps answering.
    text = big.read_text(encoding="utf-8")
    t0 = time.monotonic()
    proc.open(big.as_uri(), text, language="markdown")
    proc.cursor(big.as_uri(), 10, 3)
    turn = proc.command("contextCompanion.getTurnContext", {"sessionId": "big"}, timeout=60)
    figures["50 MB memory document opened → getTurnContext answered (s)"] = round(time.monotonic() - t0, 2)
    assert turn["context"]["activeFile"]["path"] == str(big)
    diagnostics = proc.wait_notification("textDocument/publishDiagnostics", 1, timeout=30)
    mine = [d for d in diagnostics if d["uri"] == big.as_uri()]
    assert mine and any(d.get("code") == "file-too-large" for d in mine[-1]["diagnostics"])
    assert proc.command("contextCompanion.getCompressionPrompt", {})["text"]


def test_symlink_loops_in_the_tree_are_not_followed(spawn, tmp_path):
    ws = tmp_path / "ws"
    write(ws / "AGENTS.md", "root memory\n")
    write(ws / "a" / "AGENTS.md", "a memory\n")
    write(ws / "a" / "b" / "code.py", "pass\n")
    (ws / ".git").mkdir()
    os.symlink(ws, ws / "loop")  # back to the root
    os.symlink("../..", ws / "a" / "b" / "up")  # relative loop
    os.symlink(ws / "self", ws / "self")  # a link to itself (ELOOP)
    os.symlink(ws / "self", ws / "CLAUDE.md")  # a memory file that is an ELOOP link
    proc = spawn(
        [ws],
        {
            "environment": {"placement": "systemInstruction", "includeFolderTree": True},
            "memory": {"onDemandDelivery": "instruction"},
        },
    )
    proc.open((ws / "a" / "b" / "code.py").as_uri(), "pass\n")
    result = proc.command(GET, {})
    assert "root memory" in result["text"] and "a memory" in result["text"]
    paths = [f["path"] for f in result["memoryFiles"]]
    assert len(paths) == len(set(paths)), paths
    assert {"AGENTS.md", "a/AGENTS.md"} <= set(paths)
    assert not any(p.startswith(("loop/", "a/b/up/")) for p in paths), paths
    if "CLAUDE.md" in paths:
        claude = next(f for f in result["memoryFiles"] if f["path"] == "CLAUDE.md")
        assert claude["included"] is False
    assert result["environmentContext"] and result["environmentContext"].count("code.py") == 1
    assert proc.command("contextCompanion.refreshMemory", {})["memoryFiles"]


# ----------------------------------------------------------------------------- settings


def test_invalid_settings_file_reports_once_and_last_good_settings_stay(spawn, tmp_path):
    ws = tmp_path / "ws"
    toml = write(ws / ".context-companion.toml", "systemPrompt = 'unterminated\n")
    proc = spawn([ws], {})
    messages = proc.wait_notification("window/showMessage", 1, timeout=10)
    assert len(messages) == 1 and ".context-companion.toml" in messages[0]["message"]
    assert "not valid TOML" in messages[0]["message"]
    assert "You are an interactive" in proc.command(GET, {})["text"]  # the defaults serve

    toml.write_text("systemPrompt = 'Prompt from the workspace file.'\n", encoding="utf-8")
    proc.notify("workspace/didChangeConfiguration", {"settings": {"contextCompanion": NO_ENV}})
    assert wait_text(proc, "Prompt from the workspace file.") == "Prompt from the workspace file."

    toml.write_text("systemPrompt = 'Broken again.'\n[context]\nmaxOpenFiles = 'many'\n", encoding="utf-8")
    proc.notify("workspace/didChangeConfiguration", {"settings": {"contextCompanion": NO_ENV}})
    messages = proc.wait_notification("window/showMessage", 2, timeout=10)
    assert "context.maxOpenFiles" in messages[-1]["message"] and ".context-companion.toml" in messages[-1]["message"]
    assert proc.command(GET, {})["text"] == "Prompt from the workspace file."


BAD_PAYLOADS = [
    ({"contextCompanion": {"memory": {"maxTokens": -5}}}, "memory.maxTokens"),
    ({"contextCompanion": {"context": {"exclude": "not-a-list"}}}, "context.exclude"),
    ({"contextCompanion": {"noSuchSetting": True}}, "noSuchSetting"),
    ({"contextCompanion": ["a", "list"]}, "must be an object"),
    ("a plain string", "must be an object"),
    ({"contextCompanion": {"prompt": {"sections": {"notASection": False}}}}, "notASection"),
]


def test_invalid_did_change_configuration_payloads_keep_the_last_good_settings(spawn, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = spawn([ws], {**NO_ENV, "systemPrompt": "Initial prompt."})
    assert proc.command(GET, {})["text"] == "Initial prompt."
    proc.notify(
        "workspace/didChangeConfiguration",
        {"settings": {"contextCompanion": {**NO_ENV, "systemPrompt": "Good prompt."}}},
    )
    assert wait_text(proc, "Good prompt.") == "Good prompt."
    for i, (payload, needle) in enumerate(BAD_PAYLOADS, start=1):
        proc.notify("workspace/didChangeConfiguration", {"settings": payload})
        messages = proc.wait_notification("window/showMessage", i, timeout=10)
        assert len(messages) == i, messages
        assert needle in messages[-1]["message"], (payload, messages[-1])
        assert messages[-1]["type"] == 1  # Error
        assert proc.command(GET, {})["text"] == "Good prompt.", payload
    assert proc.alive()


def test_did_change_configuration_without_settings_keeps_the_settings_in_force(spawn, tmp_path):
    """A client that cannot answer workspace/configuration and sends ``{"settings": null}`` (the
    LSP's "something changed" with nothing attached) must not wipe the initializationOptions."""
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = spawn([ws], {**NO_ENV, "systemPrompt": "Prompt from initializationOptions."})
    assert proc.command(GET, {})["text"] == "Prompt from initializationOptions."
    proc.notify("workspace/didChangeConfiguration", {"settings": None})
    assert proc.command(GET, {})["text"] == "Prompt from initializationOptions."


def test_invalid_pulled_configuration_keeps_the_last_good_settings(spawn, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    proc = spawn([ws], None, configuration={**NO_ENV, "systemPrompt": "Pulled good prompt."})
    assert wait_text(proc, "Pulled good prompt.") == "Pulled good prompt."
    proc.configuration["contextCompanion"] = {"memory": {"debounceMs": "soon"}}
    proc.notify("workspace/didChangeConfiguration", {"settings": None})
    messages = proc.wait_notification("window/showMessage", 1, timeout=10)
    assert "memory.debounceMs" in messages[-1]["message"]
    assert proc.command(GET, {})["text"] == "Pulled good prompt."


# ----------------------------------------------------------------------------- tokenizer


def _ranks_file(path: Path, encoding) -> Path:
    lines = [f"{base64.b64encode(tok).decode()} {rank}" for tok, rank in encoding._mergeable_ranks.items()]
    path.write_text("\n".join(lines) + "\n", encoding="ascii")
    return path


def test_tokenizer_unavailable_flags_estimated_counts_with_a_reason(spawn, tmp_path, tiny_encoding):
    ws = tmp_path / "ws"
    write(ws / "AGENTS.md", "the theme of the thesis\n")
    empty_cache = tmp_path / "empty-tiktoken-cache"
    empty_cache.mkdir()
    # 1. No encoding anywhere (offline, empty cache): estimated, and why.
    proc = spawn([ws], NO_ENV, env={"TIKTOKEN_CACHE_DIR": str(empty_cache)})
    tokens = proc.command(GET, {})["tokens"]
    assert tokens["estimated"] is True and tokens["total"] > 0
    assert "o200k_base" in tokens["reason"] and "estimated" in tokens["reason"]
    started = proc.command("contextCompanion.startSession", {"sessionId": "s"})
    assert started["tokens"]["estimated"] is True and started["tokens"]["reason"]
    assert proc.command("contextCompanion.refreshMemory", {})["tokens"]["estimated"] is True
    assert os.listdir(empty_cache) == []  # nothing was downloaded into the cache

    # 2. A configured encoding file that is not a ranks file: estimated, the reason names the file.
    broken = write(tmp_path / "broken.tiktoken", "this is not a ranks file\n")
    proc2 = spawn(
        [ws],
        {**NO_ENV, "tokens": {"encodingFile": str(broken)}, "userValues": USER_FILE},
        env={"TIKTOKEN_CACHE_DIR": str(empty_cache)},
    )
    tokens2 = proc2.command(GET, {})["tokens"]
    assert tokens2["estimated"] is True and str(broken) in tokens2["reason"]

    # 3. The same server with a usable local file: exact counts, no reason.
    good = _ranks_file(tmp_path / "tiny.tiktoken", tiny_encoding)
    proc3 = spawn(
        [ws],
        {**NO_ENV, "tokens": {"encodingFile": str(good)}, "userValues": USER_FILE},
        env={"TIKTOKEN_CACHE_DIR": str(empty_cache)},
    )
    tokens3 = proc3.command(GET, {})["tokens"]
    assert tokens3["estimated"] is False and "reason" not in tokens3


def test_an_encoding_file_replaced_on_disk_is_read_again(spawn, tmp_path, tiny_encoding):
    """tiktoken's loader caches every file it reads under sha1(path) in TIKTOKEN_CACHE_DIR (or
    /tmp/data-gym-cache): the user's replaced ranks file must not be served from that copy."""
    ws = tmp_path / "ws"
    write(ws / "AGENTS.md", "the theme of the thesis is the theory\n" * 4)
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    ranks = _ranks_file(tmp_path / "mine.tiktoken", tiny_encoding)  # bytes plus merges
    settings = {**NO_ENV, "tokens": {"encodingFile": str(ranks)}, "userValues": USER_FILE}
    first = spawn([ws], settings, env={"TIKTOKEN_CACHE_DIR": str(cache)})
    merged = memory_files(first)["AGENTS.md"]["tokens"]
    first.stop()

    # The user swaps in a ranks file without merges: the same text is more tokens.
    ranks.write_text(
        "\n".join(f"{base64.b64encode(bytes([i])).decode()} {i}" for i in range(256)) + "\n", encoding="ascii"
    )
    second = spawn([ws], settings, env={"TIKTOKEN_CACHE_DIR": str(cache)})
    unmerged = memory_files(second)["AGENTS.md"]["tokens"]
    assert unmerged > merged, f"still {unmerged} tokens: the old ranks were used (cache now holds {os.listdir(cache)})"


# ----------------------------------------------------------------------------- the client goes away


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except FileNotFoundError:
        return 0


def _busy_workspace(root: Path) -> Path:
    ws = root / "ws"
    write(ws / "AGENTS.md", "memory\n")
    for i in range(40):
        d = ws / f"pkg{i}"
        d.mkdir(parents=True)
        for j in range(50):
            (d / f"m{j}.py").write_text("x = 1\n")
        (d / "AGENTS.md").write_text(f"pkg {i}\n")
    return ws


def _gone(pid: int) -> bool:
    """The process has exited (no /proc entry, or a zombie waiting for a parent that is not us)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_stdin_closed_mid_request_ends_the_server_cleanly(spawn, tmp_path, figures):
    ws = _busy_workspace(tmp_path)
    proc = spawn([ws], {"environment": {"placement": "systemInstruction"}})
    proc.command("contextCompanion.getCompressionPrompt", {})  # started and answering
    pid = proc.proc.pid
    assert _threads(pid) >= 2  # the event loop plus the watcher's threads
    proc.command_async("contextCompanion.refreshMemory", {})
    proc.command_async("contextCompanion.getSystemInstruction", {"sessionId": "gone"})
    t0 = time.monotonic()
    proc.close_stdin()
    try:
        code = proc.proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the server is still running 10 s after its stdin closed ({_threads(pid)} threads)")
    figures["stdin closed mid-request → process exited (s)"] = round(time.monotonic() - t0, 2)
    assert code == 0, proc.stderr_text()[-3000:]
    assert not os.path.exists(f"/proc/{pid}")
    assert "Traceback" not in proc.stderr_text(), proc.stderr_text()[-3000:]


EDITOR = """
import json, os, subprocess, sys, time
server = subprocess.Popen(sys.argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=open(sys.argv[1], "wb"))
def send(msg):
    body = json.dumps({"jsonrpc": "2.0", **msg}).encode()
    server.stdin.write(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
    server.stdin.flush()
def receive():
    length = 0
    while True:
        line = server.stdout.readline().strip()
        if not line:
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(server.stdout.read(length))
ws = os.environ["CC_TEST_WS"]
send({"id": 1, "method": "initialize", "params": {"processId": None, "capabilities": {},
      "rootUri": "file://" + ws, "workspaceFolders": [{"uri": "file://" + ws, "name": "ws"}]}})
while receive().get("id") != 1:
    pass
send({"method": "initialized", "params": {}})
send({"id": 2, "method": "workspace/executeCommand", "params": {"command": "contextCompanion.getCompressionPrompt", "arguments": []}})
while receive().get("id") != 2:
    pass
send({"id": 3, "method": "workspace/executeCommand", "params": {"command": "contextCompanion.refreshMemory", "arguments": [{}]}})
send({"id": 4, "method": "workspace/executeCommand", "params": {"command": "contextCompanion.getSystemInstruction", "arguments": [{}]}})
print(server.pid, flush=True)
time.sleep(600)
"""


def test_editor_killed_mid_request_leaves_no_server_behind(tmp_path, figures):
    """The editor process dies (SIGKILL): the server sees EOF on stdin and a broken stdout."""
    from lsp_pipe_client import SERVER, server_env

    ws = _busy_workspace(tmp_path)
    (tmp_path / "home").mkdir(exist_ok=True)
    script = write(tmp_path / "editor.py", EDITOR)
    env = server_env(tmp_path / "home", tmp_path / "config", {"CC_TEST_WS": str(ws)})
    editor = subprocess.Popen(
        [*SERVER[:1], str(script), str(tmp_path / "server.stderr"), *SERVER], stdout=subprocess.PIPE, env=env, text=True
    )
    try:
        assert editor.stdout is not None
        pid = int(editor.stdout.readline())
        assert not _gone(pid)
        t0 = time.monotonic()
        editor.kill()
        editor.wait(5)
        deadline = time.monotonic() + 10
        while not _gone(pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        figures["editor killed mid-request → server exited (s)"] = round(time.monotonic() - t0, 2)
        assert _gone(pid), f"server {pid} still running 10 s after its editor died ({_threads(pid)} threads)"
    finally:
        if editor.poll() is None:
            editor.kill()
    log = (tmp_path / "server.stderr").read_text(encoding="utf-8", errors="replace")
    assert "Traceback" not in log, log[-3000:]
