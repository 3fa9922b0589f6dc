"""A recursive inotify watch that does not descend into the directories the store ignores.

watchdog's recursive inotify watch adds one kernel watch per directory below the root, ignored
trees included: in a JavaScript repository most of them are ``node_modules``. Each costs kernel
memory, a share of ``fs.inotify.max_user_watches`` (shared by all the user's programs; watchdog
skips the directories it can no longer watch, and only a failure at the root makes the watcher
fall back to polling), a few hundred bytes in this process, and every ``npm install`` floods the
watcher with events nobody reads. Here the same watch is built by watchdog's own inotify classes,
with the walk changed: the walk that adds the watches (at start, and when a directory is created or
moved in) asks ``descend(path)`` for each directory and skips, without walking, those it refuses;
a new directory it refuses is not walked for the files it already holds either. ``refresh()``
brings the watches in line when ``descend``'s answers change (the ignore rules did), adding and
dropping watches in place.

Only these walks are replaced (private methods of watchdog 7's ``InotifyWatchGroup``); event
reading, move pairing, queue-overflow recovery and the emitter's event building stay watchdog's.
Importing this module fails off Linux; where watchdog's classes differ (``SUPPORTED`` false) or the
import fails, the watcher uses watchdog's default observer and watches everything, as before.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from watchdog.observers.api import BaseObserver, ObservedWatch
from watchdog.observers.inotify import InotifyEmitter, InotifyWatchGroup
from watchdog.observers.inotify_c import InotifyFD

log = logging.getLogger(__name__)

# `mkdir -p a/b`: the walk that watches the new `a` already watches `b`, then `b`'s own create event
# adds the same callback to the same watch again, and watchdog warns that it overwrites it (it
# does with its own observer too). Nothing is lost: keep that out of the server's log.
warnings.filterwarnings("ignore", r"Callback with id '\d+' already exists for watch", RuntimeWarning)

Descend = Callable[[str], bool]

# The private methods this builds on; watcher.py checks for them before using this module.
SUPPORTED = all(
    callable(getattr(InotifyWatchGroup, name, None))
    for name in ("_add_all_callbacks", "_add_callback", "_remove_callbacks", "_recursive_simulate")
)


def _always(path: str) -> bool:
    return True


def _is_dir(entry: os.DirEntry[bytes], follow: bool) -> bool:
    try:
        return entry.is_dir(follow_symlinks=follow)
    except OSError:
        return False


@dataclass
class PrunedWatchGroup(InotifyWatchGroup):
    """watchdog's watch group; its recursive walk skips the directories ``descend`` refuses."""

    descend: Descend = field(default=_always)

    def _add_all_callbacks(self, path: bytes) -> None:
        if path != self.path and not self._wanted(path):
            return  # a directory created or moved in that the store ignores
        for directory in self._tree(path):
            self._add_callback(directory)

    def _tree(self, path: bytes) -> Iterator[bytes]:
        """``path`` and, when recursive, every directory below it that ``descend`` wants. Lists
        directories only (``os.walk`` would also build a list of every file name of the tree)."""
        yield path
        if not (self.is_recursive and os.path.isdir(path)):
            return
        follow = self.follow_symlink
        pending = [path]
        while pending:
            try:
                with os.scandir(pending.pop()) as entries:
                    found = [e.path for e in entries if _is_dir(e, follow)]
            except OSError:
                continue  # gone or unreadable meanwhile, as os.walk skips it
            for full in found:
                if self._wanted(full):
                    yield full
                    pending.append(full)

    def _recursive_simulate(self, src_path: bytes) -> list[Any]:
        """watchdog reports what a new directory already holds by walking it: not one it does not watch."""
        if src_path not in self._active_callbacks_by_path:
            return []
        events: list[Any] = super()._recursive_simulate(src_path)
        return events

    def refresh(self) -> None:
        """Watch the directories ``descend`` wants now and drop those it refuses now, in place:
        the directories kept are watched throughout."""
        with self._lock:
            if not self.is_active:
                return
            wanted = set(self._tree(self.path))
            for directory in wanted - self._active_callbacks_by_path.keys():
                self._add_callback(directory)
            refused = [wd for directory, wd in self._active_callbacks_by_path.items() if directory not in wanted]
            self._remove_callbacks(refused)

    def _wanted(self, path: bytes) -> bool:
        try:
            return bool(self.descend(os.fsdecode(path)))
        except Exception:  # a failing predicate must not lose events: watch the directory
            log.exception("memory watcher: deciding whether to watch %r failed", path)
            return True


class PrunedEmitter(InotifyEmitter):
    """watchdog's inotify emitter, building a :class:`PrunedWatchGroup`."""

    def __init__(self, *args: Any, descend: Descend, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._descend = descend

    def on_thread_start(self) -> None:
        self._inotify = PrunedWatchGroup(
            self._inotify_fd,
            os.fsencode(self.watch.path),
            is_recursive=self.watch.is_recursive,
            event_mask=self.get_event_mask_from_filter(),
            follow_symlink=self.watch.follow_symlink,
            descend=self._descend,
        )

    def refresh(self) -> None:
        group = self._inotify
        if isinstance(group, PrunedWatchGroup):
            group.refresh()


class PrunedInotifyObserver(BaseObserver):
    """watchdog's ``InotifyObserver``, with :class:`PrunedEmitter` for its watches."""

    def __init__(self, descend: Descend) -> None:
        self._inotify_fd = InotifyFD()
        self._inotify_fd.start()
        super().__init__(PrunedEmitter, inotify_fd=self._inotify_fd, descend=descend)

    def refresh(self, watches: Iterable[ObservedWatch] | None = None) -> None:
        """Bring these watches (default: every one) in line with what ``descend`` answers now (the
        ignore rules changed)."""
        only = None if watches is None else set(watches)
        for emitter in list(self.emitters):
            if isinstance(emitter, PrunedEmitter) and (only is None or emitter.watch in only):
                emitter.refresh()

    def on_thread_stop(self) -> None:
        super().on_thread_stop()
        self._inotify_fd.stop()
        self._inotify_fd.join()
