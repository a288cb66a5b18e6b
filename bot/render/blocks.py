"""Slack Block Kit builders: each returns (text_fallback, blocks) that Slack will never reject.

Limits kept here (https://docs.slack.dev/reference/block-kit): 50 blocks per message and 100 per
home view, 3000 characters per text object, 150 per header, 10 context elements, 75 per button
label, 2000 per button value. Everything a user or a repository controls is escaped for mrkdwn
(`&`, `<`, `>`) so `<!channel>` or `<@U123>` in a name cannot ping anyone, and mrkdwn objects are
sent with `verbatim: true` so bare `@here` is not auto-parsed either.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from ..metric import Report, Row
from ..engine.examples import Tracked, examples as tracked_examples
from ..engine.query import GRAMMAR
from ..engine.rows import HomeRow, RepoSummary, TeamWeek

if TYPE_CHECKING:
    from ..engine.catalog import Access
from . import words

MAX_BLOCKS = 50
MAX_HOME_BLOCKS = 100
SECTION_LIMIT = 3000
HEADER_LIMIT = 150
CONTEXT_ELEMENTS = 10
BUTTON_TEXT_LIMIT = 75
BUTTON_VALUE_LIMIT = 2000
FALLBACK_LIMIT = 1000  # notification text; Slack allows far more, people read far less
NAME_LIMIT = 80  # characters of a repository name, key or e-mail shown in a message
BREAKDOWN_ROWS = 25
REPOS_PER_MESSAGE = 200
SHARE_ACTION_ID = "gad_share"
CSV_HINT = "use `format:csv` for all"

_NOTE_ROOM = 200  # kept free at the end of a section for a "… and N more" line
_USER_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")
_CHANNEL_ID = re.compile(r"^[CGD][A-Z0-9]{2,}$")
_SPACES = re.compile(r"\s+")


# -- text helpers -----------------------------------------------------------------------------


def escape_mrkdwn(text: str) -> str:
    """Escape Slack's three control characters: & -> &amp;, < -> &lt;, > -> &gt;."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _fit_escaped(raw: str, limit: int) -> str:
    """escape_mrkdwn(raw), with raw cut (ending in …) as little as needed for the escaped text to fit."""
    text = escape_mrkdwn(raw)
    if len(text) <= limit:
        return text
    low, high = 0, min(len(raw), limit)  # the longest prefix whose escaped form, plus …, fits
    while low < high:
        mid = (low + high + 1) // 2
        if len(escape_mrkdwn(raw[:mid])) + 1 <= limit:
            low = mid
        else:
            high = mid - 1
    return escape_mrkdwn(raw[:low]) + "…" if limit >= 1 else ""


def _prose(raw: str, limit: int) -> str:
    """Free text (scope words, notes, error messages) escaped; backticks kept only while they pair up."""
    text = _fit_escaped(raw, limit)
    return text.replace("`", "ˋ") if text.count("`") % 2 else text


def code(raw: str, limit: int = NAME_LIMIT) -> str:
    """A user-controlled name as an inline code span: cut, one line, no backticks, escaped."""
    one_line = _SPACES.sub(" ", raw).strip().replace("`", "ˋ")  # U+02CB cannot close the span
    return "`" + _fit_escaped(one_line or "(empty)", limit) + "`"


def _safe_cut(text: str, n: int) -> str:
    """text[:n], moved back so it never ends inside an &amp;/&lt;/&gt; entity."""
    cut = text[: max(0, n)]
    amp = cut.rfind("&", max(0, len(cut) - 5))
    if amp != -1 and ";" not in cut[amp:]:
        cut = cut[:amp]
    return cut


