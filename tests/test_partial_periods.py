"""A period a breakdown shows only in part (since:/until: inside it, or the period still running) says
which days it counts, on every face. Dates worked out by hand."""

from __future__ import annotations

import json
from datetime import date

from bot.engine.periods import mark_partial
from bot.metric import Row, Totals
from bot.render import render_text, report_blocks, report_to_dict
from tests.test_render import make_report


def _years(*years: int) -> list[Row]:
    return [Row(str(y), Totals(1, 1, 1), date(y, 1, 1)) for y in years]


def test_years_cut_by_since_and_by_today_are_marked_and_whole_ones_are_not():
    rows = mark_partial(_years(2024, 2025, 2026), "year", date(2024, 3, 1), date(2026, 12, 4))
    assert [r.covers for r in rows] == [(date(2024, 3, 1), None), None, (None, date(2026, 12, 4))]
    one = mark_partial(_years(2024), "year", date(2024, 3, 1), date(2024, 6, 30))
    assert one[0].covers == (date(2024, 3, 1), date(2024, 6, 30))
    whole = mark_partial(_years(2023), "year", date(2023, 1, 1), date(2023, 12, 31))
    assert whole[0].covers is None  # since:2023 until:2023 covers the year exactly


def test_every_face_marks_a_partial_year():
    rows = tuple(mark_partial(_years(2024, 2025), "year", date(2024, 3, 1), date(2025, 12, 31)))
    report = make_report(by="year", rows=rows, since=date(2024, 3, 1), until=date(2025, 12, 31))
    assert "2024 (from 2024-03-01)" in render_text(report)
    _, blocks = report_blocks(report, "web since:2024-03 until:2025 by:year")
    assert "`2024` (from 2024-03-01) — 2GAD" in json.dumps(blocks, ensure_ascii=False)
    assert "`2025` — 2GAD" in json.dumps(blocks, ensure_ascii=False)
    data = report_to_dict(report)["rows"]
    assert data[0]["partial"] == {"from": "2024-03-01", "to": None} and "partial" not in data[1]
