"""A zero that is likely a mistake gets one sentence on what was probably meant.

A report of nothing is a true answer, but three zeros are nearly always a slip: a period that starts
after the newest commit (`since:2030`), a range written backwards (`range:v9.5..v9.0` lists what 9.0
added after 9.5: nothing), and an organization glob that names no organization (`org:google`, where
the organizations are e-mail domains such as google.com); and an `author:` whose people committed, only
not in the scope asked. The engine asks `why_zero` only when the
figure is 0, passing what it already knows; each sentence names the token to type instead.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Callable, Sequence
from datetime import date

from .query import Query


def why_zero(query: Query, *, data_ends: date | None, reversed_range_counts: Callable[[], bool],
             organizations: Callable[[], Sequence[str]],
             authors: Callable[[], str | None] = lambda: None,
             same_commit_range: Callable[[], bool] = lambda: False) -> str | None:
    """The first likely slip behind a zero, as one sentence; None when the zero looks meant.

    `data_ends` is the newest commit's day in scope (before the period and filters);
    `reversed_range_counts()` whether `range:A..B` is empty and `range:B..A` is not; `organizations()` the
    names of every organization the index knows; `authors()` where the people `author:` matches did commit,
    when not in scope; `same_commit_range()` whether both ends of `range:A..B` name one commit (each called only
    when it can matter)."""
    if query.since is not None and data_ends is not None and query.since > data_ends:
        return (f"Nothing can be counted from {query.since.isoformat()} on: the newest commit in scope is from "
                f"{data_ends.isoformat()}; for that year ask `since:{data_ends.year}`, or leave `since:` out for "
                "all history.")
    if query.range is not None and query.range.start is not None and reversed_range_counts():
        start, end = query.range.start, query.range.end
        return (f"`range:{start}..{end}` lists what `{end}` added after `{start}`, and that is nothing: `{end}` is "
                f"the older of the two. Did you mean `range:{end}..{start}`?")
    if query.range is not None and query.range.start is not None and same_commit_range():
        start, end = query.range.start, query.range.end
        return (f"`{start}` and `{end}` name the same commit, so `range:{start}..{end}` lists nothing; "
                f"`{query.repos[0]} by:release` shows each release's own range.")
    if query.orgs:
        hint = _org_hint(query.orgs, organizations())
        if hint:
            return hint
    if query.authors:
        return authors()
    return None


def _org_hint(globs: Sequence[str], present: Sequence[str]) -> str | None:
    names = sorted({name.lower() for name in present})
    if any(fnmatch.filter(names, glob) for glob in globs):
        return None  # an organization matched; its people were simply not active in the period
    for glob in globs:
        for wider in (f"{glob}*", f"*{glob}*"):
            close = fnmatch.filter(names, wider)
            if close and wider != glob:
                shown = ", ".join(close[:3]) + (f" and {len(close) - 3} more" if len(close) > 3 else "")
                return (f"No organization is named `{glob}` (organizations are e-mail domains, such as "
                        f"`example.com`, or the operator's names); `org:{wider}` matches {shown}.")
    return (f"No organization matches {' or '.join(f'`org:{g}`' for g in globs)}; "
            "`by:org` lists the organizations there are.")
