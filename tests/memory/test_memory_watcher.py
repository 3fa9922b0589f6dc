"""MemoryWatcher with real saves: in place, atomic rename, delete, create, vim backups; debounce;
polling (forced and as the fallback when the native observer cannot start)."""

from __future__ import annotations

import contextlib
import logging
import os
import queue
import shutil
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from context_companion.memory import MemoryWatcher
from inotify_probe import watch_descriptors, watched_dirs

WAIT = 10.0  # generous upper bound for an event to arrive; never asserted as a duration


class Recorder:
    def __init__(self) -> None:
        self.batches: queue.Queue[set[str]] = queue.Queue()

    def __call__(self, paths: set[str]) -> None:
        self.batches.put(set(paths))

    def next(self, timeout: float = WAIT) -> set[str]:
        return self.batches.get(timeout=timeout)

    def until(self, path: Path, timeout: float = WAIT) -> set[str]:
        """Batches until one holds ``path``; returns the union seen."""
        seen: set[str] = set()
        while str(path) not in seen:
            seen |= self.next(timeout)
        return seen


@contextlib.contextmanager
def watching(store, rec: Recorder, **kwargs) -> Iterator[MemoryWatcher]:
    """A started watcher over the store's recursive and flat roots, stopped afterwards."""
    w = MemoryWatcher(
        store.watch_roots(), rec, is_relevant=store.is_relevant_path, flat_roots=store.flat_watch_roots(), **kwargs
    )
    w.start()
    try:
        yield w
    finally:
        w.stop()


@pytest.fixture
def watched(tmp_path, tree, make_store):
    """A store over a small workspace and a running watcher feeding a recorder."""
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "one", "src/AGENTS.md": "src", "src/app.py": "x"})
    store = make_store(ws)
    rec = Recorder()
    watchers: list[MemoryWatcher] = []

    def start(**kwargs) -> MemoryWatcher:
        w = MemoryWatcher(store.watch_roots(), rec, is_relevant=store.is_relevant_path, **kwargs)
        w.start()
        watchers.append(w)
        return w

    yield ws, store, rec, start
    for w in watchers:
        w.stop()


def test_write_in_place(watched):
    ws, store, rec, start = watched
    w = start(debounce_ms=50)
    assert w.mode == "inotify"
    (ws / "AGENTS.md").write_text("two")
    rec.until(ws / "AGENTS.md")
    assert store.apply_changes([ws / "AGENTS.md"]).changed_files == ("AGENTS.md",)
    assert "two" in store.compose([]).text


def test_atomic_save_by_rename_reports_the_target(watched):
    ws, store, rec, start = watched
    start(debounce_ms=50)
    tmp = ws / ".AGENTS.md.tmp-123"
    tmp.write_text("atomic")
    os.replace(tmp, ws / "AGENTS.md")
    seen = rec.until(ws / "AGENTS.md")
    assert str(tmp) not in seen  # the temp file is not a memory file
    store.apply_changes(seen)
    assert "atomic" in store.compose([]).text


def test_delete_and_create(watched):
    ws, store, rec, start = watched
    start(debounce_ms=50)
    (ws / "src/AGENTS.md").unlink()
    rec.until(ws / "src/AGENTS.md")
    (ws / "src/CLAUDE.md").write_text("created")
    seen = rec.until(ws / "src/CLAUDE.md")
    summary = store.apply_changes(seen | {str(ws / "src/AGENTS.md")})
    assert set(summary.changed_files) == {"src/AGENTS.md", "src/CLAUDE.md"}
    assert "created" in store.compose([ws / "src/app.py"]).text


def test_vim_style_backup_rename(watched):
    ws, store, rec, start = watched
    start(debounce_ms=50)
    doc = ws / "AGENTS.md"
    backup = ws / "AGENTS.md~"
    os.rename(doc, backup)
    doc.write_text("saved by vim")
    backup.unlink()
    seen = rec.until(doc)
    assert str(backup) not in seen
    store.apply_changes(seen)
    assert "saved by vim" in store.compose([]).text


