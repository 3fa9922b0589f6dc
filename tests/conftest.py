"""Shared fixtures: an offline tiktoken encoding, isolated user dirs and environment."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from token_encodings import make_paragraph_encoding

os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path(__file__).parent / ".no-tiktoken-cache"))


def make_tiny_encoding(name: str = "tiny_test"):
    """A real tiktoken Encoding: the 256 single bytes plus a few merges (no network)."""
    import tiktoken

    ranks = {bytes([i]): i for i in range(256)}
    for word in (b"th", b"he", b"the", b" t", b" the", b"in", b"er", b"an", b"re", b"on", b"es", b"st"):
        ranks.setdefault(word, len(ranks))
    pat = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    return tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens={})


@pytest.fixture
def tiny_encoding():
    return make_tiny_encoding()


@pytest.fixture
def paragraph_tokenizer():
    """A Tokenizer over o200k_base's pattern (small ranks): it counts by paragraph, as in use."""
    from context_companion.tokens import Tokenizer

    tok = Tokenizer("o200k_base", encoding_obj=make_paragraph_encoding())
    tok.load()
    assert tok._by_paragraph
    return tok


@pytest.fixture
def tokenizer(tiny_encoding):
    from context_companion.tokens import Tokenizer

    return Tokenizer("tiny_test", encoding_obj=tiny_encoding)


@pytest.fixture
def user_dir(tmp_path: Path) -> Path:
    d = tmp_path / "user-config"
    d.mkdir()
    return d


@pytest.fixture
def workspace(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """An empty folder, ``ws`` unless a test names it (``parametrize("workspace", [...], indirect=True)``)."""
    ws = tmp_path / getattr(request, "param", "ws")
    ws.mkdir()
    return ws


@pytest.fixture(autouse=True)
def _isolated_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """No test reads the developer's real config dir or CONTEXT_COMPANION_* variables."""
    for key in list(os.environ):
        if key.startswith("CONTEXT_COMPANION_"):
            monkeypatch.delenv(key)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    monkeypatch.setenv("CONTEXT_COMPANION_CONFIG_DIR", str(tmp_path / "home" / ".config" / "context-companion"))
    monkeypatch.setenv("HOME", str(home))
    # Nor git's system or global config (a global excludes file changes what is ignored).
    for key in ("XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_SYSTEM", "GIT_DIR"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    yield
