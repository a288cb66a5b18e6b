"""The App Home's front door: its buttons and the modals they open (Block Kit views, pure).

Each modal is a form whose values the face turns into ONE command text for bot/engine/query.py
(`web api since:2024-01-01 by:month`, `compare ...`, `subscribe ... day:mon time:09:00`), so no
second parser exists. Block ids name the form fields, so a sentence from the grammar can be shown
next to the field it is about (`response_action: errors`).
"""

from __future__ import annotations

from collections.abc import Sequence

from .blocks import channel_link, code, escape_mrkdwn, plain, section

MODAL_REPORT = "gad_modal_report"
MODAL_COMPARE = "gad_modal_compare"
MODAL_SUBSCRIBE = "gad_modal_subscribe"

NAMES_ACTION = "gad_names"  # the external select of tracked names (block_suggestion answers it)
VALUE = "value"  # the action id of every other field: the block id says which field it is
# field (block id) -> what the grammar calls it
NAMES, SINCE, UNTIL, BY, REF, WHERE, CHANNEL, DAY, TIME, TZ = (
    "names", "since", "until", "by", "ref", "where", "channel", "day", "time", "tz")

BREAKDOWNS = (("", "No breakdown"), ("week", "By week"), ("month", "By month"), ("quarter", "By quarter"),
              ("year", "By year"), ("person", "By person"), ("repo", "By repository"), ("org", "By organization"),
              ("release", "By release (one repository)"))
DAYS = (("mon", "Monday"), ("tue", "Tuesday"), ("wed", "Wednesday"), ("thu", "Thursday"), ("fri", "Friday"),
        ("sat", "Saturday"), ("sun", "Sunday"))
MAX_OPTIONS = 100  # Slack shows at most 100 options in a select


def _option(value: str, text: str) -> dict:
    return {"text": plain(text, 75), "value": value[:150]}


def _input(block_id: str, label: str, element: dict, *, optional: bool = False, hint: str | None = None) -> dict:
    block = {"type": "input", "block_id": block_id, "label": plain(label, 2000), "element": element,
             "optional": optional}
    return {**block, "hint": plain(hint, 2000)} if hint else block


def _names(label: str, *, max_items: int | None = None) -> dict:
    element = {"type": "multi_external_select", "action_id": NAMES_ACTION, "min_query_length": 0,
               "placeholder": plain("Type to search tracked names", 150)}
    if max_items:
        element["max_selected_items"] = max_items
    return _input(NAMES, label, element)


def _date(block_id: str, label: str, hint: str) -> dict:
    return _input(block_id, label, {"type": "datepicker", "action_id": VALUE}, optional=True, hint=hint)


def _modal(callback_id: str, title: str, blocks: list[dict], submit: str | None = "Answer",
           close: str = "Cancel") -> dict:
    view = {"type": "modal", "callback_id": callback_id, "title": plain(title, 24), "close": plain(close, 24),
            "blocks": blocks}
    return {**view, "submit": plain(submit, 24)} if submit else view


def _where() -> dict:
    return _input(WHERE, "Post in a channel", {"type": "conversations_select", "action_id": VALUE,
                                               "filter": {"include": ["public", "private"],
                                                          "exclude_bot_users": True}},
                  optional=True, hint="Empty: only you see it, in your direct messages with gad-bot.")


def report_modal() -> dict:
    return _modal(MODAL_REPORT, "Ask a report", [
        _names("Repositories and projects"),
        _date(SINCE, "Since", "Empty: from the first commit."),
        _date(UNTIL, "Until", "Empty: up to today."),
        _input(BY, "Breakdown", {"type": "static_select", "action_id": VALUE,
                                 "options": [_option(v or "none", t) for v, t in BREAKDOWNS],
                                 "initial_option": _option("none", BREAKDOWNS[0][1])}, optional=True),
        _input(REF, "Branch or range", {"type": "plain_text_input", "action_id": VALUE,
                                        "placeholder": plain("main, or v1.0..v2.0", 150)},
               optional=True, hint="Empty: every branch and tag."),
        _where()])


def compare_modal() -> dict:
    return _modal(MODAL_COMPARE, "Compare", [
        _names("Repositories and projects side by side (2 to 10)", max_items=10),
        _date(SINCE, "Since", "Empty: from the first commit."),
        _date(UNTIL, "Until", "Empty: up to today."),
        _where()])


def subscribe_modal() -> dict:
    return _modal(MODAL_SUBSCRIBE, "Subscribe a channel", [
        _input(CHANNEL, "Channel", {"type": "conversations_select", "action_id": VALUE,
                                    "filter": {"include": ["public", "private"], "exclude_bot_users": True}}),
        _names("Repositories and projects in its weekly digest"),
        _input(DAY, "Day", {"type": "static_select", "action_id": VALUE,
                            "options": [_option(v, t) for v, t in DAYS], "initial_option": _option(*DAYS[0])}),
        _input(TIME, "Time", {"type": "timepicker", "action_id": VALUE, "initial_time": "09:00"}),
        _input(TZ, "Time zone", {"type": "plain_text_input", "action_id": VALUE,
                                 "placeholder": plain("Europe/Paris", 150)},
               optional=True, hint="An IANA name; empty: yours, from your Slack profile.")],
        submit="Subscribe")


def digests_modal(lines: Sequence[str]) -> dict:
    """The digests of the channels a person is in (mrkdwn lines, already escaped); no submit."""
    text = "\n".join(lines) if lines else ("None of your channels has a weekly digest yet; *Subscribe a channel* "
                                           "on the Home tab starts one.")
    return _modal("gad_modal_digests", "Digests of my channels", [section(text)], submit=None)


def queued_modal(waiting: str, channel: str | None) -> dict:
    """What a submitted form shows while its answer waits its turn (`waiting`: "3 reports ahead of yours")."""
    place = channel_link(channel) if channel else "your direct messages with gad-bot"
    return _modal("gad_modal_queued", "Queued",
                  [section(f":hourglass_flowing_sand: Queued: {escape_mrkdwn(waiting)}. I will post the answer in {place}.")],
                  submit=None, close="Close")  # closing it does not take the question back


def name_options(names: Sequence[str], typed: str) -> dict:
    """block_suggestion's answer: tracked names containing what was typed (case-insensitive), at most 100."""
    wanted = typed.strip().lower()
    return {"options": [_option(n, n) for n in names if wanted in n.lower()][:MAX_OPTIONS]}


def digest_line(channel: str, names: Sequence[str], schedule: str, paused: bool) -> str:
    shown = ", ".join(code(n) for n in names[:10]) + ("…" if len(names) > 10 else "")
    return f"<#{channel}>: {shown} · {schedule}" + (" · *paused*" if paused else "")
