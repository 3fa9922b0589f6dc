"""How the language server uses the C heap: glibc's allocator tuned once at start, and what one-off
work freed given back to the system (Linux with glibc only; elsewhere these do nothing); and when
Python's collector makes full collections.

Three settings, each measured on the benchmark's server RSS figure (a 20,000-file tree, 200 open
documents; docs/performance.md):

* **One malloc arena** (``mallopt(M_ARENA_MAX, 1)``). glibc gives every thread that allocates its
  own arena, up to 8 per core, and each keeps the pages its busiest moment touched. The server runs
  about ten threads (asyncio's workers for the start-up walk and reads, watchdog's, the dispatcher),
  all of which allocate holding the GIL, so one arena costs them no waiting: 0.75 MiB less.
* **Big blocks mapped** (``mallopt(M_MMAP_THRESHOLD)`` at its starting 128 KiB). glibc raises the
  threshold to the size of every large block it gives back (up to 32 MiB); from then on blocks that
  large come from the heap, whose top seldom shrinks. A server that runs all day makes such blocks
  now and then (Python's table of interned strings is resized to 1.8 MiB when names come and go),
  and its RSS grew in steps of about 2 MiB that never went back over a working day. With
  the threshold fixed they are mapped and unmapped as they come and go.
* **Free pages back after the start-up** (:func:`release_free_memory`, ``malloc_trim(0)``). The
  start-up reads every memory and ignore file, walks the tree and builds the token encoding; what
  that frees stays in the heap (a free chunk below a live one is never returned by ``free``):
  1.3 MiB less. The same after a **burst of input** (:class:`AfterBursts`): an editor that opens
  200 files at once (a restored session) sends 4 MiB of messages; parsing them frees as much again
  in blocks below the kept texts. Once at least 1 MiB has arrived and the input has been quiet for
  0.1 s, the free pages go back (a few ms, at most once per MiB received): 0.7 MiB less.

Both ``mallopt`` calls must come before the first thread allocates (:func:`tune_at_start`, first
thing ``serve`` does); an arena a thread already has stays its own.

And Python's own collector: only its **youngest generation is collected** over the start-up
(:func:`pause_older_collections` before ``serve`` imports the protocol libraries,
:func:`resume_older_collections` once the first message is dealt with). Those imports make ~100,000
objects that live as long as the server (lsprotocol's ~560 attrs classes, pygls, cattrs); every one
the youngest collections keep is walked again by the middle generation's, and all of them by a full
collection, to free a few hundred: together ~8 % of a bare pygls start, before the initialize answer
(their work comes after it instead). The youngest collections go on, so what the imports leave as
garbage is mostly freed as before: switching the collector off altogether saved more (~13 %) but
kept all of that garbage until the answer, 0.8 MiB more RSS for good; this costs about 0.1 MiB.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import sys
from typing import Any

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # glibc's malloc.h
M_ARENA_MAX = -8
MMAP_THRESHOLD = 128 * 1024  # glibc's starting value
ARENA_MAX = 1


@functools.cache
def _glibc() -> Any | None:
    """The C library when it is glibc (it has ``malloc_trim``; musl does not), else None."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes  # loaded by watchdog anyway

        libc = ctypes.CDLL(None)
        libc.mallopt, libc.malloc_trim  # noqa: B018 (glibc's, looked up once)
    except (OSError, AttributeError):
        return None
    return libc


def tune_at_start() -> None:
    """One arena for every thread, big blocks always mapped; before any thread allocates."""
    libc = _glibc()
    if libc is None:
        return
    if not libc.mallopt(M_ARENA_MAX, ARENA_MAX):
        log.info("mallopt(M_ARENA_MAX) refused; each thread keeps an arena of its own")
    if not libc.mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD):
        log.info("mallopt(M_MMAP_THRESHOLD) refused; the C heap keeps its dynamic threshold")


PAUSED_THRESHOLD = 1 << 30  # collections of the generation below before this one's: never, in a start-up
_thresholds: tuple[int, int, int] | None = None  # the collector's, while paused


def pause_older_collections() -> None:
    """Python's collector collects its youngest generation only, until :func:`resume_older_collections`."""
    global _thresholds
    if _thresholds is None:
        _thresholds = gc.get_threshold()
        gc.set_threshold(_thresholds[0], PAUSED_THRESHOLD, PAUSED_THRESHOLD)


def resume_older_collections() -> None:
    """The collector's thresholds as they were before :func:`pause_older_collections` (if it was)."""
    global _thresholds
    if _thresholds is not None:
        gc.set_threshold(*_thresholds)
        _thresholds = None


def release_free_memory() -> bool:
    """Give the C heap's free pages back to the system; True when the C library could (glibc)."""
    libc = _glibc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


BURST_BYTES = 1024 * 1024  # input received before the free pages are worth a trim
QUIET_SECONDS = 0.1  # no message for this long: the burst is over


class AfterBursts:
    """Gives the free pages back once a burst of input is over: after ``BURST_BYTES`` of messages
    (counted by :meth:`took`, on the event loop), when no message came for ``QUIET_SECONDS``. A
    steady trickle of small messages never reaches the count within a burst; a long burst is
    released once, when it ends."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._received = 0
        self._timer: asyncio.TimerHandle | None = None

    def took(self, size: int) -> None:
        """One message of ``size`` bytes arrived."""
        self._received += size
        if self._received < BURST_BYTES:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer = self._loop.call_later(QUIET_SECONDS, self._quiet)

    def _quiet(self) -> None:
        self._timer = None
        received, self._received = self._received, 0
        if release_free_memory():
            log.debug("gave the free heap back after %.1f MiB of input", received / (1024 * 1024))
