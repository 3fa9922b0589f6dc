"""Token counting: tiktoken when an encoding can be loaded, an estimator otherwise.

Machines may be offline. The encoding is looked for, in order:

1. ``tokens.encodingFile``: a local ``.tiktoken`` ranks file (the pattern and special tokens of
   the named encoding are used with it);
2. tiktoken's cache (``TIKTOKEN_CACHE_DIR``, else its default folder): never the network, unless
   ``tokens.allowDownload`` is true, when ``tiktoken.get_encoding(name)`` may download;
3. the estimator (:func:`estimate_tokens`), with ``estimated = True`` and the reason, and
   ``warning``: one line for the user that names the setting that fixes it (``tokens.encodingFile``,
   ``tokens.allowDownload``). The tokenizer does not log it: its owner (the workspace ``Companion``)
   tells it once per process, however many tokenizers settings changes make (and the command line
   once per machine: ``cli/output.py``). The tokenizer owns all of its state; the module holds none.

``tokens.encoding = "estimate"`` picks the estimator on purpose: no lookup, no warning.

Loading happens once, lazily (``load()``), and never on a hot path: the server calls it on a
worker thread at start-up. Counts are cached by text, so an unchanged section is never
re-encoded.

A longer text is counted paragraph by paragraph, each paragraph's count cached on its own: after
one memory file changes, only its paragraphs are encoded again, not the whole instruction. This
is exact, not an approximation. o200k_base and cl100k_base first cut text into pieces with a
regular expression and encode each piece alone, and no piece of theirs runs from a newline into a
following character that is neither whitespace nor ``/`` (the only alternatives that can hold a
newline either end with it or hold whitespace only). So a cut between a blank line and such a
character is a piece boundary, and the count of the whole is the sum of the counts of its parts.
The estimator splits text the same way, so its sums are cut the same way too. Encodings with
GPT-2's pattern (where a whitespace run before a word gives up its last character) do not have
that property and are always counted whole.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import os
import re
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["ESTIMATE", "Tokenizer", "encoding_for_model", "estimate_tokens"]

_CACHE_SIZE = 4096
_PARAGRAPH_CACHE_SIZE = 16384
# Where a text may be cut without changing its count: after a blank line, before a character that
# is neither whitespace nor "/" (see the module docstring). Python's \s is a superset of the Unicode
# White_Space the encodings' patterns use, so this never cuts where they might not.
_PARAGRAPH_END = re.compile(r"\n\n(?=[^\s/])")
# Encodings whose pattern keeps the cut above a piece boundary (checked against tiktoken by
# tests/test_tokens.py).
_PARAGRAPH_SAFE = frozenset({"o200k_base", "o200k_harmony", "cl100k_base"})
ESTIMATE = "estimate"  # tokens.encoding value that picks the estimator on purpose

# The estimator splits text the way o200k_base's pre-tokenizer does (words with camelCase split
# and one leading space or symbol, numbers in threes, punctuation runs, whitespace runs) and gives
# each piece a cost. The rates were fitted against real o200k_base counts; the recorded corpus in
# tests/data/tokens keeps them within ±10% (bytes / 4 undercounted folder trees by 14% and
# overcounted CJK and Cyrillic by a third).
_PIECES = re.compile(
    r"""
    (?P<word>[^\r\n\w]?(?:[A-Z]+[a-z]*|[a-z]+))
  | (?P<other>[^\r\n\w]?(?:(?![A-Za-z])[^\W\d_])+)
  | (?P<num>\d{1,3})
  | (?P<punct>\ ?(?:[^\s\w]|_)+)[\r\n/]*
  | (?P<space>\s*[\r\n]+|\s+(?!\S)|\s+)
    """,
    re.VERBOSE,
)
_REPEATS = re.compile(r"(.)\1{3,}")  # "----" and "────" runs are single tokens
_HAN_HANGUL = re.compile(r"[\u2e80-\u303f\u3100-\u9fff\uac00-\ud7af\uf900-\ufaff]")
_KANA = re.compile(r"[\u3040-\u30ff]")
_WORD_FREE_CHARS = 7  # an ASCII word up to this long is one token
_WORD_CHARS_PER_EXTRA = 5
_HAN_HANGUL_RATE = 0.65  # tokens per character
_KANA_RATE = 0.75
_OTHER_SCRIPT_FREE_CHARS = 3  # Cyrillic, Greek, ...: a word costs 1 + (len - 3) / 6
_OTHER_SCRIPT_CHARS_PER_EXTRA = 6
_ASCII_PUNCT_PER_TOKEN = 3
_ASTRAL_RATE = 2.0  # emoji and other characters outside the BMP


def estimate_tokens(text: str) -> int:
    """An offline estimate of o200k_base tokens (within about ±10% on code, prose, trees, CJK)."""
    if not text:
        return 0
    return _rounded(sum(_estimate_raw(part) for part in split_paragraphs(text)))


def split_paragraphs(text: str) -> list[str]:
    """``text`` cut after each blank line that a character other than whitespace or ``/`` follows;
    the parts joined give ``text`` back, and their counts add up to its count."""
    parts = []
    start = 0
    for m in _PARAGRAPH_END.finditer(text):  # a literal "\n\n" to look for: far faster than a lookbehind
        end = m.end()
        parts.append(text[start:end])
        start = end
    parts.append(text[start:])
    return parts


def _rounded(raw: float) -> int:
    return max(1, round(raw))


def _estimate_raw(text: str) -> float:
    """The estimator's cost of ``text`` before rounding (additive over paragraph cuts)."""
    n = 0.0
    for m in _PIECES.finditer(text):
        kind = m.lastgroup
        if kind == "word":
            n += 1 + max(0, m.end() - m.start() - _WORD_FREE_CHARS) / _WORD_CHARS_PER_EXTRA
        elif kind == "other":
            piece = m.group()
            han = len(_HAN_HANGUL.findall(piece))
            kana = len(_KANA.findall(piece))
            rest = len(piece) - han - kana
            cost = han * _HAN_HANGUL_RATE + kana * _KANA_RATE
            if rest > 1:
                cost += 1 + max(0, rest - _OTHER_SCRIPT_FREE_CHARS) / _OTHER_SCRIPT_CHARS_PER_EXTRA
            n += max(1.0, cost)
        elif kind == "punct":
            body = m.group("punct")
            body = _REPEATS.sub(r"\1", body[1:] if body[0] == " " else body)
            ascii_chars = sum(1 for c in body if c < "\x80")
            astral = sum(1 for c in body if c > "\uffff")
            others = len(body) - ascii_chars - astral
            n += max(1.0, ascii_chars / _ASCII_PUNCT_PER_TOKEN + others + astral * _ASTRAL_RATE)
        else:  # a number group or a whitespace run
            n += 1
    return n


