"""The exception the Python API raises for Magpie's errors (kept apart from
api.py so the extension can import it without importing the API)."""

from __future__ import annotations


class MagpieError(Exception):
    """An error Magpie reports: the same message the CLI prints after `error: `,
    and the exit code the CLI returns for it (README "Exit codes": 2 usage,
    3 not found, 4 unreadable, 5 bad format, 6 no GPU events, ...)."""

    def __init__(self, message: str, exit_code: int = 1, kind: str = "internal"):
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code
        self.kind = kind  # e.g. "not_found", "bad_format"
