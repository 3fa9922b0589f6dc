"""Composition: (index, active files, settings) → the memory part and its report.

:func:`find_activity` works out which JIT files and glob rules the open files make active (and
which open file is the witness); :func:`compose_memory` orders the included files, applies the
``memory.maxTokens`` cap and renders the text. Both only read the index.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from .index import Entry, FolderState, MemoryIndex
from .model import MemoryBlock, MemoryFileInfo, MemoryResult
from .paths import is_within, posix
from .render import Rendered
from .rules import describe_globs
from .wording import (
    LISTING_FOOTER,
    LISTING_HEADER,
    LISTING_INTRO,
    REASON_ALWAYS,
    REASON_DESCRIPTION,
    REASON_EMPTY,
    REASON_GLOBAL,
    REASON_WORKSPACE,
    reason_dropped,
    reason_manual,
)

JitActivity = dict[str, tuple[str, bool]]  # entry path → (witness rel path, witness is active)
RuleActivity = dict[str, tuple[str, str, bool]]  # entry path → (witness rel path, glob, is active)
MatchMemo = dict[tuple[int, str], tuple[tuple[str, str], ...]]  # (folder, rel) → ((rule path, glob), ...)
_LISTING = "\0listing"


@dataclass(frozen=True, slots=True)
class Activity:
    jit: JitActivity
    rules: RuleActivity

    def key(self) -> tuple[object, ...]:
        return (tuple(sorted(self.jit.items())), tuple(sorted(self.rules.items())))


def locate(index: MemoryIndex, path: str) -> tuple[int, str] | None:
    """(folder index, posix rel path) of an open file inside a workspace folder."""
    for i, folder in enumerate(index.folders):
        if path != folder.path and is_within(path, [folder.path]):
            return i, posix(os.path.relpath(path, folder.path))
    real = os.path.realpath(path)
    for i, folder in enumerate(index.folders):
        if real != folder.real and is_within(real, [folder.real]):
            return i, posix(os.path.relpath(real, folder.real))
    return None


def find_activity(index: MemoryIndex, opened: Iterable[str], active: str | None, memo: MatchMemo) -> Activity:
    """Which JIT files and glob rules are active, each with the open file that made it so.

    The active file is preferred as the witness, then the first open file in path order.
    ``memo`` caches glob matches per (folder, file); the caller empties it when the index changes.
    """
    jit: JitActivity = {}
    rules: RuleActivity = {}
    located = [(p, locate(index, p)) for p in opened]
    located.sort(key=lambda item: (item[0] != active, item[0]))  # the first witness found sticks
    for path, where in located:
        if where is None:
            continue
        i, rel = where
        is_active = path == active
        folder = index.folders[i]
        parts = rel.split("/")
        for k in range(1, len(parts)):
            for entry in folder.jit_by_dir.get("/".join(parts[:k]), ()):
                jit.setdefault(entry.abs_path, (rel, is_active))
        matches = memo.get((i, rel))
        if matches is None:
            matches = memo[(i, rel)] = _rule_matches(folder, rel)
        for abs_path, glob in matches:
            rules.setdefault(abs_path, (rel, glob, is_active))
    return Activity(jit, rules)


def _rule_matches(folder: FolderState, rel: str) -> tuple[tuple[str, str], ...]:
    found: list[tuple[str, str]] = []
    for entry in folder.rules:
        rule = entry.rendered.rule
        if rule is None or entry.rendered.skip or rule.mode != "globs":
            continue
        glob = rule.matching_glob(rel)
        if glob is not None:
            found.append((entry.abs_path, glob))
    return tuple(found)


@dataclass(slots=True)
class _Accounts:
    """Each considered file with its verdict, in rendering order."""

    order: list[Entry] = field(default_factory=list)
    verdicts: dict[str, tuple[bool, str]] = field(default_factory=dict)  # abs path → (included, reason)
    warnings: list[str] = field(default_factory=list)
    included_real: dict[str, str] = field(default_factory=dict)
    listed: list[Entry] = field(default_factory=list)

    index: MemoryIndex | None = None
    rendered: dict[str, Rendered] = field(default_factory=dict)  # abs path → rendering used
    duplicates: dict[str, str] = field(default_factory=dict)  # abs path → display of the first inclusion

    def consider(self, entry: Entry, wants: bool, reason: str) -> None:
        if entry.abs_path in self.verdicts:
            return  # nested workspace folders: the file was already accounted for
        self.order.append(entry)
        self.rendered[entry.abs_path] = entry.rendered
        self.verdicts[entry.abs_path] = self._verdict(entry, wants, reason)
        self.warnings.extend(self.rendered[entry.abs_path].warnings)

    def _verdict(self, entry: Entry, wants: bool, reason: str) -> tuple[bool, str]:
        r = entry.rendered
        if r.skip:
            return False, f"skipped: {r.skip}"
        if not wants:
            return False, reason
        twin = self.included_real.get(r.real)
        if twin is not None:
            self.duplicates[entry.abs_path] = twin
            return False, f"not included: same file as {twin}"
        if self.index is not None and any(p in self.included_real for p, _d in r.imported):
            # An import repeats a file already in the instruction: render without it.
            r = self.rendered[entry.abs_path] = self.index.without_seen(entry, tuple(self.included_real.items()))
        if not r.block:
            return False, REASON_EMPTY
        self.included_real[r.real] = entry.display
        for p, d in r.imported:
            self.included_real.setdefault(p, d)
        return True, reason


def compose_memory(
    index: MemoryIndex, activity: Activity, max_tokens: int, count: Callable[[str], int]
) -> MemoryResult:
    """The memory part for this activity: ordered blocks under the token cap, and the report."""
    acc = _Accounts(index=index)
    _consider_fixed_tiers(index, acc)
    _consider_jit(index, acc, activity.jit)
    _consider_rules(index, acc, activity.rules)
    acc.order.sort(key=folder_rank)
    blocks = {e.abs_path: acc.rendered[e.abs_path].block for e in acc.order if acc.verdicts[e.abs_path][0]}
    listing = listing_block(acc.listed)
    dropped: list[str] = []
    if max_tokens > 0:
        listing = _apply_cap(acc, blocks, listing, dropped, max_tokens, count)
    files = tuple(
        MemoryFileInfo(
            e.display,
            e.abs_path,
            e.tier,
            acc.rendered[e.abs_path].tokens,
            *acc.verdicts[e.abs_path],
            duplicate_of=acc.duplicates.get(e.abs_path),
        )
        for e in acc.order
    )
    return MemoryResult(
        join_blocks(acc.order, blocks, listing), files, tuple(dropped), tuple(dict.fromkeys(acc.warnings))
    )


def folder_rank(entry: Entry) -> int:
    """Global files first, then each workspace folder's files together (tiers in order within it):
    a folder added later appends its blocks after every block already in the instruction."""
    return -1 if entry.folder is None else entry.folder


def compose_blocks(index: MemoryIndex, activity: Activity) -> tuple[MemoryBlock, ...]:
    """Every file :func:`compose_memory` considers, each with its own content and verdict (no cap).

    Per-turn delivery works from this: which on-demand files (JIT files, glob rules) apply now and
    what each says, apart from the always-on tiers the instruction carries. A file already included
    through an earlier tier is not repeated (same verdicts as :func:`compose_memory`).
    """
    acc = _Accounts(index=index)
    _consider_fixed_tiers(index, acc)
    _consider_jit(index, acc, activity.jit)
    _consider_rules(index, acc, activity.rules)
    out = []
    for e in acc.order:
        included, reason = acc.verdicts[e.abs_path]
        rule = e.rendered.rule
        on_demand = e.tier == "jit" or (e.tier == "rule" and rule is not None and rule.mode == "globs")
        out.append(
            MemoryBlock(e.display, e.abs_path, e.tier, included, reason, acc.rendered[e.abs_path].content, on_demand)
        )
    return tuple(out)


def _consider_fixed_tiers(index: MemoryIndex, acc: _Accounts) -> None:
    for entry in index.globals:
        if not entry.rendered.missing:
            acc.consider(entry, True, REASON_GLOBAL)
    for folder in index.folders:
        if not folder.exists:
            acc.warnings.append(f"workspace folder {folder.path} does not exist or is not a directory")
        for entry in folder.workspace:
            if not entry.rendered.missing:
                acc.consider(entry, True, REASON_WORKSPACE)


def _consider_jit(index: MemoryIndex, acc: _Accounts, active: JitActivity) -> None:
    for folder in index.folders:
        for entry in sorted(folder.jit.values(), key=lambda e: e.order):
            if entry.rendered.missing or entry.ignored:
                continue  # an ignored file is not discovered (kept only to follow changes)
            dir_display = folder.prefix + entry.rel_dir + "/"
            witness = active.get(entry.abs_path)
            if witness is None:
                acc.consider(entry, False, f"not included: no open file under {dir_display}")
            else:
                rel, is_active = witness
                who = "active file" if is_active else "open file"
                acc.consider(entry, True, f"{who} {folder.prefix}{rel} is under {dir_display}")


def _consider_rules(index: MemoryIndex, acc: _Accounts, active: RuleActivity) -> None:
    for folder in index.folders:
        for entry in sorted(folder.rules, key=lambda e: e.order):
            rule = entry.rendered.rule
            if rule is None or entry.rendered.skip:
                acc.consider(entry, False, "")
            elif rule.mode == "always":
                acc.consider(entry, True, REASON_ALWAYS)
            elif rule.mode == "globs":
                hit = active.get(entry.abs_path)
                if hit is None:
                    acc.consider(entry, False, f"not included: no open file matches {describe_globs(rule.globs)}")
                else:
                    acc.consider(entry, True, f"rule: glob '{hit[1]}' matches {folder.prefix}{hit[0]}")
            elif rule.mode == "description":
                acc.consider(entry, False, REASON_DESCRIPTION)
                if entry.rendered.block:
                    acc.listed.append(entry)
            else:
                acc.consider(entry, False, reason_manual(entry.rule_format))


def _drop_order(acc: _Accounts, listing: str) -> list[str]:
    """Rules (last first) and the listing go first, then JIT files, then the farthest workspace files."""
    included = [e for e in acc.order if acc.verdicts[e.abs_path][0]]
    by_tier = {t: [e.abs_path for e in included if e.tier == t] for t in ("global", "workspace", "jit", "rule")}
    return [
        *([_LISTING] if listing else []),
        *reversed(by_tier["rule"]),
        *by_tier["jit"],
        *by_tier["workspace"],
        *by_tier["global"],
    ]


def _apply_cap(
    acc: _Accounts, blocks: dict[str, str], listing: str, dropped: list[str], cap: int, count: Callable[[str], int]
) -> str:
    """Drop blocks until the text fits ``cap`` tokens; returns the listing (maybe emptied)."""
    tokens = {e.abs_path: acc.rendered[e.abs_path].tokens for e in acc.order if e.abs_path in blocks}
    if listing:
        tokens[_LISTING] = count(listing)
    total = sum(tokens.values())
    pending = iter(_drop_order(acc, listing))
    entries = {e.abs_path: e for e in acc.order}
    while total > cap or count(join_blocks(acc.order, blocks, listing)) > cap:
        victim = next(pending, None)
        if victim is None:
            break
        total -= tokens.get(victim, 0)
        victims = acc.listed if victim == _LISTING else [entries[victim]]
        if victim == _LISTING:
            listing = ""
        blocks.pop(victim, None)
        for entry in victims:
            acc.verdicts[entry.abs_path] = (False, reason_dropped(cap))
            dropped.append(entry.display)
    return listing


def join_blocks(order: list[Entry], blocks: dict[str, str], listing: str) -> str:
    parts = [blocks[e.abs_path] for e in order if e.abs_path in blocks]
    if listing:
        parts.append(listing)
    return "\n\n".join(parts)


def listing_block(listed: list[Entry]) -> str:
    """The description-only rules, listed by display path and description."""
    if not listed:
        return ""
    lines = [LISTING_HEADER, LISTING_INTRO]
    for entry in listed:
        rule = entry.rendered.rule
        description = " ".join((rule.description if rule else "").split())
        lines.append(f"- {entry.display}: {description}")
    lines.append(LISTING_FOOTER)
    return "\n".join(lines)
