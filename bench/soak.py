"""Memory over time: the server's RSS while it takes each kind of traffic, and over a scripted
working day.

``soak`` (in the default run): one fresh server per kind of traffic (``getSystemInstruction``,
``getCompressionPrompt``, ``getTurnContext``, ``didChange``, ``didChangeCursor``, ``hover``), a
warm-up, then 30,000 messages in chunks; after each chunk a request whose answer can only come
after the chunk was handled, then the RSS. The figure is the RSS growth over those messages per
10,000 (target ≤ 1 MiB): a server that keeps something per message grows by its size times
10,000 (a 4 KB answer kept per call: 39 MiB). Over fewer messages the figure would mostly show
the C allocator: with Python's own allocated blocks flat, RSS still rises in steps of about
1 MiB now and then (the heap growing into fragments), which 30,000 messages spread out.

``soak-day`` (opt-in: ``--only soak-day``, 10 minutes): an editor and three agent sessions on one
server, on a git repository of its own: 50 ``didChange``/s, 100 cursor moves/s, each session asks
for its instruction and turn context every 2 s, a memory file edited every 10 s (in place, atomic
temp + rename, vim's backup dance, in turn), a folder with a memory file created and deleted,
a branch switch every minute. The figure is the RSS growth from the end of the first minute to
the end (target ≤ 2 MiB); the day also checks that the server kept the editor's text, pushed
after memory edits and answered every request.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .core_figures import REPO, Context
from .lsp_figures import CURSOR, GET_INSTR, GET_TURN, OURS, PUSH, _rss_mib, argv_for, did_open, start
from .ours import Unavailable
from .report import Figure, Target
from .rpc import LspClient, RpcError, ServerGone, file_uri, initialize_params, notification

T_SOAK = Target("abs_le", 1.0, "≤ 1 MiB")
T_DAY = Target("abs_le", 2.0, "≤ 2 MiB")
COMPRESSION = "contextCompanion.getCompressionPrompt"
PER = 10_000  # the figure: RSS growth per this many messages
MESSAGES = 30_000  # sent per kind after the warm-up; the growth over them, scaled to PER
CHUNKS = 6
WARMUP = 3_000
WINDOW = 32  # requests in flight at once
DAY_SECONDS = 600.0
OPT_IN = ("soak-day",)  # not part of the default run: ten minutes


def _rss(pid: int) -> float:
    value = _rss_mib(pid)
    if value is None:
        raise Unavailable("/proc/<pid>/status not readable (not Linux?)")
    return value


async def _requests(c: LspClient, method: str, params: Any, n: int) -> Any:
    """``n`` requests, ``WINDOW`` in flight at a time; the last answer."""
    pending: set[asyncio.Future[Any]] = set()
    last: Any = None
    for _ in range(n):
        pending.add(c.send_request(method, params))
        if len(pending) >= WINDOW:
            await c.drain()
            done, pending = await asyncio.wait(pending, timeout=60, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                raise asyncio.TimeoutError
            for fut in done:
                last = fut.result()[1]
    await c.drain()
    if pending:
        done, rest = await asyncio.wait(pending, timeout=60)
        if rest:
            raise asyncio.TimeoutError
        for fut in done:
            last = fut.result()[1]
    return last


class _Editing:
    """Typing that keeps the document's size: a character inserted, then deleted, at line 3."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self.version = 1

    def text(self, original: str) -> str:
        """The document's text now, given the text it was opened with."""
        if (self.version - 1) % 2 == 0:
            return original
        lines = original.split("\n")
        lines[3] = lines[3][:5] + "x" + lines[3][5:]
        return "\n".join(lines)

    def frames(self, n: int) -> bytes:
        out = []
        for _ in range(n):
            self.version += 1
            at = {"line": 3, "character": 5}
            if self.version % 2 == 0:  # versions 2, 4, ...: insert; 3, 5, ...: delete
                change = {"range": {"start": at, "end": at}, "text": "x"}
            else:
                change = {"range": {"start": at, "end": {"line": 3, "character": 6}}, "text": ""}
            out.append(
                notification(
                    "textDocument/didChange",
                    {"textDocument": {"uri": self.uri, "version": self.version}, "contentChanges": [change]},
                )
            )
        return b"".join(out)


