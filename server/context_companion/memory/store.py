"""The memory store: one lock around the index, the change handling and composition.

Tiers, in the order they are rendered (later blocks take precedence, so the most specific
text comes last, as in the AGENTS.md convention "the closest file wins"):

1. **global**: ``~/.claude/CLAUDE.md``, ``~/.gemini/GEMINI.md``, each agent's global files, ... when
   ``memory.readVendorGlobals`` is on, then the memory file names in the Context Companion
   config dir (our own global memory, where ``addMemory`` writes, comes last);
2. **workspace**: per workspace folder, the directories from the nearest boundary marker down to
   the folder (root → leaf), always included;
3. **jit**: memory files in sub-directories of a workspace folder, included while an open or
   active file lies under that sub-directory; root → leaf, the closest file last;
4. **rule**: glob-scoped rules (see :mod:`.rules`), then the list of description-only rules.

The pieces: :mod:`.index` (the files per tier, rendered), :mod:`.render` (read and render
caches), :mod:`.changes` (file events → index updates), :mod:`.compose` (pure composition),
:mod:`.language` (editor features). The store caches composition results keyed by which JIT
files and rules are active, so the same editor state costs a dict lookup.

All methods are safe to call from several threads (one re-entrant lock).
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..agents.gemini_settings import for_agent
from ..settings import ContextSettings, MemorySettings, user_config_dir
from .agents import AGENTS, AgentRules
from .changes import (
    Entered,
    always_entered,
    apply_plan,
    classify,
    descends_into,
    entered_moved,
    is_relevant,
    plan_changes,
    summarize,
)
from .compose import Activity, MatchMemo, Trace, compose_blocks, compose_traced, find_activity
from .explain import Explanation, explain
from .formats import BY_FORMAT, NAME_FAMILY, SHADOWS, match_rule_path
from .index import MemoryIndex
from .language import AnalysisContext, analyze_document
from .model import ChangeSummary, FileAnalysis, MemoryBlock, MemoryFileInfo, MemoryResult
from .paths import home_display, norm
from .recompose import patch
from .render import Renderer
from .rule_budget import RuleBudget
from .wording import REASON_FAMILY_OFF, REASON_GLOBALS_OFF, REASON_GONE, REASON_NOT_A_NAME, REASON_NOT_FOUND

_RESULT_CACHE_SIZE = 64
_MATCH_MEMO_SIZE = 4096


class MemoryStore:
    """Memory files of the workspace folders and the global dirs; see the module docstring."""

    def __init__(
        self,
        settings: MemorySettings,
        workspace_folders: Sequence[Path],
        *,
        count_tokens: Callable[[str], int],
        global_dir: Path | None = None,
        home: Path | None = None,
        exclude: Sequence[str] | None = None,
        walk_below: bool | Sequence[str] = True,
        rule_budget: RuleBudget | None = None,
    ) -> None:
        """``exclude``: ``context.exclude`` patterns; imports of matching files are refused (None: the
        default patterns, so secrets stay out even when a caller passes nothing). ``walk_below`` not True:
        the folders' own memory and rules, and only the sub-directories named, never a walk (see index_folder)."""
        self.settings = settings
        self._count = count_tokens
        home_path = norm(home if home is not None else Path.home())
        renderer = Renderer(
            settings.max_file_bytes, settings.import_max_depth, home_path, count_tokens, settings.max_total_bytes
        )
        patterns = ContextSettings().exclude if exclude is None else exclude
        self._index = MemoryIndex(
            settings,
            renderer,
            home_path,
            norm(global_dir or user_config_dir()),
            patterns,
            walk_below=walk_below,
            rule_budget=rule_budget,
        )
        self._index.set_folders(workspace_folders, loaded=False)
        self._lock = threading.RLock()
        self._loaded = False
        self._generation = 0
        # Composition results by activity, with the generation they are current for and how they were
        # made: after an edit that changed only text they are patched (recompose.patch), not redone.
        self._results: OrderedDict[tuple[Any, ...], tuple[int, MemoryResult, Trace]] = OrderedDict()
        self._match_memo: MatchMemo = {}
        self._last_call: tuple[tuple[Any, ...], MemoryResult] | None = None
        self._last_blocks: tuple[tuple[Any, ...], tuple[MemoryBlock, ...]] | None = None
        self._last_result: MemoryResult | None = None
        self._glob_cache: dict[tuple[str, str], bool] = {}  # (folder, glob) → matches a file
        self._roots_seen: tuple[list[Path], list[Path]] = ([], [])
        self._entered_at: tuple[int, Entered] = (-1, (frozenset(), ()))  # (generation, always_entered)

    # ------------------------------------------------------------------ loading

    def load(self) -> None:
        """Index and read everything (start-up and refreshMemory). Never raises for bad files."""
        with self._lock:
            self._index.load()
            self._loaded = True
            self._roots_seen = (self._index.watch_roots(), self._index.flat_watch_roots())
            self._bump()

    def set_workspace_folders(self, folders: Sequence[Path]) -> None:
        """Replace the workspace folders; folders kept keep their index, new ones are indexed."""
        with self._lock:
            self._index.set_folders(folders, self._loaded)
            self._bump()

    def agent_table(self, agent: str | AgentRules) -> tuple[AgentRules, tuple[str, ...]]:
        """``agent``'s table adjusted to its own settings files as they are now (what :meth:`explain` judges by)."""
        folder = self._index.folders[0].path if self._index.folders else None
        return for_agent(AGENTS[agent] if isinstance(agent, str) else agent, folder, self._index.home)

    @property
    def generation(self) -> int:
        """Moves whenever anything the store composes from may have changed (a memo keyed on it stays true)."""
        return self._generation

    # ------------------------------------------------------------------ composing

    def compose(
        self, open_paths: Sequence[Path | str], active_path: Path | str | None = None, *, interactive: bool = True
    ) -> MemoryResult:
        """The memory part of the instruction for these open files (cached by what is active).

        ``interactive`` is the profile's: rules Copilot marks ``excludeAgent: coding-agent`` are
        left out for an agent working on its own."""
        with self._lock:
            raw = self._call_key(open_paths, active_path, interactive)
            if self._last_call is not None and self._last_call[0] == raw:
                return self._last_call[1]  # the very same call as last time: nothing to work out
            result = self._cached_result(self._activity(open_paths, active_path, interactive))
            self._last_result = result
            self._last_call = (raw, result)
            return result

    def explain(
        self,
        agent: str | AgentRules,
        open_paths: Sequence[Path | str],
        active_path: Path | str | None = None,
        *,
        interactive: bool = True,
        cwd: str | None = None,
    ) -> Explanation:
        """What ``agent`` (an id of :data:`.agents.AGENTS`, or a table) would load for these open files, and why
        (``cwd``: the folder it runs in, when not the workspace folder itself)."""
        with self._lock:
            if not self._loaded:
                self.load()
            activity = self._activity(open_paths, active_path, interactive)
            result = self._cached_result(activity)
            folder = self._index.folders[0].path if self._index.folders else None
            table = AGENTS[agent] if isinstance(agent, str) else agent
            rules, assumed = for_agent(table, folder, self._index.home)
            return explain(self._index, activity, result, rules, self.settings.file_names, assumed, cwd and norm(cwd))

    def gone_reason(self, abs_path: str) -> str:
        """Why a file that was memory is no memory now: deleted, or the settings no longer read it (its name
        left ``memory.fileNames``, its family ``memory.sources``, or ``memory.readVendorGlobals`` is off)."""
        if not os.path.lexists(abs_path):
            return REASON_GONE
        settings = self.settings
        sources = set(settings.sources)
        name = os.path.basename(abs_path)
        folder = next((f for f in self._index.folders if abs_path.startswith(f.prefix_path)), None)
        rule = match_rule_path(os.path.relpath(abs_path, folder.path).replace(os.sep, "/")) if folder else None
        if rule is None and folder is None:
            home = self._index.home.rstrip(os.sep) + os.sep
            if abs_path.startswith(home):
                rule = match_rule_path(os.path.relpath(abs_path, self._index.home).replace(os.sep, "/"))
        if rule is not None:
            rule_family = BY_FORMAT[rule[0]].family
            return REASON_FAMILY_OFF.format(family=rule_family) if rule_family not in sources else REASON_NOT_FOUND
        if name not in settings.file_names and name not in SHADOWS:
            return REASON_NOT_A_NAME
        family = NAME_FAMILY.get(name)
        if family is not None and family not in sources:
            return REASON_FAMILY_OFF.format(family=family)
        if folder is None and not settings.read_vendor_globals:
            return REASON_GLOBALS_OFF
        return REASON_NOT_FOUND

    def blocks(
        self, open_paths: Sequence[Path | str], active_path: Path | str | None = None, *, interactive: bool = True
    ) -> tuple[MemoryBlock, ...]:
        """Each memory and rule file's content and verdict for these open files (see
        :func:`~.compose.compose_blocks`); the same call twice in a row costs a comparison."""
        with self._lock:
            raw = self._call_key(open_paths, active_path, interactive)
            if self._last_blocks is not None and self._last_blocks[0] == raw:
                return self._last_blocks[1]
            blocks = compose_blocks(self._index, self._activity(open_paths, active_path, interactive))
            self._last_blocks = (raw, blocks)
            return blocks

    def _call_key(
        self, open_paths: Sequence[Path | str], active_path: Path | str | None, interactive: bool
    ) -> tuple[Any, ...]:
        """What a call depends on, as given (loads the index first: the key holds its generation)."""
        if not self._loaded:
            self.load()
        active = active_path and os.fspath(active_path)
        return (self._generation, tuple(os.fspath(p) for p in open_paths), active, interactive)

    def _activity(
        self, open_paths: Sequence[Path | str], active_path: Path | str | None, interactive: bool
    ) -> Activity:
        active = norm(active_path) if active_path is not None else None
        opened = {norm(p) for p in open_paths} | ({active} if active else set())
        if len(self._match_memo) > _MATCH_MEMO_SIZE:
            self._match_memo.clear()
        return find_activity(self._index, sorted(opened), active, self._match_memo, interactive)

    def _cached_result(self, activity: Activity) -> MemoryResult:
        key = activity.key()
        cached = self._results.get(key)
        if cached is not None:
            self._results.move_to_end(key)
            generation, result, trace = cached
            if generation == self._generation:
                return result
            patched = patch(
                result,
                trace,
                max_tokens=self.settings.max_tokens,
                max_total_bytes=self.settings.max_total_bytes,
                count=self._count,
            )
            if patched is not None:
                self._results[key] = (self._generation, *patched)
                return patched[0]
        result, trace = compose_traced(self._index, activity, self.settings.max_tokens, self._count)
        self._results[key] = (self._generation, result, trace)
        if len(self._results) > _RESULT_CACHE_SIZE:
            self._results.popitem(last=False)
        return result

    # ------------------------------------------------------------------ changes

    def apply_changes(self, paths: Iterable[str | Path]) -> ChangeSummary:
        """Re-read what these changed paths affect; say which files (and tiers) changed."""
        with self._lock:
            if not self._loaded:
                self.load()
                return ChangeSummary((), "workspaceChanged")
            plan = plan_changes(self._index, paths)
            entered = self._entered()
            changed = apply_plan(self._index, plan)
            if changed or plan.structural:
                # Files re-rendered in place keep the index's shape: compositions can be patched.
                self._bump(keep_results=not (plan.structural or plan.reloads))
            watch_changed = plan.rewatch or entered_moved(self._index, entered, self._entered())
            if plan.structural or plan.reloads:
                roots = (self._index.watch_roots(), self._index.flat_watch_roots())
                watch_changed, self._roots_seen = watch_changed or roots != self._roots_seen, roots
            return summarize(plan, changed, watch_changed)

    def is_relevant_path(self, path: str | Path) -> bool:
        """Would a change to this path matter (memory, rule, ignore or imported file, or a directory)?"""
        with self._lock:
            return is_relevant(self._index, norm(path))

    def descends_into(self, path: str | Path) -> bool:
        """Should the watcher watch this directory and walk below it (not in an ignored tree, or on
        the way to a file the memory reads)?"""
        with self._lock:
            return descends_into(self._index, norm(path), self._entered())

    def _entered(self) -> Entered:
        if self._entered_at[0] != self._generation:
            self._entered_at = (self._generation, always_entered(self._index))
        return self._entered_at[1]

    def watch_roots(self) -> list[Path]:
        """Directories to watch recursively: the workspace folders and the existing global dirs."""
        with self._lock:
            return self._index.watch_roots()

    def flat_watch_roots(self) -> list[Path]:
        """Directories worth watching without recursion (the workspace tier above each folder, and
        the nearest existing parent of a global dir that does not exist yet)."""
        with self._lock:
            return self._index.flat_watch_roots()

    # ------------------------------------------------------------------ language features

    def is_memory_document(self, path: Path | str) -> bool:
        """Whether ``path`` is a memory or rule file (for the language features)."""
        with self._lock:
            return classify(self._index, norm(path)) is not None

    def analyze(self, path: Path | str, text: str) -> FileAnalysis:
        """Diagnostics, links, hovers and the code lens of an open memory or rule file's text."""
        with self._lock:
            path = norm(path)
            where = classify(self._index, path)
            if where is None:
                return FileAnalysis()
            tier, folder_i, rel, fmt = where
            index = self._index
            folder = index.folders[folder_i] if folder_i is not None else None
            # Imports of files the instruction already holds before this one are repeats (before any
            # composition: what the always-included tiers hold).
            last = self._last_result or self._cached_result(find_activity(index, [], None, self._match_memo))
            options = replace(index.expand_options(path, folder_i), seen=last.seen_before(path))
            context = AnalysisContext(
                path=path,
                tier=tier,
                rel=rel,
                rule_format=fmt,
                display=index.display(path) if tier != "global" else home_display(path, index.home),
                folder_path=folder.path if folder else None,
                folder_prefix=folder.prefix if folder else "",
                max_file_bytes=self.settings.max_file_bytes,
                expand_options=options,
                count=self._count,
                last_info=self._last_info(path),
                glob_cache=self._glob_cache,
            )
            return analyze_document(context, text)

    def source_text(self, path: Path | str) -> tuple[str | None, str]:
        """The text of a known memory or rule file as the reader sees it on disk (capped at
        ``memory.maxFileBytes``, regular files only), or None and why it cannot be given: not a
        memory file, or skipped (a symlink out of the workspace, a special file, ...)."""
        with self._lock:
            if not self._loaded:
                self.load()
            entry = self._index.by_path.get(norm(path))
            if entry is None:
                return None, "not a memory file of this workspace"
            rendered = entry.rendered
            if rendered.skip is not None or rendered.missing or not rendered.real:
                return None, f"skipped: {rendered.skip or 'not found'}"
            # The real path the containment check accepted when the file was rendered: reading it
            # cannot follow a link swapped in since (that change re-renders the file first).
            outcome = self._index.renderer.read(rendered.real)
            if outcome.text is None:
                return None, f"skipped: {outcome.skip or 'not found'}"
            return outcome.text, ""

    # ------------------------------------------------------------------ internals

    def _last_info(self, path: str) -> MemoryFileInfo | None:
        """What the last composition said of ``path`` (for the editor's code lens)."""
        last = self._last_result
        return next((info for info in last.files if info.abs_path == path), None) if last else None

    def _bump(self, keep_results: bool = False) -> None:
        self._generation += 1
        if not keep_results:
            self._results.clear()
        self._match_memo.clear()
        self._glob_cache.clear()
