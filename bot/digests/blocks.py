"""The weekly digest and the subscription messages in Block Kit, and the digest's trend chart as a PNG.

    digest_blocks(digest, chart_file_id=None)   -> (fallback_text, blocks)   # the digest (or preview)
    digest_chart_png(digest)                    -> PNG bytes                 # 12 weeks of 2GAD, this week last
    subscribe_blocks(result) / unsubscribe_blocks(result) / subscriptions_blocks(view, page)

Every message stays within Slack's limits (50 blocks, 3000 characters per section); names that
users or repositories control are escaped. Individual people (e-mail addresses) appear only
when the subscription says `people:on`.

The chart is drawn with Pillow (which matplotlib already depends on) rather than
bot/render/chart.py's matplotlib figure: ~10 ms instead of ~300 ms a chart, which is what lets
1,000 digests be built in seconds (benchmarks/bench_digest.py).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from .. import metric
from ..errors import did_you_mean, nearest
from ..engine.periods import bucket_label
from ..render import words
from ..render.blocks import (MAX_BLOCKS, SECTION_LIMIT, code, context, escape_mrkdwn, fallback as fallback_text, fit_blocks,
                             header, mention, section)

if TYPE_CHECKING:  # the types these renderers read (below them: rows and subscriptions)
    from .rows import Digest, Figures
    from .subscriptions import ChannelView, SubscribeResult, Subscription, UnsubscribeResult

REPO_SECTIONS = 30  # at most this many blocks of per-repository lines
TOP_PEOPLE = 5
NEW_PEOPLE_SHOWN = 20
REPOS_PER_PAGE = 40
_ROOM = SECTION_LIMIT - 200


# -- wording --------------------------------------------------------------------------------------


def _signed_percent(ratio: float) -> str:
    return f"{ratio:+.0%}".replace("-", "−")


def change_words(now: int, before: int, what: str = "last week") -> str:
    """'▲ 8 (+25%) vs last week (32)', '▼ 4 (−50%) vs last week (8)', 'same as last week (12)'."""
    diff = now - before
    if diff == 0:
        return f"same as {what} ({words.number(before)})"
    arrow = "▲" if diff > 0 else "▼"
    pct = f" ({_signed_percent(diff / before)})" if before else ""
    return f"{arrow} {words.number(abs(diff))}{pct} vs {what} ({words.number(before)})"


def average_words(now: int, average: float, weeks: int) -> str:
    """'▲ 28% vs 12-week average (31.2)'."""
    label = f"{weeks}-week average ({average:,.1f})"
    if average <= 0:
        return f"{label[:-1]}, no activity)" if now == 0 else f"▲ vs {label}"
    ratio = now / average - 1
    if abs(ratio) < 0.005:
        return f"same as {label}"
    return f"{'▲' if ratio > 0 else '▼'} {abs(ratio):.0%} vs {label}"


def _week_label(day: date) -> str:
    return bucket_label(day, "week")


_DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")


def period_title(digest: Digest) -> str:
    """'2026-11-23 to 2026-11-29 (2026-W48)'; a period that is not an ISO week has no week label."""
    span = f"{digest.period_start.isoformat()} to {digest.period_end.isoformat()}"
    return f"{span} ({_week_label(digest.period_start)})" if digest.period_start.weekday() == 0 else span


def period_kind_words(start: date) -> str:
    """'Week Monday to Sunday' or '7 days Friday to Thursday'."""
    if start.weekday() == 0:
        return "Week Monday to Sunday"
    return f"7 days {_DAYS[start.weekday()]} to {_DAYS[(start.weekday() + 6) % 7]}"


def _new_words(n: int) -> str:
    return words.plural(n, "new contributor")


def _figure_block(title: str, figures: Figures, weeks: int) -> str:
    t = figures.week
    lines = [title,
             f"*2GAD {words.number(t.two_gad)} person-days*"
             + (f" ({words.converted_words(t.two_gad)})" if words.converted_words(t.two_gad) else ""),
             f"{change_words(t.two_gad, figures.previous.two_gad)} · {average_words(t.two_gad, figures.average_two_gad, weeks)}",
             f"{words.plural(t.developers, 'developer')} active · {words.plural(t.commits, 'commit')}"
             + (f" · {_new_words(len(figures.new_people))}" if figures.new_people else "")]
    return "\n".join(lines)


def _repo_line(figures: Figures, weeks: int) -> str:
    t = figures.week
    parts = [f"{code(figures.name)} — 2GAD *{words.number(t.two_gad)}*",
             change_words(t.two_gad, figures.previous.two_gad),
             average_words(t.two_gad, figures.average_two_gad, weeks).replace("-week average", "-wk avg"),
             words.plural(t.developers, "developer"), words.plural(t.commits, "commit")]
    if figures.new_people:
        parts.append(f"{len(figures.new_people)} new")
    return " · ".join(parts)


def _pack(lines: Sequence[str], max_blocks: int, more: str, title: str | None = None) -> list[dict]:
    """Lines packed into at most max_blocks sections; the rest summarised as '… and N more <more>'."""
    chunks: list[str] = []
    current = title or ""
    shown = 0
    for line in lines:
        candidate = f"{current}\n{line}" if current else line
        if len(candidate) > _ROOM:
            if len(chunks) + 1 >= max_blocks:
                break
            chunks.append(current)
            candidate = line
        current = candidate
        shown += 1
    if shown < len(lines):
        current += f"\n… and {words.number(len(lines) - shown)} more {more}"
    if current:
        chunks.append(current)
    return [section(c) for c in chunks]


def _inline_list(items: Sequence[str], label: str, more: str) -> str:
    """'*label* `a`, `b` … and 3 more' within one section."""
    text = label
    for i, item in enumerate(items):
        piece = (" " if i == 0 else ", ") + item
        if len(text) + len(piece) > _ROOM:
            return text + f" … and {words.number(len(items) - i)} more {more}"
        text += piece
    return text


def trend_rows(digest: Digest) -> list[tuple[str, int]]:
    """(ISO week label, 2GAD) for the chart and the sparkline: the 12 weeks ending with the digest's."""
    return [(row.key, row.totals.two_gad) for row in digest.total.trend]