def _clip_mrkdwn(text: str, limit: int = SECTION_LIMIT) -> str:
    """Already-escaped mrkdwn cut to `limit` (ending in …), at a line end if one is near, never inside
    an entity, and with a code span the cut opened closed again."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    newline = cut.rfind("\n")
    if newline > limit // 2:
        cut = cut[:newline]
    cut = _safe_cut(cut, limit - 1)
    if cut.count("`") % 2:
        cut = _safe_cut(cut, limit - 2)
        if cut.count("`") % 2:
            cut += "`"
    return cut + "…"


def plain(raw: str, limit: int = SECTION_LIMIT, *, emoji: bool = True) -> dict:
    """A plain_text object (escaped too: Slack decodes the entities)."""
    return {"type": "plain_text", "text": _fit_escaped(raw or "…", limit), "emoji": emoji}


def mrkdwn(text: str, limit: int = SECTION_LIMIT) -> dict:
    """A mrkdwn object from already-escaped text; verbatim so bare @here or #channel stay text."""
    return {"type": "mrkdwn", "text": _clip_mrkdwn(text or "…", limit), "verbatim": True}


def section(text: str) -> dict:
    return {"type": "section", "text": mrkdwn(text)}


def header(raw: str) -> dict:
    return {"type": "header", "text": plain(raw, HEADER_LIMIT)}


def context(texts: Sequence[str]) -> dict:
    """A context block from already-escaped mrkdwn strings; the 10th element takes any overflow."""
    texts = [t for t in texts if t] or ["…"]
    if len(texts) > CONTEXT_ELEMENTS:
        texts = [*texts[: CONTEXT_ELEMENTS - 1], " · ".join(texts[CONTEXT_ELEMENTS - 1:])]
    return {"type": "context", "elements": [mrkdwn(t) for t in texts]}


def divider() -> dict:
    return {"type": "divider"}


def fallback(raw: str) -> str:
    """A message's notification (fallback) text from raw words: one line, cut, and escaped as its blocks are.
    Slack reads `<!channel>`, `<https://x|y>` and `&` in `text` as it does in blocks."""
    return _fit_escaped(_SPACES.sub(" ", raw).strip(), FALLBACK_LIMIT)


_fallback = fallback


def fit_blocks(blocks: Sequence[dict], limit: int = MAX_BLOCKS, note: str | None = None) -> list[dict]:
    """At most `limit` blocks: when there are more, the last kept block is a context note saying so."""
    blocks = list(blocks)
    if len(blocks) <= limit:
        return blocks
    kept = blocks[: limit - 1]
    left = len(blocks) - len(kept)
    return [*kept, context([note or f"… and {left} more blocks not shown ({CSV_HINT})"])]


def _packed(lines: Sequence[str], max_blocks: int, more: Callable[[int], str],
            title: str | None = None, hidden: int = 0) -> list[dict]:
    """Escaped lines packed into at most max_blocks sections of <= 3000 characters.

    Lines that do not fit, plus `hidden` ones the caller already left out, are summarised by more(n).
    """
    budget = SECTION_LIMIT - _NOTE_ROOM
    chunks: list[str] = []
    current = title or ""
    shown = 0
    for line in lines:
        line = _clip_mrkdwn(line, budget)
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > budget:
            if len(chunks) + 1 >= max(1, max_blocks):
                break
            chunks.append(current)
            candidate = line
        current = candidate
        shown += 1
    left = len(lines) - shown + hidden
    if left > 0:
        current = f"{current}\n{more(left)}" if current else more(left)
    if current:
        chunks.append(current)
    return [section(chunk) for chunk in chunks]


def _unescape(text: str) -> str:
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _mrkdwn_to_plain(text: str) -> str:
    # bold markers go; code spans keep their backticks (they mark what to type); entities decoded
    return _unescape(re.sub(r"(?<![\w*])\*([^*\n]+)\*(?![\w*])", r"\1", text))


