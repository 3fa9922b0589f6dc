"""The user-facing words of the memory core: block markers and inclusion reasons (in one place)."""

from __future__ import annotations

REASON_GLOBAL = "global memory"
REASON_WORKSPACE = "workspace memory (root → leaf)"
REASON_ALWAYS = "rule: always applies"
REASON_DESCRIPTION = "not included: only a description (listed)"
REASON_EMPTY = "not included: empty"
REASON_MANUAL = "not included: no {keys} (used only when asked for)"

# Why a file given to an agent is no longer memory at all (taken back in a memory update or a hook's text).
REASON_GONE = "the file no longer exists"
REASON_NOT_A_NAME = "no longer a memory file name in the settings (memory.fileNames)"
REASON_FAMILY_OFF = "its family ({family}) is no longer read: memory.sources leaves it out"
REASON_GLOBALS_OFF = "other tools' global memory is no longer read (memory.readVendorGlobals is off)"
REASON_NOT_FOUND = "it is no longer found as memory (ignored, or outside the workspace folders now)"

LISTING_HEADER = "--- Rules available on request ---"
LISTING_FOOTER = "--- End of rules available on request ---"
LISTING_INTRO = "These project rules are not loaded. Read one when its description fits the task at hand:"


def render_block(display: str, content: str) -> str:
    """One included file as it appears in the instruction."""
    return f"--- Context from: {display} ---\n{content}\n--- End of Context from: {display} ---"


def cut_marker(what: str) -> str:
    """The one line that shows where memory was cut, in the instruction itself."""
    return f"[… cut here by {what}; the rest is not included]"


def reason_dropped_bytes(cap: int) -> str:
    return f"dropped: memory.maxTotalBytes ({cap}) reached"


def frontmatter_problem(error: str) -> str:
    """A rule's frontmatter error as a skip reason, said once ("frontmatter: ...", never twice)."""
    return error if error.startswith("frontmatter") else f"frontmatter: {error}"


def reason_dropped(cap: int) -> str:
    return f"dropped: memory.maxTokens ({cap}) reached"


def reason_manual(rule_format: str | None) -> str:
    keys = "applyTo" if rule_format == "copilot-instructions" else "globs, alwaysApply or description"
    return REASON_MANUAL.format(keys=keys)


def reason_shadowed(winner: str) -> str:
    return f"not included: {winner} in the same folder takes its place"
