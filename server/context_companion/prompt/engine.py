"""Composition of the system instruction: contributors → base → final shell → tokens, etag.

Pure and synchronous. The :class:`InstructionEngine` keeps only caches; the same inputs give
a byte-identical text and the same etag.
"""

from __future__ import annotations

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
from ..fileio import atomic_write_text
from ..settings import ENV_PREFIX, AgentProfile, ContributorConfig, Settings, SystemPromptConfig
from ..tokens import Tokenizer
from . import sections as S
from .environment import INITIAL_MESSAGE_CLOSING, environment_context, folder_tree, is_git_repository
from .skills import discover_skills
from .template import read_template, resolve_template_path, substitute, template_values

if TYPE_CHECKING:  # the memory package is optional for the engine
    from ..memory import MemoryResult, MemoryStore

log = logging.getLogger(__name__)

MEMORY_SEPARATOR = "\n\n---\n\n"
DEFAULT_EXPORT = Path(".context-companion") / "system.generated.md"
_NEWLINE_RUNS = re.compile(r"\n{3,}")


def collapse_newlines(text: str) -> str:
    """Runs of three or more newlines become two."""
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
    """Seed 004's merge: same id replaces, ``enabled: false`` removes, new ids are added; stable sort by priority."""
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
        self._skills: dict[str, list] = {}
        self._git: bool | None = None
        self._cache: dict[tuple, Instruction] = {}
        self._last_export: tuple[Path, str] | None = None

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

    # ------------------------------------------------------------------ pieces

    def _environment(self, today: date) -> str:
        env = self.settings.environment
        if env.placement == "off":
            return ""
        if self._trees is None:
            self._trees = (
                {str(f): folder_tree(f, env.max_items) for f in self.folders} if env.include_folder_tree else {}
            )
        return environment_context(
            self.folders,
            today,
            max_items=env.max_items,
            include_tree=env.include_folder_tree,
            platform=self.platform,
            trees=self._trees,
        )

    def _skills_for(self, profile: AgentProfile) -> list:
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
            try:
                parts.append(path.read_text(encoding="utf-8", errors="replace").strip())
            except FileNotFoundError:
                raise PromptError(f"contributor {cfg.id!r}: file not found: {path}") from None
            except OSError as exc:
                raise PromptError(f"contributor {cfg.id!r}: cannot read {path}: {exc.strerror or exc}") from None
        return "\n\n".join(p for p in parts if p)

    # ------------------------------------------------------------------ build

    def build(
        self,
        profile: AgentProfile | None = None,
        open_paths: Sequence[Path] = (),
        active_path: Path | None = None,
    ) -> Instruction:
        """Compose the instruction. Raises :class:`PromptError` when the configuration cannot be honoured."""
        settings = self.settings
        profile = profile or settings.profile
        today = self.today()
        memory_result = self.memory.compose(list(open_paths), active_path) if self.memory is not None else None
        memory_text = "\n\n".join(
            t for t in ((memory_result.text.strip() if memory_result else ""), profile.mcp_instructions.strip()) if t
        )
        env_text = self._environment(today).strip()
        template_path = resolve_template_path(settings, self.folders, self.environ)
        template_text = read_template(template_path) if template_path is not None else None
        # Files behind `file` contributors are read on every build, like the template: they are not
        # watched, so their content (not their path) must be part of the cache key.
        file_texts = {
            cfg.id: self._read_files(cfg)
            for cfg in (
                settings.system_prompt.contributors if isinstance(settings.system_prompt, SystemPromptConfig) else ()
            )
            if cfg.type == "file" and cfg.enabled
        }

        # Settings are not in the key: update_settings() empties the cache.
        key = (
            profile.model_dump_json(),
            memory_result,
            memory_text,
            env_text,
            today,
            template_text,
            tuple(file_texts.items()),
        )
        cached = self._cache.get(key)
        if cached is not None:
            return cached

        skills = self._skills_for(profile)
        options = S.SectionOptions.from_profile(
            profile, in_git_repo=self._in_git(), skills=skills, plans_dir=".context-companion/plans"
        )
        used_memory_inline = False
        used_env_inline = False
        rendered: list[SectionText] = []

        if template_text is not None:
            values = template_values(S.render_skills(skills), S.agent_contexts(options), profile.tools)
            rendered.append(SectionText("template", substitute(template_text, values).strip()))
        else:
            builtins = [
                _Contributor(b.id, b.priority, "builtin", render=(lambda b=b: b.render(options)))
                for b in S.BUILTIN_SECTIONS
                if settings.prompt.sections.get(b.id, True)
            ]
            if isinstance(settings.system_prompt, str):
                contributors = [_Contributor("systemPrompt", 0, "static", render=lambda: settings.system_prompt)]
            elif isinstance(settings.system_prompt, SystemPromptConfig):
                contributors = merge_contributors(builtins, settings.system_prompt.contributors)
            else:
                contributors = builtins
            dynamic: dict[str, Callable[[], str]] = {
                "dateTime": lambda: f"Today's date: {today.strftime('%A, %d %B %Y')}.",
                "memory": lambda: memory_text,
                "userInstructions": lambda: profile.user_instructions,
                "toolListing": lambda: (
                    "# Available Tools\n\n" + "\n".join(f"- {t}" for t in profile.tools) if profile.tools else ""
                ),
                "environment": lambda: env_text,
            }
            for c in contributors:
                if c.render is not None:
                    text = c.render()
                elif c.kind == "static":
                    text = c.config.content or ""
                elif c.kind == "dynamic":
                    source = c.config.source or ""
                    used_memory_inline |= source == "memory"
                    used_env_inline |= source == "environment"
                    text = dynamic[source]()
                elif c.kind == "file":
                    text = file_texts[c.id]
                else:  # pragma: no cover - settings validation forbids it
                    raise PromptError(f"contributor {c.id!r}: unknown type {c.kind!r}")
                text = (text or "").strip()
                if text:
                    rendered.append(SectionText(c.id, text))

        base = "\n\n".join(s.text for s in rendered)
        pieces: list[SectionText] = []
        placement = settings.environment.placement
        if env_text and placement == "systemInstruction" and not used_env_inline:
            pieces.append(SectionText("environment", env_text))
        pieces += rendered
        final = base
        if memory_text and not used_memory_inline:
            final = f"{base}{MEMORY_SEPARATOR}{memory_text}" if base else memory_text
            pieces.append(SectionText("memory", memory_text))
        if env_text and placement == "systemInstruction" and not used_env_inline:
            final = f"{env_text}\n\n{final}" if final else env_text
        final = collapse_newlines(final).strip()

        tok = self.tokenizer
        total = tok.count(final)
        report = TokenReport(
            total=total,
            encoding=tok.encoding_name,
            estimated=tok.estimated,
            sections=tuple((p.id, tok.count(collapse_newlines(p.text))) for p in pieces),
            reason=tok.reason,
        )
        initial = None
        if placement == "initialMessage" and env_text and not used_env_inline:
            initial = f"{env_text}\n\n{INITIAL_MESSAGE_CLOSING}"
        warnings: list[str] = list(memory_result.warnings) if memory_result else []
        instruction = Instruction(
            text=final,
            etag=etag_of(final),
            sections=tuple(pieces),
            tokens=report,
            environment_context=env_text or None,
            environment_placement=placement,
            initial_message=initial,
            memory=memory_result,
            template=str(template_path) if template_path is not None else None,
            warnings=tuple(warnings),
        )
        export_warning = self._export(instruction, template_path)
        if export_warning:
            instruction = _with_warning(instruction, export_warning)
        if len(self._cache) > 64:
            self._cache.clear()
        self._cache[key] = instruction
        return instruction

    # ------------------------------------------------------------------ export

    def export_path(self) -> Path | None:
        raw = self.environ.get(ENV_PREFIX + "WRITE_SYSTEM_MD")
        if raw is None or not raw.strip():
            raw = self.settings.write_system_prompt_to
        if raw is None or not raw.strip() or raw.strip().lower() in ("0", "false"):
            return None
        base = self.folders[0] if self.folders else None
        if raw.strip().lower() in ("1", "true"):
            return (base or Path.cwd()) / DEFAULT_EXPORT
        path = Path(raw.strip()).expanduser()
        if not path.is_absolute() and base is not None:
            path = base / path
        return path

    def _export(self, instruction: Instruction, template_path: Path | None) -> str | None:
        path = self.export_path()
        if path is None:
            return None
        if template_path is not None and path.resolve() == template_path.resolve():
            return f"not exporting the instruction to {path}: that file is the system prompt template"
        if self._last_export == (path, instruction.etag) and path.exists():
            return None
        try:
            atomic_write_text(path, instruction.text + "\n")
        except OSError as exc:
            log.warning("cannot export the instruction to %s: %s", path, exc)
            return f"cannot export the instruction to {path}: {exc.strerror or exc}"
        self._last_export = (path, instruction.etag)
        return None


def _with_warning(instruction: Instruction, warning: str) -> Instruction:
    from dataclasses import replace

    return replace(instruction, warnings=instruction.warnings + (warning,))
