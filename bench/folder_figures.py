"""New folders on a big tree: how long an ``AGENTS.md`` in a folder created (or deleted) while the
server runs takes to reach the agent's turn, against an edit of an existing one, in the same run.

On the ``large`` tree (~20,000 directories) our server runs with one session. A document is open in
each folder concerned, so the folder's ``AGENTS.md`` applies (the JIT tier) and reaches the agent as
``memoryUpdates`` of ``contextCompanion.getTurnContext``. Each sample writes to disk, then polls the
turn every few milliseconds until the update is there; the time is taken when the answer holding it
arrives. Three kinds of sample, interleaved so the machine's load hits them alike:

* **edit**: an existing nested ``AGENTS.md`` rewritten (its content changes each time);
* **create**: a new folder made beside it, with an ``AGENTS.md``, in one go (``mkdir``, write);
* **delete**: that folder removed with everything in it (``rm -rf``), its removal notice awaited.

The edit is the floor: creation and deletion must stay within 3× of it (issue 27). Every file the
figure writes is removed or put back at the end.
"""

from __future__ import annotations

import asyncio
import dataclasses
import shutil
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .core_figures import Context
from .generate import ensure_tree
from .lsp_figures import GET_TURN, OURS, did_open, start
from .ours import Unavailable
from .report import Figure, Target
from .rpc import LspClient, RpcError, ServerGone, file_uri, notification

T_FOLDER = Target("ratio_le", 3.0, "≤ 3× edit")
BIG_TREE = "large"  # ~20,000 directories
POLL_S = 0.002
WAIT_S = 5.0  # a sample whose update has not arrived by then is a miss
QUIET_S = 0.15  # before each sample the server must have used no CPU for this long (max QUIET_MAX_S)
QUIET_MAX_S = 20.0
NEW_PREFIX = "bench-new-folder-"
OPEN_NAME = "bench_open.py"


