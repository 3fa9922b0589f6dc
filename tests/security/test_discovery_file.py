"""The discovery file gives the token only to the same user and cannot be turned against a file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys

from context_companion.discovery import DiscoveryFile, find, read, remove_stale


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_write_is_private_atomic_and_rewrites_in_place(tmp_path):
    d = tmp_path / "rt" / "context-companion"
    entry = DiscoveryFile(port=4000, transport="tcp", token="tok", directory=d)
    path = entry.write([])
    assert stat.S_IMODE(d.stat().st_mode) == 0o700 and stat.S_IMODE(path.stat().st_mode) == 0o600
    entry.write([tmp_path / "a", tmp_path / "b"])
    assert json.loads(path.read_text())["workspaceFolders"] == [str(tmp_path / "a"), str(tmp_path / "b")]
    assert sorted(p.name for p in d.iterdir()) == [path.name]
    entry.remove()
    entry.remove()
    assert not path.exists()


def test_a_symlink_planted_at_the_file_name_is_replaced_not_followed(tmp_path):
    d = tmp_path / "context-companion"
    d.mkdir(mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    entry = DiscoveryFile(port=4001, transport="ws", token="tok", directory=d)
    entry.path.symlink_to(victim)
    entry.write([])
    assert victim.read_text() == "keep me"
    assert not entry.path.is_symlink() and json.loads(entry.path.read_text())["token"] == "tok"


def test_a_loose_directory_is_tightened_and_a_symlinked_one_refused(tmp_path):
    d = tmp_path / "loose"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)
    DiscoveryFile(port=1, transport="tcp", token="t", directory=d).write([])
    assert stat.S_IMODE(d.stat().st_mode) == 0o700
    (tmp_path / "link").symlink_to(d)
    try:
        DiscoveryFile(port=2, transport="tcp", token="t", directory=tmp_path / "link").write([])
    except OSError as exc:
        assert "not a directory" in str(exc)
    else:
        raise AssertionError("wrote through a symlinked runtime directory")


def test_find_picks_the_live_server_whose_folders_hold_the_workspace(tmp_path):
    d = tmp_path / "context-companion"
    ws = tmp_path / "proj"
    (ws / "sub").mkdir(parents=True)
    mine = DiscoveryFile(port=5000, transport="tcp", token="mine", directory=d)
    mine.write([ws])
    DiscoveryFile(port=5001, transport="tcp", token="other", directory=d).write([tmp_path / "elsewhere"])
    DiscoveryFile(port=5002, transport="tcp", token="dead", directory=d, pid=_dead_pid()).write([ws])
    assert [e.token for e in find(ws / "sub", directory=d)] == ["mine"]
    assert find(ws, directory=d, transports=("ws",)) == []
    assert find(tmp_path / "nowhere", directory=d) == []
    # A file others could read (or write) is not trusted.
    os.chmod(mine.path, 0o644)
    assert read(mine.path) is None and find(ws, directory=d) == []


def test_remove_stale_only_removes_files_of_dead_processes(tmp_path):
    d = tmp_path / "context-companion"
    live = DiscoveryFile(port=6000, transport="tcp", token="t", directory=d)
    live.write([])
    dead = DiscoveryFile(port=6001, transport="tcp", token="t", directory=d, pid=_dead_pid())
    dead.write([])
    unrelated = d / "notes.json"
    unrelated.write_text("{}")
    assert remove_stale(d) == [dead.path]
    assert live.path.exists() and unrelated.exists()


def test_find_falls_back_to_a_server_that_has_no_client_yet(tmp_path):
    d = tmp_path / "context-companion"
    ws = tmp_path / "proj"
    ws.mkdir()
    fresh = DiscoveryFile(port=7000, transport="tcp", token="fresh", directory=d)
    fresh.write([])
    assert [e.token for e in find(ws, directory=d)] == ["fresh"]
    DiscoveryFile(port=7001, transport="tcp", token="mine", directory=d).write([ws])
    assert [e.token for e in find(ws, directory=d)] == ["mine", "fresh"]
