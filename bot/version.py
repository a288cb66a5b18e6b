"""gad-bot's own version, from the installed package's metadata (pyproject.toml's `version`)."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """The installed gad-bot's version, or a sentence-free marker when it runs from a checkout not installed."""
    try:
        return metadata.version("gad-bot")
    except metadata.PackageNotFoundError:
        return "unknown (not installed)"
