"""What each agent loads, from its public documentation: one data table per agent.

Each table says which memory file names the agent reads and where (folders above the workspace,
sub-folders), its global files, the rule formats it reads and any rule of its own (Codex reads
one file per folder, Zed only the first file of a list, Cline reads other tools' rules only
without its own). :mod:`.explain` applies a table to the files we found; no agent has a code
branch of its own. Checked against each page as of 2026-11; the six agents with hooks (Claude Code,
Gemini CLI, Codex, GitHub Copilot CLI, OpenCode, Qwen Code) also against the real executables
(``checked``: the version, recorded requests).

How an agent keeps what it loads (``keeps``) decides what ``context-companion hook`` delivers: a file
it reads and *tracks* (re-reads on change) is never delivered; one it reads *once at start* is
delivered only when it changes; one it does not read, or reads only just in time (a sub-folder file
when its own tools touch that folder), is delivered while it applies.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from ..agents import cline_cli, factory_droid
from .formats import RuleFormat

AgentId = Literal[
    "claude-code",
    "codex",
    "gemini-cli",
    "cursor",
    "copilot",
    "windsurf",
    "cline",
    "continue",
    "kiro",
    "zed",
    "vscode",
    "copilot-cli",
    "opencode",
    "qwen-code",
    "factory-droid",
    "cline-cli",
    "context-companion",
]
Subfolders = Literal["never", "when-open", "always"]
Keeps = Literal["tracked", "start", ""]  # re-read on change, read once at start, not known (no hooks)


@dataclass(frozen=True, slots=True)
class AgentRules:
    id: str
    name: str
    docs: tuple[str, ...]
    names: tuple[str, ...] = ()  # project memory file names, in the agent's order
    upward: bool = False  # also in folders above the workspace folder (up to the repository root)
    subfolders: Subfolders = "never"  # memory files in sub-folders: never, while a file there is open, always
    root_only: tuple[str, ...] = ()  # names read only in the workspace folder itself
    one_per_folder: bool = False  # the first name of ``names`` found in a folder, no other
    fallback_names: bool = False  # names added to memory.fileNames count as extra names (after ``names``)
    globals: tuple[str, ...] = ()  # global memory files ("~/..."), in order
    rules: tuple[RuleFormat, ...] = ()  # rule formats read, in order
    fallback_rules: tuple[RuleFormat, ...] = ()  # read only when none of ``rules`` exists
    first_of: tuple[str, ...] = ()  # only the first of these files in the workspace folder
    above_root: bool = False  # ``names`` also in every folder above the repository root, up to /
    above_root_depth: int = 0  # with ``above_root``: only this many folders above the root (0: up to /)
    stand_in: tuple[str, str] | None = None  # (name, instead of): read at start when no ``instead of`` is found
    expands_imports: bool = False  # inlines ``@path`` imports; otherwise the line is read as written
    expands_imports_in: tuple[str, ...] = ()  # only these memory file names' imports are expanded (empty: every file's)
    project_max_bytes: int = 0  # the project memory files together are cut at this many bytes (0: no cut)
    keeps: Keeps = ""  # how the files it loads at start stay current (see the module docstring)
    checked: str = ""  # the version its loading was checked against with the real executable
    untrusted: str = ""  # why it reads none of the project's files here (a folder it does not trust), or ""
    # Rule formats loaded only for files attached to the request (VS Code: the active file, when it has a selection).
    attached_rules: tuple[RuleFormat, ...] = ()
    # Rule formats it loads whole, every file, whatever its frontmatter says (Cline CLI ignores ``paths``).
    whole_rules: tuple[RuleFormat, ...] = ()


# https://docs.anthropic.com/en/docs/claude-code/memory (CLAUDE.md and CLAUDE.local.md in every folder
# up to /, sub-folder CLAUDE.md when Claude reads files there, .claude/rules with `paths`,
# ~/.claude/CLAUDE.md and ~/.claude/rules). Measured with 2.1.331: an edit of CLAUDE.md or of a file it
# imports arrives in the next request ("changed on disk"); with no CLAUDE.md it reads AGENTS.md at start
# and never sees an edit of it; with one, AGENTS.md is not read unless imported.
CLAUDE_CODE = AgentRules(
    "claude-code",
    "Claude Code",
    ("https://docs.anthropic.com/en/docs/claude-code/memory",),
    names=("CLAUDE.md", "CLAUDE.local.md"),
    upward=True,
    subfolders="when-open",
    globals=("~/.claude/CLAUDE.md",),
    rules=("claude",),
    above_root=True,
    stand_in=("AGENTS.md", "CLAUDE.md"),
    expands_imports=True,
    keeps="tracked",
    checked="2.1.331",
)

# https://developers.openai.com/codex/guides/agents-md and
# https://github.com/openai/codex/blob/main/docs/agents_md.md (one file per folder from the repository
# root down to the working directory: AGENTS.override.md, else AGENTS.md, else
# project_doc_fallback_filenames; ~/.codex/AGENTS.override.md or ~/.codex/AGENTS.md globally; the
# project files together cut at project_doc_max_bytes, 32 KiB). Measured with 0.169.0: read at start and
# kept for the session (an edit is seen after /new), `@` lines not expanded, CLAUDE.md never read.
CODEX = AgentRules(
    "codex",
    "Codex",
    (
        "https://developers.openai.com/codex/guides/agents-md",
        "https://github.com/openai/codex/blob/main/docs/agents_md.md",
    ),
    names=("AGENTS.override.md", "AGENTS.md"),
    upward=True,
    one_per_folder=True,
    fallback_names=True,
    globals=("~/.codex/AGENTS.override.md", "~/.codex/AGENTS.md"),
    project_max_bytes=32 * 1024,
    keeps="start",
    checked="0.169.0",
)

# https://github.com/google-gemini/gemini-cli/blob/main/docs/cli/gemini-md.md (~/.gemini/GEMINI.md, then
# GEMINI.md from the working directory up to the project root; a sub-folder's GEMINI.md just in time,
# when a tool touches a file there; other names with `context.fileName`). Measured with 0.61.0: project
# memory is frozen into the chat's first user turn (an edit is seen after /clear only), `@` imports expanded.
GEMINI_CLI = AgentRules(
    "gemini-cli",
    "Gemini CLI",
    ("https://github.com/google-gemini/gemini-cli/blob/main/docs/cli/gemini-md.md",),
    names=("GEMINI.md",),
    upward=True,
    subfolders="when-open",
    globals=("~/.gemini/GEMINI.md",),
    expands_imports=True,
    keeps="start",
    checked="0.61.0",
)

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


# GitHub Copilot CLI, as measured with @github/copilot 1.0.102 against a recording stub: its system message
# carries ~/.copilot/copilot-instructions.md, .github/copilot-instructions.md, then AGENTS.md, CLAUDE.md and
# GEMINI.md of every folder from the working folder up to the repository root, then the .github/instructions
# files with applyTo "**" or none and the .claude/rules files without paths; the instructions and rules for
# other globs are only listed (a table of pattern and path the model may read when it touches such a file).
# Not read: sub-folder memory below the working folder, CLAUDE.local.md, .cursor/rules. The interactive CLI
# reads them at start and keeps them for the session (an edit of AGENTS.md is not seen by its next request).
# It expands the `@` imports of AGENTS.md and CLAUDE.md (each imported file in an <imported_custom_instruction
# source="…"> block after the line, a sub-folder file too), not those of GEMINI.md, .github/copilot-instructions.md
# or .claude/rules; QWEN.md it never reads.
COPILOT_CLI = AgentRules(
    "copilot-cli",
    "GitHub Copilot CLI",
    ("https://docs.github.com/en/copilot/how-tos/copilot-cli/customize-copilot/overview",),
    names=("AGENTS.md", "CLAUDE.md", "GEMINI.md"),
    upward=True,
    globals=("~/.copilot/copilot-instructions.md",),
    rules=("copilot", "copilot-instructions", "claude"),
    expands_imports=True,
    expands_imports_in=("AGENTS.md", "CLAUDE.md"),
    keeps="start",
    checked="1.0.102",
)

# OpenCode, as measured with opencode-ai 1.18.33 (https://opencode.ai/docs/rules): the first of AGENTS.md,
# CLAUDE.md, CONTEXT.md found from the working folder up to the worktree root (every copy of that name on the
# way), ~/.config/opencode/AGENTS.md (else ~/.claude/CLAUDE.md), and a sub-folder's file when its read tool
# reads a file there. It reads them again for every request (an edit of AGENTS.md is in the next request's
# system message). No rule formats of other tools. ``one_per_folder`` approximates "the first name found on
# the way up" (they differ only when folders on that way hold different names).
OPENCODE = AgentRules(
    "opencode",
    "OpenCode",
    ("https://opencode.ai/docs/rules",),
    names=("AGENTS.md", "CLAUDE.md", "CONTEXT.md"),
    upward=True,
    one_per_folder=True,
    subfolders="when-open",
    globals=("~/.config/opencode/AGENTS.md", "~/.claude/CLAUDE.md"),
    keeps="tracked",
    checked="1.18.33",
)

# Qwen Code, as measured with @qwen-code/qwen-code 0.24.4 (its bundled docs: features/memory.md): QWEN.md and
# AGENTS.md (or the names of context.fileName in .qwen/settings.json or ~/.qwen/settings.json) from the working
# folder up to the repository root, ~/.qwen/QWEN.md and ~/.qwen/AGENTS.md, and .qwen/QWEN.local.md at the root,
# with @ imports expanded, in the system message; read at start (a Gemini CLI fork: the session keeps them).
# Not read: sub-folder memory below the working folder, CLAUDE.md, GEMINI.md. Its own rules (read in its shipped
# code, memory/rulesLoader): .qwen/rules/**/*.md at the repository root and ~/.qwen/rules, those without `paths` in
# the system message at start, those with `paths` when its tools touch a matching file. In a folder it does not
# trust (security.folderTrust on) only its global files: agent_settings.for_agent.
QWEN_CODE = AgentRules(
    "qwen-code",
    "Qwen Code",
    ("https://github.com/QwenLM/qwen-code (docs/users/features/memory.md, bundled with the package)",),
    names=("QWEN.md", "AGENTS.md"),
    upward=True,
    globals=("~/.qwen/QWEN.md", "~/.qwen/AGENTS.md"),
    rules=("qwen", "qwen-local"),
    above_root=True,  # measured: the folder just above the repository root too (its walk stops past the root)
    above_root_depth=1,
    expands_imports=True,
    keeps="start",
    checked="0.24.4",
)

# Ourselves: docs/memory.md. Explained from the composition itself, not from a table.
CONTEXT_COMPANION = AgentRules("context-companion", "Context Companion", ("docs/memory.md",))

AGENTS: dict[str, AgentRules] = {
    a.id: a
    for a in (
        CLAUDE_CODE,
        CODEX,
        GEMINI_CLI,
        CURSOR,
        COPILOT,
        WINDSURF,
        CLINE,
        CONTINUE,
        KIRO,
        ZED,
        VSCODE,
        COPILOT_CLI,
        OPENCODE,
        QWEN_CODE,
        factory_droid.rules(),
        cline_cli.rules(),
        CONTEXT_COMPANION,
    )
}
AGENT_IDS: tuple[str, ...] = tuple(AGENTS)
# Agents `context-companion hook` serves (agent_hook.AGENTS, bridges.hook_channel.AGENTS).
HOOK_AGENTS: tuple[str, ...] = (
    "claude-code",
    "gemini-cli",
    "codex",
    "copilot-cli",
    "opencode",
    "qwen-code",
    "factory-droid",
    "cline-cli",
)
# What users type for the agents whose ids are longer than their command's name. ``copilot`` stays the id of
# GitHub Copilot's own table here (explain); hook and setup take it for copilot-cli, the only Copilot they serve.
AGENT_ALIASES: dict[str, str] = {
    "claude": "claude-code",
    "gemini": "gemini-cli",
    "qwen": "qwen-code",
    "droid": "factory-droid",
}


def agent_id(name: str) -> str | None:
    """The agent id ``name`` stands for (an id or an alias, any case), or None."""
    key = name.strip().lower()
    key = AGENT_ALIASES.get(key, key)
    return key if key in AGENTS else None


def known_agents() -> str:
    """The ids, each alias beside its id: for error messages and help."""
    short = {v: f"or {k}" for k, v in AGENT_ALIASES.items()}
    said = {**short, "copilot": COPILOT.name, "copilot-cli": COPILOT_CLI.name}  # two Copilots, two Clines: named apart
    said |= {"cline": "the Cline editor extension", "cline-cli": cline_cli.NAME}
    return ", ".join(f"{a} ({said[a]})" if a in said else a for a in AGENT_IDS)
