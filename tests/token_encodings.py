"""Small real tiktoken encodings for tests (no network): imported by name, like lsp_harness."""

from __future__ import annotations

# Merges across every place a piece boundary of o200k's pattern could move ("\n\n" after a word or
# after punctuation, a newline before "/", ...), so a count taken from the wrong cut differs.
NEWLINE_MERGES = (
    b"\n\n",
    b".\n",
    b".\n\n",
    b"\n/",
    b"/\n",
    b" \n",
    b"\n ",
    b"  ",
    b"\n\n\n",
    b"-\n",
    b"---\n\n",
    b"---\n\n/",
)


def make_paragraph_encoding(name: str = "o200k_base"):
    """A real tiktoken Encoding with ``name``'s own pattern (o200k_base or cl100k_base) and small
    ranks: the bytes, the merges above and a few words."""
    import tiktoken
    import tiktoken_ext.openai_public as public

    ranks = {bytes([i]): i for i in range(256)}
    for word in (*NEWLINE_MERGES, b"aa", b" a", b"#", b"'s", b"the", b" the", b"in", b"er"):
        for k in range(2, len(word) + 1):
            ranks.setdefault(word[:k], len(ranks))
    constructor = {"o200k_base": public.o200k_base, "cl100k_base": public.cl100k_base}[name]
    original = public.load_tiktoken_bpe
    public.load_tiktoken_bpe = lambda *a, **k: ranks
    try:
        pattern = constructor()["pat_str"]
    finally:
        public.load_tiktoken_bpe = original
    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens={})
