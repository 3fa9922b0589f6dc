"""Patching a composition after files changed only in their text.

The usual edit (a line added to AGENTS.md) changes one file's block and its token count, and
nothing that decides which files go into the instruction. :func:`patch` checks that this is so for
every changed file and, if it is, swaps the new blocks and counts into the previous
:class:`~.model.MemoryResult`. The result is the one :func:`~.compose.compose_memory` would give;
whenever it cannot be sure of that, it returns None and the caller composes everything again.

What a file's text cannot change, and is checked: which file it is (its real path and file key),
what it imports, whether it is skipped, missing or cut, its warnings and left-out repeats, and
that it is a memory file (a rule's text holds its activation). What its text can change, and is
checked too: an included file whose new text is empty, or the same as another included file's,
or that another file was left out for repeating; and the caps (``memory.maxTokens``,
``memory.maxTotalBytes``), which are only trusted when they left everything in before and after.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from .compose import Trace, head_of, join_blocks, normalised_body
from .index import Entry
from .model import MemoryFileInfo, MemoryResult
from .render import Rendered


def patch(
    result: MemoryResult,
    trace: Trace,
    *,
    max_tokens: int,
    max_total_bytes: int,
    count: Callable[[str], int],
) -> tuple[MemoryResult, Trace] | None:
    """``result`` with the new text of the files whose rendering changed since ``trace`` was taken,
    or None when that could change more than their blocks (then compose again)."""
    changed = [i for i, e in enumerate(trace.entries) if e.rendered is not trace.renders[i]]
    if not changed:
        return result, trace
    if trace.capped:
        return None
    blocks = dict(trace.blocks)
    bodies = dict(trace.bodies)
    heads = dict(trace.heads)
    for i in changed:
        entry, old = trace.entries[i], trace.renders[i]
        if not _text_only(entry, old) or not _keeps_verdict(entry, old, trace, bodies, heads):
            return None
        if entry.abs_path in blocks:
            blocks[entry.abs_path] = entry.rendered.block
    text = join_blocks(list(trace.entries), blocks, trace.listing)
    files = list(result.files)
    for i in changed:
        files[i] = replace(files[i], tokens=trace.entries[i].rendered.tokens)
    if not _within_caps(text, files, trace.listing, max_tokens, max_total_bytes, count):
        return None
    renders = list(trace.renders)
    for i in changed:
        renders[i] = trace.entries[i].rendered
    patched = MemoryResult(
        text, tuple(files), result.dropped, result.warnings, seen=result.seen, seen_at=result.seen_at
    )
    new_trace = Trace(
        trace.entries,
        tuple(renders),
        blocks,
        trace.listing,
        bodies,
        heads,
        trace.text_twins,
        trace.wanted,
        trace.capped,
    )
    return patched, new_trace


def _text_only(entry: Entry, old: Rendered) -> bool:
    """Whether only the text of ``entry`` changed: the same file, imports, problems and notes."""
    new = entry.rendered
    return (
        entry.tier != "rule"
        and new.rule is None
        and old.rule is None
        and new.real == old.real
        and new.key == old.key
        and new.imported == old.imported
        and new.skip is None
        and old.skip is None
        and not new.missing
        and not old.missing
        and new.cut is None
        and old.cut is None
        and new.warnings == old.warnings
        and new.repeats == old.repeats
    )


def _keeps_verdict(entry: Entry, old: Rendered, trace: Trace, bodies: dict[str, str], heads: dict[str, str]) -> bool:
    """Whether ``entry`` keeps its verdict with its new text (``bodies`` and ``heads`` follow it).

    Two texts are the same once whitespace is collapsed only if they start with the same words, so
    the new text is normalised (which costs a pass over it) only when another included file's
    text starts with the same words."""
    path = entry.abs_path
    if path not in trace.wanted:
        return True  # its verdict never looked at its text (not wanted here, or skipped)
    if path not in trace.blocks:
        return False  # left out for its text (empty, a repeat): the new text may change that
    new = entry.rendered
    if trace.blocks[path] != old.block or not new.block or entry.display in trace.text_twins:
        return False  # rendered without repeated imports, now empty, or another file repeated it
    for text, holder in list(bodies.items()):
        if holder == path:
            del bodies[text]  # its old text
    head = head_of(new.content)
    rivals = [p for p, h in heads.items() if h == head and p != path]
    if rivals:
        known = set(bodies.values())
        if any(p not in known for p in rivals):
            return False  # a rival's text was never normalised: compose again rather than guess
        body = normalised_body(new.content)
        if body in bodies:
            return False  # now the same text as another included file
        bodies[body] = path
    heads[path] = head
    return True


def _within_caps(
    text: str,
    files: list[MemoryFileInfo],
    listing: str,
    max_tokens: int,
    max_total_bytes: int,
    count: Callable[[str], int],
) -> bool:
    """Whether neither cap would act on the patched text (as they did not on the old one)."""
    if max_total_bytes > 0 and len(text.encode("utf-8")) + 2 > max_total_bytes:
        return False
    if max_tokens > 0:
        total = sum(f.tokens for f in files if f.included) + (count(listing) if listing else 0)
        if total > max_tokens or count(text) > max_tokens:
            return False
    return True
