"""Composition: (index, active files, settings) → the memory part and its report.

:func:`find_activity` works out which JIT files and glob rules the open files make active (and
which open file is the witness); :func:`compose_memory` orders the included files, applies the
``memory.maxTokens`` cap and renders the text. Both only read the index.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from .formats import SHADOWS
from .index import Entry, MemoryIndex
from .model import MemoryBlock, MemoryFileInfo, MemoryResult
from .paths import is_within, posix
from .reading import cut_at_line, read_text_file
from .render import Rendered
from .rules import ParsedRule, describe_globs
from .wording import (
    LISTING_FOOTER,
    LISTING_HEADER,
    LISTING_INTRO,
    REASON_ALWAYS,
    REASON_DESCRIPTION,
    REASON_EMPTY,
    REASON_GLOBAL,
    REASON_WORKSPACE,
    cut_marker,
    reason_dropped,
    reason_dropped_bytes,
    reason_manual,
    reason_shadowed,
    render_block,
)

JitActivity = dict[str, tuple[str, bool]]  # entry path → (witness rel path, witness is active)
RuleActivity = dict[str, tuple[str, str, bool]]  # entry path → (witness rel path, glob, is active)
MatchMemo = dict[tuple[int, str], tuple[tuple[str, str], ...]]  # (folder, rel) → ((rule path, glob), ...)
_LISTING = "\0listing"


TOTAL_BYTES_CUT = "memory.maxTotalBytes"  # how a cut made by the total cap is named
REGEX_MARK = "\0regex "  # a rule activity witnessed by a regex on the file's content, not a glob
_REGEX_READ_BYTES = 1024 * 1024


@dataclass(frozen=True, slots=True)
class Activity:
    jit: JitActivity
    rules: RuleActivity
    interactive: bool = True  # profile.interactive: Copilot's excludeAgent "coding-agent" applies when False

    def key(self) -> tuple[object, ...]:
        return (tuple(sorted(self.jit.items())), tuple(sorted(self.rules.items())), self.interactive)


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


def find_activity(
    index: MemoryIndex, opened: Iterable[str], active: str | None, memo: MatchMemo, interactive: bool = True
) -> Activity:
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
            matches = memo[(i, rel)] = _rule_matches([*index.home_rules, *folder.rules], rel, path)
        for abs_path, glob in matches:
            rules.setdefault(abs_path, (rel, glob, is_active))
    return Activity(jit, rules, interactive)


def _rule_matches(entries: list[Entry], rel: str, path: str) -> tuple[tuple[str, str], ...]:
    """(rule path, witness) of the rules this open file activates: the glob that matched, the
    nested rule directory it lies under, or a regex (marked) that matched its content."""
    found: list[tuple[str, str]] = []
    content: list[str] = []  # read once, only when a rule has a regex
    for entry in entries:
        rule = entry.rendered.rule
        if rule is None or entry.rendered.skip or rule.mode not in ("globs", "always"):
            continue
        sub = rel
        if entry.rel_dir:
            if not rel.startswith(entry.rel_dir + "/"):
                continue
            sub = rel[len(entry.rel_dir) + 1 :]
            if rule.mode == "always":
                found.append((entry.abs_path, entry.rel_dir + "/**"))
                continue
        if rule.mode != "globs":
            continue
        glob = rule.matching_glob(sub) if rule.globs else ""
        if glob is None:
            continue
        if rule.regexes:
            if not content:
                content.append(read_text_file(path, _REGEX_READ_BYTES).text or "")
            hit = rule.matching_regex(content[0])
            if hit is None:
                continue
            glob = glob or REGEX_MARK + hit
        found.append((entry.abs_path, glob))
    return tuple(found)


@dataclass(slots=True)
class _Accounts:
    """Each considered file with its verdict, in rendering order."""

    order: list[Entry] = field(default_factory=list)
    verdicts: dict[str, tuple[bool, str]] = field(default_factory=dict)  # abs path → (included, reason)
    warnings: list[str] = field(default_factory=list)
    included_real: dict[str, str] = field(default_factory=dict)  # file key → display of its first inclusion
    listed: list[Entry] = field(default_factory=list)
    seen_at: dict[str, int] = field(default_factory=dict)  # abs path → len(included_real) when it was considered

    index: MemoryIndex | None = None
    rendered: dict[str, Rendered] = field(default_factory=dict)  # abs path → rendering used
    duplicates: dict[str, str] = field(default_factory=dict)  # abs path → display of the first inclusion
    included_bodies: dict[str, str] = field(default_factory=dict)  # normalised text → display of its inclusion
    shadows: Shadows = field(default_factory=dict)
    text_twins: set[str] = field(default_factory=set)  # displays another file repeated the text of
    body_owner: dict[str, str] = field(default_factory=dict)  # normalised text → abs path of its inclusion
    warned: set[str] = field(default_factory=set)  # file keys whose warnings were told
    imported_by: dict[str, str] = field(default_factory=dict)  # file key → display of the first file importing it

    def consider(self, entry: Entry, wants: bool, reason: str) -> None:
        if entry.abs_path in self.verdicts:
            return  # nested workspace folders: the file was already accounted for
        self.order.append(entry)
        self.rendered[entry.abs_path] = entry.rendered
        self.verdicts[entry.abs_path] = self._verdict(entry, wants, reason)
        # One file's problems once: a symlink to it (CLAUDE.md → AGENTS.md) or a hard link has the
        # same failed imports, and would repeat each of them under its own name.
        rendered = self.rendered[entry.abs_path]
        key = rendered.key or rendered.real or entry.abs_path
        if key not in self.warned:
            self.warned.add(key)
            self.warnings.extend(rendered.warnings)

    def _verdict(self, entry: Entry, wants: bool, reason: str) -> tuple[bool, str]:
        r = entry.rendered
        if r.skip:
            return False, f"skipped: {r.skip}"
        if not wants:
            return False, reason
        self.seen_at[entry.abs_path] = len(self.included_real)
        key = r.key or r.real
        twin = self.included_real.get(key)
        if twin is not None:
            self.duplicates[entry.abs_path] = twin
            return False, f"not included: same file as {twin}"
        if self.index is not None and any(p in self.included_real for p, _d in r.imported):
            # An import repeats a file already in the instruction: render without it.
            r = self.rendered[entry.abs_path] = self.index.without_seen(entry, tuple(self.included_real.items()))
        if not r.block or (r.repeats and only_headings(r.content)):
            # Nothing of its own is left (a title and imports of files already included): not a block.
            if r.repeats:
                firsts = list(dict.fromkeys(d for _p, d in r.repeats))
                self.duplicates[entry.abs_path] = firsts[0]
                return False, f"not included: only repeats {', '.join(firsts)}"
            return False, REASON_EMPTY
        # Texts compare after imports: two files holding the same line and `@AGENTS.md` of their own folders differ.
        body = normalised_body(entry.rendered.content if r is not entry.rendered else r.content)
        copy_of = self.included_bodies.get(body)
        if copy_of is not None:
            # Generated copies of one rule in several formats: the text goes in once.
            self.duplicates[entry.abs_path] = copy_of
            self.text_twins.add(copy_of)
            return False, f"not included: same text as {copy_of}"
        self.included_bodies[body] = entry.display
        self.body_owner[body] = entry.abs_path
        self.included_real[key] = entry.display
        for p, d in r.imported:
            self.included_real.setdefault(p, d)
            self.imported_by.setdefault(p, entry.display)
        return True, reason

    def imported_shadows(self) -> None:
        """A file another one hides (``AGENTS.override.md`` beside ``AGENTS.md``) whose text still comes in
        through an included file's import says so: its reason is that import, not the file that hides it."""
        for entry in self.order:
            included, reason = self.verdicts[entry.abs_path]
            shadow = self.shadows.get((entry.abs_path, entry.tier))
            r = entry.rendered
            importer = self.imported_by.get(r.key or r.real or entry.abs_path)
            if not included and shadow is not None and importer is not None and reason == reason_shadowed(shadow):
                why = f"imported by {importer} ({shadow} takes its place as a file of its own)"
                self.verdicts[entry.abs_path] = (False, why)


