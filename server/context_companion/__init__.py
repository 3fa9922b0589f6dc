"""Context Companion: keeps an editor-hosted AI agent's prompt context true."""

__version__ = "0.1.0"
