"""initializationOptions and the editor's ``workspace/configuration`` answer are one layer: the
answer merges over the options key by key, and an empty (``{}``), ``null`` or partial answer
erases nothing the options set (docs/configuration.md). Each case starts the real server with the
same options, answers the pull with one shape, and checks what the user gets from every table the
options set: the memory files read, where the environment goes, the profile's approval mode,
the turn context and the Claude Code integration (its lock file)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from lsp_harness import Harness, plain

NOTES = "notes-marker-7c1"
AGENTS = "agents-marker-3b9"
PLANNING = "# Planning Mode"

INIT: dict[str, Any] = {
    "memory": {"fileNames": ["NOTES.md"], "readVendorGlobals": False},
    "environment": {"placement": "systemInstruction"},
    "profile": {"approvalMode": "plan"},
    "context": {"enabled": False},
    "companion": {"claudeCode": {"enabled": True}, "geminiCli": {"enabled": False}},
}

# A partial table for each table the options set: another key of the same table, so the option's
# own key must survive the merge.
PARTIAL: dict[str, Any] = {
    "memory": {"debounceMs": 60},
    "environment": {"maxItems": 150},
    "profile": {"interactive": False},
    "context": {"maxOpenFiles": 3},
    "companion": {"geminiCli": {"port": 0}, "claudeCode": {}},
}

ANSWERS: list[tuple[str, Any]] = [
    ("empty answer", {}),
    ("null answer", None),
    ("partial answer", {"server": {"maxSessions": 32}}),
    *[(f"{table}: {{}}", {table: {}}) for table in INIT],
    *[(f"{table}: null", {table: None}) for table in INIT],
    *[(f"{table}: partial", {table: PARTIAL[table]}) for table in INIT],
    ("every table partial", PARTIAL),
    (
        "the options' keys set to null",
        {"companion": {"claudeCode": {"enabled": None}}, "profile": {"approvalMode": None}},
    ),
]


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


async def _pulled(start: Any, workspace: Path, tmp_path: Path, answer: Any) -> tuple[Harness, list[Any]]:
    _write(workspace / "NOTES.md", f"# Notes\n\n{NOTES}\n")
    _write(workspace / "AGENTS.md", f"# Agents\n\n{AGENTS}\n")
    claude_dir = tmp_path / "claude-config"
    h: Harness = await start(
        workspace,
        settings=INIT,
        configuration=answer,
        answers_configuration=True,
        env={"CLAUDE_CONFIG_DIR": str(claude_dir)},
    )
    started: list[Any] = []

    @h.client.feature("contextCompanion/companionStarted")
    def _started(params: Any) -> None:
        started.append(plain(params))

    # The pull runs after `initialized`; a command waits for a settings swap under way, and the
    # Claude Code integration is reconciled right after it.
    await h.command("contextCompanion.showMemory", {})
    await _settle()
    return h, started


async def _settle() -> None:
    await asyncio.sleep(0.5)


def _locks(tmp_path: Path) -> list[Path]:
    ide = tmp_path / "claude-config" / "ide"
    return sorted(ide.glob("*.lock")) if ide.is_dir() else []


@pytest.mark.parametrize(("label", "answer"), ANSWERS, ids=[label for label, _ in ANSWERS])
async def test_an_answer_erases_nothing_the_initialization_options_set(
    start: Any, workspace: Path, tmp_path: Path, label: str, answer: Any
) -> None:
    h, started = await _pulled(start, workspace, tmp_path, answer)
    text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert NOTES in text and AGENTS not in text, "memory.fileNames from the options was dropped"
    assert PLANNING in text, "profile.approvalMode from the options was dropped"
    assert "# Environment" in text, "environment.placement from the options was dropped"
    turn = await h.command("contextCompanion.getTurnContext", {})
    assert turn["kind"] == "none", f"context.enabled = false from the options was dropped: {turn}"
    assert len(_locks(tmp_path)) == 1, "companion.claudeCode.enabled from the options was dropped (no lock file)"
    assert all(p.get("claudeCode", "absent") is not None for p in started), started
    assert h.client.messages == [], [m.message for m in h.client.messages]


async def test_an_answer_overrides_the_keys_it_sets(start: Any, workspace: Path, tmp_path: Path) -> None:
    """The same layer, other way round: a key the answer sets wins over the option (the test
    above would pass if answers were ignored)."""
    answer = {"companion": {"claudeCode": {"enabled": False}}, "memory": {"fileNames": ["AGENTS.md"]}}
    h, _ = await _pulled(start, workspace, tmp_path, answer)
    text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert AGENTS in text and NOTES not in text
    assert PLANNING in text  # an option the answer did not touch
    for _ in range(300):  # the integration started by the boot stops once the answer is applied
        if _locks(tmp_path) == []:
            break
        await asyncio.sleep(0.05)
    assert _locks(tmp_path) == [], "companion.claudeCode.enabled = false from the answer was not applied"
    assert json.dumps(h.client.messages, default=str) == "[]"


async def test_an_answer_after_rejected_initialization_options_applies(
    start: Any, workspace: Path, tmp_path: Path
) -> None:
    """Options the server rejected at start (a misspelt key) are not merged under every later answer,
    or a corrected answer would be rejected for the life of the process."""
    _write(workspace / "NOTES.md", f"# Notes\n\n{NOTES}\n")
    _write(workspace / "AGENTS.md", f"# Agents\n\n{AGENTS}\n")
    h: Harness = await start(
        workspace,
        settings={"memory": {"fileNamez": ["NOTES.md"]}},
        configuration={"memory": {"fileNames": ["NOTES.md"]}},
        answers_configuration=True,
    )
    await h.command("contextCompanion.showMemory", {})
    await _settle()
    text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert NOTES in text and AGENTS not in text, "the corrected answer was not applied"
    shown = [m.message for m in h.client.messages]
    assert len(shown) == 1 and "memory.fileNamez" in shown[0], shown  # the bad options, reported once


async def test_initialization_options_outlive_a_broken_settings_file(
    start: Any, workspace: Path, config_dir: Path
) -> None:
    """A bad user settings file at start is that file's fault, not the options': once it is mended,
    the next answer merges over the options again (they were kept, not taken as rejected)."""
    from lsprotocol import types as t

    _write(workspace / "NOTES.md", f"# Notes\n\n{NOTES}\n")
    _write(workspace / "AGENTS.md", f"# Agents\n\n{AGENTS}\n")
    user_file = config_dir / "config.toml"
    _write(user_file, "bogusKey = 1\n")
    h: Harness = await start(
        workspace, settings={"memory": {"fileNames": ["NOTES.md"]}}, configuration={}, answers_configuration=True
    )
    await h.command("contextCompanion.showMemory", {})
    await _settle()
    assert any("bogusKey" in m.message for m in h.client.messages)
    user_file.write_text("", encoding="utf-8")  # mended
    h.client.workspace_did_change_configuration(t.DidChangeConfigurationParams(settings=None))
    await _settle()
    text = (await h.command("contextCompanion.getSystemInstruction", {}))["text"]
    assert NOTES in text and AGENTS not in text, "the initialization options were lost"
