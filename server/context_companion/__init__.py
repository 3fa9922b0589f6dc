"""Context Companion: keeps an editor-hosted AI agent's prompt context true."""

# The one place the release number is written: pyproject.toml reads it (dynamic version), and
# `python scripts/release --set-version X.Y.Z` copies it into editors/vscode/package.json and package-lock.json.
__version__ = "0.2.0"