def _estimated_warning(encoding: str, *, file: Path | None, file_failed: bool, download: bool) -> str:
    """The one line a user is told (the full reason is in every token report): what happened and
    the setting that fixes it. Downloads are off unless asked for, so their absence is said as
    such, never as being offline."""
    name = encoding if len(encoding) <= 24 else encoding[:21] + "..."
    head = "token counts are estimated: "
    if file_failed:
        return f"{head}tokens.encodingFile {file} cannot be used as {name}; fix it or remove it"
    if download:
        return f"{head}{name} could not be downloaded; set tokens.encodingFile to a local .tiktoken file"
    return (
        f"{head}{name} is not cached; turn on tokens.allowDownload (off by default) or set tokens.encodingFile, "
        f"in {_user_settings_file()} ([tokens] allowDownload = true) or the environment "
        "(CONTEXT_COMPANION_TOKENS__ALLOW_DOWNLOAD=true)"
    )


def _user_settings_file() -> str:
    """The user's ``config.toml`` as the warning names it (``~`` for the home folder)."""
    from ..settings.layers import user_config_dir

    path = user_config_dir() / "config.toml"
    try:
        return "~/" + path.relative_to(Path.home()).as_posix()
    except ValueError:
        return str(path)


def encoding_for_model(model: str | None, default: str) -> str:
    """The tiktoken encoding a model name implies, else ``default`` (always when it is ``estimate``)."""
    if not model or default == ESTIMATE:
        return default
    try:
        import tiktoken.model

        return tiktoken.model.encoding_name_for_model(model)
    except (KeyError, ImportError):
        return default