def chart_alt_text(digest: Digest) -> str:
    values = ", ".join(f"{label} {value}" for label, value in trend_rows(digest))
    return words.clip(f"2GAD per week over 12 weeks: {values}", 1000)


def digest_blocks(digest: Digest, *, chart_file_id: str | None = None, next_due: datetime | None = None) -> tuple[str, list[dict]]:
    """The digest message: headline figures, each repository, quiet ones, people (people:on), trend, notes."""
    total = digest.total
    weeks = len(total.trend)
    many = len(digest.repos) > 1
    who = "all " + words.plural(len(digest.repos), "repository", "repositories") if many else digest.repos[0].name
    of_teams = (" of " + " and ".join("@" + t for t in digest.teams)) if digest.teams else ""
    title = ("Preview: " if digest.preview else "") + f"Weekly 2GAD digest{of_teams}, {period_title(digest)}"
    fallback = fallback_text(f"{title}: 2GAD {words.number(total.week.two_gad)} person-days for {who} "
                             f"({change_words(total.week.two_gad, total.previous.two_gad)})")

    head = [header(title)]
    body: list[dict] = []
    heading = f"*All {len(digest.repos)} repositories together*" if many else f"*{code(digest.repos[0].name)}*"
    body.append(section(_figure_block(heading, total, weeks)))

    if many:
        active = sorted((f for f in digest.repos if not f.quiet), key=lambda f: (-f.week.person_days, f.name))
        if active:
            body += _pack([_repo_line(f, weeks) for f in active], REPO_SECTIONS, "active repositories",
                          "*By repository*")
        quiet = [code(f.name) for f in digest.repos if f.quiet]
        if quiet:
            body.append(section(_inline_list(quiet, f"*Quiet this week ({len(quiet)}):*", "repositories")))

    if digest.people:
        if total.new_people:
            shown = [code(p) for p in total.new_people[:NEW_PEOPLE_SHOWN]]
            text = _inline_list(shown, f"*New contributors ({len(total.new_people)}):*", "")
            if len(total.new_people) > NEW_PEOPLE_SHOWN:
                text += f" … and {len(total.new_people) - NEW_PEOPLE_SHOWN} more"
            body.append(section(text))
        top = sorted(total.people, key=metric.table_order)[:TOP_PEOPLE]  # as every by:person table
        if top:
            lines = [f"{i}. {code(r.key)} — {words.plural(r.totals.person_days, 'active day')} · "
                     f"{words.plural(r.totals.commits, 'commit')}" for i, r in enumerate(top, 1)]
            body.append(section("*Most active this week*\n" + "\n".join(lines)))

    rows = trend_rows(digest)
    if rows:
        span = f"{rows[0][0]} to {rows[-1][0]}"
        if chart_file_id:
            body.append({"type": "image", "slack_file": {"id": chart_file_id},
                         "alt_text": chart_alt_text(digest),
                         "title": {"type": "plain_text", "text": f"2GAD per week, {span}", "emoji": False}})
        else:
            peak = max(v for _, v in rows)
            per = "week" if digest.period_start.weekday() == 0 else "7 days, by first day"
            body.append(section(f"*{weeks}-week trend* (2GAD per {per}, {span}"
                                + (f", peak {words.number(peak)})" if peak else ", no activity)")
                                + f"\n`{words.sparkline([v for _, v in rows])}`"))

    notes: list[str] = []
    if digest.preview:
        note = "Preview: only you can see this."
        if digest.so_far:
            note += f" The week is still in progress: figures so far (through {digest.so_far.isoformat()})."
        if next_due:
            local = next_due.astimezone(ZoneInfo(digest.tz))
            note += f" Next delivery {local.strftime('%a %Y-%m-%d %H:%M')} {escape_mrkdwn(digest.tz)}."
        notes.append(note)
    for name, why in digest.stale:
        notes.append(f":warning: {code(name)}: {escape_mrkdwn(words.clip(why, 300))}")
    if digest.untracked:
        notes.append(":warning: No longer tracked: " + ", ".join(code(n) for n in digest.untracked[:20])
                     + (f" and {len(digest.untracked) - 20} more" if len(digest.untracked) > 20 else ""))
    if digest.restricted:
        notes.append(":lock: Left out: this channel may no longer see " + ", ".join(code(n) for n in digest.restricted[:20])
                     + (f" and {len(digest.restricted) - 20} more" if len(digest.restricted) > 20 else "")
                     + " (an admin changed who may see them).")
    notes.append(f"{period_kind_words(digest.period_start)} in {escape_mrkdwn(digest.tz)} · "
                 "2GAD = active person-days x 2"
                 + (" · names shown (people:on)" if digest.people else ""))
    if digest.scope_words:
        notes.append(f"Scope: {escape_mrkdwn(digest.scope_words)}")
    as_of = words.as_of_words(digest.data_as_of)
    if as_of:
        notes.append(("Data as of " if digest.stale else "") + escape_mrkdwn(as_of if not digest.stale else
                                                                               words.utc_words(digest.data_as_of)))
    elif digest.stale:
        notes.append("Some repositories have never been fetched successfully.")
    if any(words.converted_words(f.week.two_gad) for f in (total, *digest.repos)):
        notes.append(escape_mrkdwn(metric.UNITS_NOTE))
    tail = [context(notes)]
    room = MAX_BLOCKS - len(head) - len(tail)
    return fallback, [*head, *fit_blocks(body, room, "… more not shown"), *tail]


