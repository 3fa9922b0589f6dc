"""Load, end to end through the pytest-lsp harness of tests/lsp (the real server over stdio).

* A burst of 10,000 ``contextCompanion/didChangeCursor`` notifications, sent as fast as the
  client can write them, then one command: it answers with the state of the *last* notification.
* 50 agent sessions whose baselines were taken at 50 different moments ask for their turn
  context at once: each gets the delta from its own baseline.

The figures (rate, time to answer after the burst) are recorded, not asserted: speed belongs to
the benchmark (bench/), these tests assert correctness under load.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from context_companion.context.turn import apply_delta
from lsp_text_model import normalise

NO_ENV = {"environment": {"placement": "off"}}
TURN = "contextCompanion.getTurnContext"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def test_burst_of_10000_cursor_notifications_then_a_command_sees_the_final_state(start, workspace, figures):
    lines = [f"line {i:03d} 😀 ünïcode" for i in range(100)]
    write(workspace / "a.txt", "\n".join(lines) + "\n")
    write(workspace / "b.txt", "b\n" * 100)
    h = await start(workspace, settings=NO_ENV)
    a, b = h.open("a.txt"), h.open("b.txt")
    assert (await h.command("contextCompanion.getCompressionPrompt"))["text"]  # started and answering

    n = 10_000
    t0 = time.perf_counter()
    for i in range(n):
        uri = a if i % 2 else b
        line = i % 100
        h.cursor(uri, line, i % 7, [(line, 0, line, 9)] if i % 3 == 0 else None)
    t_sent = time.perf_counter()
    result = await h.command(TURN, {})
    t_done = time.perf_counter()

    # The last notification: i = 9999 → a.txt, line 99, character 3, selection (99,0)-(99,9).
    assert result["kind"] == "full"
    assert result["context"] == {
        "activeFile": {
            "path": str(workspace / "a.txt"),
            "cursor": {"line": 100, "character": 4},
            "selectedText": "line 099 ",
        },
        "otherOpenFiles": [str(workspace / "b.txt")],
    }
    figures["burst: 10,000 cursor notifications written (s)"] = round(t_sent - t0, 3)
    figures["burst: first notification → answer after the burst (s)"] = round(t_done - t0, 3)
    figures["burst: end-to-end rate (notifications/s)"] = round(n / (t_done - t0))
    figures["burst: last notification written → answer (s)"] = round(t_done - t_sent, 3)
    # The server is still fully usable.
    h.cursor(b, 5, 0)
    moved = await h.command(TURN, {})
    assert moved["kind"] == "delta"
    assert moved["context"]["changes"]["activeFileChanged"]["path"] == str(workspace / "b.txt")


async def test_50_sessions_asking_at_once_each_get_the_delta_from_their_own_baseline(start, workspace):
    docs = [write(workspace / f"src/mod{i}.py", "".join(f"row {r} of mod{i}\n" for r in range(60))) for i in range(10)]
    h = await start(workspace, settings={**NO_ENV, "context": {"maxOpenFiles": 50}})
    uris = [d.as_uri() for d in docs]
    h.open("src/mod0.py")
    opened = {uris[0]}
    h.cursor(uris[0], 0, 0)

    async def truth() -> dict[str, Any]:
        return (await h.command(TURN, {"sessionId": "truth", "forceFull": True}))["context"]

    # Every session starts from the same state, concurrently.
    first = await asyncio.gather(*(h.command(TURN, {"sessionId": f"s{i}"}) for i in range(50)))
    now = await truth()
    assert all(r["kind"] == "full" and r["context"] == now for r in first)
    seen = {i: now for i in range(50)}

    # Session k takes its next turn after the k-th change: 50 different baselines.
    for k in range(50):
        doc = k % 10
        if uris[doc] not in opened:
            h.open(f"src/mod{doc}.py")
            opened.add(uris[doc])
        if k % 7 == 6 and len(opened) > 2:
            victim = uris[(k + 3) % 10]
            if victim in opened and victim != uris[doc]:
                h.close(f"src/mod{(k + 3) % 10}.py")
                opened.discard(victim)
        h.cursor(uris[doc], k + 1, k % 5, [(k + 1, 0, k + 1, 3)] if k % 2 else None)
        turn = await h.command(TURN, {"sessionId": f"s{k}"})
        now = await truth()
        assert turn["kind"] == "delta"
        assert normalise(apply_delta(seen[k], turn["context"]["changes"])) == normalise(now)
        seen[k] = now

    # One more change, then all 50 ask at once.
    if uris[9] not in opened:
        h.open("src/mod9.py")
    h.cursor(uris[9], 59, 2, [(58, 0, 59, 2)])
    results = await asyncio.gather(*(h.command(TURN, {"sessionId": f"s{i}"}) for i in range(50)))
    final = await truth()
    deltas = []
    for i, r in enumerate(results):
        if r["kind"] == "none":
            assert normalise(seen[i]) == normalise(final), i
            deltas.append(None)
        else:
            assert r["kind"] == "delta", (i, r)
            assert normalise(apply_delta(seen[i], r["context"]["changes"])) == normalise(final), i
            deltas.append(repr(r["context"]["changes"]))
    # Baselines differ, so do the deltas: no session got another's.
    assert len(set(deltas)) >= 10, deltas
    # And each baseline moved: asking again gives nothing new.
    again = await asyncio.gather(*(h.command(TURN, {"sessionId": f"s{i}"}) for i in range(50)))
    assert all(r["kind"] == "none" for r in again)


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


async def test_10000_keystrokes_leave_the_servers_memory_where_it_was(start, workspace, figures):
    """pygls kept every text-sync notification's handler future (about 2 KiB each) for the life of
    the server: a day of typing grew it by hundreds of MiB. A memory bound with a wide margin,
    not a speed: 10,000 edits grew the server by 19 MiB before, by well under 1 MiB now."""
    write(workspace / "a.txt", "start\n")
    h = await start(workspace, settings=NO_ENV)
    uri = h.open("a.txt")
    h.cursor(uri, 0, 0)
    await h.command(TURN, {})
    before = _rss_kib(h.server_pid)
    n = 10_000  # typed 40 to a line, as the benchmark's burst: one 10,000-character line costs pygls O(n²)
    for i in range(n):
        line, col = 1 + i // 40, i % 40
        pos = {"line": line, "character": col}
        h.send_raw(
            {
                "method": "textDocument/didChange",
                "params": {
                    "textDocument": {"uri": uri, "version": i + 2},
                    "contentChanges": [{"range": {"start": pos, "end": pos}, "text": "x\n" if col == 39 else "x"}],
                },
            }
        )
    last = 1 + n // 40
    h.cursor(uri, last, 0, [(1, 0, last, 0)])
    turn = await h.command(TURN, {"forceFull": True})
    assert turn["context"]["activeFile"]["selectedText"] == ("x" * 40 + "\n") * (n // 40)  # every edit applied
    grown = (_rss_kib(h.server_pid) - before) / 1024
    figures["10,000 didChange: server RSS growth (MiB)"] = round(grown, 1)
    assert grown < 6, f"the server grew by {grown:.1f} MiB over {n} edits"
