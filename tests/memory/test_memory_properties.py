"""Properties over generated input: add_memory only inserts; import scanning and frontmatter never crash."""

from __future__ import annotations

from context_companion.memory.imports import find_imports
from context_companion.memory.rules import parse_rule
from context_companion.memory.writer import insert_fact
from hypothesis import given, settings
from hypothesis import strategies as st

LINES = st.sampled_from(
    [
        "# Title",
        "## Added Memories",
        "## added memories ##",
        "## Other",
        "### Sub",
        "- a bullet",
        "",
        "   ",
        "text line",
        "```",
        "~~~md",
        "    indented",
        "café ünïcode",
    ]
)


@st.composite
def documents(draw) -> bytes:
    lines = draw(st.lists(LINES, max_size=12))
    newline = draw(st.sampled_from([b"\n", b"\r\n"]))
    data = newline.join(line.encode() for line in lines)
    if draw(st.booleans()):
        data += newline
    return data


@settings(max_examples=300, deadline=None)
@given(documents(), st.sampled_from(["one fact", "ünï fact", "x"]))
def test_insert_fact_only_inserts(data, fact):
    out = insert_fact(data, fact)
    k = 0
    while k < len(data) and out[k] == data[k]:
        k += 1
    tail = data[k:]
    assert out.endswith(tail), "bytes after the insertion point changed"
    inserted = out[k : len(out) - len(tail)]
    assert f"- {fact}".encode() in inserted
    bullet = f"- {fact}".encode()
    assert (
        out.replace(b"\r\n", b"\n").split(b"\n").count(bullet)
        == data.replace(b"\r\n", b"\n").split(b"\n").count(bullet) + 1
    )


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("@`~ \n/.-_<!>:abcxyz\\")), max_size=200))
def test_find_imports_never_crashes_and_points_at_at_signs(text):
    lines = text.split("\n")
    for ref in find_imports(text):
        assert lines[ref.line][ref.start] == "@"
        assert ref.end > ref.start + 1 and ref.path


@settings(max_examples=300, deadline=None)
@given(
    st.text(max_size=200), st.sampled_from(["context-companion", "cursor", "copilot", "copilot-instructions", "claude"])
)
def test_parse_rule_never_raises(body, fmt):
    rule = parse_rule(fmt, "---\n" + body + "\n---\nbody")
    assert rule.mode in ("always", "globs", "description", "manual")
    assert rule.error is None or isinstance(rule.error, str)


FRAGMENTS = st.sampled_from(
    ["` @a/b.md`", " @a/b.md", "@x.md", "`", "``", " ", "\n", "\r\n", "x", "@", "/", ".", "\\ ", "@@c.md", "e@f.md"]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(FRAGMENTS, max_size=40).map("".join))
def test_find_imports_fast_path_agrees_with_following_every_line(text):
    """Without fences or comments only the lines with an "@" are looked at; a comment opened after
    the last line sends the same text through the line-by-line scan, which must agree."""
    assert find_imports(text) == find_imports(text + "\n<!-- -->")