async def _check_text(c: LspClient, uri: str, expected: str) -> str | None:
    """Why the server's copy of ``uri`` is not ``expected`` (read back as the selected text of a
    selection over the whole document), or None."""
    lines = expected.split("\n")
    end = {"line": len(lines) - 1, "character": len(lines[-1])}
    c.notify(
        CURSOR,
        {
            "textDocument": {"uri": uri},
            "position": end,
            "selections": [{"start": {"line": 0, "character": 0}, "end": end}],
        },
    )
    full = await c.command(GET_TURN, {"sessionId": "soak-check", "forceFull": True}, timeout=60)
    active = ((full or {}).get("context") or {}).get("activeFile") or {}
    got = active.get("selectedText")
    if got != expected:
        return (
            f"the server's copy of the edited document differs ({len(got or '')} characters, expected {len(expected)})"
        )
    return None


def _cursor_frames(uri: str, n: int, offset: int = 0) -> bytes:
    out = []
    for i in range(offset, offset + n):
        pos = {"line": i % 20, "character": i % 30}
        end = {"line": i % 20, "character": (i % 30) + (i % 3)}
        out.append(
            notification(
                CURSOR, {"textDocument": {"uri": uri}, "position": pos, "selections": [{"start": pos, "end": end}]}
            )
        )
    return b"".join(out)


KINDS = ("getSystemInstruction", "getCompressionPrompt", "getTurnContext", "didChange", "didChangeCursor", "hover")


async def _kind_run(ctx: Context, kind: str, n: int, warmup: int) -> tuple[list[float], str | None]:
    """RSS (MiB) after the warm-up and after each chunk; a reason when an answer was wrong."""
    s = await start(ctx, OURS, f"soak-{kind}")
    c = s.client
    root = ctx.trees[ctx.lsp_tree][0]
    doc = file_uri(root / "src" / "bench_soak.py")
    memory_doc = root / "AGENTS.md"
    memory_uri = file_uri(memory_doc)
    text = "".join(f"line {i}: some text of the soak document\n" for i in range(20))
    c.write(did_open(doc, text))
    c.write(did_open(memory_uri, memory_doc.read_text(encoding="utf-8")))
    editing = _Editing(doc)
    cursor_sent = 0
    probe = ("textDocument/hover", {"textDocument": {"uri": memory_uri}, "position": {"line": 0, "character": 1}})

    async def send(count: int) -> Any:
        nonlocal cursor_sent
        if kind == "getSystemInstruction":
            return await _requests(c, "workspace/executeCommand", {"command": GET_INSTR, "arguments": [{}]}, count)
        if kind == "getCompressionPrompt":
            return await _requests(c, "workspace/executeCommand", {"command": COMPRESSION, "arguments": [{}]}, count)
        if kind == "getTurnContext":
            return await _requests(c, "workspace/executeCommand", {"command": GET_TURN, "arguments": [{}]}, count)
        if kind == "hover":
            return await _requests(c, *probe, count)
        if kind == "didChange":
            c.write(editing.frames(count))
        else:
            c.write(_cursor_frames(doc, count, cursor_sent))
            cursor_sent += count
        return await c.request(*probe, timeout=120)  # answered after every notification before it

    try:
        await send(warmup)
        await asyncio.sleep(0.3)
        samples = [_rss(c.pid)]
        last: Any = None
        for _ in range(CHUNKS):
            last = await send(n // CHUNKS)
            await asyncio.sleep(0.3)
            samples.append(_rss(c.pid))
        wrong = None
        if kind == "getSystemInstruction" and not (isinstance(last, dict) and last.get("text")):
            wrong = "getSystemInstruction answered without text"
        elif kind == "getCompressionPrompt" and not (isinstance(last, dict) and last.get("text")):
            wrong = "getCompressionPrompt answered without text"
        elif kind == "getTurnContext" and not (isinstance(last, dict) and "kind" in last):
            wrong = "getTurnContext answered without kind"
        elif kind == "didChange":
            wrong = await _check_text(c, doc, editing.text(text))
        return samples, wrong
    finally:
        await c.close()


async def fig_soak(ctx: Context) -> list[Figure]:
    n = 1_200 if ctx.quick else MESSAGES
    warmup = 600 if ctx.quick else WARMUP
    out = []
    for kind in KINDS:
        f = Figure(
            f"soak.{kind}",
            "soak",
            f"RSS growth per {PER:,} {kind} ({n:,} after {warmup:,})",
            "MiB",
            tree=ctx.lsp_tree,
            target=T_SOAK,
        )
        try:
            samples, wrong = await _kind_run(ctx, kind, n, warmup)
        except Unavailable as exc:
            out.append(f.unavailable(str(exc)))
            continue
        except (RpcError, ServerGone, asyncio.TimeoutError, ConnectionError) as exc:
            out.append(f.unavailable(f"{type(exc).__name__}: {exc}"))
            continue
        f.samples = [round(s - samples[0], 3) for s in samples]  # growth after each chunk (JSON)
        f.value = (samples[-1] - samples[0]) * PER / n
        f.note = (
            f"one fresh server per row; RSS after the warm-up and after each of {CHUNKS} chunks, the growth "
            f"from the first to the last scaled to {PER:,} messages; {WINDOW} requests in flight"
            + (f"; quick: {n:,} messages, a figure far noisier than the full run's" if ctx.quick else "")
        )
        out.append(f.wrong(wrong) if wrong else f.finish())
    return out


# --------------------------------------------------------------------------- the working day


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=bench", "-c", "user.email=bench@example.invalid", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def make_day_repo(base: Path) -> Path:
    """A small git repository with two branches that differ in code and memory."""
    repo = base / "soak-day"
    if repo.exists():
        shutil.rmtree(repo)
    (repo / "src").mkdir(parents=True)
    (repo / "AGENTS.md").write_text("# Soak day\n\n- Run the tests before you commit.\n", encoding="utf-8")
    (repo / ".gitignore").write_text("build/\n*.log\n", encoding="utf-8")
    for d in range(8):
        sub = repo / "src" / f"pkg{d}"
        sub.mkdir()
        for k in range(12):
            (sub / f"mod{k}.py").write_text(f"# pkg{d}.mod{k}\nVALUE = {d * 100 + k}\n", encoding="utf-8")
        if d % 3 == 0:
            (sub / "AGENTS.md").write_text(f"# pkg{d}\n\n- Keep pkg{d} free of I/O.\n", encoding="utf-8")
    (repo / ".claude" / "rules").mkdir(parents=True)
    (repo / ".claude" / "rules" / "style.md").write_text("- Prefer small functions.\n", encoding="utf-8")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "main")
    _git(repo, "checkout", "-q", "-b", "feature")
    (repo / "AGENTS.md").write_text("# Soak day (feature)\n\n- Feature flags live in src/flags.py.\n", encoding="utf-8")
    (repo / "src" / "pkg3" / "AGENTS.md").write_text("# pkg3 on the feature branch\n", encoding="utf-8")
    for k in range(10):
        (repo / "src" / "pkg1" / f"mod{k}.py").write_text(f"# feature {k}\nVALUE = {k}\n", encoding="utf-8")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "feature")
    _git(repo, "checkout", "-q", "main")
    return repo


