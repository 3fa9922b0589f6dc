"""Language features of an open memory or rule file, computed from its current (unsaved) text.

Diagnostics (codes): ``import-not-found``, ``import-cycle``, ``import-outside-roots``,
``import-too-deep``, ``import-over-total``, ``import-failed`` (the target was skipped: binary,
unreadable), ``file-too-large`` (cut at memory.maxFileBytes), ``memory-total-cap`` (cut or dropped at
memory.maxTotalBytes), ``frontmatter-invalid``, ``frontmatter-unknown-key``,
``glob-matches-nothing``, and the hint ``import-repeated`` (the file is already in the instruction). Links and hovers sit on each ``@path``; the code lens sits on line 0.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..ignore import walk
from .discovery import governed_dir
from .imports import CYCLE, FAILURE_CODES, NOT_FOUND, OUTSIDE, ExpandOptions, Expansion, expand_imports, looks_like_path
from .model import CodeLens, Diagnostic, DocumentLink, FileAnalysis, Hover, MemoryFileInfo, Range, Severity, Tier
from .reading import cut_at_line, normalise_newlines
from .rules import GLOB_KEY, ParsedRule, RuleFormat, describe_globs, parse_rule
from .wording import (
    REASON_ALWAYS,
    REASON_DESCRIPTION,
    REASON_GLOBAL,
    REASON_WORKSPACE,
    cut_marker,
    frontmatter_problem,
    reason_manual,
    render_block,
)

_ERRORS = frozenset({NOT_FOUND, CYCLE, OUTSIDE})


@dataclass(frozen=True, slots=True)
class AnalysisContext:
    """What the store knows about one open memory or rule file, for its language features."""

    path: str  # absolute, normalised
    tier: Tier
    rel: str  # posix, relative to its folder ("" for global files)
    rule_format: RuleFormat | None
    display: str
    folder_path: str | None
    folder_prefix: str
    max_file_bytes: int
    expand_options: ExpandOptions
    count: Callable[[str], int]
    last_info: MemoryFileInfo | None  # from the last composition, when there was one
    glob_cache: dict[tuple[str, str], bool]  # owned by the store, emptied when memory changes


def _line_range(lines: list[str], line: int) -> Range:
    line = max(0, min(line, len(lines) - 1))
    return Range.on_line(line, 0, len(lines[line]))


GLOB_CHECK_MAX_FILES = 100_000  # past this many files an unmatched glob is not reported (unknown)


def _globs_matching_nothing(folder: str, rule: ParsedRule, cache: dict[tuple[str, str], bool]) -> list[str]:
    """Globs of ``rule`` that match no file of the folder (ignore-aware walk, stops early).

    ``cache`` maps (folder, glob) to "matches something"; the store clears it whenever memory
    changes (a new ordinary file alone does not clear it: the warning may lag until then).
    """
    pending = {glob: spec for glob, spec in rule.glob_specs if (folder, glob) not in cache}
    if pending:
        seen = 0
        for listing in walk(Path(folder)):
            prefix = listing.rel_dir + "/" if listing.rel_dir else ""
            for entry in listing.files:
                rel = prefix + entry.name
                for glob in [g for g, spec in pending.items() if spec.match_file(rel)]:
                    cache[(folder, glob)] = True
                    del pending[glob]
            seen += len(listing.files)
            if not pending:
                break
            if seen > GLOB_CHECK_MAX_FILES:
                for glob in pending:
                    cache[(folder, glob)] = True  # unknown: do not warn, do not walk again
                break
        else:
            for glob in pending:
                cache[(folder, glob)] = False
    return [g for g, _ in rule.glob_specs if cache.get((folder, g)) is False]


def _glob_range(lines: list[str], start_line: int, end_line: int, glob: str) -> Range:
    for n in range(max(start_line, 0), min(end_line, len(lines))):
        col = lines[n].find(glob)
        if col >= 0:
            return Range.on_line(n, col, col + len(glob))
    return _line_range(lines, start_line)


def analyze_document(ctx: AnalysisContext, text: str) -> FileAnalysis:
    """Diagnostics, links, hovers and the code lens of ``text`` (the editor's current content)."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = normalise_newlines(text)
    lines = text.split("\n")
    diagnostics: list[Diagnostic] = []
    text = _size_check(ctx, text, lines, diagnostics)
    _total_cap_check(ctx, lines, diagnostics)
    skip: str | None = None
    info = ctx.last_info
    if info is not None and info.duplicate_of is not None and info.reason.startswith("not included: same text"):
        message = f"Same text as {info.duplicate_of}, which is already in the instruction: this copy is left out."
        diagnostics.append(Diagnostic(_line_range(lines, 0), "hint", message, "duplicate-rule"))
    body, offset = text, 0
    rule: ParsedRule | None = None
    if ctx.rule_format is not None:
        rule = parse_rule(ctx.rule_format, text)
        skip = skip or _rule_diagnostics(ctx, rule, lines, diagnostics)
        body, offset = rule.body, rule.body_line
    expansion = expand_imports(body, ctx.path, ctx.expand_options)
    links, hovers = _import_features(ctx, expansion, offset, diagnostics)
    content = expansion.text.strip("\n").rstrip()
    tokens = ctx.count(render_block(ctx.display, content)) if content.strip() else 0
    title = _lens_title(ctx, tokens, skip, rule)
    if not content.strip() and skip is None:
        title = "not included: empty"
    lens = CodeLens(_line_range(lines, 0), title)
    return FileAnalysis(tuple(diagnostics), tuple(links), tuple(hovers), lens)


def _size_check(ctx: AnalysisContext, text: str, lines: list[str], diagnostics: list[Diagnostic]) -> str:
    """The text as memory reads it: over ``memory.maxFileBytes`` it is cut at a line end (with a
    diagnostic on the first line left out) and ends with the marker line."""
    limit = ctx.max_file_bytes
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    kept = cut_at_line(data, limit)
    cut = f"memory.maxFileBytes ({limit}): {len(kept)} of {len(data)} bytes included"
    head = kept.decode("utf-8")
    first_out = head.count("\n")
    message = f"This file is {len(data)} bytes: it is cut at {cut}; from this line on nothing is included."
    diagnostics.append(Diagnostic(_line_range(lines, first_out), "warning", message, "file-too-large"))
    return head.rstrip("\n") + "\n" + cut_marker(cut) + "\n"


def _total_cap_check(ctx: AnalysisContext, lines: list[str], diagnostics: list[Diagnostic]) -> None:
    """The last composition cut or dropped this file at ``memory.maxTotalBytes``: say so on line 1."""
    info = ctx.last_info
    if info is None:
        return
    if info.cut is not None and info.cut.startswith("memory.maxTotalBytes"):
        message = f"All memory together reached {info.cut}: this file is cut; its last lines are not included."
    elif info.reason.startswith("dropped: memory.maxTotalBytes"):
        message = f"All memory together reached memory.maxTotalBytes: this file is {info.reason}."
    else:
        return
    diagnostics.append(Diagnostic(_line_range(lines, 0), "warning", message, "memory-total-cap"))


def _rule_diagnostics(
    ctx: AnalysisContext, rule: ParsedRule, lines: list[str], diagnostics: list[Diagnostic]
) -> str | None:
    """Frontmatter problems and globs that match nothing; the skip reason when the rule is skipped."""
    if rule.error:
        rng = _line_range(lines, rule.error_line)
        diagnostics.append(Diagnostic(rng, "error", f"{rule.error}. This rule is skipped.", "frontmatter-invalid"))
    for key, line, hint in rule.unknown_keys:
        message = f"Unknown frontmatter key '{key}'{hint}"
        diagnostics.append(Diagnostic(Range.on_line(line, 0, len(key)), "warning", message, "frontmatter-unknown-key"))
    if rule.error:
        return frontmatter_problem(rule.error)
    for message, line, code in rule.notes:
        diagnostics.append(Diagnostic(_line_range(lines, line), "warning", message, code))
    if rule.mode == "globs" and rule.globs and ctx.folder_path is not None and ctx.rule_format is not None:
        key_line = rule.key_lines.get(GLOB_KEY.get(ctx.rule_format) or "", 1)
        for glob in _globs_matching_nothing(ctx.folder_path, rule, ctx.glob_cache):
            message = f"The glob '{glob}' matches no file in this workspace folder."
            rng = _glob_range(lines, key_line, rule.body_line, glob)
            diagnostics.append(Diagnostic(rng, "warning", message, "glob-matches-nothing"))
    return None


def _import_features(
    ctx: AnalysisContext, expansion: Expansion, offset: int, diagnostics: list[Diagnostic]
) -> tuple[list[DocumentLink], list[Hover]]:
    links: list[DocumentLink] = []
    hovers: list[Hover] = []
    display = ctx.expand_options.display
    for outcome in expansion.outcomes:
        ref = outcome.ref
        rng = Range.on_line(ref.line + offset, ref.start, ref.end)
        if outcome.failure is not None and not looks_like_path(ref.path, outcome.resolved):
            continue  # ordinary text such as @pytest.fixture: nothing to say
        if outcome.failure is not None:
            severity: Severity = "error" if outcome.failure in _ERRORS else "warning"
            message = f"Cannot import '{ref.path}' ({outcome.resolved}): {outcome.failure}."
            diagnostics.append(Diagnostic(rng, severity, message, FAILURE_CODES.get(outcome.failure, "import-failed")))
            if outcome.failure not in (NOT_FOUND, OUTSIDE) and os.path.exists(outcome.resolved):
                links.append(DocumentLink(rng, outcome.resolved))
            continue
        links.append(DocumentLink(rng, outcome.resolved))
        if outcome.duplicate_of is not None:
            message = f"Already included from {outcome.duplicate_of}: this import adds nothing."
            diagnostics.append(Diagnostic(rng, "hint", message, "import-repeated"))
        tokens = ctx.count(outcome.content) if outcome.content else 0
        hovers.append(Hover(rng, f"Imports `{display(outcome.resolved)}`\n\n`{outcome.resolved}`\n\n{tokens} tokens"))
        for failure in outcome.nested:
            chain = " → ".join(failure.chain[:-1])
            message = f"In {chain}: cannot import '{failure.path}': {failure.reason}."
            diagnostics.append(Diagnostic(rng, "warning", message, failure.code))
    return links, hovers


def _lens_title(ctx: AnalysisContext, tokens: int, skip: str | None, rule: ParsedRule | None) -> str:
    info = ctx.last_info
    if skip is not None:
        return f"not included: skipped: {skip}"
    if info is None:
        return _default_title(ctx, tokens, rule)
    if info.included:
        return f"{tokens} tokens · included: {info.reason}"
    if info.reason.startswith("not included: "):
        return info.reason
    return f"not included: {info.reason}"


def _default_title(ctx: AnalysisContext, tokens: int, rule: ParsedRule | None) -> str:
    """The lens before any instruction was composed (no editor state known yet)."""
    if ctx.tier == "global":
        return f"{tokens} tokens · included: {REASON_GLOBAL}"
    if ctx.tier == "workspace":
        return f"{tokens} tokens · included: {REASON_WORKSPACE}"
    if ctx.tier == "jit":
        rel_dir, name = ctx.rel.rsplit("/", 1)
        return f"not included: no open file under {ctx.folder_prefix}{governed_dir(rel_dir, name)}/"
    if rule is None:
        return "not included"
    if rule.mode == "always":
        return f"{tokens} tokens · included: {REASON_ALWAYS}"
    if rule.mode == "globs" and not rule.listed_otherwise:
        return f"not included: no open file matches {describe_globs(rule.globs)}"
    if rule.mode in ("globs", "description"):
        return REASON_DESCRIPTION
    return reason_manual(ctx.rule_format)
