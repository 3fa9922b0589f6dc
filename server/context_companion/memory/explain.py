"""Which of the files we found an agent would load, and why: an :class:`~.agents.AgentRules` table
applied to the index, the open files' activity and our own composition. Pure; reads only."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .agents import AgentRules
from .compose import REGEX_MARK, Activity, rule_verdict
from .formats import BY_FORMAT, NAME_FAMILY
from .index import Entry, MemoryIndex
from .model import MemoryResult


@dataclass(frozen=True, slots=True)
class Explained:
    path: str
    tier: str
    loaded: bool
    listed: bool
    trigger: str  # global, workspace, subfolder, always, glob, regex, folder, first-match, description
    why: str
    tokens: int
    glob: str | None = None

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"path": self.path, "tier": self.tier, "trigger": self.trigger, "why": self.why}
        if self.glob is not None:
            wire["glob"] = self.glob
        wire["tokens"] = self.tokens
        return wire


@dataclass(frozen=True, slots=True)
class Explanation:
    agent: AgentRules
    items: tuple[Explained, ...]
    only_agent: tuple[str, ...]  # loaded by the agent, not in our instruction
    only_ours: tuple[str, ...]  # in our instruction, not loaded by the agent

    @property
    def loads(self) -> list[Explained]:
        return [i for i in self.items if i.loaded]

    def to_wire(self) -> dict[str, Any]:
        loads = self.loads
        return {
            "agent": self.agent.id,
            "name": self.agent.name,
            "docs": list(self.agent.docs),
            "files": [i.to_wire() for i in loads],
            "listed": [i.to_wire() for i in self.items if i.listed],
            "notLoaded": [{"path": i.path, "reason": i.why} for i in self.items if not i.loaded and not i.listed],
            "onlyAgent": list(self.only_agent),
            "onlyContextCompanion": list(self.only_ours),
            "tokens": sum(i.tokens for i in loads),
        }


def explain(
    index: MemoryIndex, activity: Activity, result: MemoryResult, agent: AgentRules, file_names: Sequence[str]
) -> Explanation:
    entries = [index.by_path[f.abs_path] for f in result.files if f.abs_path in index.by_path]
    ours = {f.path for f in result.files if f.included}
    if agent.id == "context-companion":
        items = tuple(_ours(index, activity, f.path, f.tier, f.included, f.reason, f.tokens) for f in result.files)
        return Explanation(agent, items, (), ())
    judge = _Judge(index, activity, agent, entries, file_names)
    items = tuple(judge.item(e) for e in entries)
    items = tuple(sorted(items, key=judge.order_key))
    loaded = [i.path for i in items if i.loaded]
    only_agent = tuple(p for p in loaded if p not in ours)
    only_ours = tuple(f.path for f in result.files if f.included and f.path not in set(loaded))
    return Explanation(agent, items, only_agent, only_ours)


def _ours(
    index: MemoryIndex, activity: Activity, path: str, tier: str, inc: bool, reason: str, tokens: int
) -> Explained:
    listed = reason.endswith("(listed)")
    trigger = {"global": "global", "workspace": "workspace", "jit": "subfolder"}.get(tier, "always")
    if tier == "rule":
        trigger = "regex" if "regex" in reason else "glob" if "glob" in reason else "always"
    return Explained(path, tier, inc, listed, "description" if listed else trigger, reason, tokens)


Out = Callable[..., Explained]


class _Judge:
    def __init__(
        self,
        index: MemoryIndex,
        activity: Activity,
        agent: AgentRules,
        entries: list[Entry],
        file_names: Sequence[str],
    ) -> None:
        self.index = index
        self.activity = activity
        self.agent = agent
        extra = tuple(n for n in file_names if n not in NAME_FAMILY) if agent.fallback_names else ()
        self.names = (*agent.names, *extra)
        self.present = {e.abs_path for e in entries if not e.rendered.missing}
        self.formats_present = {e.rule_format for e in entries if e.rule_format is not None}
        self.first = self._first_of(entries) if agent.first_of else None

    def _first_of(self, entries: list[Entry]) -> str | None:
        by_rel = {e.rel: e.abs_path for e in entries if e.folder == 0 and e.rel and not e.rel_dir}
        for name in self.agent.first_of:
            if name in by_rel:
                return by_rel[name]
        return None

    def order_key(self, item: Explained) -> tuple[int, int]:
        return (0 if item.loaded else 1 if item.listed else 2, 0)

    def item(self, e: Entry) -> Explained:
        tokens = e.rendered.tokens
        a = self.agent

        def out(loaded: bool, trigger: str, why: str, *, listed: bool = False, glob: str | None = None) -> Explained:
            return Explained(e.display, e.tier, loaded, listed, trigger, why, tokens, glob)

        if e.rendered.skip:
            return out(False, "", f"skipped: {e.rendered.skip}")
        if a.first_of:
            if e.abs_path == self.first:
                return out(True, "first-match", f"{a.name} uses the first file of {', '.join(a.first_of)}")
            first = self.index.by_path[self.first].display if self.first else "none of them exists"
            return out(False, "", f"{a.name} reads only the first file of its list at the root ({first})")
        if e.rule_format is not None:
            return self._rule(e, out)
        return self._memory(e, out)

    def _memory(self, e: Entry, out: Out) -> Explained:
        a = self.agent
        name = os.path.basename(e.abs_path)
        if e.tier == "global":
            if e.display not in a.globals:
                return out(False, "", f"{a.name} does not read {e.display}")
            if a.one_per_folder:
                winner = self._winner(e, [os.path.basename(g) for g in a.globals])
                if winner != name:
                    return out(False, "", f"{a.name} reads one file per folder: {winner} is used")
            return out(True, "global", "global memory")
        if name not in self.names:
            return out(False, "", f"{a.name} does not read {name}")
        at_root = e.tier == "workspace" and e.rel == name
        if name in a.root_only and not at_root:
            return out(False, "", f"{a.name} reads {name} only in the workspace folder itself")
        if e.tier == "workspace" and not at_root and not a.upward:
            return out(False, "", f"{a.name} does not read files above the workspace folder")
        if a.one_per_folder:
            winner = self._winner(e, list(self.names))
            if winner != name:
                return out(False, "", f"{a.name} reads one file per folder: {winner} is used")
        if e.tier == "workspace":
            return out(True, "workspace", "project memory (root → leaf)")
        if a.subfolders == "never":
            return out(False, "", f"{a.name} does not read memory files in sub-folders")
        if a.subfolders == "always":
            return out(True, "subfolder", f"{a.name} reads sub-folder memory files at start")
        witness = self.activity.jit.get(e.abs_path)
        if witness is None:
            return out(False, "", f"no open file under {e.rel_dir}/")
        return out(True, "subfolder", f"open file {witness[0]} is under {e.rel_dir}/")

    def _winner(self, e: Entry, order: list[str]) -> str:
        folder = os.path.dirname(e.abs_path)
        for n in order:
            if os.path.join(folder, n) in self.present:
                return n
        return os.path.basename(e.abs_path)

    def _rule(self, e: Entry, out: Out) -> Explained:
        a = self.agent
        fmt = e.rule_format
        label = BY_FORMAT[fmt].path if fmt else ""
        if fmt in a.fallback_rules:
            if any(f in self.formats_present for f in a.rules):
                return out(False, "", f"{a.name} reads {label} only when it has no rules of its own")
        elif fmt not in a.rules:
            return out(False, "", f"{a.name} does not read {label}")
        prefix = self.index.folders[e.folder].prefix if e.folder is not None else ""
        wants, reason, listed = rule_verdict(e, prefix, self.activity)
        rule = e.rendered.rule
        trigger = rule.trigger if rule is not None else ""
        reason = reason.removeprefix("rule: ")
        if rule is not None and "code-review" in rule.exclude_agent and a.id == "copilot":
            reason += " (excludeAgent: Copilot code review skips it)"
        if listed:
            return out(False, "description", f"listed by description ({trigger})", listed=True)
        if not wants:
            return out(False, "", reason.removeprefix("not included: "))
        hit = self.activity.rules.get(e.abs_path)
        glob = hit[1] if hit is not None and not hit[1].startswith(REGEX_MARK) else None
        kind = "regex" if hit is not None and glob is None else "glob" if glob else "always"
        if hit is not None and e.rel_dir and rule is not None and rule.mode == "always":
            kind = "folder"
        return out(True, kind, f"{trigger}: {reason}" if trigger else reason, glob=glob)
