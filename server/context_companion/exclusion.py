"""Which files must never reach the model: the ``context.exclude`` patterns.

Pure functions, no I/O, shared by every producer of output (turn context, memory imports), so
they all agree on what a secret file is.

Pattern rules (a small, gitignore-like glob language, documented in docs/configuration.md):

* matched case-insensitively (``.ENV`` and ``key.PEM`` are secrets too);
* a pattern without ``/`` matches the file's own name, at any depth (``*.pem``);
* a pattern with ``/`` matches the end of the path at a folder boundary (``config/*.key``,
  ``**/.env``); a leading ``/`` or ``**/`` changes nothing;
* ``*`` and ``?`` never cross ``/``, ``**`` crosses any number of folders, ``[...]`` is a class;
* only a pattern ending in ``/`` (``private/``) excludes every file below a folder: a folder's
  name never matches a file pattern, so ``*secret*`` does not hide all of ``secrets-docs/``;
* a pattern starting with ``!`` re-includes; the last pattern that matches decides.

Paths are URI paths for every scheme: ``untitled:.env`` and ``vscode-remote://h/x/.env`` are
matched on ``.env`` and ``/x/.env``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urlsplit

from .uris import uri_path

__all__ = ["DEFAULT_EXCLUDE", "ExcludeMatcher", "exclude_matcher", "is_excluded", "uri_match_path"]

DEFAULT_EXCLUDE: tuple[str, ...] = (
    ".env",
    ".env.*",
    "!.env.example",
    "!.env.sample",
    "!.env.template",
    ".envrc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "*.keystore",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
    "!id_*.pub",
    ".npmrc",
    ".pypirc",
    ".netrc",
    ".git-credentials",
    "credentials",
    "credentials.json",
    "*.tfvars",
    "*.tfstate",
    "secrets.*",
    "*.secret",
)


@dataclass(frozen=True, slots=True)
class _Rule:
    regex: re.Pattern[str]
    include: bool  # True: excludes; False: a ``!`` pattern that re-includes
    on_name: bool  # matched against the file name only


def _glob_to_regex(glob: str) -> str:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if c == "*":
            if glob.startswith("**", i):
                i += 2
                if i < n and glob[i] == "/":
                    out.append("(?:[^/]*/)*")  # "**/": zero or more folders
                    i += 1
                else:
                    out.append(".*")
                continue
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = glob.find("]", i + 2 if glob.startswith("[!", i) or glob.startswith("[^", i) else i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = glob[i + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = end
        elif c == "\\" and i + 1 < n:
            i += 1
            out.append(re.escape(glob[i]))
        else:
            out.append(re.escape(c))
        i += 1
    return "".join(out)


def _rule(pattern: str) -> _Rule | None:
    raw = pattern.strip()
    if not raw or raw.startswith("#"):
        return None
    include = True
    if raw.startswith("!"):
        include, raw = False, raw[1:]
    raw = raw.lower()
    tree = raw.endswith("/")
    raw = raw.strip("/")
    while raw.startswith("**/"):
        raw = raw[3:]
    if not raw:
        return None
    body = _glob_to_regex(raw)
    if tree:  # a folder pattern: any file below a folder of that name
        return _Rule(re.compile(f"(?:^|/){body}/"), include, on_name=False)
    if "/" not in raw:
        return _Rule(re.compile(f"{body}\\Z"), include, on_name=True)
    return _Rule(re.compile(f"(?:^|/){body}\\Z"), include, on_name=False)


class ExcludeMatcher:
    """A compiled list of exclude patterns. Immutable; build one with :func:`exclude_matcher`."""

    __slots__ = ("_rules", "patterns")

    def __init__(self, patterns: Iterable[str]) -> None:
        self.patterns = tuple(patterns)
        self._rules = tuple(r for r in map(_rule, self.patterns) if r is not None)

    def matches(self, path: str) -> bool:
        """Whether the file at ``path`` (a filesystem or URI path, ``/`` or ``\\``) is excluded."""
        norm = path.replace("\\", "/").lower().rstrip("/")
        name = norm.rsplit("/", 1)[-1]
        verdict = False
        for rule in self._rules:
            if rule.include == verdict:
                continue  # cannot change the verdict
            if (rule.regex.match(name) if rule.on_name else rule.regex.search(norm)) is not None:
                verdict = rule.include
        return verdict

    def matches_uri(self, uri: str) -> bool:
        """Whether the document at ``uri`` (any scheme) is excluded."""
        return self.matches(uri_match_path(uri))


@lru_cache(maxsize=32)
def exclude_matcher(patterns: tuple[str, ...]) -> ExcludeMatcher:
    """The (cached) matcher for these patterns."""
    return ExcludeMatcher(patterns)


def is_excluded(path: str, patterns: Iterable[str] = DEFAULT_EXCLUDE) -> bool:
    """Whether ``path`` is excluded by ``patterns`` (default: :data:`DEFAULT_EXCLUDE`)."""
    return exclude_matcher(tuple(patterns)).matches(path)


def uri_match_path(uri: str) -> str:
    """The path of a document URI to match patterns on, for every scheme.

    ``file:///a/.env`` → ``/a/.env``; ``untitled:.env`` → ``.env``; a plain path is returned as is.
    """
    if ":" not in uri or re.match(r"[A-Za-z]:[\\/]", uri):  # no scheme, or a Windows drive path
        return uri
    if uri[:5].lower() == "file:":
        return uri_path(uri)  # a '#' or '?' there belongs to the file's name
    parts = urlsplit(uri)
    if not parts.scheme or len(parts.scheme) == 1:
        return uri
    return unquote(parts.path)