def _pick_edit_file(man: Any) -> str:
    """A nested AGENTS.md of the tree, about half-way down (its folder holds the new ones too)."""
    nested = [p for p in man.memory_expected if p.endswith("/AGENTS.md") and p.count("/") >= 3]
    if not nested:
        raise Unavailable("the tree has no nested AGENTS.md to edit")
    return nested[len(nested) // 2]


def _cpu_ticks(pid: int) -> int | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        return int(fields[11]) + int(fields[12])  # utime + stime, all threads
    except (OSError, ValueError, IndexError):
        return None


async def _quiet(pid: int) -> None:
    """Wait until the server has used no CPU for QUIET_S (a watch rebuild, a walk have ended)."""
    deadline = time.monotonic() + QUIET_MAX_S
    last = _cpu_ticks(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(QUIET_S)
        now = _cpu_ticks(pid)
        if now is None or now == last:
            return
        last = now


async def _turn(c: LspClient) -> dict[str, Any]:
    result = await c.command(GET_TURN, {}, timeout=30)
    if not isinstance(result, dict):
        raise ValueError(f"getTurnContext answered {result!r}")
    return result


async def _until(c: LspClient, t0: float, seen: Callable[[list[dict[str, Any]]], bool]) -> float | None:
    """Poll the turn until ``seen(memoryUpdates)``; ms from ``t0`` to that answer, None after WAIT_S."""
    while True:
        t1, result = await c.request_timed(
            "workspace/executeCommand", {"command": GET_TURN, "arguments": [{}]}, timeout=30
        )
        updates = result.get("memoryUpdates") if isinstance(result, dict) else None
        if updates and seen(updates):
            return (t1 - t0) * 1000
        if t1 - t0 > WAIT_S:
            return None
        await asyncio.sleep(POLL_S)


def _has(path: str, *, removed: bool = False, text: str = "") -> Callable[[list[dict[str, Any]]], bool]:
    def seen(updates: list[dict[str, Any]]) -> bool:
        for u in updates:
            if u.get("path") != path:
                continue
            content = str(u.get("content", ""))
            if removed:
                return "no longer applies" in content
            return text in content
        return False

    return seen


async def fig_new_folder(ctx: Context) -> list[Figure]:
    if BIG_TREE in ctx.trees:
        root, man = ctx.trees[BIG_TREE]
        tree = BIG_TREE
    elif ctx.quick:
        root, man = ctx.trees[ctx.lsp_tree]  # a smoke run does not generate the big tree
        tree = ctx.lsp_tree
    else:
        root, man, _reused = ensure_tree(BIG_TREE, ctx.seed, ctx.work, log=ctx.log)
        tree = BIG_TREE
    samples = 3 if ctx.quick else 3 * ctx.repeat
    create = Figure(
        "new_folder.create",
        "new-folder",
        f"new folder with AGENTS.md → turn ({samples} samples)",
        "ms",
        tree=tree,
        target=T_FOLDER,
    )
    delete = Figure(
        "new_folder.delete",
        "new-folder",
        f"folder with AGENTS.md deleted → turn ({samples} samples)",
        "ms",
        tree=tree,
        target=T_FOLDER,
    )
    try:
        edit_rel = _pick_edit_file(man)
    except Unavailable as exc:
        return [create.unavailable(str(exc)), delete.unavailable(str(exc))]
    edit_path = root / edit_rel
    parent = edit_path.parent
    original = edit_path.read_bytes()
    for stale in parent.glob(NEW_PREFIX + "*"):
        shutil.rmtree(stale, ignore_errors=True)
    run_ctx = dataclasses.replace(ctx, trees={**ctx.trees, tree: (root, man)}, lsp_tree=tree)
    try:
        s = await start(run_ctx, OURS, "newfolder")
    except Unavailable as exc:
        return [create.unavailable(str(exc)), delete.unavailable(str(exc))]
    c = s.client
    times: dict[str, list[float]] = {"edit": [], "create": [], "delete": []}
    missed: dict[str, int] = {"edit": 0, "create": 0, "delete": 0}
    try:
        c.write(did_open(file_uri(parent / OPEN_NAME), "# the edited AGENTS.md applies to this file\n"))
        await _turn(c)  # the session's first turn: the existing AGENTS.md arrives in full here
        for i in range(samples):
            folder = parent / f"{NEW_PREFIX}{i}"
            new_rel = f"{edit_rel.rpartition('/')[0]}/{folder.name}/AGENTS.md"
            uri = file_uri(folder / OPEN_NAME)
            # An editor can hold a document of a folder that does not exist yet (a new, unsaved file).
            c.write(did_open(uri, "# a file in the new folder\n"))
            await _turn(c)
            order = ["edit", "create", "delete"] if i % 2 == 0 else ["create", "delete", "edit"]
            for kind in order:
                await _quiet(c.pid)  # work a sample started in the background counts for that sample only
                await _turn(c)  # nothing pending before the clock starts
                t0 = time.perf_counter()
                if kind == "edit":
                    marker = f"Bench edit {i}."
                    edit_path.write_bytes(original + f"\n{marker}\n".encode())
                    ms = await _until(c, t0, _has(edit_rel, text=marker))
                elif kind == "create":
                    marker = f"Bench new folder {i}."
                    folder.mkdir()
                    (folder / "AGENTS.md").write_text(marker + "\n", encoding="utf-8")
                    ms = await _until(c, t0, _has(new_rel, text=marker))
                else:
                    shutil.rmtree(folder)
                    ms = await _until(c, t0, _has(new_rel, removed=True))
                if ms is None:
                    missed[kind] += 1
                else:
                    times[kind].append(ms)
            c.write(notification("textDocument/didClose", {"textDocument": {"uri": uri}}))
    except (RpcError, ServerGone, asyncio.TimeoutError, ValueError) as exc:
        why = f"{type(exc).__name__}: {exc}"
        return [create.unavailable(why), delete.unavailable(why)]
    finally:
        await c.close()
        edit_path.write_bytes(original)
        for stale in parent.glob(NEW_PREFIX + "*"):
            shutil.rmtree(stale, ignore_errors=True)
    edits = times["edit"]
    if not edits or missed["edit"]:
        why = f"{missed['edit']} of {samples} edits did not reach the turn within {WAIT_S:.0f} s"
        return [create.wrong(why), delete.wrong(why)]
    note = (
        f"{man.dirs_visible:,} directories; a JIT AGENTS.md under {edit_rel.rpartition('/')[0]}/ with a document "
        f"open there, polled through getTurnContext's memoryUpdates every {POLL_S * 1000:.0f} ms; "
        f"edit → turn {statistics.median(edits):.0f} ms ({min(edits):.0f}–{max(edits):.0f})"
    )
    if tree != BIG_TREE:
        note += f"; QUICK RUN on {tree}, not the 20,000-directory tree"
    out = []
    for f, kind in ((create, "create"), (delete, "delete")):
        f.set_floor("edit → turn", edits)
        f.set_samples(times[kind])
        f.note = note
        if missed[kind] or not f.samples:
            out.append(f.wrong(f"{missed[kind]} of {samples} samples did not reach the turn within {WAIT_S:.0f} s"))
        else:
            out.append(f.finish())
    return out


FIGURES: dict[str, Callable[[Context], Any]] = {"new-folder": fig_new_folder}
