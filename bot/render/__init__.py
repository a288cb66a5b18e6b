"""Pure presentation: a metric.Report in, strings, dicts or bytes out; no I/O, no Slack calls.

    report_blocks(report, "web since:2024") -> (fallback_text, blocks)   # Slack
    render_text(report)                     -> str                      # terminal
    report_to_dict(report) / report_to_csv(report)                      # JSON / CSV
    trend_png([("2024-W01", 12), ...], "web") -> PNG bytes              # chart

Each renderer loads on first use, so importing this package stays cheap.
"""

from __future__ import annotations

from typing import Any

# Every name loads its module on first use, so that importing this package costs nothing: a
# `gad-bot report --json` needs jsonout alone, and `rich` (text) or matplotlib (chart) are heavy.
_LAZY = {"error_blocks": "blocks", "escape_mrkdwn": "blocks", "fit_blocks": "blocks", "help_blocks": "blocks",
         "home_view": "blocks", "progress_blocks": "blocks", "report_blocks": "blocks", "repos_blocks": "blocks",
         "report_to_csv": "csvout", "report_to_dict": "jsonout", "figure_words": "words", "footnotes": "words",
         "period_words": "words", "sparkline": "words", "render_text": "text", "render_repos_text": "text",
         "render_help_text": "helptext", "trend_png": "chart"}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from importlib import import_module

        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