def blocks_to_text(blocks: Sequence[dict]) -> str:
    """A message's blocks as plain text for a terminal (`gad-bot digest --dry-run`): what a reader sees."""
    lines: list[str] = []
    for block in blocks:
        kind = block.get("type")
        if kind == "header":
            lines += [_unescape(block["text"]["text"]), ""]
        elif kind == "section":
            lines += [_mrkdwn_to_plain(block["text"]["text"]), ""]
        elif kind == "context":
            lines += [_mrkdwn_to_plain(e.get("text", "")) for e in block.get("elements", [])] + [""]
        elif kind == "image":
            lines += [f"[chart: {block.get('title', {}).get('text', block.get('alt_text', ''))}]", ""]
        elif kind == "divider":
            lines += ["-" * 40, ""]
    return "\n".join(lines).rstrip() + "\n"


# -- reports ----------------------------------------------------------------------------------


def _row_line(by: str | None, row: Row, rank: int, total: int = 0) -> str:
    t = row.totals
    if by == "org":
        return (f"{rank}. {code(row.key)} — 2GAD {words.number(t.two_gad)} · {words.percent(t.person_days, total)} · "
                f"{words.plural(t.developers, 'developer')} · {words.plural(t.commits, 'commit')}")
    if by == "person":
        return (f"{rank}. {code(row.key)} — {words.plural(t.person_days, 'active day')} · "
                f"2GAD {words.number(t.two_gad)} · {words.plural(t.commits, 'commit')}")
    if row.release is not None:
        release = row.release
        gap, relation = words.release_gap(release)
        when = f"tagged {release.day.isoformat()}" if release.day else "tagged on an impossible date"
        since = (f", {gap} {relation} {code(release.previous)}" if relation else
                 f", after {code(release.previous)}" if release.previous else ", the first: everything up to it")
        pre = " (pre-release)" if release.prerelease else ""
        return (f"{code(row.key)}{pre} · {when}{since} — 2GAD {words.number(t.two_gad)} · "
                f"{words.plural(t.developers, 'developer')} · {words.plural(t.commits, 'commit')}")
    cut = f" ({escape_mrkdwn(words.row_label(row)[len(row.key) + 2:-1])})" if row.covers else ""
    return (f"{code(row.key)}{cut} — 2GAD {words.number(t.two_gad)} · "
            f"{words.plural(t.developers, 'developer')} · {words.plural(t.commits, 'commit')}")


def _breakdown(report: Report, max_blocks: int) -> list[dict]:
    rows = words.sorted_rows(report)
    title = f"*{words.breakdown_title(report.by, len(rows) if report.more_rows else None)}*"
    if not rows:
        return [section(f"{title}\nNo rows: nothing was counted.")]
    more = lambda n: f"… and {words.number(n)} more ({CSV_HINT})"  # noqa: E731
    if report.by in ("person", "repo", "org"):
        hidden, rows = max(0, len(rows) - BREAKDOWN_ROWS), rows[:BREAKDOWN_ROWS]
        if hidden and report.more_rows:  # "Top 100" over 25 rows: say where the other 75 are
            title += f" (the first {len(rows)} here; `format:csv` lists all {words.number(len(rows) + hidden)})"
    else:
        # periods: the most recent matter most in a chat message
        hidden, rows = max(0, len(rows) - BREAKDOWN_ROWS), rows[-BREAKDOWN_ROWS:]
        if hidden:
            many = words.bucket_words(report.by or "")[2]
            title += f" (latest {len(rows)} of {words.number(len(rows) + hidden)} {many}; {CSV_HINT})"
            hidden = 0
    lines = [_row_line(report.by, row, i, report.totals.person_days) for i, row in enumerate(rows, 1)]
    cut = words.more_rows_words(report)
    if cut and not hidden:
        lines.append(f"… {cut}")
    elif cut:  # rows past Slack's 25 (in the CSV) and rows past top:N (not counted in the table at all)
        more = lambda n: (f"… and {words.number(n)} more of the top {words.number(len(rows) + hidden)} ({CSV_HINT}), "  # noqa: E731
                          f"{cut}")
    return _packed(lines, max_blocks, more, title, hidden)


