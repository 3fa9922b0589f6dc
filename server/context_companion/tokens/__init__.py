"""Token counting: tiktoken when an encoding can be loaded, an estimator otherwise.

Machines may be offline. The encoding is looked for, in order:

1. ``tokens.encodingFile``: a local ``.tiktoken`` ranks file (the pattern and special tokens of
   the named encoding are used with it);
2. ``tiktoken.get_encoding(name)``, which honours ``TIKTOKEN_CACHE_DIR`` (and downloads when
   online);
3. the estimator (about four UTF-8 bytes a token), with ``estimated = True`` and the reason.

Loading happens once, lazily (``load()``), and never on a hot path: the server calls it on a
worker thread at start-up. Counts are cached by text, so an unchanged section is never
re-encoded.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any
import logging

log = logging.getLogger(__name__)

__all__ = ["Tokenizer", "estimate_tokens", "encoding_for_model"]

_CACHE_SIZE = 4096


def estimate_tokens(text: str) -> int:
    """The fallback estimate: one token per four UTF-8 bytes, rounded up."""
    if not text:
        return 0
    return math.ceil(len(text.encode("utf-8")) / 4)


def encoding_for_model(model: str | None, default: str) -> str:
    """The tiktoken encoding a model name implies, else ``default``."""
    if not model:
        return default
    try:
        import tiktoken.model

        return tiktoken.model.encoding_name_for_model(model)
    except (KeyError, ImportError):
        return default


def _encoding_from_file(name: str, path: Path) -> Any:
    import tiktoken
    import tiktoken.load

    ranks = tiktoken.load.load_tiktoken_bpe(str(path))
    constructor: Callable[[], dict[str, Any]] | None = None
    try:
        import tiktoken_ext.openai_public as public

        constructor = public.ENCODING_CONSTRUCTORS.get(name)
    except ImportError:  # pragma: no cover - tiktoken always ships it
        public = None
    if constructor is not None and public is not None:
        original = public.load_tiktoken_bpe
        public.load_tiktoken_bpe = lambda *a, **k: ranks  # type: ignore[assignment]
        try:
            spec = constructor()
        finally:
            public.load_tiktoken_bpe = original  # type: ignore[assignment]
        spec["mergeable_ranks"] = ranks
        return tiktoken.Encoding(**spec)
    pat = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
    return tiktoken.Encoding(name, pat_str=pat, mergeable_ranks=ranks, special_tokens={})


class Tokenizer:
    """Counts tokens with one encoding; thread-safe; loads lazily; caches counts by text."""

    def __init__(
        self,
        encoding: str = "o200k_base",
        encoding_file: str | Path | None = None,
        *,
        encoding_obj: Any | None = None,
    ) -> None:
        self.encoding_name = encoding
        self._file = Path(encoding_file).expanduser() if encoding_file else None
        self._enc: Any | None = encoding_obj
        self._loaded = encoding_obj is not None
        self.estimated = False
        self.reason: str | None = None
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, int] = OrderedDict()

    @property
    def loaded(self) -> bool:
        return self._loaded

    def load(self) -> None:
        """Load the encoding (or settle on the estimator). Safe to call more than once."""
        if self._loaded:
            return
        with self._lock:
            if self._loaded:
                return
            enc = None
            reasons: list[str] = []
            if self._file is not None:
                try:
                    enc = _encoding_from_file(self.encoding_name, self._file)
                except Exception as exc:  # noqa: BLE001 - any failure means: fall back
                    reasons.append(f"encoding file {self._file} unusable ({type(exc).__name__}: {str(exc)[:120]})")
            if enc is None:
                try:
                    import tiktoken

                    enc = tiktoken.get_encoding(self.encoding_name)
                except Exception as exc:  # noqa: BLE001 - offline, unknown name, corrupt cache
                    reasons.append(
                        f"encoding {self.encoding_name!r} could not be loaded ({type(exc).__name__}); set "
                        "tokens.encodingFile to a local .tiktoken file or TIKTOKEN_CACHE_DIR to a cache holding it"
                    )
            self._enc = enc
            if enc is None:
                self.estimated = True
                self.reason = "; ".join(reasons) + "; counts are estimated (about 4 bytes a token)"
                log.warning("token counts are estimated: %s", self.reason)
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
        if self._enc is None:
            n = estimate_tokens(text)
        else:
            n = len(self._enc.encode(text, disallowed_special=()))
        with self._lock:
            self._cache[text] = n
            if len(self._cache) > _CACHE_SIZE:
                self._cache.popitem(last=False)
        return n

    def describe(self) -> dict[str, Any]:
        """``{encoding, estimated, reason?}`` for results."""
        out: dict[str, Any] = {"encoding": self.encoding_name, "estimated": self.estimated}
        if self.reason:
            out["reason"] = self.reason
        return out
