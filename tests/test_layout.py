"""The package's shape stays as the developers' guide wants it: modules small enough to read whole, and
comments that give the reason, not a tracker reference a reader of the code cannot follow."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "server" / "context_companion"
COMPANION_MAX_LINES = 600

# "issue 26", "issues 12 and 40", "bug #7", "#123", "gh-45", "point 4": which item of a tracker, not why.
TRACKER_REFERENCE = re.compile(
    r"\b(?:issues?|bugs?|tickets?)\s*#?\s*\d+|(?<![\w&#])#\d+\b|\bgh-\d+\b|\bpoint\s+\d+\b", re.IGNORECASE
)


def comments_and_docstrings(source: str) -> Iterator[tuple[int, str]]:
    """(line, text) of every comment and every string that stands as a statement (docstrings)."""
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.start[0], tok.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            yield node.lineno, node.value.value


def test_the_companion_module_stays_under_600_lines() -> None:
    lines = len((PACKAGE / "workspace" / "companion.py").read_text(encoding="utf-8").splitlines())
    assert lines < COMPANION_MAX_LINES, (
        f"workspace/companion.py has {lines} lines: move a responsibility into a module of workspace/ "
        "(as agent_delivery.py, editor_files.py and swaps.py were)"
    )


def test_the_tracker_reference_pattern_finds_what_it_is_for() -> None:
    found = [
        t
        for t in ("(issue 26)", "Issues 12 and 40", "see #123", "gh-45", "point 4 of the list")
        if TRACKER_REFERENCE.search(t)
    ]
    assert len(found) == 5
    kept = ("an issue with the cache", "&#39; entity", "a UTF-8 code point", "## 2. Heading", "port 8080")
    assert not [t for t in kept if TRACKER_REFERENCE.search(t)]


def test_no_comment_or_docstring_in_the_package_names_an_issue() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for line, text in comments_and_docstrings(path.read_text(encoding="utf-8")):
            for match in TRACKER_REFERENCE.finditer(text):
                at = line + text.count("\n", 0, match.start())
                offenders.append(f"{path.relative_to(PACKAGE)}:{at}: {match.group(0)!r}")
    assert not offenders, "say why, not which issue:\n" + "\n".join(offenders)