# -- the chart ------------------------------------------------------------------------------------

WIDTH, HEIGHT = 720, 260
BAR, LAST_BAR, INK, MUTED = "#9DB4D6", "#2F5597", "#222222", "#666666"


def digest_chart_png(digest: Digest) -> bytes:
    """A 720x260 PNG: 2GAD per week for the 12 weeks ending with the digest's week (that one darker)."""
    return weekly_bars_png(trend_rows(digest), f"2GAD per week (person-days), 12 weeks to {digest.period_end.isoformat()}")


def weekly_bars_png(rows: Sequence[tuple[str, int]], title: str) -> bytes:
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    try:
        font, small = ImageFont.load_default(size=14), ImageFont.load_default(size=11)
    except TypeError:  # Pillow without FreeType: the fixed bitmap font
        font = small = ImageFont.load_default()
    draw.text((12, 10), title[:90], fill=INK, font=font)
    left, right, top, bottom = 16, WIDTH - 16, 48, HEIGHT - 30
    draw.line([(left, bottom), (right, bottom)], fill="#BBBBBB", width=1)
    if rows:
        peak = max(v for _, v in rows) or 1
        slot = (right - left) / len(rows)
        for i, (label, value) in enumerate(rows):
            x0 = left + i * slot + slot * 0.15
            x1 = left + (i + 1) * slot - slot * 0.15
            height = (bottom - top - 16) * max(0, value) / peak
            colour = LAST_BAR if i == len(rows) - 1 else BAR
            if value > 0:
                draw.rectangle([x0, bottom - height, x1, bottom - 1], fill=colour)
            middle = (x0 + x1) / 2
            draw.text((middle, bottom - height - 3), words.number(value), fill=INK, font=small, anchor="md")
            short = label.split("-")[-1] if "-W" in label else label[5:]  # "W48", or "11-27" for a dated period
            draw.text((middle, bottom + 6), short, fill=MUTED, font=small, anchor="ma")
    out = io.BytesIO()
    image.save(out, "PNG", compress_level=6)
    return out.getvalue()


