"""Glob-scoped rule files in four conventions, and their frontmatter.

Where rules live (relative to a workspace folder) and what their frontmatter means:

================================================  =====================================================
``.context-companion/rules/*.md``                 ``description``, ``globs``, ``alwaysApply``
``.cursor/rules/*.mdc``                           ``description``, ``globs`` (comma-separated or list),
                                                  ``alwaysApply``
``.github/copilot-instructions.md``               always applies
``.github/instructions/**/*.instructions.md``     ``applyTo`` (comma-separated or list)
``.claude/rules/**/*.md``                         ``paths`` (list or comma-separated); none = always
================================================  =====================================================

A rule applies when it is always-on or when one of its globs (gitwildmatch, relative to the
workspace folder, ``{a,b}`` braces expanded) matches an open or active file. A rule with only a
description is listed (path + description) without its body. Frontmatter is YAML; when YAML
rejects it, plain ``key: value`` lines are still accepted (``globs: *.ts`` is common and is not
valid YAML). Anything else is reported and the rule is skipped.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from typing import Any, Literal

from pathspec import PathSpec

from ..frontmatter import Frontmatter, split_frontmatter  # noqa: F401 - re-exported

RuleFormat = Literal["context-companion", "cursor", "copilot", "copilot-instructions", "claude"]
RuleMode = Literal["always", "globs", "description", "manual"]

# Order in which rule formats are listed and rendered.
FORMAT_ORDER: tuple[RuleFormat, ...] = ("context-companion", "cursor", "copilot", "copilot-instructions", "claude")

KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "context-companion": ("description", "globs", "alwaysApply"),
    "cursor": ("description", "globs", "alwaysApply"),
    "copilot": ("applyTo", "description", "excludeAgent", "name"),
    "copilot-instructions": ("applyTo", "description", "excludeAgent", "name"),
    "claude": ("paths", "description"),
}
GLOB_KEY: dict[str, str | None] = {
    "context-companion": "globs",
    "cursor": "globs",
    "copilot": None,
    "copilot-instructions": "applyTo",
    "claude": "paths",
}
RULE_DIR_PREFIXES: tuple[str, ...] = (".context-companion", ".cursor", ".github", ".claude")
_MATCH_ALL = frozenset({"*", "**", "**/*"})
_MAX_BRACE_EXPANSIONS = 256


def rule_format_for(rel_path: str) -> RuleFormat | None:
    """The rule convention of a posix path relative to a workspace folder, or None."""
    parts = rel_path.split("/")
    name = parts[-1]
    if name.startswith("."):
        return None  # editor temp files, lock files, hidden files
    if len(parts) == 3 and parts[0] == ".context-companion" and parts[1] == "rules" and name.endswith(".md"):
        return "context-companion"
    if len(parts) == 3 and parts[0] == ".cursor" and parts[1] == "rules" and name.endswith(".mdc"):
        return "cursor"
    if rel_path == ".github/copilot-instructions.md":
        return "copilot"
    if len(parts) >= 3 and parts[0] == ".github" and parts[1] == "instructions" and name.endswith(".instructions.md"):
        return "copilot-instructions"
    if len(parts) >= 3 and parts[0] == ".claude" and parts[1] == "rules" and name.endswith(".md"):
        return "claude"
    return None


def find_rule_files(folder: str) -> list[tuple[str, str, RuleFormat]]:
    """``(abs_path, rel_path, format)`` of every rule file of a workspace folder, ordered."""
    found: list[tuple[str, str, RuleFormat]] = []

    def flat(rel_dir: str) -> None:
        try:
            with os.scandir(os.path.join(folder, rel_dir)) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            rel = f"{rel_dir}/{entry.name}"
            fmt = rule_format_for(rel)
            if fmt is not None and not _is_dir(entry):
                found.append((entry.path, rel, fmt))

    def deep(rel_dir: str) -> None:
        top = os.path.join(folder, rel_dir)
        for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
            dirnames.sort()
            rel_base = os.path.relpath(dirpath, folder).replace(os.sep, "/")
            for name in sorted(filenames):
                rel = f"{rel_base}/{name}"
                fmt = rule_format_for(rel)
                if fmt is not None:
                    found.append((os.path.join(dirpath, name), rel, fmt))

    flat(".context-companion/rules")
    flat(".cursor/rules")
    copilot = os.path.join(folder, ".github", "copilot-instructions.md")
    if os.path.lexists(copilot):
        found.append((copilot, ".github/copilot-instructions.md", "copilot"))
    deep(".github/instructions")
    deep(".claude/rules")
    return found


def _is_dir(entry: os.DirEntry[str]) -> bool:
    try:
        return entry.is_dir(follow_symlinks=False)
    except OSError:
        return False


# --------------------------------------------------------------------------- globs


def split_globs(value: str) -> list[str]:
    """Split a comma-separated glob list, keeping commas inside ``{...}``; drop quotes and blanks."""
    out = [g.strip().strip("'\"").strip() for g in split_globs_raw(value)]
    return [g for g in out if g]


def expand_braces(pattern: str) -> list[str]:
    """``src/*.{ts,tsx}`` → ``["src/*.ts", "src/*.tsx"]`` (nested braces too, capped)."""
    results: list[str] = []
    pending = [pattern]
    while pending:
        pat = pending.pop()
        start = -1
        depth = 0
        span: tuple[int, int] | None = None
        for i, ch in enumerate(pat):
            if ch == "{":
                if depth == 0:
                    start = i
                depth += 1
            elif ch == "}" and depth:
                depth -= 1
                if depth == 0:
                    inner = pat[start + 1 : i]
                    if "," in inner:
                        span = (start, i)
                        break
        if span is None:
            results.append(pat)
        else:
            a, b = span
            for alt in split_globs_raw(pat[a + 1 : b]):
                pending.append(pat[:a] + alt + pat[b + 1 :])
        if len(results) + len(pending) > _MAX_BRACE_EXPANSIONS:
            results.extend(pending)
            break
    return sorted(set(results))


def split_globs_raw(value: str) -> list[str]:
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in value:
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def compile_globs(globs: tuple[str, ...]) -> PathSpec[Any]:
    """A gitwildmatch spec of the globs (braces expanded, leading ``./`` dropped)."""
    patterns: list[str] = []
    for glob in globs:
        g = glob[2:] if glob.startswith("./") else glob
        patterns.extend(expand_braces(g))
    return PathSpec.from_lines("gitignore", patterns)


# --------------------------------------------------------------------------- rules


@dataclass(slots=True)
class ParsedRule:
    format: RuleFormat
    mode: RuleMode
    description: str
    globs: tuple[str, ...]
    spec: PathSpec[Any] | None
    body: str
    body_line: int
    error: str | None = None  # the rule is skipped when set
    error_line: int = 0
    unknown_keys: list[tuple[str, int, str]] = field(default_factory=list)  # (key, line, hint)
    key_lines: dict[str, int] = field(default_factory=dict)
    glob_specs: list[tuple[str, PathSpec[Any]]] = field(default_factory=list)  # one spec per glob, for reasons

    def matching_glob(self, rel_path: str) -> str | None:
        """The first glob that matches ``rel_path`` when the rule as a whole matches it."""
        if self.spec is None or not self.spec.match_file(rel_path):
            return None
        for glob, spec in self.glob_specs:
            if not glob.startswith("!") and spec.match_file(rel_path):
                return glob
        return self.globs[0] if self.globs else None


def _as_globs(value: Any, key: str) -> tuple[tuple[str, ...], str | None]:
    if value is None or value == "":
        return (), None
    if isinstance(value, str):
        return tuple(split_globs(value)), None
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if not isinstance(item, str):
                return (), f"'{key}' must be a list of glob strings, found {type(item).__name__} {item!r}"
            out.extend(split_globs(item))
        return tuple(out), None
    return (), f"'{key}' must be a glob string or a list of globs, not {type(value).__name__}"


def parse_rule(fmt: RuleFormat, text: str) -> ParsedRule:
    """Parse a rule file's text. Never raises: problems land in ``error`` / ``unknown_keys``."""
    fm = split_frontmatter(text)
    rule = ParsedRule(fmt, "manual", "", (), None, fm.body, fm.body_line, key_lines=fm.key_lines)
    if fm.error:
        rule.error, rule.error_line = fm.error, fm.error_line
        return rule
    data = fm.data
    known = KNOWN_KEYS[fmt]
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            if not close:
                close = [k for k in known if k.lower() == key.lower()]
            hint = f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(known)}"
            rule.unknown_keys.append((key, fm.key_lines.get(key, 1), hint))
    description = data.get("description")
    if description is not None and not isinstance(description, str):
        description = str(description)
    rule.description = (description or "").strip()
    always_raw = data.get("alwaysApply", False) if fmt in ("context-companion", "cursor") else False
    if isinstance(always_raw, str) and always_raw.lower() in ("true", "false"):
        always_raw = always_raw.lower() == "true"
    if always_raw is None:
        always_raw = False
    if not isinstance(always_raw, bool):
        rule.error = f"'alwaysApply' must be true or false, not {always_raw!r}"
        rule.error_line = fm.key_lines.get("alwaysApply", 1)
        return rule
    glob_key = GLOB_KEY[fmt]
    globs: tuple[str, ...] = ()
    if glob_key is not None:
        globs, err = _as_globs(data.get(glob_key), glob_key)
        if err:
            rule.error, rule.error_line = err, fm.key_lines.get(glob_key, 1)
            return rule
    rule.globs = globs
    if globs:
        try:
            rule.spec = compile_globs(globs)
            rule.glob_specs = [(g, compile_globs((g,))) for g in globs if not g.startswith("!")]
        except Exception as exc:
            rule.error = f"'{glob_key}' has a glob that is not valid: {exc}"
            rule.error_line = fm.key_lines.get(glob_key or "", 1)
            return rule
    if fmt == "copilot" or always_raw or (fmt == "claude" and not globs) or (globs and set(globs) <= _MATCH_ALL):
        rule.mode = "always"
    elif globs:
        rule.mode = "globs"
    elif rule.description and fmt in ("context-companion", "cursor"):
        rule.mode = "description"
    else:
        rule.mode = "manual"
    return rule


def describe_globs(globs: tuple[str, ...]) -> str:
    return ", ".join(f"'{g}'" for g in globs)
