"""Credential shapes in editor text (selections, cursor lines) become ``[redacted: <kind>]``.

A small table of well-known formats, each anchored on a fixed prefix or a key name so ordinary
code, hashes and ids stay untouched: no entropy guessing. Pure functions, no I/O.

Why not the ``detect-secrets`` package: it reports secret values per line (not spans we can
cut), depends on ``requests``, has no Anthropic or Google API key formats, and its private-key
check sees only the ``BEGIN`` line, not the key block.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["REDACTION_KINDS", "Redaction", "find_secrets", "redact_secrets"]

# (kind, pattern). Order matters where shapes overlap: the first kind to claim a span wins
# (``sk-ant-`` before the generic ``sk-``). A ``value`` group, when present, is the only part
# replaced (the key name of an assignment stays readable).
_KEY_NAME = (
    r"[A-Za-z0-9_.\-]*(?:password|passwd|passphrase|pwd|secret|token|api[_\-]?key|access[_\-]?key"
    r"|private[_\-]?key|client[_\-]?secret|auth[_\-]?key|credentials?)[A-Za-z0-9_.\-]*"
)
_PATTERNS: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)",  # a cut-off block: to the end
    ),
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
    ("gitlab-token", r"\bgl(?:pat|ptt|dt|rt|ft|soat|cbt|imt|agent)-[A-Za-z0-9_\-]{20,}"),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9\-]{10,}|https://hooks\.slack\.com/services/[A-Za-z0-9/_\-]{20,}"),
    ("anthropic-api-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}"),
    ("openai-api-key", r"\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]*"),
    ("url-password", r"(?<=://)[^/\s:@]+:(?P<value>[^/\s@]{3,})(?=@)"),
    (
        "password",
        # key (optionally quoted, optionally type-annotated) = / : / => value; the value is quoted,
        # or a bare word of 8+ characters that is not a call, an attribute or an ${ENV} reference.
        rf"""(?i)(?<![A-Za-z0-9])["']?{_KEY_NAME}["']?(?:\s*:\s*[A-Za-z_][\w.\[\]| ]*?)?\s*(?:=>|:=|=|:)\s*"""
        r"""(?:(?P<q>["'`])(?P<value>[^"'`\n]{8,})(?P=q)"""
        r"""|(?P<bare>(?![A-Za-z_][\w]*\.[A-Za-z_])[^\s"'`,;()\[\]{}<>$]{8,})(?=[\s,;&]|\Z))""",
    ),
)
_COMPILED: tuple[tuple[str, re.Pattern[str]], ...] = tuple((k, re.compile(p, re.DOTALL)) for k, p in _PATTERNS)
REDACTION_KINDS: tuple[str, ...] = tuple(k for k, _ in _PATTERNS)


@dataclass(frozen=True, slots=True)
class Redaction:
    """One credential found in a text: ``text[start:end]`` is replaced by ``[redacted: kind]``."""

    kind: str
    start: int
    end: int


def find_secrets(text: str) -> list[Redaction]:
    """The credential spans in ``text``, in order, never overlapping."""
    if not text:
        return []
    found: list[Redaction] = []
    for kind, regex in _COMPILED:
        for m in regex.finditer(text):
            group = "bare" if m.groupdict().get("bare") else "value"
            start, end = m.span(group) if m.groupdict().get(group) else m.span()
            if start == end or any(r.start < end and start < r.end for r in found):
                continue
            found.append(Redaction(kind, start, end))
    found.sort(key=lambda r: r.start)
    return found


def redact_secrets(text: str) -> str:
    """``text`` with every credential replaced by ``[redacted: <kind>]``."""
    spans = find_secrets(text)
    if not spans:
        return text
    out: list[str] = []
    pos = 0
    for r in spans:
        out.append(text[pos : r.start])
        out.append(f"[redacted: {r.kind}]")
        pos = r.end
    out.append(text[pos:])
    return "".join(out)
