"""A real tiktoken ranks file for machines without the o200k_base download.

Offline, ``tiktoken.get_encoding("o200k_base")`` cannot load its ranks. For the token-counting
figure we learn a byte-level BPE from the benchmark's own generated text: ranks 0-255 are the
single bytes, then up to ``merges`` merges learned greedily (most frequent adjacent pair first,
ties broken by the pair's bytes, so the result is deterministic). The file is in tiktoken's
format (base64 token, space, rank) and loads with ``tiktoken.load.load_tiktoken_bpe``; the
tokenizer applies o200k_base's split pattern to it. Token counts differ from the real o200k
(smaller vocabulary), the work per byte is of the same kind: say so next to the figure.
"""

from __future__ import annotations

import base64
import hashlib
import itertools
import re
from collections import Counter
from pathlib import Path

# A rough pre-split like the GPT pattern (words with their leading space, numbers, punctuation runs,
# whitespace), enough to keep merges inside words.
_SPLIT = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+|\s+")


def learn_ranks(text: str, merges: int = 3000) -> dict[bytes, int]:
    words = Counter(m.group(0).encode("utf-8") for m in _SPLIT.finditer(text))
    # each distinct word as a list of token ids; vocab maps id -> bytes
    vocab: list[bytes] = [bytes([b]) for b in range(256)]
    seqs: list[tuple[list[int], int]] = [([b for b in w], n) for w, n in sorted(words.items())]
    for _ in range(merges):
        pairs: Counter[tuple[int, int]] = Counter()
        for seq, n in seqs:
            for a, b in itertools.pairwise(seq):
                pairs[(a, b)] += n
        if not pairs:
            break
        best_count = max(pairs.values())
        if best_count < 2:
            break
        best = min((p for p, c in pairs.items() if c == best_count), key=lambda p: vocab[p[0]] + vocab[p[1]])
        new_id = len(vocab)
        vocab.append(vocab[best[0]] + vocab[best[1]])
        a, b = best
        for seq, _n in seqs:
            if len(seq) < 2:
                continue
            i = 0
            out = []
            while i < len(seq):
                if i + 1 < len(seq) and seq[i] == a and seq[i + 1] == b:
                    out.append(new_id)
                    i += 2
                else:
                    out.append(seq[i])
                    i += 1
            seq[:] = out
        seqs = [(s, n) for s, n in seqs if len(s) > 1]  # a single token has no pair left
    return {tok: rank for rank, tok in enumerate(vocab)}


def write_ranks(ranks: dict[bytes, int], path: Path) -> None:
    lines = [f"{base64.b64encode(tok).decode()} {rank}" for tok, rank in sorted(ranks.items(), key=lambda kv: kv[1])]
    tmp = path.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n", encoding="ascii")
    tmp.replace(path)


def ensure_ranks_file(text: str, directory: Path, merges: int = 3000) -> tuple[Path, int]:
    """Write (once) a ranks file learned from ``text`` in ``directory``; returns (path, merges learned)."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]
    path = directory / f"bpe-{digest}-{merges}.tiktoken"
    if path.is_file():
        try:
            n = sum(1 for line in path.read_text(encoding="ascii").splitlines() if line.strip())
            if n > 256:
                return path, n - 256
        except (OSError, UnicodeDecodeError):
            pass
    directory.mkdir(parents=True, exist_ok=True)
    ranks = learn_ranks(text, merges)
    write_ranks(ranks, path)
    return path, len(ranks) - 256
