"""Real editor save styles and bursts through the real server: each gives exactly one
``contextCompanion/systemInstructionChanged`` carrying the new text (no timing asserted).

Saves made of one event (an atomic rename) run with the shipped ``memory.debounceMs``. Multi-write
bursts run with a wide quiet window (``BURST_WINDOW_MS``) and the writer pauses ``PAUSE`` between its
steps: a watcher that pushed on the first event (or per file) gives several pushes here, one that
waits for quiet gives one, and a loaded machine cannot split a burst by pausing the writer. That the
default window holds real bursts is the ``save-burst`` benchmark figure (docs/performance.md).
"""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from context_companion.settings import Settings

NO_ENV = {"environment": {"placement": "off"}}
BURST_WINDOW_MS = 1000
PAUSE = 0.03  # seconds between the steps of a burst: far less than the window, far more than a thread switch
AFTER = BURST_WINDOW_MS / 1000 + 1.0  # waited after the first push: a second push for the burst would be here
RULES = 50


def debounce(ms: int) -> dict[str, str]:
    return {"CONTEXT_COMPANION_MEMORY__DEBOUNCE_MS": str(ms)}


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


async def one_push(h, before: int) -> dict:
    """The single push of a burst that started with ``before`` pushes received: waits for it, then
    long enough to see any second one."""
    await h.wait_push(before + 1)
    await asyncio.sleep(AFTER)
    assert len(h.pushes) == before + 1, f"expected one push for the burst, got {h.pushes[before:]}"
    return h.pushes[-1]


async def instruction(h) -> dict:
    return await h.command("contextCompanion.getSystemInstruction", {})


async def test_one_atomic_save_gives_exactly_one_push_with_the_new_text(start, workspace):
    agents = write(workspace / "AGENTS.md", "Indent with tabs.\n")
    h = await start(workspace, settings=NO_ENV, env=debounce(Settings().memory.debounce_ms))
    first = await instruction(h)
    before = len(h.pushes)
    tmp = workspace / ".AGENTS.md.tmp-4711"  # what editors do: write a temp file, rename it onto the target
    tmp.write_text("Indent with four spaces.\n", encoding="utf-8")
    os.replace(tmp, agents)
    push = await one_push(h, before)
    assert push["reason"] == "memoryChanged" and push["changedFiles"] == ["AGENTS.md"]
    now = await instruction(h)
    assert push["etag"] == now["etag"] != first["etag"]
    assert "Indent with four spaces." in now["text"] and "Indent with tabs." not in now["text"]


async def test_a_double_write_gives_one_push(start, workspace):
    agents = write(workspace / "AGENTS.md", "Original.\n")
    h = await start(workspace, settings=NO_ENV, env=debounce(BURST_WINDOW_MS))
    await instruction(h)
    before = len(h.pushes)
    agents.write_text("Saved, not yet formatted.\n", encoding="utf-8")  # format-on-save: the editor writes,
    await asyncio.sleep(PAUSE)
    agents.write_text("Saved and formatted.\n", encoding="utf-8")  # then writes the formatted text
    push = await one_push(h, before)
    assert push["changedFiles"] == ["AGENTS.md"]
    now = await instruction(h)
    assert push["etag"] == now["etag"] and "Saved and formatted." in now["text"]
    assert "not yet formatted" not in now["text"]


async def test_a_vim_style_save_gives_one_push(start, workspace):
    agents = write(workspace / "AGENTS.md", "Before vim.\n")
    h = await start(workspace, settings=NO_ENV, env=debounce(BURST_WINDOW_MS))
    await instruction(h)
    before = len(h.pushes)
    backup = workspace / "AGENTS.md~"
    os.rename(agents, backup)  # for a moment there is no AGENTS.md: no push may say it was deleted
    await asyncio.sleep(PAUSE)
    agents.write_text("Written by vim.\n", encoding="utf-8")
    await asyncio.sleep(PAUSE)
    backup.unlink()
    push = await one_push(h, before)
    assert push["changedFiles"] == ["AGENTS.md"]
    now = await instruction(h)
    assert push["etag"] == now["etag"] and "Written by vim." in now["text"]


def rule_paths(workspace: Path) -> list[Path]:
    return [workspace / ".claude" / "rules" / f"rule-{k:02d}.md" for k in range(RULES)]


async def test_fifty_files_in_a_burst_give_one_push_listing_them_all(start, workspace):
    rules = rule_paths(workspace)  # always-on rules (no frontmatter): every one is in the instruction
    for k, path in enumerate(rules):
        write(path, f"Rule {k} version 1.\n")
    h = await start(workspace, settings=NO_ENV, env=debounce(BURST_WINDOW_MS))
    assert "Rule 49 version 1." in (await instruction(h))["text"]
    before = len(h.pushes)
    payloads = [f"Rule {k} version 2.\n".encode() for k in range(RULES)]
    for k, (path, data) in enumerate(zip(rules, payloads, strict=True)):
        path.write_bytes(data)
        if k % 10 == 9:
            await asyncio.sleep(PAUSE)  # five waves of ten files, like a checkout of a large tree
    push = await one_push(h, before)
    assert push["changedFiles"] == sorted(f".claude/rules/rule-{k:02d}.md" for k in range(RULES))
    text = (await instruction(h))["text"]
    assert all(f"Rule {k} version 2." in text for k in range(RULES))
    assert "version 1." not in text


def git(repo: Path, *args: str) -> None:
    identity = ["-c", "user.name=Bench", "-c", "user.email=bench@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", *identity, *args], cwd=repo, check=True, capture_output=True, timeout=60)


async def test_a_git_checkout_of_fifty_memory_files_gives_one_push(start, workspace):
    rules = rule_paths(workspace)
    for k, path in enumerate(rules):
        write(path, f"Rule {k} on main.\n")
    git(workspace, "init", "-q", "-b", "main")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-qm", "main")
    git(workspace, "checkout", "-qb", "topic")
    for k, path in enumerate(rules):
        path.write_text(f"Rule {k} on topic.\n", encoding="utf-8")
    git(workspace, "commit", "-qam", "topic")
    git(workspace, "checkout", "-q", "main")
    h = await start(workspace, settings=NO_ENV, env=debounce(BURST_WINDOW_MS))
    assert "Rule 0 on main." in (await instruction(h))["text"]
    before = len(h.pushes)
    git(workspace, "checkout", "-q", "topic")
    push = await one_push(h, before)
    assert push["changedFiles"] == sorted(f".claude/rules/rule-{k:02d}.md" for k in range(RULES))
    text = (await instruction(h))["text"]
    assert all(f"Rule {k} on topic." in text for k in range(RULES)) and "on main." not in text