# -- subscription messages ------------------------------------------------------------------------


def _local(moment: datetime, tz: str) -> str:
    return moment.astimezone(ZoneInfo(tz)).strftime("%a %Y-%m-%d %H:%M")


def _who(user: str | None) -> tuple[str, str]:
    """(mrkdwn, notification text) naming the person who made a change: a mention in both, which Slack shows
    as the person's name (a bare "@U123" in a notification names nobody)."""
    return (mention(user), mention(user)) if user else ("Someone", "Someone")


def team_words(teams: tuple[str, ...]) -> str:
    """'only the people of `@backend`' ('everyone' for a subscription of no team)."""
    if not teams:
        return "everyone"
    return "only the people of " + " and ".join(code(t if t[:1] == "S" and t[1:].isupper() else "@" + t) for t in teams)


def subscribe_announcement(result: SubscribeResult, by: str | None) -> tuple[str, str] | None:
    """'@user subscribed this channel to `web`' (mrkdwn, plain), or None when nothing changed."""
    sub = result.subscription
    who, plain_who = _who(by)
    # the plain (notification) words are escaped as the blocks are, but for the mention, which stays one
    if result.created:
        names = ", ".join(escape_mrkdwn(n) for n in sub.repos)
        return (f"{who} subscribed this channel to {', '.join(code(n) for n in sub.repos)}.",
                f"{plain_who} subscribed this channel to {names}.")
    parts, plain = [], []
    if result.added:
        parts.append(f"added {', '.join(code(n) for n in result.added)} to this channel's digest")
        plain.append(f"added {', '.join(escape_mrkdwn(n) for n in result.added)} to this channel's digest")
    if set(result.changed) & {"day", "time", "tz"}:
        parts.append(f"moved this channel's weekly digest to {escape_mrkdwn(sub.schedule_words())}")
        plain.append(f"moved this channel's weekly digest to {escape_mrkdwn(sub.schedule_words())}")
    if "people" in result.changed:
        parts.append("made this channel's digest show people's names" if sub.people
                     else "made this channel's digest hide people's names")
        plain.append(parts[-1])
    if "teams" in result.changed:
        parts.append(f"made this channel's digest count {team_words(sub.teams)}")
        plain.append(parts[-1])
    if result.unpaused:
        parts.append("resumed this channel's digest deliveries")
        plain.append(parts[-1])
    if not parts:
        return None
    return f"{who} " + "; ".join(parts) + ".", f"{plain_who} " + "; ".join(plain) + "."


