"""Token counting: a real local encoding file, the offline fallback, the per-text cache."""

from __future__ import annotations

import base64
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from context_companion.tokens import Tokenizer, encoding_for_model, estimate_tokens
from token_encodings import make_paragraph_encoding


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
    assert tok.count("abcdefgh") == estimate_tokens("abcdefgh") > 0
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


# ----------------------------------------------------------------------------- the offline estimator

CORPUS = Path(__file__).parent / "data" / "tokens"


def recorded_counts() -> dict[str, int]:
    data = json.loads((CORPUS / "counts.json").read_text(encoding="utf-8"))
    assert data["encoding"] == "o200k_base"
    return data["counts"]


def test_corpus_covers_docs_tree_code_and_non_latin_text():
    counts = recorded_counts()
    assert set(counts) == {"docs.md", "tree.txt", "python.py.txt", "typescript.ts.txt", "nonlatin.md"}
    assert "├── " in (CORPUS / "tree.txt").read_text(encoding="utf-8")
    nonlatin = (CORPUS / "nonlatin.md").read_text(encoding="utf-8")
    assert all(ch in nonlatin for ch in ("项", "ファ", "편", "Описание", "🚀"))


@pytest.mark.parametrize("name", sorted(recorded_counts()))
def test_estimate_is_within_ten_percent_of_o200k_base(name):
    """o200k_base counts recorded by tests/data/tokens/recount.cjs (the real ranks, via js-tiktoken)."""
    truth = recorded_counts()[name]
    estimate = estimate_tokens((CORPUS / name).read_text(encoding="utf-8"))
    assert abs(estimate - truth) <= truth * 0.10, f"{name}: estimate {estimate}, o200k_base {truth}"


def test_estimate_basics():
    assert estimate_tokens("") == 0
    assert estimate_tokens(" ") == 1
    assert estimate_tokens("hello world") == 2
    assert estimate_tokens("-" * 64) < 8  # runs of one character are a token or two, not 16