def tiktoken_cache_dir() -> str:
    """The folder tiktoken caches ranks files in (``TIKTOKEN_CACHE_DIR`` wins, as in tiktoken)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"]
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"]
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def read_ranks(path: str | Path) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` ranks file (``<base64 token> <rank>`` per line).

    Read directly: ``tiktoken.load.load_tiktoken_bpe`` would copy the file into tiktoken's cache,
    keyed by path, and keep serving that copy after the file is replaced.
    """
    ranks: dict[bytes, int] = {}
    with open(path, "rb") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                token, rank = line.split()
                ranks[base64.b64decode(token)] = int(rank)
            except ValueError:
                raise ValueError(f"line {number} is not '<base64 token> <rank>'") from None
    if not ranks:
        raise ValueError("no ranks in the file")
    return ranks


def _cache_only_loader(url: str, expected_hash: str | None = None) -> dict[bytes, int]:
    """Load a ranks file from tiktoken's cache, never from the network."""
    cache_dir = tiktoken_cache_dir()
    path = os.path.join(cache_dir, hashlib.sha1(url.encode()).hexdigest())
    if not cache_dir or not os.path.exists(path):
        raise FileNotFoundError(f"not in the tiktoken cache (expected {path})")
    with open(path, "rb") as fh:
        data = fh.read()
    if expected_hash and hashlib.sha256(data).hexdigest() != expected_hash:
        raise ValueError(f"cached file {path} does not match the expected hash")
    return read_ranks(path)


def _encoding(spec: dict[str, Any]) -> Any:
    """``tiktoken.Encoding(**spec)`` without a second copy of the ranks in Python.

    The encoder (Rust) builds its own tables from ``ranks``; tiktoken keeps the dict only to
    pickle the encoding, which this server never does. Emptied, it frees about 23 MiB for a
    200,000-token vocabulary such as o200k_base (measured: 75 MiB → 52 MiB to load one).
    """
    import tiktoken

    enc = tiktoken.Encoding(**spec)
    spec["mergeable_ranks"].clear()
    return enc


def _build_encoding(name: str, loader: Callable[..., dict[bytes, int]]) -> Any:
    """Build a known encoding (its pattern and special tokens) with ranks from ``loader``;
    ``KeyError`` for a name tiktoken's public encodings do not have."""
    try:
        import tiktoken_ext.openai_public as public  # type: ignore[import-untyped]
    except ImportError:  # pragma: no cover - tiktoken always ships it
        public = None
    constructor = public.ENCODING_CONSTRUCTORS.get(name) if public is not None else None
    if constructor is None:
        raise KeyError(f"unknown encoding {name!r}")
    original = public.load_tiktoken_bpe
    public.load_tiktoken_bpe = loader
    try:
        spec = constructor()
    finally:
        public.load_tiktoken_bpe = original
    return _encoding(spec)


def _encoding_from_file(name: str, path: Path) -> Any:
    ranks = read_ranks(path)
    try:
        return _build_encoding(name, lambda *a, **k: ranks)
    except KeyError:
        pat = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
        return _encoding({"name": name, "pat_str": pat, "mergeable_ranks": ranks, "special_tokens": {}})


