"""The C heap tuning the language server applies (``context_companion.heap``), seen from the process:
its RSS after ``release_free_memory`` and the arenas glibc reports (``malloc_info``). Each case
runs in a fresh interpreter: ``mallopt`` settings last for the process, and arenas only grow."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
import threading

import pytest
from context_companion import heap
from context_companion.lsp.framing import FrameReader, run_frames

pytestmark = pytest.mark.skipif(heap._glibc() is None, reason="glibc's allocator only (Linux)")

_PRELUDE = """
import ctypes, json, os, tempfile, threading
from context_companion import heap

def rss_kib():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))

def arenas():
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    path = tempfile.mktemp()
    out = libc.fopen(path.encode(), b"w")
    libc.malloc_info(0, out)
    libc.fclose(out)
    with open(path) as fh:
        text = fh.read()
    os.unlink(path)
    return text.count("<heap nr=")
"""


def _run(body: str) -> dict[str, int]:
    code = _PRELUDE + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    result: dict[str, int] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


_THREADS_ALLOCATE = """
kept = []
def work():
    kept.append([bytes(2000) for _ in range(2000)])  # past pymalloc's 512 bytes: glibc's malloc
threads = [threading.Thread(target=work) for _ in range(6)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"arenas": arenas()}))
"""


def test_after_the_start_tuning_every_thread_allocates_from_one_arena() -> None:
    assert _run("heap.tune_at_start()\n" + _THREADS_ALLOCATE) == {"arenas": 1}


def test_without_it_threads_take_arenas_of_their_own() -> None:
    """The other side: the count above sees the arenas glibc gives threads by default."""
    assert _run(_THREADS_ALLOCATE)["arenas"] > 1


_FREED_BELOW_A_LIVE_BLOCK = """
heap.tune_at_start()
blocks = [b"x" * (60 * 1024) for _ in range(800)]  # 47 MiB from the heap (below the mmap threshold)
pin = b"y" * (60 * 1024)  # the heap's top stays in use: free() alone cannot shrink it
del blocks
before = rss_kib()
released = heap.release_free_memory()
print(json.dumps({"released": released, "before": before, "after": rss_kib()}))
"""


def test_release_free_memory_gives_the_freed_heap_back_to_the_system() -> None:
    out = _run(_FREED_BELOW_A_LIVE_BLOCK)
    assert out["released"] == 1
    assert out["before"] - out["after"] > 40 * 1024, out  # KiB: most of the 47 MiB freed


def test_release_free_memory_is_harmless_when_nothing_is_free() -> None:
    out = _run("""
    print(json.dumps({"first": heap.release_free_memory(), "again": heap.release_free_memory()}))
    """)
    assert out == {"first": True, "again": True}


def _burst(monkeypatch: pytest.MonkeyPatch, count: int, size: int) -> tuple[int, int]:
    """Feed ``count`` notifications of ``size`` bytes to the message loop every transport runs,
    keep the input open and quiet for a while: (messages handled, times the free heap went back)."""
    released: list[bool] = []
    monkeypatch.setattr(heap, "release_free_memory", lambda: released.append(True) or True)

    class Protocol:
        handled = 0

        def structure_message(self, data: object) -> object:
            return data

        def handle_message(self, message: object) -> None:
            Protocol.handled += 1

    async def run() -> None:
        reader = asyncio.StreamReader(limit=1 << 16)
        for i in range(count):
            body = json.dumps({"jsonrpc": "2.0", "method": "note", "params": {"i": i, "text": "x" * size}}).encode()
            reader.feed_data(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        loop = asyncio.create_task(run_frames(FrameReader(reader), Protocol(), threading.Event()))
        quiet = asyncio.get_running_loop().time() + 3 * heap.QUIET_SECONDS
        while not released and (Protocol.handled < count or asyncio.get_running_loop().time() < quiet):
            await asyncio.sleep(0.01)
        reader.feed_eof()
        await asyncio.wait_for(loop, 10)

    asyncio.run(run())
    return Protocol.handled, len(released)


def test_a_burst_of_big_messages_gives_the_freed_heap_back_once_the_input_is_quiet(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An editor opening 40 files of 50 KB at once (2 MB of messages): parsing them frees as much
    again; once the input is quiet, the free pages go back, once for the whole burst."""
    assert _burst(monkeypatch, 40, 50_000) == (40, 1)


def test_small_messages_never_trim_the_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other side: typing (small didChange and cursor notifications) costs no trim."""
    assert _burst(monkeypatch, 200, 1_000) == (200, 0)


def test_older_generations_wait_while_paused_and_the_thresholds_come_back_as_they_were() -> None:
    import gc

    before = gc.get_threshold()
    try:
        heap.pause_older_collections()
        heap.pause_older_collections()  # twice: still one set of thresholds to go back to
        assert gc.get_threshold() == (before[0], heap.PAUSED_THRESHOLD, heap.PAUSED_THRESHOLD)
        heap.resume_older_collections()
        assert gc.get_threshold() == before
        heap.resume_older_collections()  # not paused: nothing changes
        assert gc.get_threshold() == before
    finally:
        gc.set_threshold(*before)