def test_debounce_coalesces_a_burst_into_one_callback(watched):
    ws, _store, rec, start = watched
    start(debounce_ms=300)
    for i in range(20):
        (ws / "AGENTS.md").write_text(f"burst {i}")
        (ws / "src/AGENTS.md").write_text(f"burst {i}")
    batch = rec.next()
    assert batch == {str(ws / "AGENTS.md"), str(ws / "src/AGENTS.md")}
    with pytest.raises(queue.Empty):
        rec.next(timeout=1.0)


def test_every_event_restarts_the_quiet_window(watched):
    """Saves keep coming for longer than the window, never with a gap as long as it: still one batch
    (a timer started by the first event would report mid-burst). Gaps are 1/20 of the window."""
    ws, _store, rec, start = watched
    start(debounce_ms=1000)
    for i in range(30):  # ~1.5 s of saves, 50 ms apart
        (ws / "AGENTS.md").write_text(f"burst {i}")
        time.sleep(0.05)
    (ws / "src/AGENTS.md").write_text("last of the burst")
    assert rec.next() == {str(ws / "AGENTS.md"), str(ws / "src/AGENTS.md")}
    with pytest.raises(queue.Empty):
        rec.next(timeout=1.5)


def test_irrelevant_changes_are_filtered(watched, tree):
    ws, _store, rec, start = watched
    tree(ws, {".gitignore": "node_modules/\n", "node_modules/": ""})
    _store.apply_changes([ws / ".gitignore"])
    start(debounce_ms=50)
    (ws / "src/app.py").write_text("changed code")
    (ws / "node_modules/AGENTS.md").write_text("ignored")
    (ws / "notes.txt").write_text("notes")
    (ws / "AGENTS.md").read_text()  # a read: no event at all
    (ws / "GEMINI.md").write_text("relevant")
    seen = rec.until(ws / "GEMINI.md")
    assert seen == {str(ws / "GEMINI.md")}


def test_forced_polling_sees_changes(watched):
    ws, store, rec, start = watched
    w = start(debounce_ms=50, force_polling=True, poll_interval=0.2)
    assert w.mode == "polling"
    (ws / "src/AGENTS.md").write_text("polled change, longer than before")
    rec.until(ws / "src/AGENTS.md")
    (ws / "src/deeper").mkdir()
    (ws / "src/deeper/AGENTS.md").write_text("new deep")
    seen = rec.until(ws / "src/deeper/AGENTS.md")
    store.apply_changes(seen)
    assert "new deep" in store.compose([ws / "src/deeper/x"]).text


def test_falls_back_to_polling_when_the_native_observer_fails(watched, caplog):
    ws, _store, rec, start = watched

    def exhausted():
        from watchdog.observers.inotify import InotifyObserver

        class Exhausted(InotifyObserver):
            def start(self) -> None:
                raise OSError(28, "inotify watch limit reached")

        return Exhausted()

    with caplog.at_level(logging.WARNING, logger="context_companion.memory.watcher"):
        w = start(debounce_ms=50, poll_interval=0.2, observer_factory=exhausted)
    assert w.mode == "polling"
    assert any("falling back to polling" in r.getMessage() and r.levelno == logging.WARNING for r in caplog.records)
    (ws / "AGENTS.md").write_text("still seen")
    rec.until(ws / "AGENTS.md")


def test_polling_lists_only_relevant_entries_and_skips_symlinked_dirs(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {".gitignore": "node_modules/\n", "node_modules/a.js": "", "src/AGENTS.md": "x", "src/a.py": ""})
    os.symlink(ws, ws / "src/loop")
    store = make_store(ws)
    w = MemoryWatcher([ws], lambda paths: None, is_relevant=store.is_relevant_path)
    assert sorted(e.name for e in w._listdir(str(ws))) == [".gitignore", "src"]
    assert sorted(e.name for e in w._listdir(str(ws / "src"))) == ["AGENTS.md"]


