"""Calls that mean something else elsewhere (docs/reliability.md, "Platforms"), with the other platform
simulated on Linux: on Windows ``os.kill(pid, 0)`` ends the process (TerminateProcess), so no code path that
asks whether a process lives may call it there; psutil answers instead (a dependency on Windows only). Where
the system has no user ids (Windows: no ``os.geteuid``, ``st_uid`` always 0), the ownership rule is not
applied and owner-only modes are not asked for: nothing breaks, and that choice is documented."""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest
from context_companion import discovery, ownership, procs


class _FakeProcess:
    def __init__(self, pid: int | None = None) -> None:
        if pid is not None and pid not in _FakePsutil.alive:
            raise RuntimeError("no such process")  # psutil.NoSuchProcess
        self.pid = os.getpid() if pid is None else pid

    def username(self) -> str:
        return _FakePsutil.alive[self.pid]


class _FakePsutil(types.ModuleType):
    alive: ClassVar[dict[int, str]] = {}

    def __init__(self) -> None:
        super().__init__("psutil")
        self.Process = _FakeProcess

    def pid_exists(self, pid: int) -> bool:
        return pid in self.alive


@pytest.fixture
def windows(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int]]:
    """Windows, as far as our code can tell; every ``os.kill`` call recorded (and not made)."""
    kills: list[tuple[int, int]] = []
    monkeypatch.setattr(os, "kill", lambda pid, sig: kills.append((pid, sig)))
    monkeypatch.setattr(sys, "platform", "win32")
    return kills


def test_no_process_check_calls_os_kill_on_windows(
    windows: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    me, other = os.getpid(), 4242
    monkeypatch.setattr(_FakePsutil, "alive", {me: "HOST\\me", other: "HOST\\someone"})
    monkeypatch.setitem(sys.modules, "psutil", _FakePsutil())
    assert procs.pid_alive(me) and procs.pid_alive(other) and not procs.pid_alive(999_999)
    assert procs.is_own_process(me, None) and not procs.is_own_process(other, None)
    assert not procs.is_own_process(999_999, None)
    # The server's discovery: finding servers, judging announcements, removing stale files.
    run = tmp_path / "run"
    mine = discovery.DiscoveryFile(7001, "tcp", "t", directory=run, pid=me)
    mine.write([tmp_path])
    discovery.DiscoveryFile(7002, "tcp", "t", directory=run, pid=999_999).write([tmp_path])
    assert [e.port for e in discovery.find(tmp_path, run)] == [7001]
    assert [p.name for p in discovery.remove_stale(run)] == ["server-999999-7002.json"]
    assert discovery._stamp_is_dead({"contextCompanion": {"serverPid": 999_999}})
    assert windows == []


def test_without_psutil_on_windows_nothing_is_removed_and_it_is_said_once(
    windows: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)  # import psutil raises ImportError
    monkeypatch.setattr(procs, "_told_no_psutil", False)
    run = tmp_path / "run"
    discovery.DiscoveryFile(7002, "tcp", "t", directory=run, pid=999_999).write([tmp_path])
    assert procs.pid_alive(999_999) and procs.is_own_process(999_999, None)  # cannot tell: kept, token decides
    assert discovery.remove_stale(run) == []
    said = [r.getMessage() for r in caplog.records if "psutil is missing" in r.getMessage()]
    assert len(said) == 1
    assert windows == []


def test_on_posix_signal_zero_still_asks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard is no blanket: on Linux (and macOS) ``os.kill(pid, 0)`` is the check, and it is made."""
    calls: list[tuple[int, int]] = []
    real = os.kill

    def record(pid: int, sig: int) -> None:
        calls.append((pid, sig))
        real(pid, sig)

    monkeypatch.setattr(os, "kill", record)
    assert procs.pid_alive(os.getpid())
    assert calls == [(os.getpid(), 0)]


def test_without_user_ids_ownership_is_not_judged(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Windows has no ``os.geteuid`` and Python's ``st_uid`` is 0 there: the rule is not applied (a marker and
    memory files are taken whoever owns them), private files need no owner-only mode, and nothing raises."""
    monkeypatch.setattr(ownership, "MY_UID", None)
    root = tmp_path / "shared"
    (root / ".git").mkdir(parents=True)
    if os.geteuid() == 0:
        os.chown(root / ".git", 54321, 54321)
    (root / "work").mkdir()
    found = ownership.find_marker(str(root / "work"), (".git",))
    assert found.root == str(root) and found.refused is None
    assert ownership.foreign_owner(os.stat(root / ".git")) is None
    loose = tmp_path / "loose.json"
    loose.write_text('{"a": 1}')
    loose.chmod(0o644)  # what st_mode says of every file on Windows
    assert procs.read_private_json(loose) == {"a": 1}


def test_ownership_trusts_this_user_and_root_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """The rule is "owned by neither me nor root", whoever runs it (here as uid 1000, simulated)."""
    monkeypatch.setattr(ownership, "MY_UID", 1000)

    def st(uid: int) -> Any:
        return os.stat_result((0o100644, 1, 1, 1, uid, uid, 0, 0, 0, 0))

    assert ownership.foreign_owner(st(1000)) is None
    assert ownership.foreign_owner(st(0)) is None
    assert ownership.foreign_owner(st(54321)) == 54321


def test_writing_files_where_folders_have_no_descriptors_says_so_in_one_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Windows has no ``dir_fd``: setup and ``addMemory`` write through a folder's descriptor, so there they
    refuse with one line (FileWriteError) instead of a traceback, and nothing is written."""
    from context_companion.errors import FileWriteError
    from context_companion.fileio import atomic_write_text

    monkeypatch.setattr(os, "supports_dir_fd", set())
    with pytest.raises(FileWriteError, match="writing files is supported on Linux and macOS only"):
        atomic_write_text(tmp_path / "AGENTS.md", "x\n", [str(tmp_path)])
    assert not (tmp_path / "AGENTS.md").exists()
