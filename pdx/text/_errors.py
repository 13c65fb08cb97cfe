"""The error type of pdx.text (kept apart so every module of the package can raise it)."""

from __future__ import annotations

__all__ = ["TokenizerError"]


class TokenizerError(ValueError):
    """A tokenizer file or argument that cannot be used (names the file or argument and the fix)."""