def test_stop_is_idempotent_and_restart_works(watched):
    ws, _store, rec, start = watched
    w = start(debounce_ms=50)
    w.stop()
    w.stop()
    assert w.mode == "stopped"
    w.start()
    assert w.mode == "inotify"
    (ws / "AGENTS.md").write_text("after restart")
    rec.until(ws / "AGENTS.md")


def test_callback_errors_do_not_stop_the_watcher(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {"AGENTS.md": "a"})
    store = make_store(ws)
    calls: queue.Queue[set[str]] = queue.Queue()

    def flaky(paths: set[str]) -> None:
        calls.put(paths)
        if calls.qsize() == 1:
            raise RuntimeError("boom")

    w = MemoryWatcher([ws], flaky, is_relevant=store.is_relevant_path, debounce_ms=30)
    w.start()
    try:
        (ws / "AGENTS.md").write_text("b")
        calls.get(timeout=WAIT)
        (ws / "GEMINI.md").write_text("c")
        while str(ws / "GEMINI.md") not in calls.get(timeout=WAIT):
            pass
    finally:
        w.stop()


def test_reschedule_watches_a_new_root(tmp_path, tree, make_store, global_dir):
    ws = tmp_path / "ws"
    ws.mkdir()
    store = make_store(ws)
    rec = Recorder()
    with watching(store, rec, debounce_ms=30) as w:
        global_dir.mkdir(parents=True)
        seen = rec.until(global_dir.parent)  # ~/.config appeared: seen through the flat watch of home
        assert store.apply_changes(seen).watch_changed
        assert global_dir in store.watch_roots()
        w.reschedule(store.watch_roots(), store.flat_watch_roots())
        (global_dir / "AGENTS.md").write_text("global")
        rec.until(global_dir / "AGENTS.md")