def test_estimate_on_purpose_needs_no_lookup_and_says_so(monkeypatch):
    import socket

    def no_network(*a, **k):
        raise AssertionError("tried to reach the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    tok = Tokenizer("estimate")
    assert tok.count("hello world") == estimate_tokens("hello world")
    assert tok.estimated and "estimate" in tok.reason
    assert encoding_for_model("gpt-4o", "estimate") == "estimate"  # the choice beats the model


# ----------------------------------------------------------------------------- the warning, as a user sees it


def cli(*args: str, tmp_path: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "AGENTS.md").write_text("Run make check.\n")
    full = {k: v for k, v in os.environ.items() if not k.startswith("CONTEXT_COMPANION_")}
    full.update({"HOME": str(tmp_path), "TIKTOKEN_CACHE_DIR": str(tmp_path / "empty-cache"), **(env or {})})
    return subprocess.run(
        [sys.executable, "-m", "context_companion", *args, "--workspace", str(ws)],
        capture_output=True,
        text=True,
        env=full,
        timeout=60,
    )


@pytest.mark.parametrize("command", ["instruction", "memory", "turn"])
def test_the_estimate_warning_is_one_line_naming_the_settings_that_fix_it(command, tmp_path):
    """Downloads are off by default: the line says so and names both settings, and never says
    "offline" (it used to, on machines that were online)."""
    out = cli(command, "--json", tmp_path=tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stderr.splitlines() == [
        "context-companion: warning: token counts are estimated: o200k_base is not cached; "
        "turn on tokens.allowDownload (off by default) or set tokens.encodingFile, in "
        "~/.config/context-companion/config.toml ([tokens] allowDownload = true) or the environment "
        "(CONTEXT_COMPANION_TOKENS__ALLOW_DOWNLOAD=true)"
    ]


def test_the_places_the_estimate_warning_names_set_the_setting(tmp_path: Path) -> None:
    """The warning says where tokens.allowDownload is set: the user's config.toml, as the warning writes it, and
    the environment variable it names both reach the setting."""
    from context_companion.settings.layers import env_layer, read_toml

    config = tmp_path / "config.toml"
    config.write_text("[tokens]\nallowDownload = true\n")
    assert read_toml(config) == {"tokens": {"allowDownload": True}}
    assert env_layer({"CONTEXT_COMPANION_TOKENS__ALLOW_DOWNLOAD": "true"}) == {"tokens": {"allowDownload": True}}


def test_the_warning_names_what_failed_when_a_download_or_an_encoding_file_was_asked_for(tmp_path, monkeypatch):
    import tiktoken

    def offline(name: str) -> None:
        raise ConnectionError("no route to host")

    monkeypatch.setattr(tiktoken, "get_encoding", offline)
    download = Tokenizer("o200k_base", allow_download=True)
    download.load()
    assert download.warning == (
        "token counts are estimated: o200k_base could not be downloaded; set tokens.encodingFile to a local "
        ".tiktoken file"
    )
    bad = tmp_path / "o200k.tiktoken"
    bad.write_text("not ranks\n")
    with_file = Tokenizer("o200k_base", bad)
    with_file.load()
    assert with_file.warning == (
        f"token counts are estimated: tokens.encodingFile {bad} cannot be used as o200k_base; fix it or remove it"
    )
    chosen = Tokenizer("estimate")
    chosen.load()
    assert chosen.estimated and chosen.warning is None  # the estimator on purpose: nothing to fix


@pytest.mark.parametrize("command", ["instruction", "memory"])
def test_quiet_and_estimate_on_purpose_print_nothing(command, tmp_path):
    quiet = cli(command, "--quiet", tmp_path=tmp_path)
    assert quiet.returncode == 0 and quiet.stderr == "" and quiet.stdout
    chosen = cli(command, tmp_path=tmp_path, env={"CONTEXT_COMPANION_TOKENS__ENCODING": "estimate"})
    assert chosen.returncode == 0 and chosen.stderr == "" and chosen.stdout


def test_the_warning_is_said_once_per_machine_unless_verbose(tmp_path):
    """The 30-second demo runs eight commands: the line comes with the first only. ``-v`` repeats it,
    another machine (another user cache folder) and another reason say it again, and the JSON result
    says that counts are estimated every time."""
    line = (
        "context-companion: warning: token counts are estimated: o200k_base is not cached; "
        "turn on tokens.allowDownload (off by default) or set tokens.encodingFile, in "
        "~/.config/context-companion/config.toml ([tokens] allowDownload = true) or the environment "
        "(CONTEXT_COMPANION_TOKENS__ALLOW_DOWNLOAD=true)"
    )
    machine = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    first = cli("memory", tmp_path=tmp_path, env=machine)
    assert first.returncode == 0 and first.stderr.splitlines() == [line]
    for command in (["instruction"], ["memory"], ["turn"], ["explain", "--agent", "codex"], ["memory", "--json"]):
        again = cli(*command, tmp_path=tmp_path, env=machine)
        assert (again.returncode, again.stderr) == (0, ""), command
        assert again.stdout
    data = json.loads(cli("instruction", "--json", tmp_path=tmp_path, env=machine).stdout)
    assert data["tokens"]["estimated"] is True and "o200k_base" in data["tokens"]["reason"]
    for flag in ("-v", "--verbose"):
        verbose = cli("instruction", flag, tmp_path=tmp_path, env=machine)
        assert verbose.returncode == 0 and verbose.stderr.splitlines() == [line]
    both = cli("memory", "-q", "-v", tmp_path=tmp_path, env=machine)
    assert (
        both.returncode == 2 and both.stderr.count("\n") == 1 and "not allowed with argument -q/--quiet" in both.stderr
    )

    bad = tmp_path / "broken.tiktoken"
    bad.write_text("not ranks\n")
    other_reason = cli(
        "memory", tmp_path=tmp_path, env={**machine, "CONTEXT_COMPANION_TOKENS__ENCODING_FILE": str(bad)}
    )
    assert other_reason.stderr.splitlines() == [
        f"context-companion: warning: token counts are estimated: tokens.encodingFile {bad} cannot be used as "
        "o200k_base; fix it or remove it"
    ]
    other_machine = cli("memory", tmp_path=tmp_path, env={"XDG_CACHE_HOME": str(tmp_path / "cache2")})
    assert other_machine.stderr.splitlines() == [line]


def test_a_cache_folder_that_cannot_be_written_repeats_the_warning_rather_than_lose_it(tmp_path):
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    for _ in range(2):
        out = cli("memory", tmp_path=tmp_path, env={"XDG_CACHE_HOME": str(blocked)})
        assert out.returncode == 0 and len(out.stderr.splitlines()) == 1
        assert "token counts are estimated" in out.stderr


def test_the_tokenizer_only_reports_the_warning_its_owner_tells(tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    with caplog.at_level(logging.DEBUG, logger="context_companion"):
        tokenizer = Tokenizer("o200k_base")
        for text in ("one", "two", "one\n\ntwo"):
            tokenizer.load()
            assert tokenizer.count(text) > 0
        assert tokenizer.estimated and "o200k_base" in (tokenizer.warning or "")
    assert caplog.records == []  # the workspace Companion logs it, once per process


def test_the_tokens_module_holds_no_state_of_its_own():
    """Its mutable state (locks, caches, the warning) belongs to the tokenizer."""
    import threading

    import context_companion.tokens as tokens

    mutable = (dict, list, set, bytearray, type(threading.Lock()))
    held = [name for name, value in vars(tokens).items() if not name.startswith("__") and isinstance(value, mutable)]
    assert held == []


# ----------------------------------------------------------------------------- counting by paragraph

_ALPHABET = "aB.,/ \n\t1's中é-#"


def _encoding_with(pattern: str, name: str):
    """A real tiktoken Encoding with ``pattern`` and the small ranks of the shared fixture."""
    import tiktoken

    ranks = make_paragraph_encoding()._mergeable_ranks
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_counting_by_paragraph_equals_counting_the_whole(name):
    """The paragraph cut is a piece boundary of the encoding's own pattern: sum of parts == whole."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    enc = make_paragraph_encoding(name)

    @settings(max_examples=400, deadline=None)
    @given(st.lists(st.text(_ALPHABET, max_size=24), min_size=1, max_size=8))
    def check(paragraphs):
        text = "\n\n".join(paragraphs)
        tok = Tokenizer(name, encoding_obj=enc)
        assert tok.count(text) == len(enc.encode(text, disallowed_special=()))

    check()


def test_gpt2_pattern_is_counted_whole(tiny_encoding):
    """GPT-2's pattern splits "\\n\\n" before a word differently from "\\n\\n" at the end, so a cut
    there would change counts: such encodings are never counted by paragraph."""
    enc = _encoding_with(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""", "gpt2ish")
    text = "a\n\nB"
    whole = len(enc.encode(text))
    parts = sum(len(enc.encode(p)) for p in ("a\n\n", "B"))
    assert whole != parts  # the hazard is real for this pattern
    tok = Tokenizer("gpt2ish", encoding_obj=enc)
    assert tok.count(text) == whole


def test_loaded_encoding_counts_by_paragraph_only_when_safe(tmp_path, tiny_encoding):
    ranks = tmp_path / "tiny.tiktoken"
    write_ranks(ranks, tiny_encoding)
    safe = Tokenizer("o200k_base", ranks)
    safe.load()
    other = Tokenizer("my_local_bpe", ranks)  # an unknown name gets GPT-2's pattern
    other.load()
    assert not safe.estimated and not other.estimated
    assert safe._by_paragraph and not other._by_paragraph


def test_estimate_is_the_same_counted_whole_or_by_paragraph():
    text = (CORPUS / "docs.md").read_text(encoding="utf-8")
    tok = Tokenizer("estimate")
    first = tok.count(text)
    assert first == estimate_tokens(text)
    # Edit one paragraph: only it is new, and the total still matches a fresh whole estimate.
    edited = text.replace("\n\n", "\n\nA new paragraph, edited in.\n\n", 1)
    assert tok.count(edited) == estimate_tokens(edited) != first


def test_one_changed_paragraph_is_the_only_text_encoded_again(tiny_encoding):
    calls = []

    class Counting:
        name = "o200k_base"

        def encode(self, text, disallowed_special=()):
            calls.append(text)
            return tiny_encoding.encode(text, disallowed_special=disallowed_special)

    tok = Tokenizer("o200k_base", encoding_obj=Counting())
    tok.count("# Title\n\nfirst para.\n\nsecond para.")
    calls.clear()
    tok.count("# Title\n\nfirst para, edited.\n\nsecond para.")
    assert calls == ["first para, edited.\n\n"]


def test_an_encoding_loaded_from_a_file_counts_like_tiktoken_without_keeping_a_python_copy(tmp_path):
    reference = make_paragraph_encoding("o200k_base")
    ranks = tmp_path / "o200k-small.tiktoken"
    write_ranks(ranks, reference)
    tok = Tokenizer("o200k_base", ranks)
    texts = ["the theme of the thesis", "## Rules\n\n- a\n- the end.\n\n/x\n", "naïve café ünïcode", ""]
    assert [tok.count(t) for t in texts] == [len(reference.encode_ordinary(t)) for t in texts]
    # tiktoken keeps the ranks dict only to pickle an Encoding; its Rust core has its own tables.
    # Emptied, it is ~23 MiB less for a vocabulary of o200k_base's size (`python -m bench --only tokens-memory`).
    assert tok._enc._mergeable_ranks == {}
    assert tok._enc.decode(tok._enc.encode_ordinary("the thesis")) == "the thesis"
