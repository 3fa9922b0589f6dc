"""What each agent loads, from its public documentation: one data table per agent.

Each table (:class:`~..agents.model.AgentRules`) says which memory file names the agent reads and where (folders
above the workspace, sub-folders), its global files, the rule formats it reads and any rule of its own (one file
per folder, only the first file of a list, other tools' rules only without its own). :mod:`.explain` applies a table
to the files we found; no agent has a code branch of its own. The agents with hooks keep their table in their own
module (:mod:`..agents`, ``rules()``: checked against the real executables too); this module holds the tables of
the editors and extensions without hooks, checked against each page as of 2026-11, and assembles :data:`AGENTS`
from both.

How an agent keeps what it loads (``keeps``) decides what ``context-companion hook`` delivers: see
:class:`~..agents.model.AgentRules`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Literal

from ..agents import registry
from ..agents.model import AgentRules, Keeps, Subfolders

__all__ = ["AGENTS", "AGENT_IDS", "AgentId", "AgentRules", "Keeps", "Subfolders", "agent_id", "known_agents"]

# https://cursor.com/docs/context/rules (.cursor/rules: .mdc and .md files, sub-folders of it to
# organise them; .cursor/rules directories in sub-directories attach while a file below them is
# referenced; legacy .cursorrules; AGENTS.md at the root and in sub-folders)
CURSOR = AgentRules(
    "cursor",
    "Cursor",
    ("https://cursor.com/docs/context/rules",),
    names=("AGENTS.md",),
    subfolders="when-open",
    rules=("cursor", "cursor-md", "cursor-legacy"),
)

# https://docs.github.com/en/copilot/how-tos/configure-custom-instructions/add-repository-instructions
# (.github/copilot-instructions.md, .github/instructions/*.instructions.md with applyTo and excludeAgent,
# AGENTS.md files (the nearest wins), or one CLAUDE.md or GEMINI.md at the repository root)
COPILOT = AgentRules(
    "copilot",
    "GitHub Copilot in the editor",
    ("https://docs.github.com/en/copilot/how-tos/configure-custom-instructions/add-repository-instructions",),
    names=("AGENTS.md", "CLAUDE.md", "GEMINI.md"),
    subfolders="when-open",
    root_only=("CLAUDE.md", "GEMINI.md"),
    rules=("copilot", "copilot-instructions"),
)

# https://docs.windsurf.com/windsurf/cascade/memories#rules (.windsurf/rules with trigger, also in
# sub-directories; legacy .windsurfrules) and https://docs.windsurf.com/windsurf/cascade/agents-md
# (AGENTS.md: the root one always on, a sub-folder one as a glob rule for that folder)
WINDSURF = AgentRules(
    "windsurf",
    "Windsurf",
    (
        "https://docs.windsurf.com/windsurf/cascade/memories#rules",
        "https://docs.windsurf.com/windsurf/cascade/agents-md",
    ),
    names=("AGENTS.md",),
    subfolders="when-open",
    rules=("windsurf", "windsurf-legacy"),
)

# https://docs.cline.bot/features/cline-rules/overview (.clinerules folder or file, `paths` conditionals;
# .cursor/rules (its .mdc files only), .cursorrules, .windsurf/rules, .windsurfrules only without
# .clinerules; AGENTS.md searched recursively)
CLINE = AgentRules(
    "cline",
    "Cline",
    (
        "https://docs.cline.bot/features/cline-rules/overview",
        "https://docs.cline.bot/features/cline-rules/conditional-rules",
    ),
    names=("AGENTS.md",),
    subfolders="always",
    rules=("cline",),
    fallback_rules=("cursor", "cursor-legacy", "windsurf", "windsurf-legacy"),
)

# https://docs.continue.dev/customize/deep-dives/rules (.continue/rules with name, globs, regex,
# alwaysApply) and the project-root AGENTS.md it reads as a rule
CONTINUE = AgentRules(
    "continue",
    "Continue",
    ("https://docs.continue.dev/customize/deep-dives/rules",),
    names=("AGENTS.md",),
    root_only=("AGENTS.md",),
    rules=("continue",),
)

# https://kiro.dev/docs/steering/ (.kiro/steering and ~/.kiro/steering with inclusion and
# fileMatchPattern; AGENTS.md at the workspace root, always included)
KIRO = AgentRules(
    "kiro",
    "Kiro",
    ("https://kiro.dev/docs/steering/",),
    names=("AGENTS.md",),
    root_only=("AGENTS.md",),
    rules=("kiro",),
)

# https://zed.dev/docs/ai/rules (only the first file of this list at the project root)
ZED = AgentRules(
    "zed",
    "Zed",
    ("https://zed.dev/docs/ai/rules",),
    first_of=(
        ".rules",
        ".cursorrules",
        ".windsurfrules",
        ".clinerules",
        ".github/copilot-instructions.md",
        "AGENT.md",
        "AGENTS.md",
        "CLAUDE.md",
        "GEMINI.md",
    ),
)

# VS Code's own chat (GitHub Copilot Chat built in), as measured with VS Code 1.139.1 (code-server 4.139.1,
# Copilot Chat 0.67.0) and its default settings: the request's system message carries the root AGENTS.md
# (chat.useAgentsMdFile), CLAUDE.md and CLAUDE.local.md at the root and ~/.claude/CLAUDE.md
# (chat.useClaudeMdFile) and .github/copilot-instructions.md (github.copilot.chat.codeGeneration.
# useInstructionFiles); sub-folder AGENTS.md only with chat.useNestedAgentsMdFiles (off); GEMINI.md never.
# .github/instructions and .claude/rules files (applyTo; `paths` for Claude's) are attached only for files
# attached to the chat request: the active file once it has a selection (VS Code then attaches the selection
# and the file), never for a bare cursor. vscode_rules() applies the user's settings.
VSCODE = AgentRules(
    "vscode",
    "VS Code chat",
    ("https://code.visualstudio.com/docs/copilot/customization/custom-instructions",),
    names=("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md"),
    root_only=("AGENTS.md", "CLAUDE.md", "CLAUDE.local.md"),
    globals=("~/.claude/CLAUDE.md",),
    rules=("copilot",),
    keeps="tracked",  # re-read on every request (1.139.1, measured): a Claude Code hook VS Code runs never sends them
    attached_rules=("copilot-instructions", "claude"),
)


def vscode_rules(
    *,
    agents_md: bool = True,
    nested_agents_md: bool = False,
    claude_md: bool = True,
    instruction_files: bool = True,
) -> AgentRules:
    """:data:`VSCODE` for the user's VS Code settings (``chat.useAgentsMdFile``, ``chat.useNestedAgentsMdFiles``,
    ``chat.useClaudeMdFile``, ``github.copilot.chat.codeGeneration.useInstructionFiles``)."""
    names = (("AGENTS.md",) if agents_md else ()) + (("CLAUDE.md", "CLAUDE.local.md") if claude_md else ())
    root_only = tuple(n for n in names if not (n == "AGENTS.md" and nested_agents_md))
    return replace(
        VSCODE,
        names=names,
        root_only=root_only,
        subfolders="always" if agents_md and nested_agents_md else "never",
        globals=VSCODE.globals if claude_md else (),
        rules=VSCODE.rules if instruction_files else (),
    )


# Ourselves: docs/memory.md. Explained from the composition itself, not from a table.
CONTEXT_COMPANION = AgentRules("context-companion", "Context Companion", ("docs/memory.md",))


# Every agent's table: the agents with hooks first (the registry's order), then the editors', then ours.
AGENTS: dict[str, AgentRules] = {
    a.id: a
    for a in (
        *(registry.load(agent).rules() for agent in registry.HOOK_AGENTS),
        CURSOR,
        COPILOT,
        WINDSURF,
        CLINE,
        CONTINUE,
        KIRO,
        ZED,
        VSCODE,
        CONTEXT_COMPANION,
    )
}
AGENT_IDS: tuple[str, ...] = tuple(AGENTS)
# How an editor's table is named beside the agent with hooks that takes its id as a short name.
_SAID_APART = {"cline": "the Cline editor extension"}
if TYPE_CHECKING:
    AgentId = str
else:
    AgentId = Literal[AGENT_IDS]  # what explainMemory takes: validated, its error lists the ids
# Agents `context-companion hook` serves (the registry's).
HOOK_AGENTS: tuple[str, ...] = tuple(registry.HOOK_AGENTS)
# What users type for the agents whose ids are longer than their command's name: the registry's short names, but
# ``copilot`` stays the id of GitHub Copilot's own table here (explain); hook and setup take it for the Copilot
# with hooks.
AGENT_ALIASES: dict[str, str] = {k: v for k, v in registry.SHORT_NAMES.items() if k not in AGENTS}


def agent_id(name: str) -> str | None:
    """The agent id ``name`` stands for (an id or an alias, any case), or None."""
    key = name.strip().lower()
    key = AGENT_ALIASES.get(key, key)
    return key if key in AGENTS else None


def known_agents() -> str:
    """The ids, each alias beside its id: for error messages and help. An editor's table whose id is the short name
    of an agent with hooks (GitHub Copilot's, Cline's) is named apart from that agent."""
    short = {v: f"or {k}" for k, v in AGENT_ALIASES.items()}
    apart = {
        a: _SAID_APART.get(a, AGENTS[a].name)
        for k, full in registry.SHORT_NAMES.items()
        if k in AGENTS
        for a in (k, full)
    }
    said = {**short, **apart}
    return ", ".join(f"{a} ({said[a]})" if a in said else a for a in AGENT_IDS)
