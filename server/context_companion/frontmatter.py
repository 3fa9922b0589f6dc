"""YAML frontmatter (a ``---`` fenced block at the top of a Markdown file).

Parsed with PyYAML's safe loader (libyaml when available). When YAML rejects it, plain
``key: value`` lines are still accepted, so the common unquoted Cursor form ``globs: *.ts``
works. Never raises: problems come back in ``error`` with the line they are on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: same safe subset, faster
_FLAT_LINE = re.compile(r"^([A-Za-z_][\w\-]*)\s*:\s*(.*?)\s*$")


@dataclass(slots=True)
class Frontmatter:
    data: dict[str, Any]
    body: str
    body_line: int  # line of the body's first line in the file
    key_lines: dict[str, int]  # key → line in the file
    error: str | None = None
    error_line: int = 0
    present: bool = False
    end_line: int = 0  # line of the closing "---"


def split_frontmatter(text: str) -> Frontmatter:
    """Split ``---`` frontmatter off ``text`` and parse it (YAML, then plain ``key: value``)."""
    lines = text.split("\n")
    if not lines or lines[0].rstrip() != "---":
        return Frontmatter({}, text, 0, {})
    close = -1
    for i in range(1, len(lines)):
        if lines[i].rstrip() in ("---", "..."):
            close = i
            break
    if close < 0:
        return Frontmatter({}, text, 0, {}, error="frontmatter is not closed by a '---' line", present=True)
    raw_lines = lines[1:close]
    body = "\n".join(lines[close + 1 :])
    key_lines: dict[str, int] = {}
    for i, line in enumerate(raw_lines, start=1):
        m = _FLAT_LINE.match(line)
        if m and not line.startswith((" ", "\t")):
            key_lines.setdefault(m.group(1), i)
    fm = Frontmatter({}, body, close + 1, key_lines, present=True, end_line=close)
    raw = "\n".join(raw_lines)
    try:
        data = yaml.load(raw, Loader=_SafeLoader) if raw.strip() else {}
    except yaml.YAMLError as exc:
        flat = _flat_key_values(raw_lines)
        if flat is not None:
            fm.data = flat
            return fm
        mark = getattr(exc, "problem_mark", None)
        # libyaml may place the mark past the last line: keep it on a frontmatter line.
        at = min(int(mark.line), max(len(raw_lines) - 1, 0)) if mark is not None else 0
        fm.error = f"frontmatter does not parse as YAML: {_yaml_problem(exc)} (line {at + 2})"
        fm.error_line = 1 + at
        return fm
    if data is None:
        data = {}
    if not isinstance(data, dict):
        fm.error = f"frontmatter must be 'key: value' lines, not a {type(data).__name__}"
        fm.error_line = 1
        return fm
    fm.data = {str(k): v for k, v in data.items()}
    return fm


def _yaml_problem(exc: yaml.YAMLError) -> str:
    return str(getattr(exc, "problem", None) or str(exc).splitlines()[0])


def _flat_key_values(lines: list[str]) -> dict[str, Any] | None:
    """Cursor-style frontmatter: every non-empty line ``key: value`` with a plain value."""
    out: dict[str, Any] = {}
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line.startswith((" ", "\t")):
            return None
        m = _FLAT_LINE.match(line)
        if m is None:
            return None
        key, value = m.group(1), m.group(2)
        if value[:1] in ("[", "{", '"', "'", "|", ">", "&", "!"):
            return None  # meant as YAML structure: the YAML error stands
        low = value.lower()
        out[key] = True if low == "true" else False if low == "false" else (value or None)
    return out