def only_headings(content: str) -> bool:
    """Whether ``content`` says nothing but Markdown headings (a title left once its imports are gone)."""
    return all(not line.strip() or line.lstrip().startswith("#") for line in content.splitlines())


def normalised_body(content: str) -> str:
    """A file's text for duplicate detection: frontmatter already gone, whitespace runs collapsed."""
    return " ".join(content.split())


HEAD_WORDS = 8  # enough to tell apart files that all start with "# " and a title


def head_of(content: str) -> str:
    """The first :data:`HEAD_WORDS` words of :func:`normalised_body` of ``content``, without
    normalising all of it: two texts can only be the same if their heads are."""
    return " ".join(content.split(None, HEAD_WORDS)[:HEAD_WORDS])


_WINNER_ENDINGS = tuple(os.sep + winner for winner in SHADOWS)
Shadows = dict[tuple[str, str], str]  # (loser's path, tier) → name of the file that hides it


def shadow_table(index: MemoryIndex) -> Shadows:
    """Which files are hidden in their folder (``AGENTS.override.md`` hides ``AGENTS.md``), worked
    out once per composition from the few files that can hide another."""
    table: Shadows = {}
    for path, other in index.by_path.items():
        if path.endswith(_WINNER_ENDINGS) and not other.rendered.missing:
            winner = os.path.basename(path)
            table[(os.path.join(os.path.dirname(path), SHADOWS[winner]), other.tier)] = winner
    return table