def unsubscribe_announcement(result: UnsubscribeResult, by: str | None) -> tuple[str, str] | None:
    """'@user removed `web` from this channel's digest' (mrkdwn, plain), or None when nothing was removed."""
    if not result.removed:
        return None
    who, plain_who = _who(by)
    if result.remaining is None:
        return (f"{who} unsubscribed this channel from its weekly digest "
                f"(it covered {', '.join(code(n) for n in result.removed)}).",
                f"{plain_who} unsubscribed this channel from its weekly digest.")
    return (f"{who} removed {', '.join(code(n) for n in result.removed)} from this channel's digest.",
            f"{plain_who} removed {', '.join(escape_mrkdwn(n) for n in result.removed)} from this channel's digest.")


def subscribe_blocks(result: SubscribeResult, next_due: datetime | None = None, by: str | None = None) -> tuple[str, list[dict]]:
    """The answer to `/gad subscribe ...`, opening with who changed what (it is posted in the channel)."""
    sub = result.subscription
    verb = "Subscribed" if result.created else "Subscription updated"
    announcement = subscribe_announcement(result, by)
    lines = [announcement[0]] if announcement else []
    lines.append(f":white_check_mark: *{verb}.* This channel gets a weekly 2GAD digest "
                 f"{escape_mrkdwn(sub.schedule_words())}, covering {sub.period_words()}.")
    if result.added:
        lines.append(_inline_list([code(n) for n in result.added], "*Added:*", "repositories"))
    lines.append(_inline_list([code(n) for n in sub.repos], f"*Repositories ({len(sub.repos)}):*", "repositories"))
    lines.append("Names of individual people: " + ("shown (`people:on`)" if sub.people else "not shown (`people:on` to show them)"))
    if sub.teams:
        lines.append(f"It counts {team_words(sub.teams)} (their members as Slack lists them when it is posted).")
    if result.unpaused:
        lines.append(f"Resumed: deliveries had been paused because Slack said `{escape_mrkdwn(result.unpaused)}`.")
    if next_due:
        lines.append(f"Next digest: {_local(next_due, sub.tz)} ({escape_mrkdwn(sub.tz)}). "
                     "`/gad digest` shows a preview now.")
    text = "\n".join(lines)
    fallback = announcement[1] if announcement else f"{verb}: weekly 2GAD digest {escape_mrkdwn(sub.schedule_words())}"
    return words.clip(fallback, 1000), [section(text)]


def unsubscribe_blocks(result: UnsubscribeResult, by: str | None = None) -> tuple[str, list[dict]]:
    """The answer to `/gad unsubscribe ...`, opening with who removed what (it is posted in the channel)."""
    announcement = unsubscribe_announcement(result, by)
    lines = [announcement[0]] if announcement else []
    if result.removed:
        lines.append(_inline_list([code(n) for n in result.removed], ":white_check_mark: *Unsubscribed from:*",
                                  "repositories"))
    if result.not_subscribed:
        lines.append(_inline_list([code(n) for n in result.not_subscribed], "Not subscribed here:", "repositories"))
        subscribed = result.remaining.repos if result.remaining is not None else ()
        close = [c for n in result.not_subscribed[:5] for c in nearest(n, subscribed, n=1)]
        if close:
            hint = did_you_mean(list(dict.fromkeys(close)))
            lines.append(hint[0].upper() + hint[1:])
    if result.remaining is None:
        lines.append("This channel gets no digest any more." if result.removed
                     else "This channel has no digest subscription.")
    else:
        lines.append(_inline_list([code(n) for n in result.remaining.repos],
                                  f"Still subscribed ({len(result.remaining.repos)}):", "repositories"))
    fallback = announcement[1] if announcement else "Nothing to unsubscribe."
    return words.clip(fallback, 1000), [section("\n".join(lines))]


_STATE_WORDS = {
    "posted": "posted",
    "in progress": "being delivered now",
    "unknown": ":warning: unknown: the post got no answer from Slack, so it was not sent again; check the channel",
    "failed": ":warning: failed",
    "missed": "missed: the bot was down for longer than the grace period",
}


