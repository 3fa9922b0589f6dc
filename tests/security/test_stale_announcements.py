"""Announcements of servers that are gone (Gemini CLI discovery files, Claude Code lock files) are
removed by the next server, and nothing else is: not a live server's file, not another program's,
not another user's, never through a symlink, never outside the two directories."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from context_companion.bridges.announcements import remove_stale_claude, remove_stale_gemini
from context_companion.bridges.claude_code import LockFile
from context_companion.bridges.gemini.discovery import IdeDiscoveryFile, IdeInfo
from context_companion.discovery import owner_stamp, process_start_time

NEOVIM = IdeInfo("neovim", "Neovim")


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _write(path: Path, payload: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.write_text(json.dumps(payload))
    path.chmod(0o600)
    return path


def _gemini(directory: Path, port: int, stamp: dict[str, Any] | None) -> Path:
    payload: dict[str, Any] = {"port": port, "workspacePath": "/ws", "authToken": "t", "ideInfo": NEOVIM.to_wire()}
    if stamp is not None:
        payload["contextCompanion"] = stamp
    return _write(directory / f"gemini-ide-server-{os.getppid()}-{port}.json", payload)


def test_what_our_servers_write_carries_the_stamp(tmp_path):
    gemini = IdeDiscoveryFile(os.getppid(), 4100, "tok", NEOVIM, tmp_path / "gemini" / "ide").write([tmp_path])
    lock = LockFile(4101, "tok", "Context Companion", tmp_path / "claude" / "ide").write([str(tmp_path)])
    me = {"serverPid": os.getpid(), "serverStartTime": process_start_time(os.getpid())}
    assert json.loads(gemini.read_text())["contextCompanion"] == me
    assert json.loads(lock.read_text())["contextCompanion"] == me
    assert me["serverStartTime"] is not None  # Linux: /proc is read
    # A live server's files stay.
    assert remove_stale_gemini(gemini.parent) == [] and remove_stale_claude(lock.parent) == []
    assert gemini.exists() and lock.exists()


def test_only_stamped_files_of_gone_servers_are_removed(tmp_path):
    d = tmp_path / "gemini" / "ide"
    dead = _dead_pid()
    me = owner_stamp()
    gone = _gemini(d, 1, {"serverPid": dead, "serverStartTime": 12345})
    gone_without_start = _gemini(d, 2, {"serverPid": dead})
    reused = _gemini(d, 3, {"serverPid": os.getpid(), "serverStartTime": me["serverStartTime"] - 1})
    live = _gemini(d, 4, me)
    live_unknown_start = _gemini(d, 5, {"serverPid": os.getpid(), "serverStartTime": None})
    other_companion = _gemini(d, 6, None)  # another IDE companion's file (no stamp): never ours to judge
    bad_stamps = [
        _gemini(d, 7, {"serverPid": "123"}),
        _gemini(d, 8, {"serverPid": True}),
        _gemini(d, 9, {"serverPid": 0}),
        _write(d / f"gemini-ide-server-{os.getppid()}-10.json", {"contextCompanion": []}),
    ]
    not_json = d / f"gemini-ide-server-{os.getppid()}-11.json"
    not_json.write_text('{"contextCompanion": {"serverPid": ')
    other_names = [
        _write(d / f"gemini-ide-server-{dead}.json", {"contextCompanion": {"serverPid": dead}}),  # legacy name
        _write(d / ".gemini-ide-server-1-2.abc.tmp", {"contextCompanion": {"serverPid": dead}}),
        _write(d / "notes.json", {"contextCompanion": {"serverPid": dead}}),
    ]

    removed = remove_stale_gemini(d)

    assert sorted(removed) == sorted([gone, gone_without_start, reused])
    for path in (gone, gone_without_start, reused):
        assert not path.exists()
    for path in (live, live_unknown_start, other_companion, *bad_stamps, not_json, *other_names):
        assert path.exists(), path


def test_symlinks_fifos_and_big_files_are_never_followed_read_or_removed(tmp_path):
    d = tmp_path / "gemini" / "ide"
    outside = tmp_path / "outside"
    target = _gemini(outside, 1, {"serverPid": _dead_pid()})
    d.mkdir(parents=True, mode=0o700)
    link = d / f"gemini-ide-server-{os.getppid()}-2.json"
    link.symlink_to(target)
    fifo = d / f"gemini-ide-server-{os.getppid()}-3.json"
    os.mkfifo(fifo, 0o600)  # opening it for reading must not hang
    big = _gemini(d, 4, {"serverPid": _dead_pid(), "pad": "x" * 100_000})

    assert remove_stale_gemini(d) == []
    assert link.is_symlink() and target.exists() and fifo.exists() and big.exists()


def test_a_symlinked_directory_is_not_swept(tmp_path):
    real = tmp_path / "elsewhere"
    stale = _gemini(real, 1, {"serverPid": _dead_pid()})
    (tmp_path / "gemini").mkdir()
    (tmp_path / "gemini" / "ide").symlink_to(real)
    assert remove_stale_gemini(tmp_path / "gemini" / "ide") == []
    assert stale.exists()


def test_files_and_directories_of_another_user_are_left_alone(tmp_path):
    assert os.getuid() == 0, "creating a file owned by another user needs root (the test machines run as root)"
    d = tmp_path / "gemini" / "ide"
    theirs = _gemini(d, 1, {"serverPid": _dead_pid()})
    os.chown(theirs, 4242, 4242)
    assert remove_stale_gemini(d) == []
    assert theirs.exists()
    # A directory of another user (a shared temp dir): nothing in it is touched, even our own file.
    other = tmp_path / "shared" / "ide"
    mine = _gemini(other, 2, {"serverPid": _dead_pid()})
    os.chown(other, 4242, 4242)
    assert remove_stale_gemini(other) == []
    assert mine.exists()


def test_claude_lock_files_of_gone_servers_are_removed_in_the_config_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "claude"))
    d = tmp_path / "claude" / "ide"
    dead = _dead_pid()
    gone = _write(
        d / "40001.lock", {"pid": dead, "ideName": "Context Companion", "contextCompanion": {"serverPid": dead}}
    )
    live = LockFile(40002, "tok", "Context Companion").write([str(tmp_path)])
    other_ide = _write(d / "40003.lock", {"pid": dead, "ideName": "Neovim", "transport": "ws"})  # claudecode.nvim's
    assert live.parent == d
    assert remove_stale_claude() == [gone]
    assert not gone.exists() and live.exists() and other_ide.exists()
