"""What a first reader takes from an answer: the whole period, a trend only when there is one, empty
buckets told from quiet ones. Values are worked out by hand from the rows given."""

from __future__ import annotations

import json
from datetime import date

from bot.metric import Row, Totals
from bot.render import render_text, report_blocks, report_to_dict
from bot.render import words
from tests.test_render import make_report


def test_an_all_history_report_shows_its_first_and_last_day_on_every_face():
    report = make_report(since=None, first_day=date(2019, 3, 4), last_day=date(2026, 11, 30))
    expected = "all history (2019-03-04 to 2026-11-30)"
    assert words.headline_words(report).endswith(f"person-years), {expected}")
    assert f"period        {expected}" in render_text(report)
    _, blocks = report_blocks(report, "web api")
    assert f"*Period:* {expected}" in json.dumps(blocks, ensure_ascii=False)
    assert report_to_dict(report)["first_day"] == "2019-03-04"


def test_a_one_week_report_draws_no_one_bar_trend():
    week = (Row("2026-W48", Totals(3, 2, 4), date(2026, 11, 23)),)
    report = make_report(since=date(2026, 11, 23), until=date(2026, 11, 29), trend_bucket="week", trend=week)
    assert words.trend_words(report) is None
    assert "Trend" not in render_text(report)
    _, blocks = report_blocks(report, "web since:2026-W48")
    assert "trend" not in json.dumps(blocks).lower()


def test_empty_months_read_apart_from_quiet_ones():
    # 2024-01 empty, 2024-02 one active day (2GAD 2) against a peak of 2GAD 40: quiet, not empty
    trend = (Row("2024-01", Totals(0, 0, 0), date(2024, 1, 1)), Row("2024-02", Totals(1, 1, 1), date(2024, 2, 1)),
             Row("2024-03", Totals(20, 3, 30), date(2024, 3, 1)))
    caption, spark = words.trend_words(make_report(trend=trend))
    assert spark == "·▁█" and caption.endswith("(· = no commits)")
