"""Which of the files we found an agent would load, and why: an :class:`~.agents.AgentRules` table
applied to the index, the open files' activity and our own composition. Pure; reads only (the
files above the repository root an agent reads, and a raw file an agent reads without expanding
its imports).

Each loaded file also says how the agent keeps it (``reading``): ``tracked`` (read at start and
again when it changes), ``start`` (read once at start), ``just-in-time`` (read when the agent's own
tools touch its folder or a file it matches). ``context-companion hook`` delivers what applies and
the agent does not track (:mod:`context_companion.workspace.hooks`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..ownership import ceilings, owned_by_other
from .agents import AgentRules
from .compose import REGEX_MARK, Activity, normalised_body, rule_verdict
from .formats import BY_FORMAT, NAME_FAMILY
from .index import Entry, MemoryIndex
from .model import MemoryResult
from .paths import home_display
from .wording import render_block


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
    reading: str = ""  # tracked, start, just-in-time ("" when not loaded, or not known for the agent)
    abs_path: str = ""
    counted: bool = True  # in the total: not text already counted in another loaded file (an import, a link)

    def to_wire(self) -> dict[str, Any]:
        wire: dict[str, Any] = {"path": self.path, "tier": self.tier, "trigger": self.trigger, "why": self.why}
        if self.glob is not None:
            wire["glob"] = self.glob
        wire["tokens"] = self.tokens
        if self.loaded and not self.counted:
            wire["inTotal"] = False
        if self.reading and self.loaded:
            wire["reading"] = self.reading
        return wire


@dataclass(frozen=True, slots=True)
class Explanation:
    agent: AgentRules
    items: tuple[Explained, ...]
    only_agent: tuple[str, ...]  # loaded by the agent, not in our instruction
    only_ours: tuple[str, ...]  # in our instruction, not loaded by the agent
    assumed: tuple[str, ...] = ()  # what the table assumes of the agent's own settings
    skipped: tuple[str, ...] = ()  # one line per folder or file left out for its owner (and notes like it)

    @property
    def loads(self) -> list[Explained]:
        return [i for i in self.items if i.loaded]

    def reading_of(self) -> dict[str, str]:
        """abs path → how the agent keeps each file it loads (``tracked``, ``start``, ``just-in-time``)."""
        return {i.abs_path: i.reading for i in self.items if i.loaded and i.abs_path}

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
            "tokens": sum(i.tokens for i in loads if i.counted),
            **({"checked": self.agent.checked} if self.agent.checked else {}),
            **({"assumed": list(self.assumed)} if self.assumed else {}),
            **({"skipped": list(self.skipped)} if self.skipped else {}),
        }


def explain(
    index: MemoryIndex,
    activity: Activity,
    result: MemoryResult,
    agent: AgentRules,
    file_names: Sequence[str],
    assumed: Sequence[str] = (),
    cwd: str | None = None,
) -> Explanation:
    """``cwd``: the folder the agent runs in, when it is a sub-folder of a workspace folder: the
    agents that read memory upward from their working folder read that sub-folder's files (and
    those between it and the root) at start, like the root's."""
    entries = [index.by_path[f.abs_path] for f in result.files if f.abs_path in index.by_path]
    ours = {f.path for f in result.files if f.included}
    skipped = tuple(f.refused for f in index.folders if f.refused)  # a root above that is another user's
    if agent.id == "context-companion":
        ours_items = tuple(
            _ours(index, activity, f.path, f.tier, f.included, f.reason, f.tokens, f.abs_path) for f in result.files
        )
        return Explanation(agent, ours_items, (), (), skipped=skipped)
    judge = _Judge(index, activity, agent, entries, file_names, cwd)
    items = judge.imports([judge.item(e) for e in entries], entries)
    items = judge.budget(items, entries)
    items = [*judge.above_root(), *items]
    items = _one_file(sorted(items, key=judge.order_key), entries, agent.name)
    loaded = [i.path for i in items if i.loaded]
    keys = {e.abs_path: e.rendered.key or e.rendered.real or e.abs_path for e in entries}
    loaded_keys = {keys.get(i.abs_path, i.abs_path) for i in items if i.loaded}
    our_keys = {keys.get(f.abs_path, f.abs_path) for f in result.files if f.included}
    only_agent = tuple(
        i.path for i in items if i.loaded and i.path not in ours and keys.get(i.abs_path) not in our_keys
    )
    only_ours = tuple(
        f.path
        for f in result.files
        if f.included and f.path not in set(loaded) and keys.get(f.abs_path, f.abs_path) not in loaded_keys
    )
    return Explanation(agent, tuple(items), only_agent, only_ours, tuple(assumed), skipped)


