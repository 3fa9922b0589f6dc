"""The JSONC reader and in-place editor behind `setup` and Gemini CLI's settings: what it refuses
(with line and column), and edits that keep every other byte, added then removed giving back the
original text (a property test over random values, layouts and comments)."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from context_companion import jsonc
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st


@pytest.mark.parametrize(
    ("text", "code", "message"),
    [
        ('{"a": 1,}', "trailing-comma", "line 1, column 8: a trailing comma before '}'"),
        ("[1,\n 2,\n]", "trailing-comma", "line 2, column 3: a trailing comma before ']'"),
        ('{"a": 1, "a": 2}', "duplicate-key", 'line 1, column 10: the key "a" appears twice at the top level'),
        ('{"x": {"k": 1,\n "k": 2}}', "duplicate-key", 'line 2, column 2: the key "k" appears twice in x'),
        ('{"a": 1e400}', "number-range", "the number 1e400 is out of range (JavaScript reads it as Infinity)"),
        ('{"a": "\\ud800"}', "surrogate", "a lone surrogate \\ud800 in a string (not Unicode text)"),
        ('{"a": "x\ty"}', "syntax", "line 1, column 9: a control character U+0009 in a string"),
        ('{"a": "\\q"}', "syntax", "a bad escape '\\\\q' in a string"),
        ('{"a": 1 // no comments here\n}', "comment", "line 1, column 9: a comment, which plain JSON does not allow"),
        ("\ufeff{}", "syntax", "line 1, column 1: expected a value, found '\\ufeff'"),
        ("", "syntax", "no JSON value (the text is empty)"),
        ("{} {}", "syntax", "line 1, column 4: unexpected '{' after the JSON value"),
        ('{"a" 1}', "syntax", "expected ':' after the key \"a\""),
        ("{'a': 1}", "syntax", 'expected a key in double quotes, found "\'"'),
        ("[NaN]", "syntax", "expected a value, found 'N'"),
        ("[01]", "syntax", "expected ',' or ']', found '1'"),
        ('{"a": "open', "syntax", "a string that is never closed on its line"),
        ("[" * 200 + "]" * 200, "depth", "nested deeper than 128 levels"),
    ],
)
def test_what_it_refuses_says_where_and_why(text: str, code: str, message: str) -> None:
    with pytest.raises(jsonc.JsoncError) as caught:
        jsonc.parse(text)
    assert caught.value.code == code
    assert message in str(caught.value)


def test_comments_are_read_when_allowed_and_kept_as_spans() -> None:
    text = '{\n  // why\n  "a": [1, /* two */ 2], "b": "// not a comment"\n} /* end */\n'
    doc = jsonc.parse(text, comments=True)
    assert doc.root.python() == {"a": [1, 2], "b": "// not a comment"}
    assert [text[a:b] for a, b in doc.comments] == ["// why", "/* two */", "/* end */"]
    with pytest.raises(jsonc.JsoncError, match="never closed"):
        jsonc.parse('{"a": 1} /* open', comments=True)


def test_as_javascript_reads_what_json_parse_accepts() -> None:
    doc = jsonc.parse('{"a": 1, "a": 2, "big": 1e400, "s": "\\ud800"}', as_javascript=True)
    value = doc.root.python()
    assert value["a"] == 2 and value["big"] == float("inf") and value["s"] == "\ud800"


def edit(text: str, make: Any) -> str:
    doc = jsonc.parse(text, comments=True)
    return jsonc.apply(text, make(doc))


def test_a_member_added_to_a_commented_file_keeps_every_line_and_goes_again_exactly() -> None:
    text = (
        "{\r\n"
        "\t// theme first\r\n"
        '\t"ui": {"theme": "Dracula"},\r\n'
        "\r\n"
        '\t"context": {"fileName": ["AGENTS.md"]} // mine\r\n'
        "}\r\n"
    )
    added = edit(text, lambda d: jsonc.add_member(d, d.root, "hooks", {"E": [1]}))
    assert added == (
        "{\r\n"
        "\t// theme first\r\n"
        '\t"ui": {"theme": "Dracula"},\r\n'
        "\r\n"
        '\t"context": {"fileName": ["AGENTS.md"]}, // mine\r\n'
        '\t"hooks": {\r\n'
        '\t\t"E": [\r\n'
        "\t\t\t1\r\n"
        "\t\t]\r\n"
        "\t}\r\n"
        "}\r\n"
    )
    assert edit(added, lambda d: jsonc.remove(d, d.root, 2)) == text


@pytest.mark.parametrize(
    ("text", "after"),
    [
        ("{}", '{\n  "k": [\n    1\n  ]\n}'),
        ('{"a": 1}', '{"a": 1, "k": [1]}'),
        ('{"a": {}}', '{"a": {}, "k": [1]}'),
        ('{\n    "a": 1\n}', '{\n    "a": 1,\n    "k": [\n        1\n    ]\n}'),
        ('{\n  "a": 1 }', '{\n  "a": 1,\n  "k": [\n    1\n  ] }'),
        ("{\n  // nothing yet\n}", '{\n  // nothing yet\n  "k": [\n    1\n  ]\n}'),
        ("{ /* nothing yet */ }", '{ /* nothing yet */ "k": [1] }'),
    ],
)
def test_where_a_new_member_goes(text: str, after: str) -> None:
    added = edit(text, lambda d: jsonc.add_member(d, d.root, "k", [1]))
    assert added == after
    assert edit(added, lambda d: jsonc.remove(d, d.root, len(d.root.children) - 1)) == text


@pytest.mark.parametrize(
    ("text", "index", "after"),
    [
        ('{\n  "a": 1,\n  // about b\n  "b": 2,\n  "c": 3\n}', 1, '{\n  "a": 1,\n  // about b\n  "c": 3\n}'),
        ('{\n  "a": 1, // a\n  "b": 2 // b\n}', 1, '{\n  "a": 1 // a\n  // b\n}'),
        ('{\n  "a": 1, // a\n  "b": 2 }', 1, '{\n  "a": 1 // a\n  }'),
        ("[1, /* x */ 2, 3]", 0, "[/* x */ 2, 3]"),
        ("[1, 2 /* x */, 3]", 1, "[1,  /* x */3]"),
        ("[\n  // only\n  1\n]", 0, "[\n  // only\n]"),
    ],
)
def test_removing_keeps_the_comments_around(text: str, index: int, after: str) -> None:
    removed = edit(text, lambda d: jsonc.remove(d, d.root, index))
    assert removed == after
    doc = jsonc.parse(removed, comments=True)
    assert len(doc.comments) == len(jsonc.parse(text, comments=True).comments)


def test_replace_puts_a_value_where_the_old_one_was() -> None:
    text = '{\n  "cmd": "old", // keep\n  "n": 1\n}'
    doc = jsonc.parse(text, comments=True)
    node = doc.root.get("cmd")
    assert node is not None
    assert jsonc.apply(text, jsonc.replace(doc, node, "new √")) == '{\n  "cmd": "new √", // keep\n  "n": 1\n}'


# The property: any value, in any of the layouts below, with comments anywhere a person puts them.

KEYS = st.text(alphabet=st.sampled_from('ab"\\é ✓\t/*'), min_size=0, max_size=4)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(10**20), 10**20)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('xy "\\/\n\té😀*'), max_size=5)
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=4),
    max_leaves=12,
)


def lay_out(data: st.DataObject, value: Any, indent: str, unit: str, nl: str, pretty: bool) -> str:
    """``value`` written as a person might write it: their indentation and line ends, comments."""

    def maybe(text: str) -> str:
        return text if data.draw(st.integers(0, 3)) == 0 else ""

    if isinstance(value, (dict, list)) and not value:
        empty = "{}" if isinstance(value, dict) else "[]"
        if data.draw(st.integers(0, 5)) == 0:
            inside = f"{nl}{indent}{unit}// empty{nl}{indent}" if pretty else " /* empty */ "
            return empty[0] + inside + empty[1]
        return empty
    if isinstance(value, (dict, list)):
        items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
        inner = indent + unit
        parts = []
        for key, child in items:
            head = "" if key is None else json.dumps(key, ensure_ascii=data.draw(st.booleans())) + ": "
            body = head + maybe("/* v */ ") + lay_out(data, child, inner, unit, nl, pretty)
            parts.append((maybe(f"{inner}// before{nl}") + inner if pretty else "") + body)
        if pretty:
            gaps = ["," + maybe(" // after") + maybe(nl) + nl for _ in parts[1:]]
            text = parts[0] + "".join(g + p for g, p in zip(gaps, parts[1:], strict=True))
            text = nl + text + maybe(" // last") + nl + indent
        else:
            text = "".join((", " + maybe("/* c */ ") if i else "") + p for i, p in enumerate(parts))
        open_, close = ("{", "}") if isinstance(value, dict) else ("[", "]")
        return open_ + text + close
    return json.dumps(value, ensure_ascii=data.draw(st.booleans()))


@st.composite
def documents(draw: Any) -> tuple[str, Any]:
    value = draw(st.dictionaries(KEYS, VALUES, max_size=5) | st.lists(VALUES, max_size=4))
    data = draw(st.data())
    pretty = draw(st.booleans())
    unit = draw(st.sampled_from(["  ", "    ", "\t"]))
    nl = draw(st.sampled_from(["\n", "\r\n"]))
    text = lay_out(data, value, "", unit, nl, pretty)
    head = draw(st.sampled_from(["", f"// settings{nl}", "/* top */ "]))
    return head + text + draw(st.sampled_from(["", nl, f"{nl}// end{nl}"])), value


def containers(node: jsonc.Node, path: tuple[int, ...] = ()) -> list[tuple[int, ...]]:
    found = [path] if node.kind in ("object", "array") else []
    for i, child in enumerate(node.children):
        found += containers(child, (*path, i))
    return found


def at(node: jsonc.Node, path: tuple[int, ...]) -> jsonc.Node:
    for i in path:
        node = node.children[i]
    return node


def value_at(value: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        value = list(value.values())[i] if isinstance(value, dict) else value[i]
    return value


def comment_texts(doc: jsonc.Document) -> list[str]:
    return [doc.text[a:b] for a, b in doc.comments]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), VALUES, KEYS, st.data())
def test_added_then_removed_gives_back_the_original_bytes(
    document: tuple[str, Any], new: Any, key: str, data: st.DataObject
) -> None:
    text, value = document
    doc = jsonc.parse(text, comments=True)
    assert doc.root.python() == value
    path = data.draw(st.sampled_from(containers(doc.root)))
    target = at(doc.root, path)
    expected = copy.deepcopy(value)
    holder = value_at(expected, path)
    if target.kind == "object":
        if key in target.keys:
            key += "-new"
        if key in target.keys:
            return
        edits = jsonc.add_member(doc, target, key, new)
        holder[key] = new
    else:
        edits = jsonc.add_item(doc, target, new)
        holder.append(new)
    added = jsonc.apply(text, edits)
    after = jsonc.parse(added, comments=True)
    assert after.root.python() == expected
    assert comment_texts(after) == comment_texts(doc)  # every comment kept, in order

    grown = at(after.root, path)
    assert jsonc.apply(added, jsonc.remove(after, grown, len(grown.children) - 1)) == text


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.data())
def test_removing_any_item_keeps_the_rest_and_every_comment_outside_it(
    document: tuple[str, Any], data: st.DataObject
) -> None:
    text, value = document
    doc = jsonc.parse(text, comments=True)
    paths = [p for p in containers(doc.root) if at(doc.root, p).children]
    if not paths:
        return
    path = data.draw(st.sampled_from(paths))
    target = at(doc.root, path)
    index = data.draw(st.integers(0, len(target.children) - 1))
    start, end = target.span(index)
    outside = [doc.text[a:b] for a, b in doc.comments if b <= start or a >= end]
    expected = copy.deepcopy(value)
    holder = value_at(expected, path)
    if isinstance(holder, dict):
        del holder[list(holder)[index]]
    else:
        del holder[index]
    after = jsonc.parse(jsonc.apply(text, jsonc.remove(doc, target, index)), comments=True)
    assert after.root.python() == expected
    assert comment_texts(after) == outside
