"""Nothing kept per message, and no folder too large (issue 26, part 1 and the folder walk).

* pygls kept a future per async command step, per generator-handled notification (``didOpen``,
  ``didChange``, ...) and per request of ours the client never answered (or answered with an
  error). The ``protocol_tables`` shim reports the sizes of those tables from inside the real
  server; the RSS over 30,000 messages of each kind is the benchmark's ``soak`` figure.
* A workspace folder such as ``/`` is walked on worker threads only (the ``watch_walk_gate`` shim
  holds the watcher's walk still), and no further than ``memory.maxWalkDirectories`` /
  ``memory.maxWalkFiles``, with a warning naming what was left out.
"""

from __future__ import annotations

from pathlib import Path

from inotify_probe import watched_dirs
from lsp_pipe_client import CHANGED, LspProcess
from server_faults import shim_env

NO_ENV = {"environment": {"placement": "off"}}


def tables(proc: LspProcess) -> dict[str, int]:
    return proc.request("test/tables", {})


def test_commands_and_document_notifications_leave_nothing_behind(spawn, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Growth workspace memory.\n", encoding="utf-8")
    proc = spawn([ws], NO_ENV, env=shim_env("protocol_tables"))
    proc.command("contextCompanion.getSystemInstruction", {})
    uri = (ws / "a.py").as_uri()
    for i in range(50):
        proc.open(uri, f"x = {i}\n", "python")
        for v in range(6):
            proc.change(uri, v + 2, [{"text": f"x = {i + v}\n"}])
        proc.cursor(uri, 0, 1)
        proc.close_document(uri)
    pending = [proc.command_async(name, {}) for name in ("contextCompanion.getSystemInstruction",) * 40]
    pending += [proc.command_async("contextCompanion.getTurnContext", {}) for _ in range(40)]
    pending += [proc.command_async("contextCompanion.getCompressionPrompt", {}) for _ in range(40)]
    for p in pending:
        assert p.wait()
    # 400 document notifications and 121 commands handled: pygls kept one future each (with the
    # command's answer). Now nothing is left once they are done.
    assert tables(proc) == {"requestFutures": 0, "resultTypes": 0, "progressTokens": 0}


def test_requests_the_client_never_answers_or_refuses_are_not_kept_for_good(spawn, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Growth workspace memory.\n", encoding="utf-8")
    proc = spawn([ws], NO_ENV, env=shim_env("protocol_tables"), configuration={})
    proc.command("contextCompanion.getSystemInstruction", {})
    pulls = len(proc.server_requests)

    # A client that answers workspace/configuration with an error: pygls forgot the request's
    # result type only for a result.
    proc.server_request_answers = "error"
    for _ in range(30):
        proc.notify("workspace/didChangeConfiguration", {"settings": None})
    assert proc.wait_for(lambda: len(proc.server_requests) >= pulls + 30)
    proc.command("contextCompanion.getCompressionPrompt", {})
    # The last pulls' handlers may still be taking their error when the client has recorded the
    # request: once they are done, nothing of them is left.
    empty = {"requestFutures": 0, "resultTypes": 0, "progressTokens": 0}
    assert proc.wait_for(lambda: tables(proc) == empty, 10), tables(proc)

    # A client that never answers: each pull waits; past 100 the oldest is given up.
    proc.server_request_answers = "never"
    for _ in range(130):
        proc.notify("workspace/didChangeConfiguration", {"settings": None})
    assert proc.wait_for(lambda: len(proc.server_requests) >= pulls + 160)
    proc.command("contextCompanion.getCompressionPrompt", {})
    kept = tables(proc)
    assert kept["resultTypes"] == 100, kept
    assert kept["requestFutures"] <= 200, kept  # each unanswered request and the handler waiting for it
    assert "no answer from the client" in proc.stderr_text()
    proc.server_request_answers = "result"
    assert proc.command("contextCompanion.getCompressionPrompt", {})["text"]


def test_a_folder_being_walked_never_stops_the_server_serving(spawn, tmp_path):
    """The watches of a new folder are set by a walk of it (watchdog walks in the thread that
    starts it): on the event loop, a large folder stopped every request until it was done. Held
    still here at a directory of the new folder, the walk must leave the loop serving; commands
    wait for the swap (and its watches), then answer with the new folder."""
    ws = tmp_path / "ws"
    big = tmp_path / "big"
    (big / "watch-gate").mkdir(parents=True)
    ws.mkdir()
    (ws / "AGENTS.md").write_text("First folder memory.\n", encoding="utf-8")
    (big / "AGENTS.md").write_text("Big folder memory.\n", encoding="utf-8")
    reached, opened = tmp_path / "gate-reached", tmp_path / "gate-open"
    env = shim_env("watch_walk_gate", CC_GATE_REACHED=str(reached), CC_GATE_OPEN=str(opened))
    try:
        proc = spawn([ws], NO_ENV, env=env)
        uri = (ws / "AGENTS.md").as_uri()
        proc.open(uri, "First folder memory.\n", "markdown")
        proc.command("contextCompanion.getSystemInstruction", {})
        proc.notify(
            "workspace/didChangeWorkspaceFolders",
            {"event": {"added": [{"uri": big.as_uri(), "name": "big"}], "removed": []}},
        )
        assert proc.wait_for(reached.exists), "the watcher never walked the new folder"
        instruction = proc.command_async("contextCompanion.getSystemInstruction", {})
        # Answered while the walk is held (before: no answer until the walk ended).
        proc.request("textDocument/hover", {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 1}})
        assert not instruction.done()  # a command waits for the swap and the new watches
    finally:
        opened.touch()
    assert "Big folder memory." in instruction.wait()["text"]
    (big / "AGENTS.md").write_text("Big folder memory, edited.\n", encoding="utf-8")
    [push] = proc.wait_notification(CHANGED)
    assert push["reason"] == "memoryChanged" and any("AGENTS.md" in f for f in push["changedFiles"])


def test_a_folder_larger_than_the_walk_caps_is_searched_near_its_top_and_the_cut_is_named(spawn, tmp_path):
    ws = tmp_path / "ws"
    for rel in ("a", "b", "c", "a/deep/deeper", "b/deep/deeper", "c/deep/deeper"):
        (ws / rel).mkdir(parents=True, exist_ok=True)
    (ws / "AGENTS.md").write_text("Root memory.\n", encoding="utf-8")
    for rel in ("a", "b/deep/deeper"):
        (ws / rel / "AGENTS.md").write_text(f"Memory of {rel}.\n", encoding="utf-8")
    settings = {**NO_ENV, "memory": {"maxWalkDirectories": 4}}
    proc = spawn([ws], settings)
    shown = proc.command("contextCompanion.showMemory", {})
    paths = [f["path"] for f in shown["files"]]
    # Breadth first: the root and a, b, c are listed (4 directories); nothing deeper.
    assert paths == ["AGENTS.md", "a/AGENTS.md"], paths
    [warning] = [w for w in shown["warnings"] if "maxWalkDirectories" in w]
    assert str(ws) in warning and "3 directories were not searched" in warning
    assert str(ws / "a" / "deep") in warning
    instruction = proc.command("contextCompanion.getSystemInstruction", {})
    assert warning in instruction["warnings"]
    assert "maxWalkDirectories" in proc.stderr_text()  # logged too
    # The watcher neither watches nor walks what the walk left out.
    assert watched_dirs(ws, proc.proc.pid) == {".", "a", "b", "c"}

    # Raised: everything is found again.
    proc.notify(
        "workspace/didChangeConfiguration", {"settings": {"contextCompanion": {"memory": {"maxWalkDirectories": 100}}}}
    )
    assert proc.wait_for(
        lambda: (
            "b/deep/deeper/AGENTS.md" in [f["path"] for f in proc.command("contextCompanion.showMemory", {})["files"]]
        )
    )
    assert not [w for w in proc.command("contextCompanion.showMemory", {})["warnings"] if "maxWalk" in w]


def test_the_walk_also_stops_at_max_walk_files(spawn, tmp_path):
    ws = tmp_path / "ws"
    (ws / "many").mkdir(parents=True)
    (ws / "later").mkdir()
    for i in range(30):
        (ws / "many" / f"f{i}.txt").write_text("x\n", encoding="utf-8")
    (ws / "later" / "AGENTS.md").write_text("Later memory.\n", encoding="utf-8")
    (ws / "later" / "sub").mkdir()
    (ws / "later" / "sub" / "AGENTS.md").write_text("Sub memory.\n", encoding="utf-8")
    proc = spawn([ws], {**NO_ENV, "memory": {"maxWalkFiles": 20}})
    shown = proc.command("contextCompanion.showMemory", {})
    assert [f["path"] for f in shown["files"]] == ["later/AGENTS.md"]
    [warning] = [w for w in shown["warnings"] if "maxWalkFiles" in w]
    assert "memory.maxWalkFiles (20 files)" in warning and str(ws / "later" / "sub") in warning


def test_the_root_folder_is_shown_as_slash_not_double_slash(spawn, tmp_path):
    """``/`` as a second workspace folder: its paths read ``/tmp/...``, not ``//tmp/...``, and
    its folder tree starts with ``/``. The walk caps keep it cheap."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "AGENTS.md").write_text("Root test memory.\n", encoding="utf-8")
    settings = {"environment": {"placement": "systemInstruction"}, "memory": {"maxWalkDirectories": 1}}
    proc = spawn([ws, Path("/")], settings)
    instruction = proc.command("contextCompanion.getSystemInstruction", {})
    lines = instruction["text"].splitlines()
    assert "/" in lines and not [line for line in lines if line.startswith("//")], instruction["text"][:3000]
    [warning] = [w for w in instruction["warnings"] if "maxWalkDirectories" in w]
    assert "workspace folder /:" in warning and "//" not in warning
    assert watched_dirs(Path("/etc"), proc.proc.pid) == set()  # left out: neither watched nor walked