def _one_file(items: list[Explained], entries: list[Entry], agent: str) -> list[Explained]:
    """Links to one file (``CLAUDE.md -> AGENTS.md``) are one file: a second loaded name is not counted
    again, and a name not loaded says it is the same file as the one loaded. A file whose text the agent
    loads under another name (the same rule in two vendors' folders) says so too."""
    by_path = {e.abs_path: e for e in entries}

    def key(item: Explained) -> str:
        e = by_path.get(item.abs_path)
        return (e.rendered.key or e.rendered.real or item.abs_path) if e is not None else item.abs_path

    def body(item: Explained) -> str:
        e = by_path.get(item.abs_path)
        return normalised_body(e.rendered.content) if e is not None and not e.rendered.skip else ""

    first: dict[str, Explained] = {}
    texts: dict[str, Explained] = {}
    for item in items:
        if item.loaded:
            first.setdefault(key(item), item)
            text = body(item)
            if text and item.trigger != "import":
                texts.setdefault(text, item)
    others: dict[str, list[Explained]] = {}
    for item in items:
        others.setdefault(key(item), []).append(item)
    out = []
    for item in items:
        twin = first.get(key(item))
        # A link not loaded beside a name the agent does know (not loaded either): that name's reason.
        link = next((o for o in others[key(item)] if o is not item and not o.why.startswith(agent)), None)
        if item.loaded and item.trigger == "import":
            item = replace(item, counted=False, why=f"{item.why} (its text is counted there)")
        elif item.loaded and twin is not None and twin is not item:
            item = replace(item, counted=False, why=f"{item.why}; the same file as {twin.path} (counted once)")
        elif not item.loaded and not item.listed and twin is not None:
            item = replace(item, why=f"the same file as {twin.path} (a link), which {agent} loads")
        elif not item.loaded and not item.listed and link is not None and item.why.startswith(agent):
            item = replace(item, why=f"the same file as {link.path} (a link): {link.why}")
        elif not item.loaded and not item.listed and (copy := texts.get(body(item))) is not None and body(item):
            item = replace(item, why=f"{item.why}; its text is the same as {copy.path}, which {agent} loads")
        out.append(item)
    return out


def _ours(
    index: MemoryIndex, activity: Activity, path: str, tier: str, inc: bool, reason: str, tokens: int, abs_path: str
) -> Explained:
    listed = reason.endswith("(listed)")
    if reason.startswith("imported by "):  # its text comes in through the importing file
        return Explained(path, tier, True, False, "import", reason, tokens, abs_path=abs_path, counted=False)
    trigger = {"global": "global", "workspace": "workspace", "jit": "subfolder"}.get(tier, "always")
    if tier == "rule":
        trigger = "regex" if "regex" in reason else "glob" if "glob" in reason else "always"
    kind = "description" if listed else trigger
    return Explained(path, tier, inc, listed, kind, reason, tokens, abs_path=abs_path)


Out = Callable[..., Explained]


