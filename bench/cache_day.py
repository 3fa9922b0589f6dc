"""Cache stability over a scripted working day (``python -m bench --only cache-day``).

One agent session on the medium tree, driven through :class:`~context_companion.workspace.companion.Companion`
the way the language server drives it (an event, then ``rebuild_sessions`` as the publisher would
after its debounce; a turn context now and then): open 30 files across 10 folders, 500 edits,
200 cursor moves, create 20 files and 5 folders, delete 5 files, add a second workspace folder,
move the clock past midnight, edit the workspace AGENTS.md once. The same script runs with the
default settings and with the old layout (``environment.placement = "systemInstruction"``,
``memory.onDemandDelivery = "instruction"``).

Reported per settings row: how often the instruction's etag changed (target with the defaults:
exactly 2, the added folder's memory and the AGENTS.md edit), the prefix kept at each change
against the offset of the block that had to change, and the memory delivered per turn.
"""

from __future__ import annotations

import os
import shutil
import statistics
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from .generate import Manifest
from .ours import editor_settings
from .report import INFO, MISS, PASS, Figure, Target

OLD = {"environment": {"placement": "systemInstruction"}, "memory": {"onDemandDelivery": "instruction"}}
DAY = date(2026, 11, 21)
SCRATCH = "cache-day-scratch"  # everything the script creates lives under this folder of the tree


@dataclass
class Change:
    step: str
    chars_kept: int
    percent: float
    expected_offset: int | None  # offset of the block that had to change; None: no change was expected


@dataclass
class Day:
    changes: list[Change] = field(default_factory=list)
    turn_tokens: list[int] = field(default_factory=list)
    turns: int = 0


def _merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for k, v in extra.items():
        out[k] = _merge(out.get(k, {}), v) if isinstance(v, dict) else v
    return out


def _files_to_open(root: Path, man: Manifest) -> list[Path]:
    """3 files in each of 10 folders holding a nested memory file (so opening them activates it)."""
    picked: list[Path] = []
    dirs = sorted({os.path.dirname(p) for p in man.memory_expected if "/" in p and not p.startswith(".")})
    for d in dirs:
        files = sorted(
            e.path
            for e in os.scandir(root / d)
            if e.is_file() and not e.name.endswith(".md") and e.name != ".gitignore"
        )[:3]
        if len(files) == 3:
            picked += [Path(f) for f in files]
        if len(picked) == 30:
            break
    return picked


