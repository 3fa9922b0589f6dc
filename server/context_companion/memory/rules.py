"""Rule files of every format we read, and what their frontmatter means.

Where they live is :mod:`.formats`; how each format activates (docs/memory.md has the table):

=========================  ================================================================
``context-companion``,     ``alwaysApply: true``, else ``globs`` match, else listed by its
``cursor``, ``cursor-md``  ``description``
``copilot``                always
``copilot-instructions``   ``applyTo`` globs (``**`` = always); ``excludeAgent``
``claude``, ``cline``,     ``paths`` globs; none = always
an agent's own format
with a ``paths`` glob key
``windsurf``               ``trigger: always_on | glob | model_decision | manual`` (+ ``globs``,
                           ``description``); the last two are listed
``continue``               ``alwaysApply`` true = always; false = ``globs``/``regex`` match, else
                           listed; unset = always without globs/regex, else when they match
``kiro``                   ``inclusion: always | fileMatch | manual | auto``, ``fileMatchPattern``
plain files                always (``.cursorrules``, ``.windsurfrules``, ``.rules``, ``AGENT.md``,
                           ``.junie/guidelines.md``, ``.roo/rules/*``, a ``.clinerules`` file,
                           an agent's own plain file)
=========================  ================================================================

A rule applies when it is always-on or when one of its globs (gitwildmatch, relative to the
workspace folder or to the sub-directory a nested rule directory governs, ``{a,b}`` braces
expanded) matches an open or active file, and its ``regex`` (Continue) matches that file's
content. A listed rule is shown by path and description without its body. Frontmatter is YAML;
when YAML rejects it, plain ``key: value`` lines are still accepted (``globs: *.ts`` is common
and is not valid YAML). Anything else is reported and the rule is skipped.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Literal

from pathspec import PathSpec

from ..agents import registry
from ..frontmatter import Frontmatter, split_frontmatter  # noqa: F401 - re-exported
from .formats import BY_FORMAT, FORMAT_ORDER, FORMATS, FormatSpec, RuleFormat, match_rule_path

__all__ = ["FORMAT_ORDER", "RuleFormat"]

RuleMode = Literal["always", "globs", "description", "manual"]

_SHARED_KEYS = ("description", "globs", "alwaysApply")
KNOWN_KEYS: dict[str, tuple[str, ...]] = {
    "context-companion": _SHARED_KEYS,
    "cursor": _SHARED_KEYS,
    "cursor-md": _SHARED_KEYS,
    "copilot": ("applyTo", "description", "excludeAgent", "name"),
    "copilot-instructions": ("applyTo", "description", "excludeAgent", "name"),
    "claude": ("paths", "description"),
    "windsurf": ("trigger", "globs", "description"),
    "cline": ("paths", "description"),
    "continue": ("name", "description", "globs", "regex", "alwaysApply", "version", "schema"),
    "kiro": ("inclusion", "fileMatchPattern", "name", "description"),
}
# The rule formats only one agent with hooks reads: their keys and glob key from its module (RULE_KEYS, GLOB_KEYS).
_AGENT_MODULES = tuple(registry.load(agent) for agent in registry.HOOK_AGENTS)
KNOWN_KEYS.update({f: keys for m in _AGENT_MODULES for f, keys in getattr(m, "RULE_KEYS", {}).items()})
GLOB_KEY: dict[str, str | None] = {
    "context-companion": "globs",
    "cursor": "globs",
    "cursor-md": "globs",
    "copilot": None,
    "copilot-instructions": "applyTo",
    "claude": "paths",
    "windsurf": "globs",
    "cline": "paths",
    "continue": "globs",
    "kiro": "fileMatchPattern",
    **{f: key for m in _AGENT_MODULES for f, key in getattr(m, "GLOB_KEYS", {}).items()},
}
RULE_DIR_PREFIXES: tuple[str, ...] = tuple(sorted({f.path.split("/", 1)[0] for f in FORMATS}))
WINDSURF_TRIGGERS = ("always_on", "manual", "model_decision", "glob")
KIRO_INCLUSIONS = ("always", "fileMatch", "manual", "auto")
EXCLUDE_AGENTS = ("code-review", "coding-agent")
_MATCH_ALL = frozenset({"*", "**", "**/*"})
_MAX_BRACE_EXPANSIONS = 256
_MAX_REGEX_CHARS = 1000


def rule_format_for(rel_path: str) -> RuleFormat | None:
    """The rule format of a posix path relative to a workspace folder, or None."""
    found = match_rule_path(rel_path)
    return found[0] if found else None


def find_rule_files(
    folder: str, specs: tuple[FormatSpec, ...] = FORMATS, bases: tuple[str, ...] = ()
) -> list[tuple[str, str, RuleFormat, str]]:
    """``(abs_path, rel_path, format, base)`` of every rule file of a workspace folder, ordered.

    ``bases`` are sub-directories holding nested rule directories (for formats that have them).
    """
    found: list[tuple[str, str, RuleFormat, str]] = []
    for spec in specs:
        for base in ("", *(b for b in bases if spec.nested)):
            rel_top = f"{base}/{spec.path}" if base else spec.path
            top = os.path.join(folder, *rel_top.split("/"))
            if spec.kind in ("file", "either") and os.path.isfile(top):
                found.append((top, rel_top, spec.format, base))
            elif spec.kind in ("dir", "either") and os.path.isdir(top) and not os.path.islink(top):
                found.extend((p, r, spec.format, base) for p, r in _files_in(folder, rel_top, spec))
    return found


def _files_in(folder: str, rel_dir: str, spec: FormatSpec) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    top = os.path.join(folder, *rel_dir.split("/"))
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames.sort()
        if not spec.recursive:
            dirnames.clear()
        rel_base = os.path.relpath(dirpath, folder).replace(os.sep, "/")
        for name in sorted(filenames):
            if not name.startswith(".") and name.endswith(spec.suffixes):
                out.append((os.path.join(dirpath, name), f"{rel_base}/{name}"))
    return out


def find_home_rules(home: str, dirs: tuple[tuple[str, RuleFormat], ...]) -> list[tuple[str, RuleFormat]]:
    """User-level rule files (``~/.claude/rules``, ``~/.kiro/steering``): (abs path, format)."""
    found: list[tuple[str, RuleFormat]] = []
    for rel, fmt in dirs:
        spec = BY_FORMAT[fmt]
        top = os.path.join(home, *rel.split("/"))
        if os.path.isdir(top):
            found.extend((p, fmt) for p, _r in _files_in(home, rel, spec))
    return found


_RULE_DIR_MARKS = tuple(f"/{f.path}/" for f in FORMATS if f.kind != "file")


def in_rule_dir(rel_dir: str) -> bool:
    """Whether a directory (posix, relative to a folder) is a rule directory or lies in one, at the
    root or nested: when one comes or goes, the folder's rules are looked for again."""
    padded = f"/{rel_dir}/"
    return any(mark in padded for mark in _RULE_DIR_MARKS)