def _edit_memory(path: Path, i: int) -> str:
    """Edit ``path`` as editors save: in place, atomically (temp + rename), vim-style; the way used."""
    text = path.read_text(encoding="utf-8").split("\n<!-- soak ")[0] + f"\n<!-- soak {i} -->\n"
    how = ("in place", "atomic", "vim")[i % 3]
    if how == "in place":
        path.write_text(text, encoding="utf-8")
    elif how == "atomic":
        tmp = path.with_name(f".{path.name}.tmp{i}")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    else:
        backup = path.with_name(path.name + "~")
        os.replace(path, backup)
        path.write_text(text, encoding="utf-8")
        backup.unlink()
    return how


async def fig_soak_day(ctx: Context) -> list[Figure]:
    seconds = 120.0 if ctx.quick else DAY_SECONDS
    f = Figure(
        "soak.day",
        "soak-day",
        f"RSS growth over a scripted working day ({seconds / 60:g} min, after the first minute)",
        "MiB",
        target=T_DAY,
    )
    repo = make_day_repo(ctx.work)
    log_path = ctx.work / "logs" / "soak-day.log"
    c = await LspClient.spawn(argv_for(OURS), name=OURS, cwd=REPO, env=ctx.env, stderr_path=log_path)
    try:
        await c.request("initialize", initialize_params(repo, ctx.settings_data), timeout=60)
        c.notify("initialized", {})
        await c.command(GET_INSTR, {}, timeout=120)
        return [await _day(ctx, c, repo, seconds, f)]
    except Unavailable as exc:
        return [f.unavailable(str(exc))]
    except (RpcError, ServerGone, asyncio.TimeoutError, ConnectionError) as exc:
        return [f.unavailable(f"{type(exc).__name__}: {exc}")]
    finally:
        await c.close()
        shutil.rmtree(repo, ignore_errors=True)