@dataclass(frozen=True, slots=True)
class Trace:
    """How a :class:`MemoryResult` was made, kept so that a later edit to one file's text can be
    patched into it (:mod:`.recompose`) instead of composing everything again."""

    entries: tuple[Entry, ...]  # the entries considered, in the order of ``MemoryResult.files``
    renders: tuple[Rendered, ...]  # each entry's rendering when it was considered
    blocks: dict[str, str]  # abs path → its block in the text, for the included files
    listing: str
    bodies: dict[str, str]  # normalised text → abs path of the included file that has it (see heads)
    heads: dict[str, str]  # abs path → head_of() its text, for every included file
    text_twins: frozenset[str]  # displays whose text another file repeated (so was left out)
    wanted: frozenset[str]  # abs paths whose verdict looked at their content
    capped: bool  # memory.maxTokens or memory.maxTotalBytes dropped or cut something


def compose_memory(
    index: MemoryIndex, activity: Activity, max_tokens: int, count: Callable[[str], int]
) -> MemoryResult:
    """The memory part for this activity: ordered blocks under the token cap, and the report."""
    return compose_traced(index, activity, max_tokens, count)[0]


def compose_traced(
    index: MemoryIndex, activity: Activity, max_tokens: int, count: Callable[[str], int]
) -> tuple[MemoryResult, Trace]:
    """:func:`compose_memory`, and the :class:`Trace` of how its result was made."""
    acc = _Accounts(index=index, shadows=shadow_table(index))
    _consider_fixed_tiers(index, acc)
    _consider_jit(index, acc, activity.jit)
    _consider_rules(index, acc, activity)
    acc.imported_shadows()
    acc.order.sort(key=folder_rank)
    blocks = {e.abs_path: acc.rendered[e.abs_path].block for e in acc.order if acc.verdicts[e.abs_path][0]}
    listing = listing_block(acc.listed)
    dropped: list[str] = []
    cuts = {e.abs_path: c for e in acc.order if (c := acc.rendered[e.abs_path].cut) is not None}
    max_total = index.settings.max_total_bytes
    if max_total > 0:
        listing = _apply_byte_cap(acc, blocks, listing, dropped, cuts, max_total, count)
    if max_tokens > 0:
        listing = _apply_cap(acc, blocks, listing, dropped, max_tokens, count)
    # A rule that is only listed costs its listing line, not its body.
    listed_tokens = {e.abs_path: count(listing_line(e)) for e in acc.listed} if listing else {}
    files = tuple(
        MemoryFileInfo(
            e.display,
            e.abs_path,
            e.tier,
            listed_tokens.get(e.abs_path, acc.rendered[e.abs_path].tokens),
            *acc.verdicts[e.abs_path],
            duplicate_of=acc.duplicates.get(e.abs_path),
            repeats=acc.rendered[e.abs_path].repeats,
            cut=cuts.get(e.abs_path),
        )
        for e in acc.order
    )
    result = MemoryResult(
        join_blocks(acc.order, blocks, listing),
        files,
        tuple(dropped),
        tuple(dict.fromkeys(acc.warnings)),
        seen=tuple(acc.included_real.items()),
        seen_at=acc.seen_at,
    )
    capped = bool(dropped) or any(c.startswith(TOTAL_BYTES_CUT) for c in cuts.values())
    return result, _trace(acc, blocks, listing, capped)