def nested_bases(dirs: Iterable[str]) -> tuple[str, ...]:
    """Sub-directories (posix, relative) that hold a nested rule directory, from walked dirs."""
    out: set[str] = set()
    for rel_dir in dirs:
        for spec in FORMATS:
            if spec.nested and rel_dir.endswith("/" + spec.path):
                out.add(rel_dir[: -len(spec.path) - 1])
    return tuple(sorted(out))


# --------------------------------------------------------------------------- globs


def split_globs(value: str) -> list[str]:
    """Split a comma-separated glob list, keeping commas inside ``{...}``; drop quotes and blanks."""
    out = [g.strip().strip("'\"").strip() for g in split_globs_raw(value)]
    return [g for g in out if g]


def expand_braces(pattern: str) -> list[str]:
    """``src/*.{ts,tsx}`` → ``["src/*.ts", "src/*.tsx"]`` (nested braces too, capped)."""
    results: list[str] = []
    pending = [pattern]
    while pending:
        pat = pending.pop()
        start = -1
        depth = 0
        span: tuple[int, int] | None = None
        for i, ch in enumerate(pat):
            if ch == "{":
                if depth == 0:
                    start = i
                depth += 1
            elif ch == "}" and depth:
                depth -= 1
                if depth == 0:
                    inner = pat[start + 1 : i]
                    if "," in inner:
                        span = (start, i)
                        break
        if span is None:
            results.append(pat)
        else:
            a, b = span
            for alt in split_globs_raw(pat[a + 1 : b]):
                pending.append(pat[:a] + alt + pat[b + 1 :])
        if len(results) + len(pending) > _MAX_BRACE_EXPANSIONS:
            results.extend(pending)
            break
    return sorted(set(results))


