"""Errors that end a CLI command with one clear line (issue 2 "Bad input")."""

from __future__ import annotations


class HarvesterError(Exception):
    """A problem the operator can fix; ``str()`` says what is wrong and what to do."""