def _trace(acc: _Accounts, blocks: dict[str, str], listing: str, capped: bool) -> Trace:
    return Trace(
        entries=tuple(acc.order),
        renders=tuple(e.rendered for e in acc.order),
        blocks=blocks,
        listing=listing,
        bodies={body: path for body, path in acc.body_owner.items() if path in blocks},
        heads={path: head_of(body) for body, path in acc.body_owner.items() if path in blocks},
        text_twins=frozenset(acc.text_twins),
        wanted=frozenset(acc.seen_at),
        capped=capped,
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
    acc = _Accounts(index=index, shadows=shadow_table(index))
    _consider_fixed_tiers(index, acc)
    _consider_jit(index, acc, activity.jit)
    _consider_rules(index, acc, activity)
    acc.imported_shadows()
    out = []
    for e in acc.order:
        included, reason = acc.verdicts[e.abs_path]
        rule = e.rendered.rule
        on_demand = e.tier == "jit" or (e.tier == "rule" and rule is not None and rule.mode == "globs")
        jit, hit = activity.jit.get(e.abs_path), activity.rules.get(e.abs_path)
        for_active = (jit is not None and jit[1]) or (hit is not None and hit[2])
        rendered = acc.rendered[e.abs_path]
        key = e.rendered.key or e.rendered.real or e.abs_path
        scope = e.rel_dir if e.tier == "jit" else _scope(rule) if rule is not None else ""
        out.append(
            MemoryBlock(
                e.display, e.abs_path, e.tier, included, reason, rendered.content, on_demand, for_active, key, scope
            )
        )
    return tuple(out)


def _scope(rule: ParsedRule) -> str:
    """What decides when a rule applies, as its own text says it (mode, globs, regexes)."""
    return "|".join([rule.mode, *rule.globs, *(r.pattern for r in rule.regexes), *rule.exclude_agent])


def _consider_fixed_tiers(index: MemoryIndex, acc: _Accounts) -> None:
    for entry in index.globals:
        if not entry.rendered.missing:
            shadow = acc.shadows.get((entry.abs_path, entry.tier))
            acc.consider(entry, shadow is None, reason_shadowed(shadow) if shadow else REASON_GLOBAL)
    for folder in index.folders:
        if not folder.exists:
            acc.warnings.append(f"workspace folder {folder.path} does not exist or is not a directory")
        if folder.refused:
            acc.warnings.append(folder.refused)  # a root above that is another user's: not the project
        # A walk cut at its cap, an ignore file cut at memory.maxIgnorePatterns: both change what
        # is discovered, say so.
        acc.warnings.extend(folder.index.warnings())
        for entry in folder.workspace:
            if not entry.rendered.missing:
                shadow = acc.shadows.get((entry.abs_path, entry.tier))
                acc.consider(entry, shadow is None, reason_shadowed(shadow) if shadow else REASON_WORKSPACE)


def _consider_jit(index: MemoryIndex, acc: _Accounts, active: JitActivity) -> None:
    for folder in index.folders:
        for entry in folder.jit_order:
            if entry.rendered.missing or entry.ignored:
                continue  # an ignored file is not discovered (kept only to follow changes)
            dir_display = folder.prefix + entry.rel_dir + "/"
            witness = active.get(entry.abs_path)
            shadow = acc.shadows.get((entry.abs_path, entry.tier))
            if shadow is not None:
                acc.consider(entry, False, reason_shadowed(shadow))
            elif witness is None:
                acc.consider(entry, False, f"not included: no open file under {dir_display}")
            else:
                rel, is_active = witness
                who = "active file" if is_active else "open file"
                acc.consider(entry, True, f"{who} {folder.prefix}{rel} is under {dir_display}")


def _consider_rules(index: MemoryIndex, acc: _Accounts, activity: Activity) -> None:
    groups = [("", index.home_rules), *((f.prefix, f.rules) for f in index.folders)]
    for prefix, entries in groups:
        for entry in sorted(entries, key=lambda e: e.order):
            wants, reason, listed = rule_verdict(entry, prefix, activity)
            acc.consider(entry, wants, reason)
            if listed and entry.rendered.block and not entry.rendered.skip:
                acc.listed.append(entry)


def rule_verdict(entry: Entry, prefix: str, activity: Activity) -> tuple[bool, str, bool]:
    """(included, reason, listed by description) of a rule file for this activity."""
    rule = entry.rendered.rule
    if rule is None or entry.rendered.skip:
        return False, "", False
    if not activity.interactive and "coding-agent" in rule.exclude_agent:
        return False, "not included: excludeAgent 'coding-agent' and profile.interactive is false", False
    if rule.mode == "always" and not entry.rel_dir:
        return True, REASON_ALWAYS, False
    if rule.mode in ("always", "globs"):
        hit = activity.rules.get(entry.abs_path)
        if hit is not None:
            rel, witness, _is_active = hit
            if witness.startswith(REGEX_MARK):
                return True, f"rule: regex '{witness[len(REGEX_MARK) :]}' matches the text of {prefix}{rel}", False
            if rule.mode == "always":
                return True, f"rule: {prefix}{rel} is under {prefix}{entry.rel_dir}/", False
            return True, f"rule: glob '{witness}' matches {prefix}{rel}", False
        if rule.listed_otherwise:
            return False, REASON_DESCRIPTION, True
        if rule.mode == "always":
            return False, f"not included: no open file under {prefix}{entry.rel_dir}/", False
        what = describe_globs(rule.globs) or "nothing"
        if rule.regexes:
            regexes = ", ".join(f"'{r.pattern}'" for r in rule.regexes)
            what = f"{what} with text matching {regexes}" if rule.globs else f"text matching {regexes}"
        return False, f"not included: no open file matches {what}", False
    if rule.mode == "description":
        return False, REASON_DESCRIPTION, True
    return False, reason_manual(entry.rule_format), False


def _apply_byte_cap(
    acc: _Accounts,
    blocks: dict[str, str],
    listing: str,
    dropped: list[str],
    cuts: dict[str, str],
    cap: int,
    count: Callable[[str], int],
) -> str:
    """Keep the memory text within ``cap`` bytes: the block that crosses it is cut at a line end with a
    marker line, later blocks are dropped. Returns the listing (maybe emptied)."""
    used = 0
    for entry in acc.order:
        block = blocks.get(entry.abs_path)
        if block is None:
            continue
        sep = 2 if used else 0
        size = len(block.encode("utf-8"))
        if used + sep + size <= cap:
            used += sep + size
            continue
        rendered = acc.rendered[entry.abs_path]
        cut = _cut_block(entry.display, rendered.content, cap - used - sep, cap)
        if cut is None:
            blocks.pop(entry.abs_path)
            acc.verdicts[entry.abs_path] = (False, reason_dropped_bytes(cap))
            dropped.append(entry.display)
            acc.warnings.append(f"{entry.display}: {reason_dropped_bytes(cap)}")
        else:
            blocks[entry.abs_path] = cut
            acc.rendered[entry.abs_path] = replace(rendered, block=cut, tokens=count(cut))
            cuts[entry.abs_path] = f"{TOTAL_BYTES_CUT} ({cap})"
            acc.warnings.append(f"{entry.display}: cut at memory.maxTotalBytes ({cap})")
        used = cap  # whatever comes after the cut is dropped, even when small
    if listing and used + 2 + len(listing.encode("utf-8")) > cap:
        for entry in acc.listed:
            acc.verdicts[entry.abs_path] = (False, reason_dropped_bytes(cap))
            dropped.append(entry.display)
        listing = ""
    return listing


def _cut_block(display: str, content: str, budget: int, cap: int) -> str | None:
    """``display``'s block holding as many whole lines of ``content`` as fit ``budget`` bytes with the
    marker line; None when not even one line fits."""
    marker = cut_marker(f"memory.maxTotalBytes ({cap})")
    room = budget - len(render_block(display, marker).encode("utf-8")) - 1
    if room <= 0:
        return None
    head = cut_at_line(content.encode("utf-8") + b"\n", room).decode("utf-8").rstrip("\n")
    if not head.strip():
        return None
    return render_block(display, head + "\n" + marker)


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
    lines = [LISTING_HEADER, LISTING_INTRO, *(listing_line(entry) for entry in listed), LISTING_FOOTER]
    return "\n".join(lines)


def listing_line(entry: Entry) -> str:
    """One description-only rule as the listing shows it."""
    rule = entry.rendered.rule
    description = " ".join((rule.listing_text() if rule else "").split())
    return f"- {entry.display}: {description}"
