"""Language features of an open memory or rule file, computed from its current (unsaved) text.

Diagnostics (codes): ``import-not-found``, ``import-cycle``, ``import-outside-roots``,
``import-too-deep``, ``import-failed`` (the target was skipped: binary, too big, unreadable),
``file-too-large``, ``frontmatter-invalid``, ``frontmatter-unknown-key``,
``glob-matches-nothing``. Links and hovers sit on each ``@path``; the code lens sits on line 0.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..ignore import walk
from .imports import CYCLE, FAILURE_CODES, NOT_FOUND, OUTSIDE
from .model import CodeLens, Diagnostic, DocumentLink, FileAnalysis, Hover, Range, Severity, Tier
from .reading import normalise_newlines
from .rules import GLOB_KEY, ParsedRule, RuleFormat, describe_globs, parse_rule
from .wording import REASON_ALWAYS, REASON_DESCRIPTION, REASON_GLOBAL, REASON_WORKSPACE, reason_manual, render_block

if TYPE_CHECKING:
    from .store import MemoryStore

_ERRORS = {NOT_FOUND, CYCLE, OUTSIDE}


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


def analyze_document(
    store: MemoryStore,
    path: str,
    text: str,
    tier: Tier,
    folder_i: int | None,
    rel: str,
    fmt: RuleFormat | None,
) -> FileAnalysis:
    from .store import _Entry

    if text.startswith("\ufeff"):
        text = text[1:]
    text = normalise_newlines(text)
    lines = text.split("\n")
    diagnostics: list[Diagnostic] = []
    links: list[DocumentLink] = []
    hovers: list[Hover] = []
    limit = store.settings.max_file_bytes
    size = len(text.encode("utf-8"))
    skip: str | None = None
    if size >= limit:
        skip = f"over memory.maxFileBytes ({size} bytes, limit {limit})"
        diagnostics.append(
            Diagnostic(
                _line_range(lines, 0),
                "warning",
                f"This file is {size} bytes; files of memory.maxFileBytes ({limit}) or more are skipped.",
                "file-too-large",
            )
        )
    body, offset = text, 0
    rule: ParsedRule | None = None
    if fmt is not None:
        rule = parse_rule(fmt, text)
        if rule.error:
            skip = skip or f"frontmatter: {rule.error}"
            diagnostics.append(
                Diagnostic(
                    _line_range(lines, rule.error_line),
                    "error",
                    f"{rule.error}. This rule is skipped.",
                    "frontmatter-invalid",
                )
            )
        for key, line, hint in rule.unknown_keys:
            diagnostics.append(
                Diagnostic(
                    Range.on_line(line, 0, len(key)),
                    "warning",
                    f"Unknown frontmatter key '{key}'{hint}",
                    "frontmatter-unknown-key",
                )
            )
        if not rule.error and rule.mode == "globs" and folder_i is not None:
            folder = store._folders[folder_i].path
            key = GLOB_KEY[fmt] or ""
            key_line = rule.key_lines.get(key, 1)
            for glob in _globs_matching_nothing(folder, rule, store._glob_cache):
                diagnostics.append(
                    Diagnostic(
                        _glob_range(lines, key_line, rule.body_line, glob),
                        "warning",
                        f"The glob '{glob}' matches no file in this workspace folder.",
                        "glob-matches-nothing",
                    )
                )
        body, offset = rule.body, rule.body_line

    display = store._display(path) if tier != "global" else store._home_display(path)
    probe = _Entry(path, display, tier, folder_i)
    expansion = store._expander.expand(body, path, store._allowed_roots(probe))
    for outcome in expansion.outcomes:
        ref = outcome.ref
        rng = Range.on_line(ref.line + offset, ref.start, ref.end)
        if outcome.failure is not None:
            severity: Severity = "error" if outcome.failure in _ERRORS else "warning"
            diagnostics.append(
                Diagnostic(
                    rng,
                    severity,
                    f"Cannot import '{ref.path}' ({outcome.resolved}): {outcome.failure}.",
                    FAILURE_CODES.get(outcome.failure, "import-failed"),
                )
            )
            if outcome.failure != NOT_FOUND and outcome.failure != OUTSIDE and os.path.exists(outcome.resolved):
                links.append(DocumentLink(rng, outcome.resolved))
            continue
        links.append(DocumentLink(rng, outcome.resolved))
        tokens = store._count(outcome.content) if outcome.content else 0
        hovers.append(
            Hover(rng, f"Imports `{store._display(outcome.resolved)}`\n\n`{outcome.resolved}`\n\n{tokens} tokens")
        )
        for failure in outcome.nested:
            chain = " → ".join(failure.chain[:-1])
            diagnostics.append(
                Diagnostic(
                    rng,
                    "warning",
                    f"In {chain}: cannot import '{failure.path}': {failure.reason}.",
                    failure.code,
                )
            )

    content = expansion.text.strip("\n").rstrip()
    tokens = store._count(render_block(display, content)) if content.strip() else 0
    info = store._last_info(path)
    if skip is not None:
        title = f"not included: skipped: {skip}"
    elif info is not None:
        if info.included:
            title = f"{tokens} tokens · included: {info.reason}"
        elif info.reason.startswith("not included: "):
            title = info.reason
        else:
            title = f"not included: {info.reason}"
    else:
        title = _default_title(tokens, tier, rule, rel, store, folder_i, fmt)
    if not content.strip() and skip is None:
        title = "not included: empty"
    lens = CodeLens(_line_range(lines, 0), title)
    return FileAnalysis(tuple(diagnostics), tuple(links), tuple(hovers), lens)


def _default_title(
    tokens: int,
    tier: Tier,
    rule: ParsedRule | None,
    rel: str,
    store: MemoryStore,
    folder_i: int | None,
    fmt: RuleFormat | None,
) -> str:
    """The lens before any instruction was composed (no editor state known yet)."""
    if tier == "global":
        return f"{tokens} tokens · included: {REASON_GLOBAL}"
    if tier == "workspace":
        return f"{tokens} tokens · included: {REASON_WORKSPACE}"
    prefix = store._folders[folder_i].prefix if folder_i is not None else ""
    if tier == "jit":
        return f"not included: no open file under {prefix}{rel.rsplit('/', 1)[0]}/"
    if rule is None:
        return "not included"
    if rule.mode == "always":
        return f"{tokens} tokens · included: {REASON_ALWAYS}"
    if rule.mode == "globs":
        return f"not included: no open file matches {describe_globs(rule.globs)}"
    if rule.mode == "description":
        return REASON_DESCRIPTION
    return reason_manual(fmt)
