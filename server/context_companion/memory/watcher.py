"""Watching memory files with watchdog, debounced, with a polling fallback.

* Events kept: file created / modified / moved / deleted / closed-after-write, directory
  created / moved / deleted. Reads (opened, closed without writing) and directory
  "modified" events are filtered out by watchdog itself.
* A moved event counts for both ends: an editor's atomic save (temp file renamed onto the
  target) shows up as the target, a vim-style backup rename (``doc`` → ``doc~``, new ``doc``)
  as the document.
* Paths go through ``is_relevant`` (cheap; the store answers it) and are collected; when no
  new event came for ``debounce_ms`` (or at the latest after ``max(1 s, 10 × debounce_ms)`` of a
  continuous burst) ``on_change`` runs once with the set, on the watcher's own dispatch thread.
  The window is a short *quiet* time, not a fixed delay from the first event: every event restarts
  it, so a burst (a double write, vim's rename/create/delete, ``git checkout`` of many files: events
  ~0.01–3 ms apart) gives one batch, and a lone save is reported ``debounce_ms`` after its last
  event. Pushing on the first event instead would split vim's save into "deleted" and "created".
* The inotify watch skips directories ``descend`` refuses (see ``_inotify.py``): a repository's
  ignored trees hold no kernel watch and are never walked.
* When the native observer (inotify) cannot start (watch or instance limit, any OSError), the
  watcher falls back to a polling observer and logs it at WARNING. The polling observer lists
  only what ``is_relevant`` accepts, so ignored trees (``node_modules``) cost nothing and
  symlinked directories are never entered.
* A rebuild (new roots, or ``descend``'s answers changed) keeps the watch of every root that stays:
  a polling emitter started afresh takes what is on disk then as its baseline and never reports
  what was created before it (a directory made while the global dir appeared was lost), and an
  inotify watch dropped and added again misses what happens in between.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.polling import PollingObserverVFS

log = logging.getLogger(__name__)

DEFAULT_DEBOUNCE_MS = 25  # ~10× the widest gap measured inside one save or checkout burst

EVENT_FILTER: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    FileClosedEvent,
    DirCreatedEvent,
    DirMovedEvent,
    DirDeletedEvent,
]


def _as_str(path: Any) -> str:
    return os.fsdecode(path) if isinstance(path, bytes) else str(path)


class _Handler(FileSystemEventHandler):
    def __init__(self, watcher: MemoryWatcher) -> None:
        super().__init__()
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths = [_as_str(event.src_path)]
        dest = getattr(event, "dest_path", "")
        if dest:
            paths.append(_as_str(dest))
        self._watcher._offer(paths)


def _identity(path: str) -> tuple[int, int]:
    """(st_dev, st_ino) of a directory; (0, 0) when it is gone."""
    try:
        st = os.stat(path)
    except OSError:
        return (0, 0)
    return (st.st_dev, st.st_ino)


_INOTIFY_OBSERVERS = ("InotifyObserver", "PrunedInotifyObserver")


def _pruned_observer() -> Callable[[Callable[[str], bool]], BaseObserver] | None:
    """The inotify observer that skips refused directories, or None: off Linux the platform's
    observer holds one OS watch per root and needs no pruning; another watchdog lacks the hook."""
    try:
        from ._inotify import SUPPORTED, PrunedInotifyObserver
    except Exception:  # off Linux watchdog's inotify module refuses to load (UnsupportedLibcError)
        return None
    return PrunedInotifyObserver if SUPPORTED else None


class MemoryWatcher:
    """Watches ``roots`` (recursively) and ``flat_roots`` (one level) and reports changed paths.

    With ``descend``, the recursive inotify watch adds no watch in (and does not walk) a directory
    for which ``descend(path)`` is false: the store refuses ignored trees (``node_modules``,
    ``build/``, ``.git`` but its ``info``). Call :meth:`reschedule` when its answers change.
    """

    def __init__(
        self,
        roots: Sequence[Path],
        on_change: Callable[[set[str]], None],
        *,
        is_relevant: Callable[[str], bool],
        descend: Callable[[str], bool] | None = None,
        debounce_ms: int = DEFAULT_DEBOUNCE_MS,
        force_polling: bool = False,
        flat_roots: Sequence[Path] = (),
        poll_interval: float = 1.0,
        observer_factory: Callable[[], BaseObserver] | None = None,
    ) -> None:
        self._roots = [Path(r) for r in roots]
        self._flat_roots = [Path(r) for r in flat_roots]
        self._on_change = on_change
        self._is_relevant = is_relevant
        self._descend = descend
        self._debounce = max(0, debounce_ms) / 1000.0
        self._max_delay = max(1.0, 10 * self._debounce)
        self._force_polling = force_polling
        self._poll_interval = poll_interval
        self._observer_factory = observer_factory
        self._observer: BaseObserver | None = None
        # (root, recursive) → its watch in the observer and the root's (st_dev, st_ino) when it was scheduled
        self._watches: dict[tuple[str, bool], tuple[ObservedWatch, tuple[int, int]]] = {}
        self._cond = threading.Condition()
        self._pending: set[str] = set()
        self._last_event = 0.0
        self._first_event = 0.0
        self._stopping = False
        self._dispatcher: threading.Thread | None = None
        self._handler = _Handler(self)
        self._lifecycle = threading.Lock()  # start, stop and reschedule one at a time, from any thread
        self.mode: str = "stopped"

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Start watching (idempotent). Falls back to polling when the native observer fails."""
        with self._lifecycle:
            self._start()

    def _start(self) -> None:
        if self.mode != "stopped":
            return
        with self._cond:
            self._stopping = False
            self._pending.clear()
        self._dispatcher = threading.Thread(target=self._dispatch_loop, name="memory-watcher-dispatch", daemon=True)
        self._dispatcher.start()
        if not self._force_polling:
            observer = None
            self._watches.clear()
            try:
                observer = self._observer_factory() if self._observer_factory else self._native_observer(self._descend)
                self._schedule(observer)
                observer.start()
            except OSError as exc:
                log.warning(
                    "memory watcher: native file watching unavailable (%s); falling back to polling every %.1f s",
                    exc.strerror or exc,
                    self._poll_interval,
                )
                if observer is not None:
                    self._discard(observer)
            else:
                self._observer = observer
                self.mode = "inotify" if type(observer).__name__ in _INOTIFY_OBSERVERS else "native"
                log.info("memory watcher: %s on %d root(s)", self.mode, len(self._roots) + len(self._flat_roots))
                return
        observer = PollingObserverVFS(os.stat, self._listdir, polling_interval=self._poll_interval)
        self._watches.clear()
        self._schedule(observer)
        observer.start()
        self._observer = observer
        self.mode = "polling"
        if self._force_polling:
            log.info("memory watcher: polling every %.1f s (forced)", self._poll_interval)

    def stop(self) -> None:
        """Stop watching and join the threads (idempotent). Waits for a reschedule under way."""
        with self._lifecycle:
            self._stop()

    def _stop(self) -> None:
        observer, self._observer = self._observer, None
        self._watches.clear()
        if observer is not None:
            self._discard(observer)
        with self._cond:
            self._stopping = True
            self._pending.clear()
            self._cond.notify_all()
        dispatcher, self._dispatcher = self._dispatcher, None
        if dispatcher is not None and dispatcher is not threading.current_thread():
            dispatcher.join(timeout=5)
        self.mode = "stopped"

    def _stopped(self) -> bool:
        """Read through a call: stop() flips the flag from another thread while we wait."""
        return self._stopping

    def reschedule(self, roots: Sequence[Path], flat_roots: Sequence[Path] = ()) -> None:
        """Watch these roots without a restart (a global dir that was just created), or the same
        roots after ``descend``'s answers changed (the ignore rules did)."""
        self.rebuild(lambda: (roots, flat_roots))

    def rebuild(self, roots_now: Callable[[], tuple[Sequence[Path], Sequence[Path]]]) -> None:
        """:meth:`reschedule` to the roots ``roots_now()`` gives once no other start, stop or rebuild
        runs, so rebuilds queued one after another end on the latest roots. It walks the tree: call
        it off the event loop. A root that stays keeps its watch (the pruned inotify watch is brought
        in line in place: no moment without watches); a root that goes is unwatched; a new root is
        watched from then on."""
        with self._lifecycle:
            roots, flat_roots = roots_now()
            self._reschedule(roots, flat_roots)

    def _reschedule(self, roots: Sequence[Path], flat_roots: Sequence[Path]) -> None:
        self._roots = [Path(r) for r in roots]
        self._flat_roots = [Path(r) for r in flat_roots]
        observer = self._observer
        if observer is None:
            return
        wanted = set(self._wanted())
        alive = {emitter.watch for emitter in list(observer.emitters) if emitter.is_alive()}
        for key, (watch, identity) in list(self._watches.items()):
            # A root that went or was replaced (its watch is on the old directory), or whose emitter
            # ended (a polling emitter stops when its root vanishes): watched afresh below, if wanted.
            if key not in wanted or watch not in alive or _identity(key[0]) != identity:
                observer.unschedule(watch)
                del self._watches[key]
        refresh = getattr(observer, "refresh", None)
        if refresh is not None:  # descend's answers may have changed; new roots are walked when scheduled
            refresh([watch for watch, _identity in self._watches.values()])
        try:
            self._schedule(observer)
        except OSError as exc:
            log.warning("memory watcher: cannot watch the new roots (%s)", exc.strerror or exc)

    # ------------------------------------------------------------------ internals

    @staticmethod
    def _native_observer(descend: Callable[[str], bool] | None) -> BaseObserver:
        pruned = _pruned_observer()
        if descend is not None and pruned is not None:
            return pruned(descend)
        from watchdog.observers import Observer

        return Observer()

    @staticmethod
    def _discard(observer: BaseObserver) -> None:
        try:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=5)
        except (RuntimeError, OSError):  # never started, or already gone
            pass

    def _wanted(self) -> list[tuple[str, bool]]:
        """(root, recursive) of each existing root, once (recursive first)."""
        seen: set[str] = set()
        wanted: list[tuple[str, bool]] = []
        for root, recursive in [*((r, True) for r in self._roots), *((r, False) for r in self._flat_roots)]:
            key = os.fspath(root)
            if key in seen or not os.path.isdir(key):
                continue
            seen.add(key)
            wanted.append((key, recursive))
        return wanted

    def _schedule(self, observer: BaseObserver) -> None:
        """Watch the roots not watched yet."""
        for key, recursive in self._wanted():
            if (key, recursive) not in self._watches:
                identity = _identity(key)
                watch = observer.schedule(self._handler, key, recursive=recursive, event_filter=EVENT_FILTER)
                self._watches[(key, recursive)] = (watch, identity)

    def _listdir(self, path: str | None) -> Iterator[os.DirEntry[str]]:
        """Directory listing for the polling observer: only what the store cares about."""
        with os.scandir(path) as it:
            entries = list(it)
        for entry in entries:
            try:
                if entry.is_symlink() and entry.is_dir():
                    continue  # never into a symlinked directory (loops)
                if self._relevant(entry.path):
                    yield entry
            except OSError:
                continue

    def _relevant(self, path: str) -> bool:
        try:
            return bool(self._is_relevant(path))
        except Exception:
            log.exception("memory watcher: is_relevant failed for %s", path)
            return False

    def _offer(self, paths: list[str]) -> None:
        wanted = [p for p in paths if self._relevant(p)]
        if not wanted:
            return
        now = time.monotonic()
        with self._cond:
            if not self._pending:
                self._first_event = now
            self._pending.update(wanted)
            self._last_event = now
            self._cond.notify_all()

    def _dispatch_loop(self) -> None:
        while True:
            with self._cond:
                while not self._pending and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                while not self._stopping:
                    now = time.monotonic()
                    quiet_at = self._last_event + self._debounce
                    latest = self._first_event + self._max_delay
                    wait = min(quiet_at, latest) - now
                    if wait <= 0:
                        break
                    self._cond.wait(wait)
                if self._stopped():
                    return
                batch, self._pending = self._pending, set()
            try:
                self._on_change(batch)
            except Exception:
                log.exception("memory watcher: on_change failed")
