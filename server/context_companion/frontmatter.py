"""YAML frontmatter (``---`` fenced block at the top of a Markdown file), parsed with PyYAML."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml


@dataclass(frozen=True, slots=True)
class Frontmatter:
    data: dict[str, Any] = field(default_factory=dict)
    body: str = ""
    present: bool = False
    error: str | None = None  # set when the block exists but does not parse to a mapping
    body_line: int = 0  # 0-based line where the body starts


def split_frontmatter(text: str) -> Frontmatter:
    """Split ``text`` into its frontmatter mapping and body. Never raises."""
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = text.split("\n")
    if not lines or lines[0].rstrip("\r") != "---":
        return Frontmatter(body=text)
    for i in range(1, len(lines)):
        if lines[i].rstrip("\r") in ("---", "..."):
            raw = "\n".join(lines[1:i])
            body = "\n".join(lines[i + 1 :])
            try:
                data = yaml.safe_load(raw) if raw.strip() else {}
            except yaml.YAMLError as exc:
                mark = getattr(exc, "problem_mark", None)
                where = f" (line {mark.line + 2})" if mark is not None else ""
                problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
                return Frontmatter(body=body, present=True, error=f"frontmatter is not valid YAML{where}: {problem}", body_line=i + 1)
            if data is None:
                data = {}
            if not isinstance(data, dict):
                return Frontmatter(body=body, present=True, error="frontmatter must be a mapping of keys to values", body_line=i + 1)
            return Frontmatter(data={str(k): v for k, v in data.items()}, body=body, present=True, body_line=i + 1)
    return Frontmatter(body=text, present=True, error="frontmatter is not closed by a '---' line")
