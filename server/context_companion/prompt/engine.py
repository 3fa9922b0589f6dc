"""Composition of the system instruction: contributors → base → final shell → tokens, etag.

Pure and synchronous. The :class:`InstructionEngine` keeps only caches; the same inputs give
a byte-identical text and the same etag.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import PromptError
from ..settings import ENV_PREFIX, AgentProfile, ContributorConfig, Settings, Skill, SystemPromptConfig
from ..tokens import Tokenizer
from . import sections as S
from .environment import (
    INITIAL_MESSAGE_CLOSING,
    INITIAL_MESSAGE_OPENING,
    environment_context,
    folder_tree,
    is_git_repository,
)
from .skills import discover_skills
from .template import read_prompt_file, read_template, resolve_template_path, substitute, template_values

if TYPE_CHECKING:  # the memory package is optional for the engine
    from ..memory import MemoryResult, MemoryStore

log = logging.getLogger(__name__)

MEMORY_SEPARATOR = "\n\n---\n\n"
# In the memory's place when the agent gets the memory files another way (``includeMemory: false``).
MEMORY_ELSEWHERE = (
    "The project's memory files (AGENTS.md, CLAUDE.md, GEMINI.md, rule files) are not repeated here: the ones "
    "that apply reach you with the rest of your instructions."
)
SYSTEM_MD_VARIABLE = ENV_PREFIX + "SYSTEM_MD"
_NEWLINE_RUNS = re.compile(r"\n{3,}")


def collapse_newlines(text: str) -> str:
    """Runs of three or more newlines become two."""
    if "\n\n\n" not in text:  # the usual case, found without running the pattern
        return text
    return _NEWLINE_RUNS.sub("\n\n", text)


def etag_of(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


@dataclass(frozen=True, slots=True)
class SectionText:
    id: str
    text: str


@dataclass(frozen=True, slots=True)
class TokenReport:
    total: int
    encoding: str
    estimated: bool
    sections: tuple[tuple[str, int], ...]
    reason: str | None = None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "total": self.total,
            "encoding": self.encoding,
            "estimated": self.estimated,
            "sections": [{"id": i, "tokens": n} for i, n in self.sections],
        }
        if self.reason:
            out["reason"] = self.reason
        return out


@dataclass(frozen=True, slots=True)
class Instruction:
    """One built system instruction and what it was built from."""

    text: str
    etag: str
    sections: tuple[SectionText, ...]
    tokens: TokenReport
    environment_context: str | None  # the environment text, wherever it was placed (None when off/empty)
    environment_placement: str
    initial_message: str | None  # the first user message when placement is initialMessage
    memory: MemoryResult | None
    template: str | None = None  # the template file used, if any
    warnings: tuple[str, ...] = field(default=())

    def memory_files(self) -> list[dict[str, Any]]:
        return [f.to_wire() for f in self.memory.files] if self.memory is not None else []

    def to_wire(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "etag": self.etag,
            "tokens": self.tokens.to_wire(),
            "memoryFiles": self.memory_files(),
            "environmentContext": self.environment_context,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True, slots=True)
class _Contributor:
    id: str
    priority: int
    kind: str  # builtin | static | dynamic | file
    render: Callable[[], str] | None = None
    config: ContributorConfig | None = None


def merge_contributors(builtins: Sequence[_Contributor], user: Sequence[ContributorConfig]) -> list[_Contributor]:
    """Merge user contributors into the built-ins: same id replaces, ``enabled: false`` removes, new ids are added; stable sort by priority."""
    merged: dict[str, _Contributor | None] = {c.id: c for c in builtins}
    for cfg in user:
        merged[cfg.id] = None if not cfg.enabled else _Contributor(cfg.id, cfg.priority, cfg.type, config=cfg)
    ordered = [c for c in merged.values() if c is not None]
    return sorted(ordered, key=lambda c: c.priority)  # sorted() is stable: ties keep their order


class InstructionEngine:
    """Builds :class:`Instruction` objects; caches the environment context and finished builds."""

    def __init__(
        self,
        settings: Settings,
        workspace_folders: Sequence[Path],
        *,
        tokenizer: Tokenizer,
        memory: MemoryStore | None = None,
        environ: Mapping[str, str] | None = None,
        user_dir: Path | None = None,
        today: Callable[[], date] = date.today,
        platform: str | None = None,
    ) -> None:
        self.settings = settings
        self.folders = [Path(f) for f in workspace_folders]
        self.tokenizer = tokenizer
        self.memory = memory
        self.environ = os.environ if environ is None else environ
        self.user_dir = user_dir
        self.today = today
        self.platform = platform
        self._trees: dict[str, str] | None = None
        self._skills: dict[str, list[Skill]] = {}
        self._git: bool | None = None
        self._cache: dict[tuple[object, ...], Instruction] = {}
        # Rendered sections by (profile JSON, template text, contributor files); see _render.
        self._sections: dict[tuple[object, ...], tuple[tuple[SectionText, ...], frozenset[str]]] = {}
        self._profile_json: tuple[AgentProfile, str] | None = None
        self._env_memo: tuple[date, Mapping[str, str] | None, str] | None = None
        self._template_memo: tuple[str | None, Path | None] | None = None  # (CONTEXT_COMPANION_SYSTEM_MD, path)

    # ------------------------------------------------------------------ state changes

    def update_settings(self, settings: Settings) -> None:
        self.settings = settings
        self.invalidate()

    def set_folders(self, folders: Sequence[Path]) -> None:
        self.folders = [Path(f) for f in folders]
        self.invalidate()

    def invalidate(self) -> None:
        """Forget cached environment, skills and builds (files on disk may have changed)."""
        self._trees = None
        self._skills = {}
        self._git = None
        self._cache.clear()
        self._sections.clear()
        self._env_memo = None
        self._template_memo = None

    # ------------------------------------------------------------------ pieces

    def folder_trees(self, folders: Sequence[Path] | None = None) -> dict[str, str]:
        """Fresh folder trees (for these folders, default all): the snapshot a session keeps, so
        files that appear or vanish later do not change its environment text."""
        env = self.settings.environment
        if not env.include_folder_tree or env.placement == "off":
            return {}
        return {str(f): folder_tree(f, env.max_items) for f in (self.folders if folders is None else folders)}

    def _environment(self, today: date, trees: Mapping[str, str] | None = None) -> str:
        """The environment text for ``today`` and these trees (a session's snapshot, or the engine's
        own when None); the last one is kept, as every build of a day asks for the same."""
        if self.settings.environment.placement == "off":
            return ""
        memo = self._env_memo
        if memo is not None and memo[0] == today and memo[1] is trees:
            return memo[2]
        text = self._environment_text(today, trees)
        self._env_memo = (today, trees, text)
        return text

    def _environment_text(self, today: date, trees: Mapping[str, str] | None) -> str:
        env = self.settings.environment
        if trees is None:
            if self._trees is None:
                self._trees = self.folder_trees()
            trees = self._trees
        missing = [f for f in self.folders if str(f) not in trees] if env.include_folder_tree else []
        if missing:  # a folder the snapshot does not know yet (just added)
            trees = {**trees, **self.folder_trees(missing)}
        return environment_context(
            self.folders,
            today,
            max_items=env.max_items,
            include_tree=env.include_folder_tree,
            platform=self.platform,
            trees=dict(trees),
        )

    def _skills_for(self, profile: AgentProfile) -> list[Skill]:
        key = profile.model_dump_json(include={"skills", "discover_skills"})
        if key not in self._skills:
            if profile.discover_skills:
                self._skills[key] = discover_skills(self.user_dir, self.folders, profile.skills)
            else:
                self._skills[key] = list(profile.skills)
        return self._skills[key]

    def _in_git(self) -> bool:
        if self._git is None:
            self._git = bool(self.folders) and is_git_repository(self.folders[0])
        return self._git

    def _read_files(self, cfg: ContributorConfig) -> str:
        base = self.folders[0] if self.folders else Path.cwd()
        parts = []
        for raw in cfg.files:
            path = Path(raw).expanduser()
            if not path.is_absolute():
                path = base / path
            parts.append(read_prompt_file(path, f"contributor {cfg.id!r}: file", self.settings).strip())
        return "\n\n".join(p for p in parts if p)

    # ------------------------------------------------------------------ build

    def build(
        self,
        profile: AgentProfile | None = None,
        open_paths: Sequence[Path] = (),
        active_path: Path | None = None,
        *,
        trees: Mapping[str, str] | None = None,
        memory: MemoryResult | None = None,
        include_memory: bool = True,
    ) -> Instruction:
        """Compose the instruction. Raises :class:`PromptError` when the configuration cannot be honoured.

        ``trees``: a session's folder-tree snapshot (default: computed once per engine state).
        ``memory``: a memory composition to use instead of the store's current one (a session that
        keeps the memory it started with).
        ``include_memory=False``: the agent gets the memory files another way (VS Code's chat
        instructions): one fixed line takes their place, so the text does not depend on memory at all
        and keeps its bytes through every memory edit; no memory is composed.

        Pure apart from reading the files it is configured to read: writing the result anywhere
        (``writeSystemPromptTo``) is :func:`~.export.export_instruction`, a separate step.
        """
        inputs = self._inputs(profile or self.settings.profile, open_paths, active_path, trees, memory, include_memory)
        key = inputs.key
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        rendered, inline = self._render(inputs)
        instruction = self._assemble(inputs, rendered, inline)
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[key] = instruction
        return instruction

    def compose_memory(
        self, open_paths: Sequence[Path] = (), active_path: Path | None = None, interactive: bool = True
    ) -> MemoryResult | None:
        """The memory part as the settings place it: with ``memory.onDemandDelivery = "turn"`` only the
        always-on tiers (global, workspace, always-on rules), whatever is open. ``interactive`` is the
        profile's (some rules apply only to an agent a person is watching)."""
        if self.memory is None:
            return None
        if self.settings.memory.on_demand_delivery == "turn":
            return self.memory.compose([], None, interactive=interactive)
        return self.memory.compose(list(open_paths), active_path, interactive=interactive)

    def _inputs(
        self,
        profile: AgentProfile,
        open_paths: Sequence[Path],
        active_path: Path | None,
        trees: Mapping[str, str] | None,
        memory: MemoryResult | None,
        include_memory: bool = True,
    ) -> _Inputs:
        settings = self.settings
        today = self.today()
        memory_result: MemoryResult | None = None
        if not include_memory:
            memory_part = MEMORY_ELSEWHERE
        else:
            memory_result = (
                memory if memory is not None else self.compose_memory(open_paths, active_path, profile.interactive)
            )
            memory_part = memory_result.text.strip() if memory_result else ""
        memory_text = "\n\n".join(t for t in (memory_part, profile.mcp_instructions.strip()) if t)
        template_path = self._template_path()
        # Files behind `file` contributors are read on every build, like the template: they are not
        # watched, so their content (not their path) must be part of the cache key.
        configs = settings.system_prompt.contributors if isinstance(settings.system_prompt, SystemPromptConfig) else ()
        file_texts = {cfg.id: self._read_files(cfg) for cfg in configs if cfg.type == "file" and cfg.enabled}
        return _Inputs(
            profile=profile,
            today=today,
            memory=memory_result,
            memory_text=memory_text,
            env_text=self._environment(today, trees).strip(),
            template_path=template_path,
            template_text=read_template(template_path, settings) if template_path is not None else None,
            file_texts=file_texts,
            profile_json=self._json_of(profile),
            include_memory=include_memory,
        )

    def _template_path(self) -> Path | None:
        """The template file to use (its text is read on every build; where it is, only when the
        settings, the folders or ``CONTEXT_COMPANION_SYSTEM_MD`` change)."""
        raw = self.environ.get(SYSTEM_MD_VARIABLE)
        memo = self._template_memo
        if memo is None or memo[0] != raw:
            memo = self._template_memo = (raw, resolve_template_path(self.settings, self.folders, self.environ))
        return memo[1]

    def _json_of(self, profile: AgentProfile) -> str:
        """The profile as JSON, kept for the profile last used (profiles are frozen models, and a
        session passes the same one on every build)."""
        last = self._profile_json
        if last is None or last[0] is not profile:
            last = self._profile_json = (profile, profile.model_dump_json())
        return last[1]

    def _render(self, inputs: _Inputs) -> tuple[list[SectionText], set[str]]:
        """The sections in order, and which of memory/environment a contributor placed inline.

        Kept per (profile, template, contributor files) unless a dynamic contributor (date, memory,
        environment) took part: a rebuild after a memory edit does not render the sections again.
        """
        key = (inputs.profile_json, inputs.template_text, tuple(inputs.file_texts.items()))
        cached = self._sections.get(key)
        if cached is not None:
            return list(cached[0]), set(cached[1])
        rendered, inline, dynamic = self._render_sections(inputs)
        if not dynamic:
            if len(self._sections) > 64:
                self._sections.clear()
            self._sections[key] = (tuple(rendered), frozenset(inline))
        return rendered, inline

    def _render_sections(self, inputs: _Inputs) -> tuple[list[SectionText], set[str], bool]:
        profile = inputs.profile
        skills = self._skills_for(profile)
        options = S.SectionOptions.from_profile(
            profile, in_git_repo=self._in_git(), skills=skills, plans_dir=".context-companion/plans"
        )
        if inputs.template_text is not None:
            values = template_values(S.render_skills(skills), S.agent_contexts(options), profile.tools)
            return [SectionText("template", substitute(inputs.template_text, values).strip())], set(), False
        inline: set[str] = set()
        rendered = []
        contributors = self._contributors(options)
        for c in contributors:
            text = (self._render_one(c, inputs, inline) or "").strip()
            if text:
                rendered.append(SectionText(c.id, text))
        return rendered, inline, any(c.kind == "dynamic" for c in contributors)

    def _contributors(self, options: S.SectionOptions) -> list[_Contributor]:
        settings = self.settings
        builtins = [
            _Contributor(b.id, b.priority, "builtin", render=functools.partial(b.render, options))
            for b in S.BUILTIN_SECTIONS
            if settings.prompt.sections.get(b.id, True)
        ]
        system_prompt = settings.system_prompt
        if isinstance(system_prompt, str):
            return [_Contributor("systemPrompt", 0, "static", render=lambda: system_prompt)]
        if isinstance(system_prompt, SystemPromptConfig):
            return merge_contributors(builtins, system_prompt.contributors)
        return builtins

    @staticmethod
    def _render_one(c: _Contributor, inputs: _Inputs, inline: set[str]) -> str:
        if c.render is not None:
            return c.render()
        config = c.config
        assert config is not None  # only built-ins have no config, and they have a renderer
        if c.kind == "static":
            return config.content or ""
        if c.kind == "file":
            return inputs.file_texts[c.id]
        if c.kind == "dynamic":
            source = config.source or ""
            inline.add(source)
            return _dynamic_text(source, inputs)
        raise PromptError(f"contributor {c.id!r}: unknown type {c.kind!r}")  # pragma: no cover - validated

    def _assemble(self, inputs: _Inputs, rendered: list[SectionText], inline: set[str]) -> Instruction:
        """Place memory and environment around the rendered sections, count tokens, hash.

        Stable parts first, so a provider's prompt cache keeps the longest prefix: the sections, then
        memory (global → workspace root → leaf → always-on rules, then the profile's MCP text), and
        the environment (date, tree) last with ``systemInstructionEnd``. ``systemInstruction`` keeps
        the old layout with the environment first.
        """
        env_text, memory_text = inputs.env_text, inputs.memory_text
        placement = self.settings.environment.placement
        env_placed = bool(env_text) and "environment" not in inline
        env_first = env_placed and placement == "systemInstruction"
        env_last = env_placed and placement == "systemInstructionEnd"
        memory_last = bool(memory_text) and "memory" not in inline
        base = "\n\n".join(s.text for s in rendered)
        pieces = [SectionText("environment", env_text)] if env_first else []
        pieces += rendered
        segments: list[tuple[str, str]] = []  # (separator before it, text), in order
        if env_first:
            segments.append(("\n\n", env_text))
        if base:
            segments.append(("\n\n", base))
        if memory_last:
            segments.append((MEMORY_SEPARATOR if base else "\n\n", memory_text))
            pieces.append(SectionText("memory", memory_text))
        if env_last:
            segments.append(("\n\n", env_text))
            pieces.append(SectionText("environment", env_text))
        joined = "".join(sep + text if i else text for i, (sep, text) in enumerate(segments))
        runs = "\n\n\n" in joined  # every piece is part of the joined text: none has a run if it has none
        final = (collapse_newlines(joined) if runs else joined).strip()
        # The same text as stable parts cut at blank lines (sections, "---", memory, ...): counted
        # from their cached counts unless collapsing or stripping changed it.
        parts = _parts_at_blank_lines(segments) if len(final) == len(joined) else [final]
        initial = None
        if placement == "initialMessage" and env_placed:
            initial = f"{INITIAL_MESSAGE_OPENING}\n\n{env_text}\n\n{INITIAL_MESSAGE_CLOSING}"
        return Instruction(
            text=final,
            etag=etag_of(final),
            sections=tuple(pieces),
            tokens=self._token_report(parts, pieces, collapse=runs),
            environment_context=env_text or None,
            environment_placement=placement,
            initial_message=initial,
            memory=inputs.memory,
            template=str(inputs.template_path) if inputs.template_path is not None else None,
            warnings=tuple(inputs.memory.warnings) if inputs.memory else (),
        )

    def _token_report(self, parts: Sequence[str], pieces: Sequence[SectionText], *, collapse: bool) -> TokenReport:
        """``parts`` joined are the final text; ``collapse``: whether a piece may hold a newline run."""
        tok = self.tokenizer
        return TokenReport(
            total=tok.count_parts(parts),
            encoding=tok.encoding_name,
            estimated=tok.estimated,
            sections=tuple((p.id, tok.count(collapse_newlines(p.text) if collapse else p.text)) for p in pieces),
            reason=tok.reason,
        )