class _Judge:
    def __init__(
        self,
        index: MemoryIndex,
        activity: Activity,
        agent: AgentRules,
        entries: list[Entry],
        file_names: Sequence[str],
        cwd: str | None = None,
    ) -> None:
        self.index = index
        self.cwd = self._cwd_in_folder(cwd) if cwd else None
        self.activity = activity
        self.agent = agent
        extra = tuple(n for n in file_names if n not in NAME_FAMILY) if agent.fallback_names else ()
        self.names = (*agent.names, *extra)
        self.present = {e.abs_path for e in entries if not e.rendered.missing}
        self.globals_present = {e.display for e in entries if e.tier == "global" and not e.rendered.missing}
        self.formats_present = {e.rule_format for e in entries if e.rule_format is not None}
        self.first = self._first_of(entries) if agent.first_of else None
        self._above: list[tuple[str, str]] | None = None  # (path, name) of its files above the root
        self.stand_in_read = agent.stand_in is not None and not self._has_own(entries, agent.stand_in[1])

    def _cwd_in_folder(self, cwd: str) -> tuple[int, str] | None:
        """(folder index, posix path relative to it) of a working folder below a workspace folder."""
        for i, folder in enumerate(self.index.folders):
            if cwd.startswith(folder.prefix_path):
                return i, os.path.relpath(cwd, folder.path).replace(os.sep, "/")
        return None

    def on_cwd_path(self, e: Entry) -> bool:
        """Whether a sub-folder file lies between the workspace folder and the agent's working folder."""
        if self.cwd is None or e.tier != "jit" or e.folder != self.cwd[0] or not self.agent.upward:
            return False
        rel = self.cwd[1]
        return rel == e.rel_dir or rel.startswith(e.rel_dir + "/")

    def _has_own(self, entries: list[Entry], name: str) -> bool:
        """Whether the agent's own file ``name`` is in the folder or above it (its stand-in is then not read)."""
        here = any(
            (e.tier == "workspace" or self.on_cwd_path(e)) and os.path.basename(e.abs_path) == name
            for e in entries
            if not e.rendered.missing
        )
        return here or any(n == name for _p, n in self._above_files())

    def _above_files(self) -> list[tuple[str, str]]:
        """The agent's memory files in the folders above the first folder's repository root, up to / (or up
        to a ``GIT_CEILING_DIRECTORIES`` folder, not included: the user said nothing from there up is a
        project's; the test suite seals itself from the machine's folders so)."""
        if self._above is None:
            self._above = []
            if self.agent.above_root and self.index.folders:
                chain = self.index.folders[0].chain or [self.index.folders[0].path]
                current = os.path.dirname(chain[0])
                found: list[list[tuple[str, str]]] = []
                ceiling = ceilings()
                while current not in ceiling:
                    here = [(os.path.join(current, n), n) for n in self.agent.names]
                    found.append([(p, n) for p, n in here if os.path.isfile(p)])
                    parent = os.path.dirname(current)
                    if parent == current or len(found) == self.agent.above_root_depth:
                        break
                    current = parent
                self._above = [f for folder in reversed(found) for f in folder]  # root → leaf, as the agent reads them
        return self._above

    def above_root(self) -> list[Explained]:
        """The files above the repository root the agent reads (listed; our instruction stops at the root)."""
        out = []
        renderer = self.index.renderer
        for path, _name in self._above_files():
            outcome = renderer.read(path)
            text = outcome.text
            if text is None or not text.strip():
                continue
            display = home_display(path, self.index.home)
            tokens = renderer.count(render_block(display, text.strip("\n").rstrip()))
            depth = self.agent.above_root_depth
            where = "up to /" if not depth else f"{depth} folder{'' if depth == 1 else 's'} above the repository root"
            why = f"{self.agent.name} reads it in the folders above the workspace, {where}"
            if outcome.owner is not None:  # the agent's doing, not ours: say whose it is
                why += f"; it is {owned_by_other(outcome.owner)}, and our instruction leaves it out"
            out.append(
                Explained(display, "workspace", True, False, "above-root", why, tokens, None, self.agent.keeps, path)
            )
        return out

    def imports(self, items: list[Explained], entries: list[Entry]) -> list[Explained]:
        """Agents that expand ``@`` imports load what a loaded file imports; the others read the
        import line as written (their count is the file's own text)."""
        by_path = {e.abs_path: e for e in entries}
        items = [
            i if not i.loaded or self._expands(by_path[i.abs_path]) else self._as_written(i, by_path[i.abs_path])
            for i in items
        ]
        inlined: dict[str, Explained] = {}
        for i in items:
            if i.loaded and self._expands(by_path[i.abs_path]):
                for key, _display in by_path[i.abs_path].rendered.imported:
                    inlined.setdefault(key, i)
        out = []
        for i in items:
            e = by_path[i.abs_path]
            via = inlined.get(e.rendered.key or e.rendered.real)
            if not i.loaded and via is not None and not e.rendered.skip and not e.rendered.missing:
                why = f"imported by {via.path}"
                i = Explained(i.path, i.tier, True, False, "import", why, i.tokens, None, via.reading, i.abs_path)
            out.append(i)
        return out

    def _expands(self, e: Entry) -> bool:
        """Whether the agent inlines the ``@`` imports of this file (some expand them only in some names)."""
        a = self.agent
        if not a.expands_imports:
            return False
        return not a.expands_imports_in or (
            e.rule_format is None and os.path.basename(e.abs_path) in a.expands_imports_in
        )

    def _raw(self, e: Entry) -> str | None:
        """The file's text as an agent that does not expand imports reads it (frontmatter off)."""
        if e.rendered.rule is not None:
            return e.rendered.rule.body
        return self.index.renderer.read(e.rendered.real).text if e.rendered.real else None

    def _as_written(self, item: Explained, e: Entry) -> Explained:
        if not e.rendered.imported:
            return item
        raw = self._raw(e)
        if raw is None:
            return item
        tokens = self.index.renderer.count(render_block(e.display, raw.strip("\n").rstrip()))
        why = f"{item.why}; {self.agent.name} reads its @ imports as written, without their files"
        return Explained(
            item.path, item.tier, True, False, item.trigger, why, tokens, item.glob, item.reading, item.abs_path
        )

    def budget(self, items: list[Explained], entries: list[Entry]) -> list[Explained]:
        """Cut the project memory files at the agent's byte budget, in the order it reads them."""
        cap = self.agent.project_max_bytes
        if not cap:
            return items
        by_path = {e.abs_path: e for e in entries}
        used = 0
        out = []
        for i in items:
            e = by_path[i.abs_path]
            if not i.loaded or e.tier not in ("workspace", "jit"):
                out.append(i)
                continue
            raw = self._raw(e) or ""
            data = raw.encode("utf-8")
            label = f"project_doc_max_bytes ({cap})"
            if used >= cap:
                why = f"{self.agent.name}'s {label} is used up by the files before it"
                out.append(Explained(i.path, i.tier, False, False, "", why, i.tokens, abs_path=i.abs_path))
                continue
            if used + len(data) > cap:
                kept = data[: cap - used].decode("utf-8", "ignore")
                tokens = self.index.renderer.count(render_block(e.display, kept.strip("\n").rstrip()))
                why = f"{i.why}; cut at {self.agent.name}'s {label}: {cap - used} of {len(data)} bytes read"
                i = Explained(i.path, i.tier, True, False, i.trigger, why, tokens, i.glob, i.reading, i.abs_path)
            used += len(data)
            out.append(i)
        return out

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

        def out(
            loaded: bool, trigger: str, why: str, *, listed: bool = False, glob: str | None = None, reading: str = ""
        ) -> Explained:
            keeps = (reading or a.keeps) if loaded else ""
            return Explained(e.display, e.tier, loaded, listed, trigger, why, tokens, glob, keeps, e.abs_path)

        if e.rendered.skip:
            return out(False, "", f"skipped: {e.rendered.skip}")
        if a.untrusted and e.folder is not None:
            return out(False, "", a.untrusted)
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
            if a.one_per_folder:  # the first of its global files that exists (in one folder, or in two)
                winner = next((g for g in a.globals if g in self.globals_present), e.display)
                if winner != e.display:
                    return out(False, "", f"{a.name} reads only the first of {', '.join(a.globals)}: {winner} is used")
            return out(True, "global", "global memory")
        if a.stand_in is not None and name == a.stand_in[0] and name not in self.names:
            stand_in, own = a.stand_in
            if e.tier != "workspace" and not self.on_cwd_path(e):
                return out(False, "", f"{a.name} reads {stand_in} only in the folder and above, in place of {own}")
            if not self.stand_in_read:
                return out(
                    False, "", f"{a.name} reads {stand_in} only where there is no {own} (unless {own} imports it)"
                )
            why = f"{a.name} reads {stand_in} at start when there is no {own}; it does not see later edits"
            return out(True, "workspace", why, reading="start")
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
        if self.on_cwd_path(e):
            return out(
                True, "workspace", f"project memory (root → the working folder {self.cwd[1] if self.cwd else ''})"
            )
        if a.subfolders == "never":
            return out(False, "", f"{a.name} does not read memory files in sub-folders")
        if a.subfolders == "always":
            return out(True, "subfolder", f"{a.name} reads sub-folder memory files at start")
        witness = self.activity.jit.get(e.abs_path)
        when = f"{a.name} reads it just in time, when its tools touch a file under {e.rel_dir}/"
        if witness is None:
            return out(False, "", f"no open file under {e.rel_dir}/" + (f" ({when})" if a.keeps else ""))
        why = f"open file {witness[0]} is under {e.rel_dir}/" + (f" ({when})" if a.keeps else "")
        return out(True, "subfolder", why, reading="just-in-time" if a.keeps else "")

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
        elif fmt in a.attached_rules:
            why = f"{a.name} reads {label} only for files attached to the request (the active file once it has a selection)"
            return out(False, "", why)
        elif fmt not in a.rules:
            return out(False, "", f"{a.name} does not read {label}")
        if fmt in a.whole_rules:
            return out(True, "always", f"{a.name} reads every file of {label} whole, whatever its frontmatter says")
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
        # A rule for matching files is read when the agent's own tools touch one (just in time).
        reading = "just-in-time" if a.keeps and kind != "always" else ""
        return out(True, kind, f"{trigger}: {reason}" if trigger else reason, glob=glob, reading=reading)
