"""Token counting: a real local encoding file, the offline fallback, the per-text cache."""

from __future__ import annotations

import base64

from context_companion.tokens import Tokenizer, encoding_for_model, estimate_tokens


def write_ranks(path, encoding) -> None:
    lines = [f"{base64.b64encode(tok).decode()} {rank}" for tok, rank in encoding._mergeable_ranks.items()]
    path.write_text("\n".join(lines) + "\n")


def test_encoding_file_loads_offline(tmp_path, tiny_encoding):
    ranks = tmp_path / "tiny.tiktoken"
    write_ranks(ranks, tiny_encoding)
    tok = Tokenizer("o200k_base", ranks)
    n = tok.count("the theme of the thesis")
    assert tok.estimated is False and tok.reason is None
    # merges apply: fewer tokens than bytes
    assert 0 < n < len("the theme of the thesis")


def test_unloadable_encoding_falls_back_to_estimate_and_says_why(tmp_path):
    tok = Tokenizer("no_such_encoding", tmp_path / "missing.tiktoken")
    assert tok.count("abcdefgh") == estimate_tokens("abcdefgh") == 2
    assert tok.estimated is True
    assert "missing.tiktoken" in tok.reason and "estimated" in tok.reason


def test_counts_are_cached_per_text(tiny_encoding):
    calls = []

    class Counting:
        def encode(self, text, disallowed_special=()):
            calls.append(text)
            return tiny_encoding.encode(text, disallowed_special=disallowed_special)

    tok = Tokenizer("tiny", encoding_obj=Counting())
    assert tok.count("hello there") == tok.count("hello there")
    assert calls == ["hello there"]


def test_model_picks_encoding():
    assert encoding_for_model("gpt-4o", "cl100k_base") == "o200k_base"
    assert encoding_for_model("some-local-model", "cl100k_base") == "cl100k_base"
    assert encoding_for_model(None, "o200k_base") == "o200k_base"


def test_named_encoding_loads_from_tiktoken_cache_without_network(tmp_path, tiny_encoding, monkeypatch):
    import hashlib

    url = "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken"
    cache = tmp_path / "cache"
    cache.mkdir()
    write_ranks(cache / hashlib.sha1(url.encode()).hexdigest(), tiny_encoding)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(cache))
    # cl100k's expected hash will not match our tiny file: it is refused, not deleted, not downloaded
    tok = Tokenizer("cl100k_base")
    tok.load()
    assert tok.estimated and "does not match" in tok.reason
    assert (cache / hashlib.sha1(url.encode()).hexdigest()).exists()


def test_missing_cache_entry_is_reported_with_the_expected_path(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    import socket

    def no_network(*a, **k):
        raise AssertionError("tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    tok = Tokenizer("o200k_base")
    assert tok.count("hello") == estimate_tokens("hello")
    assert tok.estimated and str(tmp_path) in tok.reason