def run_day(root: Path, man: Manifest, settings_data: dict[str, Any], second: Path, log: Callable[[str], None]) -> Day:
    from context_companion.workspace.companion import Companion
    from context_companion.workspace.snapshot import WorkspaceSnapshot

    today = [DAY]
    snapshot = WorkspaceSnapshot.resolve([root], editor_settings(settings_data))
    companion = Companion(snapshot, today=lambda: today[0])
    companion.load()
    day = Day()
    session = "bench"
    companion.start_session(session)
    texts: dict[str, str] = {}

    def settle(step: str, expected_label: str | None = None) -> None:
        """What the publisher does after the debounce: rebuild, record each etag change."""
        for changed in companion.rebuild_sessions():
            if not changed.applied:
                continue
            text = changed.instruction.text
            prefix = changed.prefix_stable or {"chars": 0, "percent": 0.0}
            offset = None
            if expected_label is not None:
                # the first block of that file (or, for "<folder>/", of that folder)
                marker = f"--- Context from: {expected_label}"
                offset = text.index(marker) if marker in text else 0
                if text[:offset].endswith("\n\n"):
                    offset -= 2  # the blank line that joins the block belongs to it
            day.changes.append(Change(step, int(prefix["chars"]), float(prefix["percent"]), offset))

    def turn() -> None:
        t = companion.turn_context(session, texts)
        day.turns += 1
        day.turn_tokens.append(sum(int(u["tokens"]) for u in t.memory_updates))

    def files_changed(paths: list[Path]) -> None:
        relevant = {str(p) for p in paths if companion.memory.is_relevant_path(p)}
        if relevant:
            companion.apply_file_changes(relevant)

    opened = _files_to_open(root, man)
    scratch = root / SCRATCH
    agents = root / "AGENTS.md"
    original = agents.read_bytes()
    originals = {path: path.read_bytes() for path in opened}
    try:
        turn()
        for i, path in enumerate(opened):  # 30 opens, the last opened is active
            uri = path.as_uri()
            texts[uri] = path.read_text(encoding="utf-8")
            companion.did_open(uri)
            companion.did_change_cursor(uri, _pos(0, 0), [])
            settle("open")
            if i % 3 == 2:
                turn()
        for i in range(500):  # edits of open documents (the editor's buffers; saved every 10th)
            path = opened[i % len(opened)]
            uri = path.as_uri()
            texts[uri] = texts[uri] + f"# edit {i}\n"
            if i % 10 == 9:
                path.write_text(texts[uri], encoding="utf-8")
                files_changed([path])
                settle("edit")
            if i % 25 == 24:
                turn()
        for i in range(200):  # cursor moves, switching file every 20th
            path = opened[(i // 20) % len(opened)]
            if companion.did_change_cursor(path.as_uri(), _pos(i % 5, i % 7), []):
                settle("cursor")
            if i % 20 == 19:
                turn()
        scratch.mkdir()
        files_changed([scratch])
        for i in range(5):
            folder = scratch / f"new_folder_{i}"
            folder.mkdir()
            files_changed([folder])
            settle("new folder")
        created = []
        for i in range(20):
            new = (opened[i].parent if i < 10 else scratch / f"new_folder_{i % 5}") / f"cache_day_new_{i}.py"
            new.write_text(f"x = {i}\n", encoding="utf-8")
            created.append(new)
            files_changed([new])
            settle("new file")
        turn()
        for new in created[:5]:
            new.unlink()
            files_changed([new])
            settle("deleted file")
        turn()
        snap = companion.snapshot.with_folders([root, second])
        companion.apply(companion.prepare(snap))
        settle("folder added", f"{second.name}/")
        turn()
        today[0] = DAY + timedelta(days=1)
        settle("midnight")
        turn()
        agents.write_bytes(original + b"\n- One more rule, added in the afternoon.\n")
        files_changed([agents])
        settle("AGENTS.md edited", "AGENTS.md ---")
        turn()
    finally:
        agents.write_bytes(original)
        for new in (p.parent / f"cache_day_new_{i}.py" for i, p in enumerate(opened[:10])):
            new.unlink(missing_ok=True)
        shutil.rmtree(scratch, ignore_errors=True)
        for path, data in originals.items():  # the saved edits
            path.write_bytes(data)
    log(f"  cache-day: {len(day.changes)} etag change(s), {day.turns} turns")
    return day


def _pos(line: int, character: int) -> Any:
    from context_companion.context.state import RawPosition

    return RawPosition(line, character)


def second_folder(work: Path) -> Path:
    """A small project of its own (its own .git: the bench's work dir lies inside our repository,
    whose AGENTS.md would otherwise join its workspace tier)."""
    other = Path(tempfile.gettempdir()) / f"cc-bench-cache-day-{os.getuid()}" / "billing"
    (other / ".git").mkdir(parents=True, exist_ok=True)
    (other / "AGENTS.md").write_text("# Billing\n\nAmounts are integers in cents.\n", encoding="utf-8")
    (other / "invoice.py").write_text("def total(items):\n    return sum(items)\n", encoding="utf-8")
    return other


def figures(ctx: Any) -> list[Figure]:
    name = "medium" if "medium" in ctx.trees else next(iter(ctx.trees))
    root, man = ctx.trees[name]
    second = second_folder(ctx.work)
    out: list[Figure] = []
    for row, extra in (("new", {}), ("old", OLD)):
        day = run_day(root, man, _merge(ctx.settings_data, extra), second, ctx.log)
        label = "defaults" if row == "new" else "old layout (systemInstruction, onDemandDelivery=instruction)"
        changes = Figure(
            f"cache_day.etag_changes.{row}", "cache-day", f"etag changes in a day, {label}", "×", tree=name
        )
        changes.value = float(len(day.changes))
        steps = ", ".join(f"{c.step}" for c in day.changes[:12]) + (" …" if len(day.changes) > 12 else "")
        changes.note = f"at: {steps}" if steps else "none"
        kept = Figure(
            f"cache_day.prefix_kept.{row}", "cache-day", f"prefix kept at each change, {label}", "chars", tree=name
        )
        if day.changes:
            kept.set_samples([float(c.chars_kept) for c in day.changes])
            kept.value = float(min(c.chars_kept for c in day.changes))
        detail = "; ".join(
            f"{c.step}: {c.chars_kept} ({c.percent:.1f} %)"
            + (f" ≥ block at {c.expected_offset}" if c.expected_offset is not None else "")
            for c in day.changes[:8]
        )
        kept.note = f"min shown; {detail}" + (" …" if len(day.changes) > 8 else "")
        delivered = Figure(
            f"cache_day.memory_per_turn.{row}", "cache-day", f"memory delivered per turn, {label}", "tokens", tree=name
        )
        delivered.set_samples([float(t) for t in day.turn_tokens])
        delivered.value = statistics.mean(day.turn_tokens) if day.turn_tokens else 0.0
        nonzero = [t for t in day.turn_tokens if t]
        delivered.note = (
            f"mean over {day.turns} turns; {len(nonzero)} turns carried memory, {sum(nonzero)} tokens in all"
        )
        if row == "new":
            expected = [c for c in day.changes if c.expected_offset is not None]
            ok_count = len(day.changes) == 2 and len(expected) == 2
            changes.target = Target("abs_le", 2, "exactly 2")  # the verdict is set here, not by check()
            changes.verdict = PASS if ok_count else MISS
            changes.note += " (target: exactly 2 — the added folder's memory and the AGENTS.md edit)"
            ok_prefix = all(c.expected_offset is not None and c.chars_kept >= c.expected_offset for c in day.changes)
            kept.target = Target("abs_le", 0, "≥ block offset")
            kept.verdict = PASS if ok_prefix and day.changes else MISS
            kept.note += " (target: ≥ the offset of the changed block)"
        else:
            changes.verdict = kept.verdict = INFO
        delivered.verdict = INFO
        out += [changes, kept, delivered]
    return out
