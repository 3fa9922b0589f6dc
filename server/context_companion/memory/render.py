"""Reading and rendering one memory or rule file, with a per-file cache.

A file's rendering (frontmatter split, imports expanded, block built, tokens counted) is kept
with the signatures (mtime, size, inode) of the file and of every path its imports touched.
Rendering again when none of them changed is a few ``stat`` calls: a change to one memory file
re-reads, re-expands and re-counts that file only.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from ..containment import place
from ..ownership import owned_by_other
from .imports import ExpandOptions, expand_imports
from .reading import FileSignature, ReadOutcome, read_text_file, signature_of
from .rules import ParsedRule, RuleFormat, parse_rule
from .wording import frontmatter_problem, render_block

log = logging.getLogger(__name__)

_READ_CACHE_LIMIT = 4096


@dataclass(frozen=True, slots=True)
class Rendered:
    """One file as the instruction would show it, and what went into it."""

    real: str = ""
    content: str = ""  # imports expanded, frontmatter stripped
    block: str = ""  # "" when skipped or empty
    tokens: int = 0
    deps: frozenset[str] = frozenset()  # every path an import tried
    warnings: tuple[str, ...] = ()
    skip: str | None = None  # why it is skipped
    missing: bool = False
    rule: ParsedRule | None = None
    imported: tuple[tuple[str, str], ...] = ()  # (file key, display) of every file inlined, in order
    key: str = ""  # paths.file_key of ``real``: hard links and symlinks to one file share it
    repeats: tuple[tuple[str, str], ...] = ()  # (import as written, display of the first inclusion) left out
    cut: str | None = None  # how the file itself was cut at memory.maxFileBytes


@dataclass(frozen=True, slots=True)
class RenderRequest:
    """What identifies one rendering besides the bytes on disk."""

    abs_path: str
    display: str
    rule_format: RuleFormat | None
    roots: tuple[str, ...]  # real paths the file and its imports must lie in
    contained: bool  # whether the file itself must lie inside ``roots``
    policy: int = 0  # the index's import policy generation (ignore rules, exclusions)


@dataclass(slots=True)
class _Cached:
    outcome: ReadOutcome
    deps: tuple[tuple[str, FileSignature | None], ...]
    rendered: Rendered


@dataclass(slots=True)
class Renderer:
    """Owns the read cache and the per-file render cache of a store."""

    max_file_bytes: int
    max_depth: int
    home: str
    count: Callable[[str], int]
    max_total_bytes: int = 0  # an expansion inlines no more than this (0: no cap)
    _reads: dict[str, ReadOutcome] = field(default_factory=dict)
    _renders: dict[RenderRequest, _Cached] = field(default_factory=dict)
    _policy: int = 0  # the newest import policy rendered under: older renderings never match again
    _real_of: dict[str, str] = field(default_factory=dict)  # path rendered → the real path read for it
    # While one file renders, each path is stat'ed once (its key, its read check and its dependency
    # signature all ask): None outside a render.
    _stats: dict[str, FileSignature | None] | None = None

    def clear(self) -> None:
        self._reads.clear()
        self._renders.clear()
        self._real_of.clear()

    def forget(self, path: str) -> None:
        """Read ``path`` again next time (its signature may not show a quick rewrite)."""
        self._reads.pop(path, None)
        # The real path it was last read under (a file event names the path, not its target); only a
        # path never rendered costs a realpath. Forgetting is only ever a cache miss, never a read.
        real = self._real_of.get(path)
        self._reads.pop(real if real is not None else os.path.realpath(path), None)

    def signature(self, path: str) -> FileSignature | None:
        """``signature_of(path)``, once per path while a file renders."""
        memo = self._stats
        if memo is None:
            return signature_of(path)
        if path not in memo:
            memo[path] = signature_of(path)
        return memo[path]

    def key_of(self, real: str) -> str:
        """:func:`~.paths.file_key` of a real path, from :meth:`signature`."""
        sig = self.signature(real)
        return sig.key() if sig is not None else real

    def read(self, path: str) -> ReadOutcome:
        cached = self._reads.get(path)
        if cached is not None:
            sig = self.signature(path)
            if (sig is not None and sig == cached.signature) or (sig is None and cached.missing):
                return cached
        outcome = read_text_file(path, self.max_file_bytes)
        if len(self._reads) > _READ_CACHE_LIMIT:
            self._reads.clear()
        self._reads[path] = outcome
        # For the server log (-v), once per actual read (cache hits stay quiet). The user is told by
        # MemoryResult.warnings, in the workspace's words: a warning here printed each one twice.
        if outcome.skip:
            log.info("memory file %s skipped: %s", path, outcome.skip)
        elif outcome.owner is not None:
            log.info("memory file %s: %s", path, owned_by_other(outcome.owner))
        elif outcome.warning:
            log.info("memory file %s: %s", path, outcome.warning)
        if outcome.cut:
            log.info("memory file %s cut at %s", path, outcome.cut)
        return outcome

    def render(
        self, request: RenderRequest, display: Callable[[str], str], blocked: Callable[[str], str | None]
    ) -> Rendered:
        """The file of ``request`` rendered, from the cache when nothing it used changed."""
        self._stats = {}
        try:
            return self._render_cached(request, display, blocked)
        finally:
            self._stats = None

    def _render_cached(
        self, request: RenderRequest, display: Callable[[str], str], blocked: Callable[[str], str | None]
    ) -> Rendered:
        if request.contained:
            placed = place(request.abs_path, request.roots)
            real = placed.real
            if placed.refusal is not None:
                skip = placed.refusal
                return Rendered(real, skip=skip, warnings=(f"{request.display}: skipped: {skip}",))
        else:
            real = os.path.realpath(request.abs_path)
        if len(self._real_of) > _READ_CACHE_LIMIT:
            self._real_of.clear()
        self._real_of[request.abs_path] = real
        outcome = self.read(real)
        cached = self._renders.get(request)
        if (
            cached is not None
            and cached.outcome is outcome
            and cached.rendered.real == real
            and all(self.signature(p) == sig for p, sig in cached.deps)
        ):
            return cached.rendered
        rendered = self._render(request, real, outcome, display, blocked)
        deps = tuple((p, self.signature(p)) for p in sorted(rendered.deps))
        if request.policy > self._policy:
            # A new policy (a re-walk): every file renders under it from now on. Drop the renderings
            # of the old ones instead of keeping them until the cap (a working day re-walks often).
            self._policy = request.policy
            self._renders = {key: kept for key, kept in self._renders.items() if key.policy >= request.policy}
        if len(self._renders) > _READ_CACHE_LIMIT:
            self._renders.clear()
        self._renders[request] = _Cached(outcome, deps, rendered)
        return rendered

    def _render(
        self,
        request: RenderRequest,
        real: str,
        outcome: ReadOutcome,
        display: Callable[[str], str],
        blocked: Callable[[str], str | None],
    ) -> Rendered:
        name = request.display
        if outcome.text is None:
            if outcome.missing:
                return Rendered(real, skip="not found", missing=True)
            return Rendered(real, skip=outcome.skip, warnings=(f"{name}: skipped: {outcome.skip}",))
        if outcome.owner is not None and request.contained:
            skip = owned_by_other(outcome.owner)  # no memory of this user's: never read into the instruction
            return Rendered(real, skip=skip, warnings=(f"{name}: skipped: {skip}",))
        warnings = [f"{name}: {outcome.warning}"] if outcome.warning else []
        if outcome.cut:
            warnings.append(f"{name}: cut at {outcome.cut}")
        text = outcome.text
        rule = None
        if request.rule_format is not None:
            rule = parse_rule(request.rule_format, text)
            if rule.error:
                skip = frontmatter_problem(rule.error)
                return Rendered(real, rule=rule, skip=skip, warnings=(*warnings, f"{name}: skipped: {skip}"))
            warnings += [f"{name}: unknown frontmatter key '{key}'{hint}" for key, _line, hint in rule.unknown_keys]
            text = rule.body
        expansion = expand_imports(text, request.abs_path, self._options(request, display, blocked), real)
        warnings += [f"{name}: import {f.path} failed: {f.reason}" for f in expansion.failures]
        content, block, tokens = self._block(name, expansion.text)
        key = outcome.signature.key() if outcome.signature is not None else self.key_of(real)
        return Rendered(
            real,
            content,
            block,
            tokens,
            frozenset(expansion.deps),
            tuple(warnings),
            rule=rule,
            imported=tuple((p, d) for p, d in expansion.included.items() if p != key),
            key=key,
            repeats=tuple(expansion.repeats),
            cut=outcome.cut,
        )

    def render_without(
        self,
        request: RenderRequest,
        rendered: Rendered,
        seen: tuple[tuple[str, str], ...],
        display: Callable[[str], str],
        blocked: Callable[[str], str | None],
    ) -> Rendered:
        """``rendered`` again, with the files in ``seen`` (already in the instruction) left out."""
        outcome = self.read(rendered.real)
        if outcome.text is None:
            return rendered
        text = rendered.rule.body if rendered.rule is not None else outcome.text
        options = self._options(request, display, blocked, seen)
        expansion = expand_imports(text, request.abs_path, options, rendered.real)
        content, block, tokens = self._block(request.display, expansion.text)
        return replace(rendered, content=content, block=block, tokens=tokens, repeats=tuple(expansion.repeats))

    def _options(
        self,
        request: RenderRequest,
        display: Callable[[str], str],
        blocked: Callable[[str], str | None],
        seen: tuple[tuple[str, str], ...] = (),
    ) -> ExpandOptions:
        """How the imports of ``request``'s file are expanded (``seen``: files already included)."""
        return ExpandOptions(
            request.roots,
            self.home,
            self.max_depth,
            self.read,
            display,
            blocked,
            seen,
            self.max_total_bytes,
            self.key_of,
            any_owner=not request.contained,
        )

    def _block(self, name: str, expanded: str) -> tuple[str, str, int]:
        """(content, block, tokens) of a file shown as ``name`` whose expanded text is ``expanded``."""
        content = expanded.strip("\n").rstrip()
        block = render_block(name, content) if content.strip() else ""
        return content, block, self.count(block) if block else 0
