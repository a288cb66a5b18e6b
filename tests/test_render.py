"""bot/render: wording, units, sparklines, JSON, CSV, Block Kit limits and escaping, charts, text."""

from __future__ import annotations

import csv
import io
import json
import re
import struct
from datetime import date, datetime, timedelta, timezone

import pytest

from bot.metric import UNITS_NOTE, Cocomo, Report, Row, Totals
from bot.engine.query import EXAMPLES
from bot.engine.rows import HomeRow, RepoSummary
from bot.render import (error_blocks, escape_mrkdwn, figure_words, fit_blocks, help_blocks, home_view,
                        period_words, progress_blocks, render_help_text, render_repos_text, render_text,
                        report_blocks, report_to_csv, report_to_dict, repos_blocks, sparkline, trend_png)
from bot.render import blocks as blocks_mod
from bot.render import words
from bot.render.text import headline
from tests.slackstub import text_objects

UTC = timezone.utc
AS_OF = datetime(2026, 12, 3, 8, 0, tzinfo=UTC)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
EVIL = "<!channel> <@U123> <!here|here> & `tick`"


def monthly_trend(values: list[int], year: int = 2024) -> tuple[Row, ...]:
    """Trend rows whose 2GAD equals each value (person_days = value / 2)."""
    return tuple(Row(f"{year}-{m:02d}", Totals(v // 2, 1 if v else 0, v), date(year, m, 1))
                 for m, v in enumerate(values, 1))


def make_report(**changes) -> Report:
    base = dict(repos=("web", "api"), since=date(2024, 1, 1), until=None,
                scope_words="all branches and tags, author dates, mailmap applied, bots left out",
                totals=Totals(person_days=206, developers=12, commits=3456),
                trend=monthly_trend([0, 10, 20, 40, 30, 10]), data_as_of=AS_OF)
    base.update(changes)
    return Report(**base)


def person_rows(n: int) -> tuple[Row, ...]:
    return tuple(Row(f"dev{i}@example.com", Totals(person_days=i + 1, developers=1, commits=2 * (i + 1)))
                 for i in range(n))


# -- Block Kit checking helpers ----------------------------------------------------------------


def assert_within_limits(blocks: list[dict], max_blocks: int = 50) -> None:
    assert 1 <= len(blocks) <= max_blocks
    for block in blocks:
        kind = block["type"]
        assert kind in ("header", "section", "context", "actions", "divider")
        if kind == "header":
            assert block["text"]["type"] == "plain_text"
            assert 1 <= len(block["text"]["text"]) <= 150
        elif kind == "section":
            assert 1 <= len(block["text"]["text"]) <= 3000
            assert len(block.get("fields", [])) <= 10
        elif kind == "context":
            assert 1 <= len(block["elements"]) <= 10
            for element in block["elements"]:
                assert 1 <= len(element["text"]) <= 3000
        elif kind == "actions":
            assert 1 <= len(block["elements"]) <= 25
            for element in block["elements"]:
                assert len(element["text"]["text"]) <= 75
                assert len(element["value"]) <= 2000
                assert len(element["action_id"]) <= 255
    for obj in text_objects(blocks):
        assert 1 <= len(obj["text"]) <= 3000
        assert obj["text"].strip(), obj


def all_texts(fallback: str, blocks: list[dict]) -> list[str]:
    return [fallback, *(obj["text"] for obj in text_objects(blocks))]


def assert_no_pings(texts: list[str]) -> None:
    for text in texts:
        assert "<!channel>" not in text
        assert "<@U123>" not in text
        assert "<!here" not in text
        assert "<" not in text and ">" not in text, text
        # every & starts an entity: nothing user-typed can form one of Slack's control sequences
        assert re.sub(r"&(amp|lt|gt);", "", text).count("&") == 0, text


def assert_code_spans_balanced(blocks: list[dict]) -> None:
    for obj in text_objects(blocks):
        if obj["type"] == "mrkdwn":
            for line in obj["text"].split("\n"):
                assert line.count("`") % 2 == 0, line


# -- words -------------------------------------------------------------------------------------


@pytest.mark.parametrize("since, until, expected", [
    (None, None, "all history"),
    (date(2024, 1, 1), None, "since 2024-01-01"),
    (None, date(2024, 6, 30), "until 2024-06-30"),
    (date(2024, 1, 1), date(2024, 6, 30), "2024-01-01 to 2024-06-30"),
    (date(2024, 3, 5), date(2024, 3, 5), "on 2024-03-05"),
])
def test_period_words(since, until, expected):
    assert period_words(since, until) == expected


@pytest.mark.parametrize("person_days, expected", [
    (0, "2GAD 0 person-days"),
    (9, "2GAD 18 person-days"),
    (19, "2GAD 38 person-days (2.0 person-months)"),
    (113, "2GAD 226 person-days (11.9 person-months)"),
    (114, "2GAD 228 person-days (1.0 person-years)"),
    (206, "2GAD 412 person-days (1.8 person-years)"),
    (228, "2GAD 456 person-days (2.0 person-years)"),
    (50_000, "2GAD 100,000 person-days (438.6 person-years)"),
])
def test_figure_words_units(person_days, expected):
    assert figure_words(Totals(person_days=person_days, developers=1, commits=1)) == expected


@pytest.mark.parametrize("days, expected", [
    (1, "1 person-day"), (18, "18 person-days"), (19, "19 person-days (1.0 person-months)"),
    (209, "209 person-days (11.0 person-months)"), (227, "227 person-days (11.9 person-months)"),
    (412, "412 person-days (1.8 person-years)"),
])
def test_days_words_thresholds(days, expected):
    assert words.days_words(days) == expected


@pytest.mark.parametrize("values, expected", [
    ([], ""),
    ([0, 0, 0], "···"),  # empty buckets: never a bar, so that they differ from quiet ones
    ([0, 1, 2, 3, 4, 5, 6, 7], "·▂▃▄▅▆▇█"),
    ([1, 100], "▁█"),  # quiet, not empty: the lowest bar
    ([0, 1, 2], "·▅█"),
    ([5], "█"),
    ([3, 3], "██"),
    ([-4, 2], "·█"),
    ([0.5, 1.0], "▅█"),
])
def test_sparkline(values, expected):
    assert sparkline(values) == expected


@pytest.mark.parametrize("skipped, expected", [
    (0, None),
    (1, "1 commit with an impossible author date left out"),
    (3, "3 commits with impossible author dates left out"),
    (1234, "1,234 commits with impossible author dates left out"),
])
def test_skipped_words(skipped, expected):
    assert words.skipped_words(skipped) == expected


@pytest.mark.parametrize("moment, expected", [
    (datetime(2026, 12, 3, 8, 0, tzinfo=UTC), "data as of 2026-12-03 08:00 UTC"),
    (datetime(2026, 12, 3, 10, 0, tzinfo=timezone(timedelta(hours=2))), "data as of 2026-12-03 08:00 UTC"),
    (datetime(2026, 12, 3, 8, 0), "data as of 2026-12-03 08:00 UTC"),
    (None, None),
])
def test_as_of_words(moment, expected):
    assert words.as_of_words(moment) == expected


def test_footnotes_in_order_with_every_kind():
    report = make_report(scope_words="all branches and tags, author dates, mailmap applied, bots left out, paths src",
                         skipped=3, notes=("api last synced 2 days ago",), paths=("src",))
    assert words.footnotes(report) == [
        "Scope: all branches and tags, author dates, mailmap applied, bots left out, paths src",
        "3 commits with impossible author dates left out",
        "data as of 2026-12-03 08:00 UTC",
        words.MERGES_NOTE,
        UNITS_NOTE,
        "api last synced 2 days ago",
    ]


@pytest.mark.parametrize("changes, has_units, has_merges", [
    ({"totals": Totals(9, 2, 5)}, False, False),  # 18 person-days: nothing converted
    ({"totals": Totals(10, 2, 5)}, True, False),  # 20 person-days: 1.1 person-months
    ({"totals": Totals(1, 1, 1), "cocomo": Cocomo("SLOCCount 2.26", 1000, 2.4, 0.1, 0.04)}, True, False),
    ({"totals": Totals(1, 1, 1), "paths": ("src",)}, False, True),
    ({"totals": Totals(1, 1, 1), "exclude_paths": ("docs",)}, False, True),
])
def test_units_and_merges_notes_only_when_due(changes, has_units, has_merges):
    notes = words.footnotes(make_report(**changes))
    assert (UNITS_NOTE in notes) is has_units
    assert (words.MERGES_NOTE in notes) is has_merges


def test_trend_words_caption_and_cut():
    report = make_report(trend=monthly_trend([0, 10, 40, 20]))
    assert words.trend_words(report) == ("2GAD per month, 2024-01 to 2024-04, peak 40 in 2024-03 (· = no commits)", "·▃█▅")
    long = make_report(trend=tuple(Row(f"2024-W{i:02d}", Totals(i, 1, i)) for i in range(1, 53)),
                       trend_bucket="week")
    caption, spark = words.trend_words(long, max_points=10)
    assert caption == "2GAD per week, 2024-W43 to 2024-W52 (last 10 of 52 weeks), peak 104 in 2024-W52"
    assert len(spark) == 10
    assert words.trend_words(make_report(trend=())) is None
    assert words.trend_words(make_report(trend=monthly_trend([0, 0])))[0] == "2GAD per month, 2024-01 to 2024-02, no activity"


# -- JSON --------------------------------------------------------------------------------------


def test_report_to_dict_keys_and_values():
    report = make_report(by="month", rows=monthly_trend([10, 20]), skipped=2, notes=("n1",),
                         cocomo=Cocomo("SLOCCount 2.26", 45_000, 130.5, 21.7, 0.166))
    data = report_to_dict(report)
    assert json.loads(json.dumps(data)) == data
    assert {k: data[k] for k in ("active_days", "two_gad", "developers", "commits", "since", "until",
                                 "scope", "repos", "by", "skipped", "data_as_of", "notes", "units")} == {
        "active_days": 206, "two_gad": 412, "developers": 12, "commits": 3456,
        "since": "2024-01-01", "until": None,
        "scope": "all branches and tags, author dates, mailmap applied, bots left out",
        "repos": ["web", "api"], "by": "month", "skipped": 2, "data_as_of": "2026-12-03T08:00:00+00:00",
        "notes": ["n1"], "units": {"person_month_days": 19, "person_year_days": 228}}
    assert data["rows"] == [
        {"key": "2024-01", "active_days": 5, "two_gad": 10, "developers": 1, "commits": 10, "first_day": "2024-01-01"},
        {"key": "2024-02", "active_days": 10, "two_gad": 20, "developers": 1, "commits": 20, "first_day": "2024-02-01"},
    ]
    assert [r["two_gad"] for r in data["trend"]] == [0, 10, 20, 40, 30, 10]
    assert data["cocomo"] == {"counter": "SLOCCount 2.26", "mode": "organic", "sloc": 45_000, "person_months": 130.5,
                              "two_gad_person_months": 21.7, "ratio": 0.166,
                              # by hand: 21.7 person-months x 19 = 412.3 person-days over 45 KSLOC
                              "two_gad_per_ksloc": round(21.7 * 19 / 45, 4)}
    assert data["two_gad_person_months"] == 21.68
    assert data["two_gad_person_years"] == 1.81
    assert data["period"] == "since 2024-01-01"


def test_report_to_dict_empty_report():
    data = report_to_dict(make_report(since=None, trend=(), data_as_of=None, totals=Totals(0, 0, 0)))
    assert (data["since"], data["until"], data["data_as_of"], data["cocomo"], data["rows"], data["trend"]) == (
        None, None, None, None, [], [])
    assert data["period"] == "all history"
    assert json.dumps(data)


# -- CSV ---------------------------------------------------------------------------------------


def test_csv_round_trip_with_breakdown():
    rows = (Row("alice@example.com", Totals(30, 1, 70)), Row('bob "b", jr@example.com', Totals(12, 1, 15)))
    text = report_to_csv(make_report(by="person", rows=rows, totals=Totals(42, 2, 85)))
    parsed = list(csv.reader(io.StringIO(text)))
    context = ["web api", "web api", "2024-01-01", "", "default", "", "", "", "", "", "on", "off", "off", ""]
    assert parsed == [
        ["person", "active_days", "two_gad", "developers", "commits", "repositories_asked", "repositories", "since",
         "until", "scope", "range", "paths", "exclude_paths", "authors", "orgs", "mailmap", "bots", "coauthors",
         "hint"],
        ["alice@example.com", "30", "60", "1", "70", *context],
        ['bob "b", jr@example.com', "12", "24", "1", "15", *context],
        ["TOTAL", "42", "84", "2", "85", *context],
    ]
    assert list(csv.DictReader(io.StringIO(text)))[-1]["person"] == "TOTAL"


def test_csv_without_breakdown_is_one_row_with_its_context():
    """No `key`/`TOTAL` pseudo-row: the figures, then every filter that shaped them."""
    report = make_report(asked=("media",), paths=("src",), exclude_paths=("docs",), authors=("*@intel.com",),
                         orgs=("intel*",), scope="branch:main", mailmap=False, bots=True, coauthors=True)
    assert list(csv.DictReader(io.StringIO(report_to_csv(report)))) == [{
        "active_days": "206", "two_gad": "412", "developers": "12", "commits": "3456",
        "repositories_asked": "media", "repositories": "web api", "since": "2024-01-01", "until": "",
        "scope": "branch:main", "range": "", "paths": "src", "exclude_paths": "docs", "authors": "*@intel.com",
        "orgs": "intel*", "mailmap": "off", "bots": "on", "coauthors": "on", "hint": ""}]


def test_every_face_states_every_filter():
    """path:, author:, org:, the scope and the switches reach the headline, the text, the blocks and the JSON."""
    report = make_report(asked=("media",), paths=("src",), exclude_paths=("docs",), authors=("*@intel.com",),
                         orgs=("intel*",), scope="branch:main", mailmap=False, bots=True, coauthors=True)
    tokens = ("branch:main", "path:src", "path:!docs", "author:*@intel.com", "org:intel*", "mailmap:off", "bots:on",
              "coauthors:on")
    line = headline(report)
    assert line.startswith("media (web and api): 2GAD 412 person-days") and all(t in line for t in tokens)
    text = render_text(report)
    fallback, blocks = report_blocks(report, "media")
    shown = json.dumps(blocks)
    assert all(t in text and t in fallback and t in shown for t in tokens)
    assert "2GAD for media (web and api)" in shown
    data = report_to_dict(report)
    assert data["filters"] == {
        "repositories_asked": ["media"], "since": "2024-01-01", "until": None, "scope": "branch:main", "range": None,
        "paths": ["src"], "exclude_paths": ["docs"], "authors": ["*@intel.com"], "orgs": ["intel*"],
        "mailmap": False, "bots": True, "coauthors": True}
    assert "person_days" not in data and data["active_days"] == 206


@pytest.mark.parametrize("key, cell", [
    ("=HYPERLINK(\"http://x\")@evil.com", "'=HYPERLINK(\"http://x\")@evil.com"),
    ("+1@example.com", "'+1@example.com"),
    ("-x@example.com", "'-x@example.com"),
    ("@x", "'@x"),
    ("plain@example.com", "plain@example.com"),
])
def test_csv_keys_never_run_as_formulas(key, cell):
    report = make_report(by="person", rows=(Row(key, Totals(1, 1, 1)),), totals=Totals(1, 1, 1))
    assert list(csv.reader(io.StringIO(report_to_csv(report))))[1][0] == cell


# -- Block Kit ---------------------------------------------------------------------------------


@pytest.mark.parametrize("raw, escaped", [
    ("a & b", "a &amp; b"),
    ("<!channel>", "&lt;!channel&gt;"),
    ("<@U123>", "&lt;@U123&gt;"),
    ("&lt;", "&amp;lt;"),
    ("plain", "plain"),
])
def test_escape_mrkdwn(raw, escaped):
    assert escape_mrkdwn(raw) == escaped


@pytest.mark.parametrize("raw, limit, expected", [
    ("web", 80, "`web`"),
    ("we`b", 80, "`weˋb`"),
    ("a\n b\tc", 80, "`a b c`"),
    ("", 80, "`(empty)`"),
    ("<!channel>", 80, "`&lt;!channel&gt;`"),
    ("<<<<", 9, "`&lt;&lt;…`"),
    ("abcdef", 4, "`abc…`"),
])
def test_code_span(raw, limit, expected):
    assert blocks_mod.code(raw, limit) == expected


def test_importing_render_does_not_load_matplotlib_or_rich():
    import subprocess
    import sys
    probe = "import sys, bot.render; print('matplotlib' in sys.modules, 'rich' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False False"


def test_report_blocks_content():
    report = make_report(by="month", rows=monthly_trend([10, 20]), skipped=3,
                         cocomo=Cocomo("SLOCCount 2.26", 45_000, 130.5, 21.7, 0.166))
    fallback, blocks = report_blocks(report, "web api since:2024-01 by:month")
    assert fallback == "web and api: 2GAD 412 person-days (1.8 person-years), since 2024-01-01"
    assert [b["type"] for b in blocks] == ["header", "section", "section", "section", "section", "context", "actions"]
    assert blocks[0]["text"]["text"] == "2GAD for web and api"
    assert blocks[1]["text"]["text"] == (
        "*2GAD 412 person-days (1.8 person-years)*\n12 developers · 3,456 commits · 206 active days (GAD)\n"
        "*Period:* since 2024-01-01\n"
        "*Scope:* all branches and tags, author dates, mailmap applied, bots left out\n"
        "*Repositories:* `web`, `api`")
    assert blocks[2]["text"]["text"] == ("*Monthly trend:* 2GAD per month, 2024-01 to 2024-06, peak 40 in 2024-04 "
                                         "(· = no commits)\n`·▃▅█▆▃`")
    assert blocks[3]["text"]["text"] == ("*By month*\n`2024-01` — 2GAD 10 · 1 developer · 10 commits\n"
                                         "`2024-02` — 2GAD 20 · 1 developer · 20 commits")
    assert blocks[4]["text"]["text"] == ("*vs COCOMO* (basic, organic; SLOCCount 2.26, 45,000 SLOC)\n"
                                         "COCOMO 130.5 person-months · 2GAD 21.7 person-months · ratio 0.17 (2GAD / COCOMO)\n"
                                         "2GAD 9.16 person-days per thousand source lines (45,000 SLOC at the head "
                                         "counted): multiply by a planned size in KSLOC to scale it")
    assert [e["text"] for e in blocks[5]["elements"]] == [
        "3 commits with impossible author dates left out", "data as of 2026-12-03 08:00 UTC", UNITS_NOTE]
    button = blocks[6]["elements"][0]
    assert (button["action_id"], button["value"], button["text"]["text"]) == (
        "gad_share", "web api since:2024-01 by:month", "Share in channel")
    assert all(obj["verbatim"] is True for obj in text_objects(blocks) if obj["type"] == "mrkdwn")
    assert_within_limits(blocks)


def test_person_breakdown_of_everyone_lists_people_by_active_days():
    rows = (Row("bob@x.org", Totals(5, 1, 50)), Row("alice@x.org", Totals(40, 1, 9)), Row("carol@x.org", Totals(5, 1, 7)))
    _, blocks = report_blocks(make_report(by="person", rows=rows, totals=Totals(50, 3, 66)), "web by:person")
    text = next(b["text"]["text"] for b in blocks if b["type"] == "section" and "People by active days" in b["text"]["text"])
    assert text == ("*People by active days*\n"
                    "1. `alice@x.org` — 40 active days · 2GAD 80 · 9 commits\n"
                    "2. `bob@x.org` — 5 active days · 2GAD 10 · 50 commits\n"
                    "3. `carol@x.org` — 5 active days · 2GAD 10 · 7 commits")


@pytest.mark.parametrize("public, shared_by, types, first_note", [
    (False, None, ["header", "section", "section", "context", "actions"], "data as of 2026-12-03 08:00 UTC"),
    (True, None, ["header", "section", "section", "context"], "data as of 2026-12-03 08:00 UTC"),
    (True, "U0123ABC", ["header", "section", "section", "context"], "Shared by <@U0123ABC>"),
    (True, "<!channel>", ["header", "section", "section", "context"], "Shared by &lt;!channel&gt;"),
])
def test_share_button_and_sharer(public, shared_by, types, first_note):
    _, blocks = report_blocks(make_report(), "web", shared_by=shared_by, public=public)
    assert [b["type"] for b in blocks] == types
    assert blocks[3]["elements"][0]["text"] == first_note
    assert not any(b["type"] == "actions" for b in blocks) if public else blocks[-1]["elements"][0]["action_id"] == "gad_share"


def test_huge_report_stays_within_every_limit_and_escapes_everything():
    long_name = ("<!channel>`x`&" * 1000)[:10_000]
    rows = tuple(Row(f"{EVIL} dev{i}@example.com " + "y" * (i % 300), Totals(5000 - i, 1, i)) for i in range(5000))
    report = make_report(
        repos=(long_name, *(f"repo{i}<@U123>" for i in range(40))),
        scope_words="all branches and tags, authors " + EVIL * 200,
        totals=Totals(123_456, 5000, 9_999_999), by="person", rows=rows,
        trend=tuple(Row(f"2024-W{i:03d}", Totals(i, 1, i)) for i in range(600)), trend_bucket="week",
        skipped=7, notes=tuple(f"note {i} {EVIL}" * 30 for i in range(30)),
        cocomo=Cocomo(EVIL * 100, 10**7, 1e5, 2e4, 0.2))
    query_text = f"{long_name} by:person " + "word " * 1000
    fallback, blocks = report_blocks(report, query_text)
    assert_within_limits(blocks)
    assert_no_pings(all_texts(fallback, blocks))
    assert_code_spans_balanced(blocks)
    assert len(fallback) <= 1000
    value = blocks[-1]["elements"][0]["value"]
    assert value == query_text[:2000]  # no space to cut at in the first 2000 characters
    joined = "\n".join(b["text"]["text"] for b in blocks if b["type"] == "section")
    assert "… and 4,975 more (use `format:csv` for all)" in joined
    assert "1. `" in joined and "25. `" in joined and "26. `" not in joined


@pytest.mark.parametrize("query_text, expected", [
    ("web since:2024", "web since:2024"),
    ("web " + "author:a@b.c " * 200, ("web " + "author:a@b.c " * 200)[:2000].rsplit(" ", 1)[0]),
    ("x" * 2500, "x" * 2000),
])
def test_share_value_stays_within_2000_characters(query_text, expected):
    value = blocks_mod.share_value(query_text)
    assert value == expected
    assert len(value) <= 2000


def test_week_breakdown_shows_latest_rows_with_a_note():
    rows = tuple(Row(f"2015-W{i:03d}", Totals(i, 2, i)) for i in range(520))
    _, blocks = report_blocks(make_report(by="week", rows=rows), "web by:week")
    section = next(b["text"]["text"] for b in blocks if "*By week*" in b["text"].get("text", ""))
    lines = section.split("\n")
    assert lines[0] == "*By week* (latest 25 of 520 weeks; use `format:csv` for all)"
    assert lines[1] == "`2015-W495` — 2GAD 990 · 2 developers · 495 commits"
    assert lines[-1] == "`2015-W519` — 2GAD 1,038 · 2 developers · 519 commits"
    assert len(lines) == 26


def test_backticks_in_names_cannot_break_code_spans():
    _, blocks = report_blocks(make_report(repos=("we`b",), by="repo", rows=(Row("a`b`c", Totals(1, 1, 1)),)), "x")
    assert "*Repository:* `weˋb`" in blocks[1]["text"]["text"]
    assert "`aˋbˋc` — 2GAD 2" in blocks[2]["text"]["text"] or "`aˋbˋc` — 2GAD 2" in blocks[3]["text"]["text"]
    assert_code_spans_balanced(blocks)


def test_fit_blocks_cuts_with_a_note():
    many = [blocks_mod.section(f"s{i}") for i in range(60)]
    fitted = fit_blocks(many, 50)
    assert len(fitted) == 50
    assert fitted[48]["text"]["text"] == "s48"
    assert fitted[49] == {"type": "context", "elements": [{"type": "mrkdwn", "verbatim": True,
                          "text": "… and 11 more blocks not shown (use `format:csv` for all)"}]}
    assert fit_blocks(many[:3], 50) == many[:3]


@pytest.mark.parametrize("text, limit, expected", [
    ("abc", 10, "abc"),
    ("x `abcdefgh`", 8, "x `abc`…"),  # the span the cut opened is closed again
    ("a &amp; b", 7, "a …"),  # never ends inside an entity
    ("line one\nline two is long", 14, "line one…"),  # cut at the line end when one is near
])
def test_clip_mrkdwn(text, limit, expected):
    assert blocks_mod._clip_mrkdwn(text, limit) == expected


def test_error_blocks():
    fallback, blocks = error_blocks("`<!channel>` is not a repository name.", reference="ab12")
    assert fallback == "`&lt;!channel&gt;` is not a repository name."
    assert blocks == [
        {"type": "section", "text": {"type": "mrkdwn", "verbatim": True,
                                     "text": ":warning: `&lt;!channel&gt;` is not a repository name."}},
        {"type": "context", "elements": [{"type": "mrkdwn", "verbatim": True, "text": "Reference: `ab12`"}]},
    ]
    assert len(error_blocks("x" * 10_000)[1][0]["text"]["text"]) == 3000


HOSTILE_NAME = "acme/<!channel>&<https://evil.example|login>"


def access_of(name: str):
    from bot.engine.audiences import Audience
    from bot.engine.catalog import Access

    return Access(name, "repository", Audience.parse("everyone"))


@pytest.mark.parametrize("build", [
    lambda: blocks_mod.untrack_question_blocks(HOSTILE_NAME, []),
    lambda: blocks_mod.untrack_announcement(HOSTILE_NAME, "U0ANN1", ()),
    lambda: (blocks_mod.fallback(f"Tracked {HOSTILE_NAME}: 3 commits indexed."), []),
    lambda: blocks_mod.access_blocks(access_of(HOSTILE_NAME), changed=True),
])
def test_every_fallback_text_is_escaped_as_its_blocks_are(build):
    """Issue 31: a fallback `text` Slack reads `<!channel>` and link markup in (the blocks were escaped, the text
    was not). A name the operator typed from the CLI is not checked, and a listing's reached names raw."""
    text, blocks = build()
    assert "<" not in text and "&lt;!channel&gt;&amp;&lt;https://evil.example|login&gt;" in text
    assert not any("<!channel>" in shown["text"] for shown in text_objects(blocks))  # a button's value is no text


COMMANDS = ("help", "repos", "track URL", "untrack NAME", "sync NAME", "subscribe REPO", "unsubscribe REPO",
            "subscriptions", "digest", "project add NAME REPO", "project remove NAME", "projects",
            "since:PERIOD", "by:week|month|quarter|year|person|repo|org", "range:A..B", "org:GLOB", "vs:cocomo",
            "format:csv", "public")


def test_help_blocks_and_text_contain_every_command_and_example():
    from bot.engine.query import TOKENS

    fallback, blocks = help_blocks()
    assert_within_limits(blocks)
    slack = "\n".join(all_texts(fallback, blocks))
    terminal = render_help_text([("gad-bot repos", "List tracked repositories.")])
    for command in COMMANDS:
        assert command in slack and command in terminal.replace("\n  ", " "), command
    for example in EXAMPLES:
        assert f"`/gad {example}`" in slack
        if example.startswith("compare "):  # a command of its own in the terminal
            assert f"  gad-bot {example}\n" in terminal
        elif not example.startswith("subscribe"):  # a Slack command
            assert f"  gad-bot report {example}\n" in terminal
    for token in TOKENS:  # the terminal shows each token with an example
        assert f"\n  {token.form}\n" in terminal and f"e.g. {token.example}" in terminal.replace("\n      ", " ")
    assert "`" not in terminal and "/gad help" not in terminal
    assert "  gad-bot repos  List tracked repositories." in terminal


def repo_row(i: int, **changes) -> RepoSummary:
    """A row as `repos` produces it (RepoSummary.of a tracked repository), with some fields changed."""
    fields = {"name": f"repo{i}", "source": f"https://github.com/o/repo{i}", "commits": 1000 + i,
              "last_sync": datetime(2026, 12, 3, 8, 0, tzinfo=UTC), "last_error": None}
    fields.update(changes)
    return RepoSummary(**fields)


def test_repos_blocks_content():
    fallback, blocks = repos_blocks([repo_row(1), repo_row(2, commits=None, last_sync=None, last_error="<!here> 404")])
    assert fallback == "2 tracked repositories, 1 failing to sync"
    assert blocks[0]["text"]["text"] == "Tracked repositories (2)"
    assert blocks[1]["text"]["text"] == (
        "`repo1` · 1,001 commits · synced 2026-12-03 08:00 UTC · from `https://github.com/o/repo1`\n"
        "`repo2` · not indexed yet · never synced · from `https://github.com/o/repo2`\n"
        "    :warning: last sync failed: &lt;!here&gt; 404")
    assert blocks[2]["elements"][0]["text"] == (
        ":warning: 1 repository failed their last sync (marked :warning: above).")
    assert repos_blocks([]) == ("No repositories are tracked yet.", [blocks_mod.section(
        "No repositories are tracked yet; an admin can add one with `/gad track URL`.")])


def test_repos_blocks_many_long_rows_stay_within_limits():
    rows = [repo_row(i, name=f"{EVIL}{i}" + "n" * 5000, source="https://" + "s" * 5000, last_error=EVIL * 100)
            for i in range(1000)]
    fallback, blocks = repos_blocks(rows)
    assert_within_limits(blocks)
    assert_no_pings(all_texts(fallback, blocks))
    assert_code_spans_balanced(blocks)
    last_section = [b for b in blocks if b["type"] == "section"][-1]["text"]["text"]
    assert re.search(r"… and [\d,]+ more$", last_section)


@pytest.mark.parametrize("done, total, expected", [
    (30, 100, "*Tracking web* — indexing commits\n`██████░░░░░░░░░░░░░░` 30% (30 of 100)"),
    (0, 100, "*Tracking web* — indexing commits\n`░░░░░░░░░░░░░░░░░░░░` 0% (0 of 100)"),
    (150, 100, "*Tracking web* — indexing commits\n`████████████████████` 100% (100 of 100)"),
    (1234, None, "*Tracking web* — indexing commits\n`░░░░░░░░░░░░░░░░░░░░` (1,234 so far)"),
])
def test_progress_blocks(done, total, expected):
    fallback, blocks = progress_blocks("Tracking web", done, total, "indexing commits")
    assert blocks[0]["text"]["text"] == expected
    assert fallback.startswith("Tracking web: indexing commits")


@pytest.mark.parametrize("seconds, expected", [
    (12, "(300 of 1,000, less than a minute left)"), (150, "(300 of 1,000, about 2 min left)"),
    (7200, "(300 of 1,000, about 2.0 h left)")])
def test_progress_blocks_say_how_long_is_left(seconds, expected):
    _, blocks = progress_blocks("Tracking linux", 300, 1000, "indexing commits", seconds_left=seconds)
    assert blocks[0]["text"]["text"].endswith("30% " + expected)


def test_progress_blocks_escape_title():
    fallback, blocks = progress_blocks(f"Tracking {EVIL}", 1, 2, EVIL)
    assert_no_pings(all_texts(fallback, blocks))


@pytest.mark.parametrize("is_admin, admin_section", [(True, True), (False, False)])
def test_home_view(is_admin, admin_section):
    rows = [HomeRow("web", weekly_two_gad=24, week="2026-W48", trend=(2, 4, 0, 24)),
            HomeRow("api", weekly_two_gad=None, week="2026-W48", last_error="boom")]
    view = home_view(rows, is_admin=is_admin)
    assert view["type"] == "home"
    assert_within_limits(view["blocks"], max_blocks=100)
    texts = "\n".join(obj["text"] for obj in text_objects(view["blocks"]))
    assert "`web` · 2GAD 24 person-days (1.3 person-months) in 2026-W48 · `▂▂·█`" in texts
    assert "`api` · no weekly figure yet · :warning: last sync failed" in texts
    assert "Tracked repositories (2)" in texts
    assert ("*Admin:*" in texts) is admin_section
    assert "`/gad help`" in texts


def test_home_view_many_repos_stays_under_100_blocks():
    rows = [HomeRow(f"{EVIL}{i}" + "z" * 3000, weekly_two_gad=i, week="2026-W48", trend=tuple(range(100)))
            for i in range(5000)]
    view = home_view(rows, is_admin=True)
    assert_within_limits(view["blocks"], max_blocks=100)
    assert_no_pings([obj["text"] for obj in text_objects(view["blocks"])])
    assert "more; `/gad repos` lists them all" in [b for b in view["blocks"] if b["type"] == "section"][-1]["text"]["text"]
    empty = home_view([], is_admin=False)
    assert "Nothing is tracked yet. Ask an admin to track one." in [o["text"] for o in text_objects(empty["blocks"])]


# -- chart -------------------------------------------------------------------------------------


def png_size(data: bytes) -> tuple[int, int]:
    return struct.unpack(">II", data[16:24])


@pytest.mark.parametrize("rows", [
    [("2024-W01", 12), ("2024-W02", 0), ("2024-W03", 30)],
    [(f"2024-W{i:02d}", i * 3) for i in range(1, 53)],
    [],
])
def test_trend_png(rows):
    data = trend_png(rows, "web: 2GAD per week $x^2$ " + "t" * 200)
    assert data[:8] == PNG_SIGNATURE
    assert png_size(data) == (800, 300)


# -- terminal text -----------------------------------------------------------------------------


def test_render_text_report():
    report = make_report(by="repo", rows=(Row("api", Totals(50, 4, 100)), Row("web", Totals(180, 10, 3356))),
                         skipped=3)
    out = render_text(report, width=100)
    lines = out.splitlines()
    assert lines[0] == "web and api: 2GAD 412 person-days (1.8 person-years), since 2024-01-01"
    assert "2GAD          412 person-days (1.8 person-years)" in out
    assert "commits       3,456" in out
    assert re.search(r"^web\s+360\s+180\s+10\s+3,356$", out, re.M)
    assert re.search(r"^api\s+100\s+50\s+4\s+100$", out, re.M)
    assert re.search(r"^total\s+412\s+206\s+12\s+3,456$", out, re.M)
    assert out.index("\nweb ") < out.index("\napi ")  # repositories by active days
    assert "Trend: 2GAD per month, 2024-01 to 2024-06, peak 40 in 2024-04 (· = no commits)\n  ·▃▅█▆▃\n" in out
    assert "  - 3 commits with impossible author dates left out" in out
    assert f"  - {words.REPO_OVERLAP_NOTE[:60]}" in out
    assert "\x1b[" not in out
    assert max(len(line) for line in lines) <= 100


def test_render_text_narrow_and_long_keys():
    report = make_report(by="person", rows=person_rows(50) + (Row("x" * 300 + "@e.org", Totals(1, 1, 1)),))
    out = render_text(report, width=72)
    assert max(len(line) for line in out.splitlines()) <= 72
    assert re.search(r"^dev49@example.com\s+100\s+50\s+100$", out, re.M)  # 2GAD, active days, commits
    assert re.search(r"^person\s+2GAD\s+active days\s+commits$", out, re.M)  # no "developers": always 1 a row
    assert "\x1b[" not in out
    assert "".join(re.findall(r"^x+", out, re.M)) == "x" * 300  # a long key folds, it is never cut


def test_render_text_colour_only_when_asked():
    assert "\x1b[" in render_text(make_report(), color=True)


def test_render_repos_text():
    out = render_repos_text([repo_row(1), repo_row(2, commits=None, last_sync=None, last_error="fetch failed: 404")])
    assert re.search(r"^repo1\s+1,001\s+2026-12-03 08:00 UTC\s+ok\s+https://github.com/o/repo1$", out, re.M)
    assert re.search(r"^repo2\s+-\s+never\s+failed: fetch failed: 404\s+https://github.com/o/repo2$", out, re.M)
    assert out.rstrip().endswith("2 repositories tracked, 1 failing to sync")
    assert render_repos_text([]) == "No repositories are tracked yet; add one with `gad-bot track URL`.\n"
