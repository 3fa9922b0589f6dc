"""Every memory and rule file format we read: where it lives, its family, how it activates.

One row per format, in the order rules are rendered. The activation semantics of each format's
frontmatter live in :mod:`.rules` (``parse_rule``); this module only says where files are and
which ``memory.sources`` family turns them off. docs/memory.md has the same table for users.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..agents import registry
from ..agents.model import FormatSpec, RuleFormat

__all__ = ["FORMATS", "FormatSpec", "RuleFormat"]

_AGENT_MODULES = tuple(registry.load(agent) for agent in registry.HOOK_AGENTS)

FORMATS: tuple[FormatSpec, ...] = (
    FormatSpec("context-companion", "context-companion", ".context-companion/rules", "dir"),
    # Cursor: rules are .mdc or .md files, organised in sub-folders of .cursor/rules if one likes;
    # a .cursor/rules directory in a sub-directory applies to the files below that sub-directory.
    # Two rows because other tools read only the .mdc ones (Cline).
    FormatSpec("cursor", "cursor", ".cursor/rules", "dir", (".mdc",), recursive=True, nested=True),
    FormatSpec("cursor-md", "cursor", ".cursor/rules", "dir", (".md",), recursive=True, nested=True),
    FormatSpec("cursor-legacy", "cursor", ".cursorrules", "file", frontmatter=False),
    FormatSpec("copilot", "copilot", ".github/copilot-instructions.md", "file"),
    FormatSpec("copilot-instructions", "copilot", ".github/instructions", "dir", (".instructions.md",), recursive=True),
    FormatSpec("claude", "claude", ".claude/rules", "dir", recursive=True, anchored=True),
    # Windsurf: .windsurf/rules in sub-directories are discovered too.
    FormatSpec("windsurf", "windsurf", ".windsurf/rules", "dir", nested=True),
    FormatSpec("windsurf-legacy", "windsurf", ".windsurfrules", "file", frontmatter=False),
    FormatSpec("cline", "cline", ".clinerules", "either", (".md", ".txt"), anchored=True),
    FormatSpec("continue", "continue", ".continue/rules", "dir"),
    FormatSpec("kiro", "kiro", ".kiro/steering", "dir"),
    FormatSpec("zed", "zed", ".rules", "file", frontmatter=False),
    FormatSpec("agent-md", "zed", "AGENT.md", "file", frontmatter=False),
    FormatSpec("junie", "junie", ".junie/guidelines.md", "file", frontmatter=False),
    FormatSpec("roo", "roo", ".roo/rules", "dir", (".md", ".txt"), recursive=True, frontmatter=False),
    # The formats only one agent with hooks reads: its module's formats(), in the registry's order.
    *(spec for module in _AGENT_MODULES if hasattr(module, "formats") for spec in module.formats()),
)
BY_FORMAT: dict[str, FormatSpec] = {f.format: f for f in FORMATS}
_HEADS = frozenset(f.path.split("/", 1)[0] for f in FORMATS)  # a rule path holds one of these
FORMAT_ORDER: tuple[RuleFormat, ...] = tuple(f.format for f in FORMATS)

# Rule directories under the home directory (user-level rules), with the format they hold.
HOME_RULE_DIRS: tuple[tuple[str, RuleFormat], ...] = (
    (".claude/rules", "claude"),
    (".kiro/steering", "kiro"),
    *(pair for module in _AGENT_MODULES for pair in getattr(module, "HOME_RULE_DIRS", ())),
)

# Memory file names and the family that reads them; names a user adds to memory.fileNames have none.
NAME_FAMILY: dict[str, str] = {
    "AGENTS.md": "agents",
    "AGENTS.override.md": "codex",
    "CLAUDE.md": "claude",
    "CLAUDE.local.md": "claude",
    # Each agent's own names (its module's MEMORY_FILE_NAMES), turned off with its family.
    **{name: module.SOURCE_FAMILY for module in _AGENT_MODULES for name in getattr(module, "MEMORY_FILE_NAMES", ())},
}
CODEX_OVERRIDE = "AGENTS.override.md"
SHADOWS: dict[str, str] = {CODEX_OVERRIDE: "AGENTS.md"}  # in one folder, the key hides the value

# Vendor global memory files (home-relative), in reading order, with their family: each agent's module's
# GLOBAL_FILES, ordered by its GLOBAL_RANK.
VENDOR_GLOBALS: tuple[tuple[str, str, str], ...] = tuple(
    (folder, name, module.SOURCE_FAMILY)
    for module in sorted(
        (m for m in _AGENT_MODULES if getattr(m, "GLOBAL_FILES", ())), key=lambda m: int(m.GLOBAL_RANK)
    )
    for folder, name in module.GLOBAL_FILES
)


def effective_names(file_names: Sequence[str], sources: Iterable[str]) -> tuple[str, ...]:
    """Memory file names to look for: ``memory.fileNames`` minus families turned off, with
    ``AGENTS.override.md`` right before ``AGENTS.md`` when Codex files are read."""
    on = frozenset(sources)
    out: list[str] = []
    for name in file_names:
        family = NAME_FAMILY.get(name)
        if family is not None and family not in on:
            continue
        if name == "AGENTS.md" and "codex" in on and CODEX_OVERRIDE not in file_names:
            out.append(CODEX_OVERRIDE)
        out.append(name)
    return tuple(dict.fromkeys(out))


def enabled_formats(sources: Iterable[str]) -> tuple[FormatSpec, ...]:
    on = frozenset(sources)
    return tuple(f for f in FORMATS if f.family in on)


def match_rule_path(rel_path: str, specs: Sequence[FormatSpec] = FORMATS) -> tuple[RuleFormat, str] | None:
    """(format, base) of a posix path relative to a workspace folder, or None.

    ``base`` is "" for the folder's own rules, or the sub-directory a nested rule directory
    (``pkg/.cursor/rules/x.mdc``) governs.
    """
    parts = rel_path.split("/")
    if _HEADS.isdisjoint(parts):
        return None  # no component names a rule directory or file: most paths of a tree
    for spec in specs:
        found = _match_at(spec, parts, 0)
        if found:
            return spec.format, ""
        if spec.nested:
            for start in range(1, len(parts)):
                if _match_at(spec, parts, start):
                    return spec.format, "/".join(parts[:start])
    return None


def _match_at(spec: FormatSpec, parts: list[str], start: int) -> bool:
    own = spec.path.split("/")
    rest = parts[start:]
    if rest[: len(own)] != own:
        return False
    inner = rest[len(own) :]
    name = rest[-1]
    if not inner:
        return spec.kind in ("file", "either")
    if spec.kind == "file":
        return False
    if len(inner) > 1 and not spec.recursive:
        return False
    return not name.startswith(".") and name.endswith(spec.suffixes)  # no editor temp or lock files
