"""Custom system-prompt templates: ``systemPromptFile`` / ``CONTEXT_COMPANION_SYSTEM_MD``.

A template replaces the built-in sections. Only ``${Name}`` placeholders are touched (never
``$Name`` or ``$$``), through :class:`string.Template`; unknown placeholders stay as written.
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from pathlib import Path

from ..errors import PromptError
from ..settings import Settings, system_md_env

DEFAULT_TEMPLATE = Path(".context-companion") / "system.md"


_PATTERN = r"""
    \$(?:
      (?P<escaped>(?!))                         |  # no escape: '$$' stays as written
      (?P<named>(?!))                           |  # bare $name is not a placeholder
      \{(?P<braced>[A-Za-z_][A-Za-z0-9_.\-]*)\} |
      (?P<invalid>(?!))
    )
    """


class _BracedTemplate(string.Template):
    delimiter = "$"
    # A string, not a compiled pattern: string.Template compiles it in __init_subclass__.
    pattern = _PATTERN  # type: ignore[assignment]


def substitute(text: str, values: Mapping[str, str]) -> str:
    """Replace ``${Key}`` for the keys given; leave everything else byte for byte."""
    return _BracedTemplate(text).safe_substitute(values)


def template_values(skills_text: str, subagents_text: str, tools: Sequence[str]) -> dict[str, str]:
    values = {
        "AgentSkills": skills_text,
        "SubAgents": subagents_text,
        "AvailableTools": "\n".join(f"- {t}" for t in tools),
    }
    for tool in tools:
        values[f"ToolName_{tool}"] = tool
    return values


def _expand(raw: str, base: Path | None) -> Path:
    path = Path(raw).expanduser()
    if not path.is_absolute() and base is not None:
        path = base / path
    return path


def resolve_template_path(settings: Settings, folders: Sequence[Path], environ: Mapping[str, str]) -> Path | None:
    """The template to use, or None for the built-in sections.

    ``CONTEXT_COMPANION_SYSTEM_MD`` wins over the ``systemPromptFile`` setting: ``1``/``true`` →
    ``.context-companion/system.md`` in the first workspace folder; a path (``~`` expanded,
    relative to the first workspace folder) → that file; ``0``/``false`` → off.
    """
    base = Path(folders[0]) if folders else None
    env = system_md_env(environ)
    if env is not None:
        kind, value = env
        if kind == "off":
            return None
        if kind == "switch":
            if base is None:
                raise PromptError(
                    "CONTEXT_COMPANION_SYSTEM_MD=true needs a workspace folder for .context-companion/system.md"
                )
            return base / DEFAULT_TEMPLATE
        return _expand(value, base)
    if settings.system_prompt_file:
        raw = settings.system_prompt_file.strip()
        if raw.lower() in ("0", "false", ""):
            return None
        if raw.lower() in ("1", "true"):
            if base is None:
                raise PromptError("systemPromptFile=true needs a workspace folder for .context-companion/system.md")
            return base / DEFAULT_TEMPLATE
        return _expand(raw, base)
    return None


def read_template(path: Path, settings: Settings) -> str:
    return read_prompt_file(path, "system prompt template", settings)


def read_prompt_file(path: Path, what: str, settings: Settings) -> str:
    """A file the settings name for the prompt (template, ``file`` contributor), read the way memory
    files are: regular files only (a FIFO never blocks the build), at most ``memory.maxFileBytes``,
    and never a file ``context.exclude`` names (keys, ``.env``: the prompt goes to a provider)."""
    from ..exclusion import exclude_matcher
    from ..memory.reading import read_text_file

    if exclude_matcher(tuple(settings.context.exclude)).matches(str(path)):
        raise PromptError(f"{what} is excluded by context.exclude: {path}")
    outcome = read_text_file(str(path), settings.memory.max_file_bytes)
    if outcome.text is None:
        if outcome.missing:
            raise PromptError(f"{what} not found: {path}")
        raise PromptError(f"{what} cannot be used: {path}: {outcome.skip}")
    if outcome.cut:
        raise PromptError(f"{what} is over memory.maxFileBytes ({settings.memory.max_file_bytes} bytes): {path}")
    return outcome.text
