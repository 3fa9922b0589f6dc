"""Proofs that a peer holds a server's token, given without revealing the token.

A discovery file names a port and a token; a file left by a server that was killed (SIGKILL, the OOM
killer) names a port anyone may then listen on. A client that sent the token first would hand it to
whoever answers, and believe what they say. So a client proves nothing until the server has proved it
holds the token: the client sends a fresh nonce, the server answers with an HMAC of it under the token
(and a nonce of its own), and only then does the client answer with its own HMAC. Each side's proof
is bound to both nonces and to its role and channel (the labels below), so no answer can be replayed
or reflected as another.

Light on purpose: ``context-companion hook`` runs before every prompt and imports this module.
"""

from __future__ import annotations

import hashlib
import hmac
import os

NONCE_BYTES = 16
MAX_NONCE_CHARS = 128

HOOK_SERVER = "context-companion hook server"
HOOK_CLIENT = "context-companion hook client"
HTTP_SERVER = "context-companion http server"


def new_nonce() -> str:
    return os.urandom(NONCE_BYTES).hex()


def valid_nonce(value: object) -> bool:
    """A nonce as a peer may send it: hexadecimal, 32 to 128 characters."""
    if not isinstance(value, str) or not 2 * NONCE_BYTES <= len(value) <= MAX_NONCE_CHARS:
        return False
    try:
        bytes.fromhex(value)
    except ValueError:
        return False
    return True


def proof(token: str, label: str, *nonces: str) -> str:
    """HMAC-SHA256 under ``token`` of ``label`` and ``nonces``, as hexadecimal."""
    message = "\0".join((label, *nonces)).encode("utf-8")
    return hmac.new(token.encode("utf-8"), message, hashlib.sha256).hexdigest()


def check(presented: object, token: str, label: str, *nonces: str) -> bool:
    """Whether ``presented`` is :func:`proof` of these, compared in constant time."""
    if not isinstance(presented, str) or len(presented) != 64:
        return False
    return hmac.compare_digest(presented.encode("ascii", "replace"), proof(token, label, *nonces).encode("ascii"))