def split_globs_raw(value: str) -> list[str]:
    out: list[str] = []
    depth = 0
    cur: list[str] = []
    for ch in value:
        if ch == "{":
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur))
    return out


def compile_globs(globs: tuple[str, ...], anchored: bool = False) -> PathSpec[Any]:
    """A gitwildmatch spec of the globs (braces expanded, leading ``./`` dropped).

    ``anchored``: a glob without ``/`` matches top-level files only, as in the picomatch-style
    dialect of Claude Code and Cline (``*.ts`` is not ``**/*.ts`` there).
    """
    patterns: list[str] = []
    for glob in globs:
        g = glob[2:] if glob.startswith("./") else glob
        for p in expand_braces(g):
            neg = p.startswith("!")
            body = p[1:] if neg else p
            if anchored and "/" not in body.rstrip("/") and body not in _MATCH_ALL:
                body = "/" + body
            patterns.append(("!" if neg else "") + body)
    return PathSpec.from_lines("gitignore", patterns)


# --------------------------------------------------------------------------- rules


@dataclass(slots=True)
class ParsedRule:
    format: RuleFormat
    mode: RuleMode
    description: str
    globs: tuple[str, ...]
    spec: PathSpec[Any] | None
    body: str
    body_line: int
    error: str | None = None  # the rule is skipped when set
    error_line: int = 0
    unknown_keys: list[tuple[str, int, str]] = field(default_factory=list)  # (key, line, hint)
    key_lines: dict[str, int] = field(default_factory=dict)
    glob_specs: list[tuple[str, PathSpec[Any]]] = field(default_factory=list)  # one spec per glob, for reasons
    name: str = ""
    regexes: tuple[re.Pattern[str], ...] = ()  # Continue: matched against open files' content
    listed_otherwise: bool = False  # Continue alwaysApply false: listed when no glob/regex matches
    exclude_agent: tuple[str, ...] = ()  # Copilot excludeAgent values
    trigger: str = ""  # the format's own word for how it activates (for explanations)
    notes: list[tuple[str, int, str]] = field(default_factory=list)  # (message, line, code): warnings, rule kept

    def matching_glob(self, rel_path: str) -> str | None:
        """The first glob that matches ``rel_path`` when the rule as a whole matches it."""
        if self.spec is None or not self.spec.match_file(rel_path):
            return None
        for glob, spec in self.glob_specs:
            if not glob.startswith("!") and spec.match_file(rel_path):
                return glob
        return self.globs[0] if self.globs else None

    def matching_regex(self, content: str) -> str | None:
        for pattern in self.regexes:
            if pattern.search(content):
                return pattern.pattern
        return None

    def listing_text(self) -> str:
        """How a listed rule is described: its description, else its name."""
        return self.description or self.name


def _as_globs(value: Any, key: str) -> tuple[tuple[str, ...], str | None]:
    if value is None or value == "":
        return (), None
    if isinstance(value, str):
        return tuple(split_globs(value)), None
    if isinstance(value, list):
        out: list[str] = []
        for item in value:
            if not isinstance(item, str):
                return (), f"'{key}' must be a list of glob strings, found {type(item).__name__} {item!r}"
            out.extend(split_globs(item))
        return tuple(out), None
    return (), f"'{key}' must be a glob string or a list of globs, not {type(value).__name__}"


def _as_strings(value: Any, key: str) -> tuple[tuple[str, ...], str | None]:
    if value is None or value == "":
        return (), None
    if isinstance(value, str):
        return (value,), None
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return tuple(value), None
    return (), f"'{key}' must be a string or a list of strings"