async def _day(ctx: Context, c: LspClient, repo: Path, seconds: float, f: Figure) -> Figure:
    docs = [repo / "src" / f"pkg{d}" / "mod0.py" for d in range(5)]
    uris = [file_uri(p) for p in docs]
    for p, uri in zip(docs, uris, strict=True):
        c.write(did_open(uri, p.read_text(encoding="utf-8")))
    typed = repo / "src" / "scratch.py"
    typed_uri = file_uri(typed)
    text = "".join(f"line {i}: the document typed into all day\n" for i in range(20))
    c.write(did_open(typed_uri, text))
    editing = _Editing(typed_uri)
    pushes = c.subscribe(PUSH)
    sessions = ("agent-a", "agent-b", "agent-c")
    etags: dict[str, str | None] = dict.fromkeys(sessions)
    counts = {"didChange": 0, "cursor": 0, "requests": 0, "edits": 0, "folders": 0, "switches": 0}
    errors: list[str] = []
    samples: list[tuple[float, float]] = []
    t0 = time.perf_counter()
    branch = "main"
    memory_files = [repo / "AGENTS.md", repo / "src" / "pkg0" / "AGENTS.md", repo / ".claude" / "rules" / "style.md"]
    folder: Path | None = None
    next_session = next_edit = 0.0
    next_folder = 5.0
    next_switch = 60.0
    next_sample = 0.0
    while True:
        now = time.perf_counter() - t0
        if now >= seconds:
            break
        due_typing = int(now * 50) - counts["didChange"]
        if due_typing > 0:
            c.write(editing.frames(due_typing))
            counts["didChange"] += due_typing
        due_cursor = int(now * 100) - counts["cursor"]
        if due_cursor > 0:
            c.write(_cursor_frames(uris[counts["cursor"] % len(uris)], due_cursor, counts["cursor"]))
            counts["cursor"] += due_cursor
        if now >= next_session:
            next_session += 2.0
            for sid in sessions:
                try:
                    arg: dict[str, Any] = {"sessionId": sid}
                    if etags[sid] is not None and counts["requests"] % 10:
                        arg["ifNoneMatch"] = etags[sid]
                    instr = await c.command(GET_INSTR, arg, timeout=60)
                    etags[sid] = instr.get("etag")
                    await c.command(GET_TURN, {"sessionId": sid}, timeout=60)
                    counts["requests"] += 2
                except RpcError as exc:
                    errors.append(str(exc))
        if now >= next_edit:
            next_edit += 10.0
            path = memory_files[counts["edits"] % len(memory_files)]
            if path.exists():
                await asyncio.to_thread(_edit_memory, path, counts["edits"])
                counts["edits"] += 1
        if now >= next_folder:
            next_folder += 10.0
            if folder is None:
                folder = repo / "src" / f"new{counts['folders']}"
                folder.mkdir()
                (folder / "AGENTS.md").write_text("# A folder of the day\n", encoding="utf-8")
                (folder / "a.py").write_text("A = 1\n", encoding="utf-8")
                counts["folders"] += 1
            else:
                shutil.rmtree(folder)
                folder = None
        if now >= next_switch:
            next_switch += 60.0
            branch = "feature" if branch == "main" else "main"
            await asyncio.to_thread(_git, repo, "checkout", "-q", "-f", branch)  # drops the edits of the day
            counts["switches"] += 1
        if now >= next_sample:
            next_sample += 5.0
            await c.drain()
            samples.append((now, _rss(c.pid)))
        await c.drain()
        await asyncio.sleep(0.01)
    # The editor's copy of the typed document, read back: the server kept every edit.
    await c.drain()
    differs = await _check_text(c, typed_uri, editing.text(text))
    samples.append((time.perf_counter() - t0, _rss(c.pid)))
    seen = 0
    while not pushes.empty():
        pushes.get_nowait()
        seen += 1
    after = [rss for t, rss in samples if t >= 60.0]
    base = after[0] if after else samples[-1][1]
    f.samples = [round(rss - base, 3) for _t, rss in samples]
    f.value = samples[-1][1] - base
    f.lo, f.hi = min(after or [base]) - base, max(after or [base]) - base
    f.floor_name = None
    f.note = (
        f"{counts['didChange']:,} didChange, {counts['cursor']:,} cursor moves, {counts['requests']:,} requests "
        f"(3 sessions), {counts['edits']} memory edits (in place / atomic / vim), {counts['folders']} folders "
        f"made and removed, {counts['switches']} branch switches; {seen} pushes; RSS at 1 min "
        f"{base:.1f} MiB, peak {max(r for _t, r in samples):.1f} MiB; min–max: growth over the day after minute 1"
    )
    wrong = []
    if errors:
        wrong.append(f"{len(errors)} request(s) failed, e.g. {errors[0][:120]}")
    if counts["edits"] and not seen:
        wrong.append("no push after the memory edits")
    if differs:
        wrong.append(differs)
    return f.wrong("; ".join(wrong)) if wrong else f.finish()


FIGURES: dict[str, Callable[[Context], Any]] = {"soak": fig_soak, "soak-day": fig_soak_day}