def _last_words(record, tz: str) -> str:
    if record is None:
        return "none yet"
    week = f"{record.period_start.isoformat()} to {(record.period_start + timedelta(days=6)).isoformat()}"
    if record.shown_state == "posted" and record.posted_at:
        return f"posted {_local(record.posted_at, tz)} ({week})"
    text = f"{_STATE_WORDS.get(record.shown_state, record.shown_state)} ({week})"
    if record.error and record.shown_state in ("failed", "unknown"):
        text += f": {escape_mrkdwn(words.clip(record.error, 200))}"
    return text


def subscriptions_blocks(view: ChannelView | None, page: int = 1) -> tuple[str, list[dict]]:
    """`/gad subscriptions [PAGE]`: this channel's schedule, next and last delivery, repositories (paginated)."""
    if view is None:
        text = "This channel has no digest subscription. Subscribe with `/gad subscribe REPO... [day:mon] [time:09:00]`."
        return "This channel has no digest subscription.", [section(text)]
    sub = view.subscription
    names = [code(n) + ("" if n in view.tracked else " (no longer tracked)") for n in sub.repos]
    pages = max(1, -(-len(names) // REPOS_PER_PAGE))
    page = min(max(1, page), pages)
    first = (page - 1) * REPOS_PER_PAGE
    shown = names[first:first + REPOS_PER_PAGE]
    lines = [f"*Schedule:* {escape_mrkdwn(sub.schedule_words())} · names of people "
             + ("shown" if sub.people else "not shown")]
    if sub.paused:
        when = f" on {_local(sub.paused_at, sub.tz)}" if sub.paused_at else ""
        lines.append(f":double_vertical_bar: *Paused*{when}: Slack said `{escape_mrkdwn(sub.paused_reason or '')}`. "
                     "Fix it (e.g. `/invite` the bot), then `/gad subscribe REPO` here to resume.")
    else:
        last_day = view.next_period + timedelta(days=6)
        lines.append(f"*Next digest:* {_local(view.next_due, sub.tz)}, covering {view.next_period.isoformat()} "
                     f"to {last_day.isoformat()}")
    lines.append(f"*Last delivery:* {_last_words(view.last, sub.tz)}")
    blocks = [header("Weekly digest in this channel"), section("\n".join(lines))]
    label = f"*Repositories ({len(names)})*" if pages == 1 else \
        f"*Repositories {first + 1}–{first + len(shown)} of {len(names)}*"
    blocks.append(section(_inline_list(shown, label, "repositories")))
    if pages > 1:
        blocks.append(context([f"Page {page} of {pages}"
                               + (f" · `/gad subscriptions {page + 1}` for the next" if page < pages else "")]))
    fallback = fallback_text(f"Weekly digest {sub.schedule_words()} for "
                             f"{words.plural(len(names), 'repository', 'repositories')}")
    return fallback, blocks


# Why a digest stopped, in words, and what the subscriber does about it (PERMANENT_ERRORS in digest.py).
_PAUSE_WHY = {
    "not_in_channel": ("gad-bot is no longer a member of {channel} (it was removed)",
                       "`/invite @gad-bot` in {channel}, then type {command} there"),
    "channel_not_found": ("Slack cannot find {channel} any more (it was deleted, or made private without gad-bot)",
                          "in a channel gad-bot can post to, type {command}"),
    "is_archived": ("{channel} was archived",
                    "unarchive {channel}, then type {command} there"),
}


def paused_dm_blocks(sub: Subscription, reason: str) -> tuple[str, list[dict]] | None:
    """The direct message to the person who subscribed a channel whose digest just paused (None: nothing to say
    that a DM could carry, e.g. the app's token itself was revoked)."""
    if reason not in _PAUSE_WHY:
        return None
    channel = f"<#{sub.channel_id}>"
    command = code("/gad subscribe " + " ".join(sub.repos), 300)
    why, how = (part.format(channel=channel, command=command) for part in _PAUSE_WHY[reason])
    text = f"The weekly 2GAD digest you set up in {channel} is paused: {why}."
    return text, [section(f":double_vertical_bar: {text}\nTo resume: {how}. The schedule and repositories are kept "
                          f"until then (Slack said `{escape_mrkdwn(reason)}`).")]