def _names(repos: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(code(name) for name in repos[:limit])
    return shown + (f" and {len(repos) - limit} more" if len(repos) > limit else "")


def mention(user_id: str) -> str:
    """A real mention of a Slack user id (`<@U123>`); anything that is not one stays escaped text."""
    # a Slack user id comes from Slack itself (or the operator's GAD_ADMINS), so mentioning it is safe
    return f"<@{user_id}>" if _USER_ID.match(user_id) else escape_mrkdwn(words.clip(user_id, NAME_LIMIT))


def _sharer(shared_by: str) -> str:
    return mention(shared_by)


def share_value(query_text: str) -> str:
    """The share button's value: the query, cut at a word boundary to stay within 2000 characters."""
    if len(query_text) <= BUTTON_VALUE_LIMIT:
        return query_text
    cut = query_text[:BUTTON_VALUE_LIMIT]
    space = cut.rfind(" ")
    return cut[:space] if space > 0 else cut


def share_button(query_text: str, share_id: str | None = None) -> dict:
    """The "Share in channel" button: its value is the kept answer's id (bot/store/answers.py) when
    there is one, else the query (cut at 2,000 characters; only for callers that keep nothing)."""
    return {"type": "actions", "elements": [{
        "type": "button", "action_id": SHARE_ACTION_ID, "text": plain("Share in channel", BUTTON_TEXT_LIMIT),
        "value": share_id if share_id is not None else share_value(query_text)}]}


def shared_copy(blocks: list[dict], notes: Sequence[str]) -> list[dict]:
    """An answer's blocks without its Share button, with a context line of `notes` (mrkdwn) at the end."""
    kept = [b for b in blocks if not (b.get("type") == "actions" and any(
        e.get("action_id") == SHARE_ACTION_ID for e in b.get("elements", ())))]
    return fit_blocks([*kept, context(list(notes))]) if notes else kept


def report_blocks(report: Report, query_text: str, *, shared_by: str | None = None,
                  public: bool = False, notice: str | None = None,
                  share_id: str | None = None) -> tuple[str, list[dict]]:
    """The answer to `/gad ...`: figure, period, scope, trend, breakdown, COCOMO, footnotes, share button.

    `notice` (mrkdwn, already escaped) is a sentence about this answer shown under the figure, such
    as where its CSV went.
    """
    totals = report.totals
    period = words.report_period_words(report)
    fallback = _fallback(words.headline_words(report, limit=3))

    head = [header(f"2GAD for {words.subject_words(report, limit=3)}")]
    figure = [f"*{escape_mrkdwn(words.figure_words(totals))}*",
              f"{words.plural(totals.developers, 'developer')} · {words.plural(totals.commits, 'commit')} · "
              f"{words.plural(totals.person_days, 'active day')} (GAD)",
              f"*Period:* {period}"]
    filters = words.filter_tokens(report)
    if filters:
        figure.append("*Filters:* " + " ".join(code(token, 200) for token in filters))
    if report.range:
        ends = words.range_ends_words(report)
        older = (f"; {words.plural(report.range_older_commits, 'older commit')} merged in"
                 if report.range_older_commits else "")
        figure.append(f"*Range:* {code(report.range)}" + (f" · {escape_mrkdwn(ends)}" if ends else "") +
                      f" · commits {escape_mrkdwn(words.span_words(report.first_day, report.last_day))}{older}")
    if report.scope_words:
        figure.append(f"*Scope:* {_prose(report.scope_words, 1000)}")
    if report.asked and set(report.asked) != set(report.repos):
        figure.append(f"*Asked:* {_names(report.asked)}")
    figure.append(f"*{'Repository' if len(report.repos) == 1 else 'Repositories'}:* {_names(report.repos)}")
    body = [section("\n".join(figure))]
    if report.hint:
        body.append(section(_prose(report.hint, 1000)))
    if notice:
        body.append(section(notice))

    trend = words.trend_words(report)
    if trend:
        caption, spark = trend
        label = words.bucket_words(report.trend_bucket)[0].capitalize()
        body.append(section(f"*{label} trend:* {escape_mrkdwn(caption)}\n`{spark}`"))

    cocomo = []
    if report.cocomo is not None:
        c = report.cocomo
        per = words.cocomo_ksloc_words(report)
        cocomo.append(section(
            f"*vs COCOMO* (basic, {c.mode}; {_prose(c.counter, 200)}, {words.number(c.sloc)} SLOC)\n"
            f"COCOMO {c.person_months:,.1f} person-months · 2GAD {c.two_gad_person_months:,.1f} person-months · "
            f"ratio {c.ratio:.2f} (2GAD / COCOMO)" + (f"\n{escape_mrkdwn(per)}" if per else "")))
    estimates = [line for line in (words.fte_words(report), words.typical_words(report),
                                   words.calibrated_words(report)) if line]
    if estimates:  # beside the figure, before the breakdown: what an estimate quotes
        body.append(section("\n".join(f"• {escape_mrkdwn(line)}" for line in estimates)))

    notes = [_prose(n, 2000) for n in words.footnotes(report, scope=False)]
    if shared_by:
        notes.insert(0, f"Shared by {_sharer(shared_by)}")
    tail = [context(notes)] if notes else []
    if not public:
        tail.append(share_button(query_text, share_id))

    room = MAX_BLOCKS - len(head) - len(tail)
    if report.by:
        body.extend(_breakdown(report, max(1, room - len(body) - len(cocomo))))
    body = fit_blocks([*body, *cocomo], room)
    return fallback, [*head, *body, *tail]


# -- other messages ---------------------------------------------------------------------------


def channel_link(channel_id: str) -> str:
    """`<#C...>` (Slack shows the channel's name) for a channel id, anything else quoted as code."""
    return f"<#{channel_id}>" if _CHANNEL_ID.match(channel_id) else code(channel_id, 100)


def error_blocks(message: str, reference: str | None = None, *,
                 mentions: Sequence[str] = (), channels: Sequence[str] = ()) -> tuple[str, list[dict]]:
    """A one-sentence error (its backticks kept as formatting) and an optional reference id.

    `<@U...>` for the user ids in `mentions` (the operator's GAD_ADMINS, never typed text) stay
    mentions, so the reader sees names; `<#C...>` for the channel ids in `channels` (a channel
    Slack's own form returned) stay channel links; any other `<...>` is escaped.
    """
    text, fallback = _prose(message, SECTION_LIMIT - len(":warning: ")), _fallback(message)
    links = [f"@{user}" for user in mentions if _USER_ID.match(user)]
    links += [f"#{channel}" for channel in channels if _CHANNEL_ID.match(channel)]
    for link in links:  # in the notification text too: Slack shows it as a name there as well
        text = text.replace(f"&lt;{link}&gt;", f"<{link}>")
        fallback = fallback.replace(f"&lt;{link}&gt;", f"<{link}>")
    blocks = [section(f":warning: {text}")]
    if reference:
        blocks.append(context([f"Reference: {code(reference)}"]))
    return fallback, blocks  # fallback is plain notification text: backticks are harmless


def help_blocks(found: Tracked | None = None) -> tuple[str, list[dict]]:
    """The grammar and examples for `/gad help`: examples about what is tracked (`found`), else generic
    ones that say how to track a repository."""
    examples = "\n".join(f"• {code('/gad ' + e, 200)}" for e in tracked_examples(found))
    if found is None:
        examples += "\n" + escape_mrkdwn(words.untracked_examples_words())
    blocks = [
        header("How to use /gad"),
        section("*2GAD* is Git Active Days x 2: every day a person committed counts as two person-days "
                "of effort.\n*Report:* " + _fit_escaped(GRAMMAR, 2500)),
        section("*Examples*\n" + examples),
        section(f"*{words.SAMPLE_ANSWERS_TITLE}*\n" + "\n".join(
            f"• {code('/gad ' + asked, 200)}\n    {escape_mrkdwn(answer)}" for asked, answer in words.SAMPLE_ANSWERS)),
        context([escape_mrkdwn(words.UNITS_NOTE)]),
    ]
    return "How to use /gad: /gad REPO [since:PERIOD] [by:month] ... or /gad help", blocks


def _repo_line(row: RepoSummary) -> str:
    if row.state != "tracked":  # an organization lists it; cloning it failed (tried again later)
        retry = f"; next try {words.utc_words(row.next_attempt)}" if row.next_attempt else ""
        return (f"{code(row.name)} · not cloned ({escape_mrkdwn(row.org or '')} lists it)\n    :warning: "
                f"{_prose(row.last_error or '', 300)}{retry}")
    parts = [code(row.name)]
    parts.append(words.plural(row.commits, "commit") if row.commits is not None else "not indexed yet")
    parts.append(f"synced {words.utc_words(row.last_sync)}" if row.last_sync is not None else "never synced")
    line = " · ".join(parts)
    if row.source:
        line += f" · from {code(row.source, 120)}"
    if row.last_error:
        line += f"\n    :warning: last sync failed: {_prose(row.last_error, 300)}"
    if row.missing_objects:
        line += f"\n    :warning: the mirror is missing objects: {_prose(row.missing_objects, 300)}; " \
                "`gad-bot doctor` tells the operator how to repair it"
    return line


def audience_words(access: "Access") -> str:
    """What a newly tracked repository's or organization's audience means, and how to change it (for the admin)."""
    name = escape_mrkdwn(access.name)
    if access.audience.everyone:
        return (f"Everyone in the workspace may see it (not guests, not other organizations); "
                f"`/gad access {name} admins` or `/gad access {name} #channel` narrows that.")
    who = "admins" if access.audience.admins_only else access.audience.words()
    return (f"Only {who} may see it for now (fetched with the operator's credentials, it may hold private work); "
            f"`/gad access {name} everyone` or `/gad access {name} #channel` opens it.")


def access_blocks(access: "Access", *, changed: bool) -> tuple[str, list[dict]]:
    """`/gad access NAME [...]`: who may see a repository, project or organization (now, when `changed`)."""
    name, who = code(access.name), access.audience.words()
    text = fallback(f"{access.name} ({access.kind}) is seen by {who}.")
    lines = [f"{'Done: ' if changed else ''}{name} ({access.kind}) is seen by {who}."]
    if access.follows:
        lines.append(f"It follows the audience of its organization {code(access.follows)}; setting its own here "
                     "stops that.")
    if access.own:
        shown = ", ".join(code(n) for n in access.own[:10]) + (f" and {len(access.own) - 10:,} more"
                                                              if len(access.own) > 10 else "")
        lines.append(f"{words.plural(len(access.own), 'repository', 'repositories')} of it keep an audience of "
                     f"their own (private on the forge, or set by an admin), which this does not change: {shown}.")
    example = escape_mrkdwn(access.name)
    lines.append(f"Change it with `/gad access {example} everyone`, `/gad access {example} admins`, or name channels, "
                 f"user groups and people: `/gad access {example} #channel @group @person`.")
    return text, [section("\n".join(lines))]


def repos_blocks(rows: Sequence[RepoSummary]) -> tuple[str, list[dict]]:
    """`/gad repos`: one line per tracked repository (name, commits, last sync, source, last error)."""
    if not rows:
        text = "No repositories are tracked yet; an admin can add one with `/gad track URL`."
        return "No repositories are tracked yet.", [section(text)]
    rows = list(rows)
    if len(rows) > REPOS_PER_MESSAGE:  # what to look at first: thousands would hide it past the cut
        rows.sort(key=lambda r: not r.problem)
    not_cloned = sum(1 for r in rows if r.state != "tracked")
    failing = sum(1 for r in rows if r.last_error and r.state == "tracked")
    shown = rows[:REPOS_PER_MESSAGE]
    tail = []
    fallback = words.plural(len(rows) - not_cloned, "tracked repository", "tracked repositories")
    if failing:
        fallback += f", {failing} failing to sync"
        tail.append(context([f":warning: {words.plural(failing, 'repository', 'repositories')} "
                             "failed their last sync (marked :warning: above)."]))
    if not_cloned:
        fallback += f", {not_cloned} not cloned"
        tail.append(context([f":warning: {words.plural(not_cloned, 'repository', 'repositories')} an organization "
                             "lists could not be cloned: tried again later; the operator's `gad-bot untrack NAME` "
                             "leaves one out."]))
    body = _packed([_repo_line(r) for r in shown], MAX_BLOCKS - 1 - len(tail),
                   lambda n: f"… and {words.number(n)} more", hidden=len(rows) - len(shown))
    blocks = [header(f"Tracked repositories ({len(rows) - not_cloned:,})"), *body, *tail]
    return fallback, fit_blocks(blocks, MAX_BLOCKS)


def progress_bar(done: int, total: int | None, width: int = 20) -> str:
    """'██████░░░░░░░░░░░░░░' (all ░ when the total is unknown)."""
    if not total or total <= 0:
        return "░" * width
    filled = min(max(done, 0), total) * width // total
    return "█" * filled + "░" * (width - filled)


def progress_blocks(title: str, done: int, total: int | None, phase: str,
                    seconds_left: float | None = None) -> tuple[str, list[dict]]:
    """A progress message to update while a large repository is cloned and indexed."""
    if total and total > 0:
        done = min(max(done, 0), total)
        pct = f" {done * 100 // total}%"
        count = f"{words.number(done)} of {words.number(total)}"
    else:
        pct, count = "", f"{words.number(max(done, 0))} so far"
    left = f", {words.time_left(seconds_left)}" if seconds_left is not None else ""
    text = (f"*{_prose(title, 300)}* — {_prose(phase, 200)}\n"
            f"`{progress_bar(done, total)}`{pct} ({count}{left})")
    return _fallback(f"{title}: {phase}{pct}"), [section(text)]


def _home_line(row: HomeRow) -> str:
    parts = [code(row.name)]
    if row.weekly_two_gad is None:
        parts.append("no weekly figure yet")
    else:
        parts.append(f"2GAD {words.days_words(row.weekly_two_gad)} in {escape_mrkdwn(row.week)}")
    if row.trend:
        parts.append(f"`{words.sparkline(list(row.trend)[-26:])}`")
    line = " · ".join(parts)
    if row.last_error:
        line += " · :warning: last sync failed"
    return line


HOME_REPORT = "gad_home_report"  # the Home tab's buttons; each opens a modal (bot/render/modals.py)
HOME_COMPARE = "gad_home_compare"
HOME_SUBSCRIBE = "gad_home_subscribe"
HOME_DIGESTS = "gad_home_digests"


def _home_buttons() -> dict:
    def button(action_id: str, text: str, primary: bool = False) -> dict:
        made = {"type": "button", "action_id": action_id, "value": action_id.removeprefix("gad_home_"),
                "text": plain(text, BUTTON_TEXT_LIMIT)}
        return {**made, "style": "primary"} if primary else made

    return {"type": "actions", "block_id": "home_buttons", "elements": [
        button(HOME_REPORT, "Ask a report", primary=True), button(HOME_COMPARE, "Compare"),
        button(HOME_SUBSCRIBE, "Subscribe a channel"), button(HOME_DIGESTS, "Digests of my channels")]}


def home_view(rows_with_weekly: Sequence[HomeRow], *, is_admin: bool, found: Tracked | None = None,
              unknown: str | None = None, teams: Sequence[TeamWeek] = ()) -> dict:
    """The App Home tab (views.publish): how to use /gad (its example about what is tracked, `found`) and
    each tracked repository the person may see, with its last full week in 2GAD; `unknown`: why none is shown
    (Slack could not say who the person is)."""
    blocks: list[dict] = [
        header("gad-bot: effort in 2GAD"),
        _home_buttons(),
        section("*2GAD* (Git Active Days x 2) measures effort in person-days: every day a person "
                "committed counts as two person-days.\nType `/gad REPO` in any channel, e.g. "
                f"{code('/gad ' + tracked_examples(found)[0], 200)}; `/gad help` lists everything you can ask."),
    ]
    if is_admin:
        blocks.append(section("*Admin:* `/gad track URL [as:NAME]` adds a repository, `/gad untrack NAME` "
                              "removes it, `/gad sync NAME` refreshes it now."))
    if teams:  # the person's own user groups (issue 34), over the repositories they may see
        blocks += [divider(), section("*Your teams, last full week*\n" + "\n".join(
            f"{code(t.label)} · 2GAD {words.days_words(t.two_gad)} in {escape_mrkdwn(t.week)} · "
            f"{words.plural(t.developers, 'developer')}" for t in teams[:10]))]
    blocks += [divider(), header(f"Tracked repositories ({len(rows_with_weekly)})")]
    tail = [context([escape_mrkdwn(words.UNITS_NOTE)])]
    if rows_with_weekly:
        room = MAX_HOME_BLOCKS - len(blocks) - len(tail)
        blocks += _packed([_home_line(r) for r in rows_with_weekly], room,
                          lambda n: f"… and {words.number(n)} more; `/gad repos` lists them all")
    elif unknown is not None:
        blocks.append(section(escape_mrkdwn(unknown)))
    else:
        # the same words whether nothing is tracked or nothing is open to this person: to them, it is not tracked
        blocks.append(section("Nothing is tracked yet." + (" Add a repository with `/gad track URL`."
                                                           if is_admin else " Ask an admin to track one.")))
    return {"type": "home", "blocks": fit_blocks([*blocks, *tail], MAX_HOME_BLOCKS)}



# -- untrack: asked, then announced ---------------------------------------------------------------
UNTRACK_ACTION_ID = "gad_untrack"
UNTRACK_CANCEL_ACTION_ID = "gad_untrack_cancel"


def untrack_question_blocks(name: str, channels: Sequence[str]) -> tuple[str, list[dict]]:
    """`/gad untrack NAME` asks first: what goes, which channels' digests lose it, and two buttons."""
    where = (" The weekly digests of " + ", ".join(f"<#{c}>" for c in channels[:20])
             + (f" and {len(channels) - 20} more channels" if len(channels) > 20 else "")
             + " stop counting it; I will say so in each.") if channels else ""
    text = fallback(f"Untrack {name}? Its mirror and index are deleted and no report counts it any more.")
    return text, [section(f"Untrack {code(name)}? Its mirror and index are deleted and no report counts it any "
                          f"more.{where}"),
                  {"type": "actions", "elements": [
                      {"type": "button", "action_id": UNTRACK_ACTION_ID, "style": "danger", "value": name,
                       "text": plain(f"Untrack {name}", BUTTON_TEXT_LIMIT)},
                      {"type": "button", "action_id": UNTRACK_CANCEL_ACTION_ID, "value": name,
                       "text": plain("Cancel", BUTTON_TEXT_LIMIT)}]}]


def untrack_announcement(name: str, by: str, still: Sequence[str]) -> tuple[str, list[dict]]:
    """Told in a channel whose digest counted NAME: what changed, and what the digest counts now."""
    if still:
        rest = "this channel's weekly digest no longer counts it; it still counts " + ", ".join(
            code(n) for n in still[:20]) + ("…" if len(still) > 20 else "") + "."
    else:
        rest = ("it was all this channel's weekly digest counted, so the digest has ended; "
                "`/gad subscribe REPO` starts a new one.")
    line = f"{mention(by)} stopped tracking {code(name)}: {rest}"
    return fallback(f"{name} is no longer tracked."), [section(line)]