def test_polling_reports_a_directory_made_just_before_a_new_root_is_watched(tmp_path, make_store, global_dir, helpers):
    """A rebuild keeps the folder's polling emitter: a fresh one would take the new directory as
    its baseline and never report it (the server's own ~/.claude lock file adds a root at start)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    store = make_store(ws)
    rec = Recorder()
    with watching(store, rec, debounce_ms=30, force_polling=True, poll_interval=1.0) as w:
        global_dir.mkdir(parents=True)
        (ws / "api").mkdir()
        (ws / "api/AGENTS.md").write_text("api rules")
        assert global_dir in store.watch_roots()
        w.reschedule(store.watch_roots(), store.flat_watch_roots())  # before the folder's next poll
        store.apply_changes(rec.until(ws / "api/AGENTS.md"))
    assert helpers.included(store.compose([ws / "api/handler.py"])) == ["api/AGENTS.md"]


def test_editing_the_repository_root_gitignore_removes_a_nested_file(tmp_path, tree, make_store, helpers):
    repo = tmp_path / "repo"
    tree(repo, {".git/": "", "app/AGENTS.md": "app", "app/gen/AGENTS.md": "generated", "app/gen/x.py": ""})
    ws = repo / "app"
    store = make_store(ws)
    rec = Recorder()
    with watching(store, rec, debounce_ms=50):
        (repo / ".gitignore").write_text("gen/\n")
        seen = rec.until(repo / ".gitignore")
    store.apply_changes(seen)
    assert helpers.included(store.compose([ws / "gen/x.py"])) == ["AGENTS.md"]


# ----------------------------------------------------------------------------- ignored trees


IGNORING_REPO = {
    ".git/info/exclude": "",
    ".git/objects/ab/cdef": "",
    ".git/refs/heads/main": "",
    ".gitignore": "node_modules/\nbuild/\n",
    "AGENTS.md": "root",
    "src/app/AGENTS.md": "app",
    "src/app/main.py": "",
    "node_modules/left-pad/lib/index.js": "",
    "node_modules/left-pad/node_modules/dep/index.js": "",
    "build/out/x.o": "",
}


def pruned(store, rec: Recorder, **kwargs):
    return watching(store, rec, descend=store.descends_into, debounce_ms=30, **kwargs)


def test_ignored_trees_and_git_internals_hold_no_watch(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, IGNORING_REPO)
    store = make_store(ws)
    with watching(store, Recorder()):
        everything = watched_dirs(ws)
    with pruned(store, Recorder()) as w:
        kept = watched_dirs(ws)
        assert w.mode == "inotify"
    assert len(everything) == 16  # every directory, before: node_modules (5), build (2), .git's (6), ...
    assert kept == {".", "src", "src/app", ".git", ".git/info"}


def test_a_new_directory_is_watched_unless_it_is_ignored(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, IGNORING_REPO)
    store = make_store(ws)
    rec = Recorder()
    with pruned(store, rec):
        before = watched_dirs(ws)
        (ws / "node_modules/new-pkg/lib").mkdir(parents=True)  # npm install: no watch, no walk
        (ws / "node_modules/new-pkg/lib/AGENTS.md").write_text("ignored")
        (ws / "src/feature/deep").mkdir(parents=True)
        (ws / "src/feature/deep/AGENTS.md").write_text("new")
        seen = rec.until(ws / "src/feature/deep/AGENTS.md")
        assert watched_dirs(ws) - before == {"src/feature", "src/feature/deep"}
        (ws / "src/feature/deep/AGENTS.md").write_text("edited in a directory created after the start")
        rec.until(ws / "src/feature/deep/AGENTS.md")
        (ws / ".git/info/exclude").write_text("src/feature/\n")
        seen |= rec.until(ws / ".git/info/exclude")
    assert not any("node_modules" in p for p in seen)


def test_a_directory_the_ignore_rules_give_back_is_watched_after_reschedule(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, IGNORING_REPO)
    store = make_store(ws)
    rec = Recorder()
    with pruned(store, rec) as w:
        kept = watch_descriptors(ws)
        (ws / ".gitignore").write_text("node_modules/\n")  # build/ is part of the project again
        change = store.apply_changes(rec.until(ws / ".gitignore"))
        assert change.watch_changed
        w.reschedule(store.watch_roots(), store.flat_watch_roots())
        now = watch_descriptors(ws)
        assert set(now) - set(kept) == {"build", "build/out"}
        assert {d: now[d] for d in kept} == kept  # brought in line in place: no directory was unwatched
        (ws / "build/out/AGENTS.md").write_text("build notes")
        store.apply_changes(rec.until(ws / "build/out/AGENTS.md"))
    assert "build notes" in store.compose([ws / "build/out/x.o"]).text


def test_a_new_root_leaves_the_folders_inotify_watches_in_place(tmp_path, tree, make_store, global_dir):
    ws = tmp_path / "ws"
    tree(ws, IGNORING_REPO)
    store = make_store(ws)
    rec = Recorder()
    with pruned(store, rec) as w:
        kept = watch_descriptors(ws)
        global_dir.mkdir(parents=True)
        assert store.apply_changes(rec.until(global_dir.parent)).watch_changed
        w.reschedule(store.watch_roots(), store.flat_watch_roots())
        assert watch_descriptors(ws) == kept  # not one directory of the folder unwatched meanwhile
        (global_dir / "AGENTS.md").write_text("global")
        rec.until(global_dir / "AGENTS.md")


def test_a_root_deleted_and_made_again_before_a_rebuild_is_watched_afresh(tmp_path, make_store, global_dir):
    ws = tmp_path / "ws"
    ws.mkdir()
    global_dir.mkdir(parents=True)
    store = make_store(ws)
    rec = Recorder()
    with pruned(store, rec) as w:
        assert global_dir in store.watch_roots()
        shutil.rmtree(global_dir)
        global_dir.mkdir()
        rec.until(global_dir)
        w.reschedule(store.watch_roots(), store.flat_watch_roots())  # the same roots
        (global_dir / "AGENTS.md").write_text("global, in the new directory")
        rec.until(global_dir / "AGENTS.md")


def test_only_ignore_files_and_markers_ask_for_a_new_watch(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, IGNORING_REPO)
    store = make_store(ws)
    (ws / "src/app/AGENTS.md").write_text("edited")
    (ws / "src/other").mkdir()
    assert not store.apply_changes([ws / "src/app/AGENTS.md", ws / "src/other"]).watch_changed
    (ws / "src/.gitignore").write_text("*.tmp\n")
    assert store.apply_changes([ws / "src/.gitignore"]).watch_changed
    assert store.apply_changes([ws / ".git/info/exclude"]).watch_changed


def test_a_new_folder_with_memory_asks_for_no_new_watch(tmp_path, tree, make_store):
    """Its directories are watched already (the watcher added them when they appeared): rebuilding
    the watches walks the whole tree (seconds on 20,000 directories). A memory file reached through a
    symlink into an ignored tree still asks for one: nothing watches its directory yet."""
    ws = tmp_path / "ws"
    tree(ws, IGNORING_REPO)
    store = make_store(ws)
    tree(ws, {"src/feature/deep/AGENTS.md": "new", "src/feature/x.py": ""})
    assert not store.apply_changes([ws / "src/feature"]).watch_changed
    assert "new" in store.compose([ws / "src/feature/deep/x.py"]).text
    os.rename(ws / "src/feature", ws / "src/moved")
    assert not store.apply_changes([ws / "src/feature", ws / "src/moved"]).watch_changed
    tree(ws, {"build/out/AGENTS.md": "built"})
    os.symlink(ws / "build/out/AGENTS.md", ws / "src/CLAUDE.md")
    assert store.apply_changes([ws / "src/CLAUDE.md"]).watch_changed


def test_the_store_descends_into_visible_directories_only(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {**IGNORING_REPO, ".claude/rules/team/style.md": "x", "src/.venv/lib/x.py": ""})
    (ws / "src/.gitignore").write_text(".venv/\n")
    store = make_store(ws)
    visible = ["src", "src/app", ".claude", ".claude/rules", ".claude/rules/team", ".git", ".git/info"]
    hidden = [".git/objects", "node_modules", "node_modules/left-pad", "build", "src/.venv"]
    assert [rel for rel in visible + hidden if store.descends_into(ws / rel)] == visible
    assert store.descends_into(tmp_path / "elsewhere")  # outside the folders (global dirs): everything


def test_a_folder_inside_another_folders_ignored_tree_is_watched_in_full(tmp_path, tree, make_store):
    ws = tmp_path / "ws"
    tree(ws, {**IGNORING_REPO, "build/tool/src/AGENTS.md": "tool"})
    store = make_store([ws, ws / "build/tool"])
    assert not store.descends_into(ws / "build/out")
    assert store.descends_into(ws / "build/tool/src")
    rec = Recorder()
    with pruned(store, rec):
        (ws / "build/tool/src/AGENTS.md").write_text("edited")
        rec.until(ws / "build/tool/src/AGENTS.md")


def test_files_the_memory_reads_in_ignored_trees_stay_watched(tree, make_store, home, global_dir):
    """A memory file that is a symlink into an ignored directory, and the global memory directory
    inside a folder whose rules hide it (your home opened as a folder)."""
    tree(home, {".git/": "", ".gitignore": ".config/\nshared/\n", "shared/AGENTS.md": "linked v1", "shared/x/y.js": ""})
    tree(global_dir, {"AGENTS.md": "global v1"})
    os.symlink(home / "shared/AGENTS.md", home / "CLAUDE.md")
    store = make_store(home)
    rec = Recorder()
    with pruned(store, rec):
        watched = watched_dirs(home)
        assert {"shared", ".config", ".config/context-companion"} <= watched
        assert "shared/x" not in watched  # the rest of the ignored tree stays unwatched
        for path, text in ((home / "shared/AGENTS.md", "linked v2"), (global_dir / "AGENTS.md", "global v2")):
            path.write_text(text)
            store.apply_changes(rec.until(path))
    text = store.compose([]).text
    assert "linked v2" in text and "global v2" in text
