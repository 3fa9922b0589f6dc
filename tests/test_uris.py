"""The one spelling of a document URI, whatever a client sends (the LSP tests in
tests/lsp/test_folder_names.py show what it gives the user)."""

from __future__ import annotations

import re
from pathlib import PurePosixPath
from urllib.parse import quote

from context_companion.uris import normalize_uri, path_to_uri, uri_to_path
from hypothesis import given, settings
from hypothesis import strategies as st

# Path segments as users have them: letters of any script, spaces, '#', '?', '%', '@', ':', '+', emoji.
SEGMENT = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\x00"), min_size=1, max_size=12
).filter(lambda s: s not in (".", ".."))
PATHS = st.lists(SEGMENT, min_size=1, max_size=5).map(lambda parts: "/" + "/".join(parts))


def spellings(path: str) -> list[str]:
    vscode = PurePosixPath(path).as_uri()
    return [
        vscode,
        re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), vscode),  # lower-case hex digits
        "file://" + quote(path, safe="/!$&'()*+,;=:@"),  # Neovim's vim.uri_from_fname (RFC 3986 sub-delims kept)
        "file://localhost" + quote(path),
    ] + (["file://" + path] if "%" not in path else [])  # nothing encoded (a hand-made client): '%' is ambiguous


@settings(max_examples=300, deadline=None)
@given(PATHS)
def test_every_spelling_of_a_path_becomes_the_one_vscode_sends_and_back(path):
    one = PurePosixPath(path).as_uri()
    for uri in spellings(path):
        assert normalize_uri(uri) == one, uri
        assert uri_to_path(uri) == path, uri
    assert normalize_uri(one) == one and path_to_uri(path) == one


def test_other_schemes_are_kept_as_sent():
    for uri in ("untitled:Untitled-1", "untitled:my%20notes", "vscode-notebook-cell:/x/a.ipynb#W0sZmlsZQ%3D%3D"):
        assert normalize_uri(uri) == uri and uri_to_path(uri) == uri