def _as_bool(value: Any, key: str) -> tuple[bool | None, str | None]:
    if isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"
    if value is None or isinstance(value, bool):
        return value, None
    return None, f"'{key}' must be true or false, not {value!r}"


def _text(data: dict[str, Any], key: str) -> str:
    value = data.get(key)
    return "" if value is None else str(value).strip()


def parse_rule(fmt: RuleFormat, text: str) -> ParsedRule:
    """Parse a rule file's text. Never raises: problems land in ``error`` / ``unknown_keys``."""
    if not BY_FORMAT[fmt].frontmatter:
        return ParsedRule(fmt, "always", "", (), None, text, 0, trigger="always")
    fm = split_frontmatter(text)
    rule = ParsedRule(fmt, "manual", "", (), None, fm.body, fm.body_line, key_lines=fm.key_lines)
    if fm.error:
        rule.error, rule.error_line = fm.error, fm.error_line
        return rule
    data = fm.data
    known = KNOWN_KEYS[fmt]
    for key in data:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            if not close:
                close = [k for k in known if k.lower() == key.lower()]
            hint = f"; did you mean '{close[0]}'?" if close else f"; known keys: {', '.join(known)}"
            rule.unknown_keys.append((key, fm.key_lines.get(key, 1), hint))
    rule.description = _text(data, "description")
    rule.name = _text(data, "name")

    def fail(message: str, key: str) -> ParsedRule:
        rule.error, rule.error_line = message, fm.key_lines.get(key, 1)
        return rule

    glob_key = GLOB_KEY[fmt]
    if glob_key is not None:
        globs, err = _as_globs(data.get(glob_key), glob_key)
        if err:
            return fail(err, glob_key)
        rule.globs = globs
    if rule.globs:
        anchored = BY_FORMAT[fmt].anchored
        try:
            rule.spec = compile_globs(rule.globs, anchored)
            rule.glob_specs = [(g, compile_globs((g,), anchored)) for g in rule.globs if not g.startswith("!")]
        except Exception as exc:
            return fail(f"'{glob_key}' has a glob that is not valid: {exc}", glob_key or "")
    error = _ACTIVATION[fmt](rule, data)
    if error is not None:
        return fail(*error)
    return rule


def _glob_mode(rule: ParsedRule) -> RuleMode:
    return "always" if set(rule.globs) <= _MATCH_ALL else "globs"


def _cursor_like(rule: ParsedRule, data: dict[str, Any]) -> tuple[str, str] | None:
    always, err = _as_bool(data.get("alwaysApply"), "alwaysApply")
    if err:
        return err, "alwaysApply"
    if always:
        rule.mode, rule.trigger = "always", "alwaysApply: true"
    elif rule.globs:
        rule.mode, rule.trigger = _glob_mode(rule), "globs"
    elif rule.description:
        rule.mode, rule.trigger = "description", "description (agent decides)"
    else:
        rule.mode, rule.trigger = "manual", "manual"
    return None


def _copilot(rule: ParsedRule, data: dict[str, Any]) -> tuple[str, str] | None:
    values, err = _as_strings(data.get("excludeAgent"), "excludeAgent")
    if err:
        return err, "excludeAgent"
    bad = [v for v in values if v not in EXCLUDE_AGENTS]
    if bad:
        return f"'excludeAgent' must be one of {', '.join(EXCLUDE_AGENTS)}, not {bad[0]!r}", "excludeAgent"
    rule.exclude_agent = values
    if rule.format == "copilot":
        rule.mode, rule.trigger = "always", "always"
    elif rule.globs:
        rule.mode, rule.trigger = _glob_mode(rule), "applyTo"
    else:
        rule.mode, rule.trigger = "manual", "manual"
    return None


def _paths(rule: ParsedRule, _data: dict[str, Any]) -> tuple[str, str] | None:
    _globs_else_always(rule, "paths", "always (no paths)")
    return None


