"""The editors name no agent: their pickers, completion and messages take the agents from the server
(``contextCompanion.listAgents``) or the CLI (``context-companion agents --json``), so a new agent needs a server
release, never an editor release."""

from __future__ import annotations

import re
from pathlib import Path

EDITORS = Path(__file__).resolve().parents[2] / "editors"
SOURCES = (
    (EDITORS / "vscode" / "src", ("*.ts",)),
    (EDITORS / "neovim" / "lua", ("*.lua",)),
    (EDITORS / "neovim" / "plugin", ("*.lua", "*.vim")),
)
# The agents with hooks, by the ids and names a hard-coded list would hold (``qwen`` also catches QWEN.md and
# qwen-code, ``opencode`` OpenCode's id and name).
AGENT_NAMES = re.compile(r"qwen|opencode|copilot-cli|claude-code|gemini-cli|cline-cli", re.IGNORECASE)
# Not an agent id: the VS Code marketplace id of Anthropic's own extension, which the Claude Code IDE integration
# (gemini.ts) looks for to leave its terminals' variables to it. It names an extension, which no list of ours can
# hold for the editor.
NOT_AGENT_IDS = ("anthropic.claude-code",)


def editor_sources() -> list[Path]:
    files = sorted({f for folder, patterns in SOURCES for p in patterns for f in folder.rglob(p)})
    assert len(files) > 20, f"the editors' sources moved: found only {len(files)} files under {EDITORS}"
    return files


def named_agents(text: str) -> list[str]:
    for allowed in NOT_AGENT_IDS:
        text = re.sub(re.escape(allowed), "", text, flags=re.IGNORECASE)
    return AGENT_NAMES.findall(text)


def test_the_pattern_finds_a_hard_coded_agent_and_skips_the_extension_id() -> None:
    assert named_agents("{ id: 'qwen-code', detail: 'hooks in .qwen/settings.json' }") == ["qwen", "qwen"]
    assert named_agents("M.MEMORY_FILES = { 'AGENTS.md', 'QWEN.md' }") == ["QWEN"]
    assert named_agents("'claude-code', 'Gemini-CLI', 'copilot-cli', 'OpenCode'") == [
        "claude-code",
        "Gemini-CLI",
        "copilot-cli",
        "OpenCode",
    ]
    assert named_agents("export const CLAUDE_CODE_EXTENSION = 'anthropic.claude-code';") == []


def test_the_editors_sources_name_no_agent() -> None:
    found = []
    for path in editor_sources():
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if named_agents(line):
                found.append(f"{path.relative_to(EDITORS)}:{number}: {line.strip()}")
    assert found == [], "take the agents from contextCompanion.listAgents instead:\n" + "\n".join(found)