class Tokenizer:
    """Counts tokens with one encoding; thread-safe; loads lazily; caches counts by text."""

    def __init__(
        self,
        encoding: str = "o200k_base",
        encoding_file: str | Path | None = None,
        *,
        allow_download: bool = False,
        encoding_obj: Any | None = None,
    ) -> None:
        self.allow_download = allow_download
        self.encoding_name = encoding
        self._file = Path(encoding_file).expanduser() if encoding_file else None
        self._enc: Any | None = encoding_obj
        self._loaded = encoding_obj is not None
        self.estimated = False
        self.reason: str | None = None
        self.warning: str | None = None  # for the user when counts are estimated but not by choice
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, int] = OrderedDict()
        self._paragraphs: OrderedDict[str, float] = OrderedDict()  # paragraph → count (raw for the estimator)
        self._by_paragraph = getattr(encoding_obj, "name", None) in _PARAGRAPH_SAFE

    def load(self) -> None:
        """Load the encoding (or settle on the estimator). Safe to call more than once."""
        if self._loaded:
            return
        with self._lock:
            self._load_locked()

    def _load_locked(self) -> None:
        if self._loaded:  # another thread finished while this one waited for the lock
            return
        enc = None
        reasons: list[str] = []
        if self.encoding_name == ESTIMATE:
            self.estimated = True
            self.reason = 'tokens.encoding is "estimate": counts are estimated'
            self._by_paragraph = True
            self._loaded = True
            return
        if self._file is not None:
            try:
                enc = _encoding_from_file(self.encoding_name, self._file)
            except Exception as exc:
                reasons.append(f"encoding file {self._file} unusable ({type(exc).__name__}: {str(exc)[:120]})")
        if enc is None:
            try:
                if self.allow_download:
                    import tiktoken

                    enc = tiktoken.get_encoding(self.encoding_name)
                else:
                    enc = _build_encoding(self.encoding_name, _cache_only_loader)
            except Exception as exc:
                reasons.append(
                    f"encoding {self.encoding_name!r} could not be loaded ({type(exc).__name__}: {str(exc)[:160]}); "
                    "set tokens.encodingFile to a local .tiktoken file or TIKTOKEN_CACHE_DIR to a cache holding it"
                )
        self._enc = enc
        if enc is None:
            self.estimated = True
            self.reason = "; ".join(reasons) + "; counts are estimated"
            self.warning = _estimated_warning(
                self.encoding_name,
                file=self._file,
                file_failed=self._file is not None,
                download=self.allow_download,
            )
        self._by_paragraph = enc is None or getattr(enc, "name", None) in _PARAGRAPH_SAFE
        self._loaded = True

    def count(self, text: str) -> int:
        """Tokens in ``text`` (cached). Loads the encoding first if needed."""
        if not text:
            return 0
        cached = self._cache.get(text)
        if cached is not None:
            return cached
        if not self._loaded:
            self.load()
        parts = split_paragraphs(text) if self._by_paragraph else [text]
        if len(parts) == 1:
            n = estimate_tokens(text) if self._enc is None else self._encode_count(text)
        else:
            raw = self._sum_paragraphs(parts)
            n = _rounded(raw) if self._enc is None else int(raw)
        with self._lock:
            self._cache[text] = n
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return n

    def count_parts(self, parts: Sequence[str]) -> int:
        """``count("".join(parts))``, from the (cached) counts of the parts where that is exact: when
        every part but the last ends with a blank line and the next starts with a character other
        than whitespace or ``/`` (a paragraph cut, see the module docstring). A text built from a
        few stable parts is then counted without reading it through again."""
        if not self._loaded:
            self.load()
        joins_at_cuts = all(
            a.endswith("\n\n") and b[:1] and not b[:1].isspace() and b[:1] != "/" for a, b in itertools.pairwise(parts)
        )
        if self._enc is None or not self._by_paragraph or not joins_at_cuts:
            return self.count("".join(parts))  # the estimator rounds the whole, so it counts the whole
        return sum(self.count(part) for part in parts)

    def _encode_count(self, text: str) -> int:
        assert self._enc is not None
        return len(self._enc.encode(text, disallowed_special=()))

    def _sum_paragraphs(self, parts: list[str]) -> float:
        """The paragraphs' counts (tokens, or the estimator's unrounded costs) added up in order; the
        ones not cached yet are counted and cached together, under one lock."""
        known = self._paragraphs
        costs: list[float | None] = [known.get(part) for part in parts]
        missing = [i for i, cost in enumerate(costs) if cost is None]
        if missing:
            count = self._paragraph_counter()
            for i in missing:
                costs[i] = count(parts[i])
            with self._lock:
                for i in missing:
                    known[parts[i]] = costs[i]  # type: ignore[assignment]
                while len(known) > _PARAGRAPH_CACHE_SIZE:
                    known.popitem(last=False)
        return sum(costs)  # type: ignore[arg-type]

    def _paragraph_counter(self) -> Callable[[str], float]:
        """How one paragraph is counted: the estimator's raw cost, or the length of its encoding."""
        enc = self._enc
        if enc is None:
            return _estimate_raw
        ordinary = getattr(enc, "encode_ordinary", None)  # no special-token handling: what encode() does here
        if ordinary is None:
            return self._encode_count
        return lambda text: len(ordinary(text))