def _globs_else_always(rule: ParsedRule, scoped: str, always: str) -> None:
    """Glob-scoped when the rule has globs, else always on; ``scoped``/``always`` name the trigger."""
    if rule.globs:
        rule.mode, rule.trigger = _glob_mode(rule), scoped
    else:
        rule.mode, rule.trigger = "always", always


def _windsurf(rule: ParsedRule, data: dict[str, Any]) -> tuple[str, str] | None:
    if data.get("trigger") is None:
        _globs_else_always(rule, "globs", "always (no trigger)")  # no trigger written
        return None
    # model_decision and manual: listed, read on request
    return _switched(rule, data, "trigger", WINDSURF_TRIGGERS, ("always_on", "glob", "globs"))


def _switched(
    rule: ParsedRule, data: dict[str, Any], key: str, choices: tuple[str, ...], meaning: tuple[str, str, str]
) -> tuple[str, str] | None:
    """Activation by one frontmatter key whose ``meaning`` is (value for always on, value for
    glob-scoped, the key that holds the globs); any other valid value lists the rule by description."""
    always, scoped, globs_key = meaning
    value = data[key]
    if value not in choices:
        return f"'{key}' must be one of {', '.join(choices)}, not {value!r}", key
    rule.trigger = f"{key}: {value}"
    if value == always:
        rule.mode = "always"
    elif value == scoped:
        if not rule.globs:
            return f"'{key}: {value}' needs '{globs_key}'", key
        rule.mode = _glob_mode(rule)
    else:
        rule.mode = "description"
    return None


def _continue(rule: ParsedRule, data: dict[str, Any]) -> tuple[str, str] | None:
    always, err = _as_bool(data.get("alwaysApply"), "alwaysApply")
    if err:
        return err, "alwaysApply"
    patterns, err = _as_strings(data.get("regex"), "regex")
    if err:
        return err, "regex"
    compiled: list[re.Pattern[str]] = []
    for p in patterns:
        if len(p) > _MAX_REGEX_CHARS:
            return f"'regex' is longer than {_MAX_REGEX_CHARS} characters", "regex"
        try:
            compiled.append(re.compile(p, re.MULTILINE))
        except re.error as exc:
            return f"'regex' {p!r} is not a valid regular expression: {exc}", "regex"
    rule.regexes = tuple(compiled)
    if not rule.name:
        rule.notes.append(("Continue requires 'name' in a rule's frontmatter.", 0, "frontmatter-missing-name"))
    scoped = bool(rule.globs or rule.regexes)
    if always:
        rule.mode, rule.trigger = "always", "alwaysApply: true"
    elif always is False:
        rule.trigger = "alwaysApply: false"
        if scoped:
            rule.mode, rule.listed_otherwise = "globs", bool(rule.listing_text())
        else:
            rule.mode = "description" if rule.listing_text() else "manual"
    elif scoped:
        rule.mode, rule.trigger = "globs", "globs/regex"
    else:
        rule.mode, rule.trigger = "always", "always (no globs or regex)"
    if rule.mode == "globs" and rule.globs and not rule.regexes and set(rule.globs) <= _MATCH_ALL:
        rule.mode = "always"
    return None


def _kiro(rule: ParsedRule, data: dict[str, Any]) -> tuple[str, str] | None:
    # manual and auto: listed by name/description
    return _switched(
        rule, {"inclusion": "always", **data}, "inclusion", KIRO_INCLUSIONS, ("always", "fileMatch", "fileMatchPattern")
    )


_ACTIVATION: dict[str, Any] = {
    "context-companion": _cursor_like,
    "cursor": _cursor_like,
    "cursor-md": _cursor_like,
    "copilot": _copilot,
    "copilot-instructions": _copilot,
    "claude": _paths,
    "cline": _paths,
    "windsurf": _windsurf,
    "continue": _continue,
    "kiro": _kiro,
    # An agent's own format with a ``paths`` glob key activates as Claude Code's rules do.
    **{f: _paths for f, key in GLOB_KEY.items() if key == "paths" and f not in ("claude", "cline")},
}


def describe_globs(globs: tuple[str, ...]) -> str:
    return ", ".join(f"'{g}'" for g in globs)
