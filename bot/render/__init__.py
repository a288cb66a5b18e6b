"""Pure presentation: a metric.Report in, strings, dicts or bytes out; no I/O, no Slack calls.

    report_blocks(report, "web since:2024") -> (fallback_text, blocks)   # Slack
    render_text(report)                     -> str                      # terminal
    report_to_dict(report) / report_to_csv(report)                      # JSON / CSV
    trend_png([("2024-W01", 12), ...], "web") -> PNG bytes              # chart

`text` (rich) and `chart` (matplotlib) load on first use, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import Any

from .blocks import (error_blocks, escape_mrkdwn, fit_blocks, help_blocks, home_view, progress_blocks,
                     report_blocks, repos_blocks)
from .csvout import report_to_csv
from .jsonout import report_to_dict
from .words import figure_words, footnotes, period_words, sparkline

_LAZY = {"render_text": "text", "render_repos_text": "text", "render_help_text": "text", "trend_png": "chart"}

__all__ = ["error_blocks", "escape_mrkdwn", "figure_words", "fit_blocks", "footnotes", "help_blocks",
           "home_view", "period_words", "progress_blocks", "render_help_text", "render_repos_text",
           "render_text", "report_blocks", "report_to_csv", "report_to_dict", "repos_blocks", "sparkline",
           "trend_png"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