def _parts_at_blank_lines(segments: Sequence[tuple[str, str]]) -> list[str]:
    """The joined text of ``segments`` as parts that each end at a blank line where a separator
    allows it ("\\n\\n---\\n\\n" gives "…\\n\\n" and "---\\n\\n")."""
    parts: list[str] = []
    for i, (sep, text) in enumerate(segments):
        if i:
            if sep.startswith("\n\n"):
                parts[-1] += "\n\n"
                sep = sep[2:]
            if sep:
                parts.append(sep)
        parts.append(text)
    return parts


@dataclass(frozen=True, slots=True)
class _Inputs:
    """Everything one build reads; ``key`` identifies builds that give the same bytes."""

    profile: AgentProfile
    today: date
    memory: MemoryResult | None
    memory_text: str
    env_text: str
    template_path: Path | None
    template_text: str | None
    file_texts: dict[str, str]
    profile_json: str  # the profile as JSON: part of the key
    include_memory: bool = True  # False: MEMORY_ELSEWHERE in the memory's place (``memory`` is None)

    @property
    def key(self) -> tuple[object, ...]:
        # Settings are not in the key: update_settings() empties the cache. The memory result is
        # keyed by identity: the store hands out one object per composition, and the cached
        # Instruction holds that object, so its id cannot be reused while the entry lives. (Hashing
        # it by value would walk every file's report on each build.) The memory text follows from
        # the memory result and the profile (its MCP text), so it is not in the key.
        return (
            self.profile_json,
            self.include_memory,
            id(self.memory),
            self.env_text,
            self.today,
            self.template_text,
            tuple(self.file_texts.items()),
        )


def _dynamic_text(source: str, inputs: _Inputs) -> str:
    profile = inputs.profile
    if source == "dateTime":
        return f"Today's date: {inputs.today.strftime('%A, %d %B %Y')}."
    if source == "memory":
        return inputs.memory_text
    if source == "userInstructions":
        return profile.user_instructions
    if source == "toolListing":
        return "# Available Tools\n\n" + "\n".join(f"- {t}" for t in profile.tools) if profile.tools else ""
    if source == "environment":
        return inputs.env_text
    raise PromptError(f"dynamic contributor: unknown source {source!r}")  # pragma: no cover - validated
