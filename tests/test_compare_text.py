"""`compare` in a terminal: a table when every figure fits, cards when not; never a cut figure, never a
long name wrapping into what reads as another row; COCOMO's words only with `vs:cocomo`."""

from __future__ import annotations

import json
import re
from datetime import date

import pytest

from bot.metric import Cocomo, CompareReport, CompareRow, Totals
from bot.render.compare import render_compare_text

LONG = "gstreamer:subprojects/gst-plugins-bad/ext/webrtc/very/deep/directory"


def _row(item: str, two_gad_days: int, cocomo: Cocomo | None = None) -> CompareRow:
    return CompareRow(item=item, repos=(item.split(":")[0],), totals=Totals(two_gad_days, 123, 164_123),
                      first_day=date(2001, 1, 1), last_day=date(2026, 11, 30), active_months=300,
                      busiest_month="2019-05", busiest_person_days=617, cocomo=cocomo)


def _report(vs_cocomo: bool) -> CompareReport:
    cocomo = Cocomo("SLOCCount 2.26", 1_234_567, 4_321.5, 1_234.5, 0.29) if vs_cocomo else None
    return CompareReport(rows=(_row("openssh", 82_061, cocomo), _row(LONG, 5, cocomo)), since=None, until=None,
                         scope_words="all branches and tags", vs_cocomo=vs_cocomo)


@pytest.mark.parametrize("width", [60, 80, 120, 400])
@pytest.mark.parametrize("vs_cocomo", [False, True])
def test_every_figure_is_whole_at_any_width(width, vs_cocomo):
    text = render_compare_text(_report(vs_cocomo), width=width)
    assert "…" not in text
    # openssh: 2GAD 2 x 82,061 = 164,122; commits 164,123; the busiest month 2 x 617 = 1,234
    for figure in ("164,122", "164,123", "2001-01-01 to 2026-11-30", "2019-05 (2GAD 1,234)"):
        assert figure in text
    if vs_cocomo:
        assert "1,234,567" in text and "4,321.5" in text and "0.29" in text
    assert max(map(len, text.splitlines())) <= width


def test_a_narrow_terminal_gets_one_card_per_item_with_its_name_on_its_own_line():
    text = render_compare_text(_report(True), width=80)
    lines = text.splitlines()
    assert "1. openssh" in lines and any(line.startswith("2. gstreamer:") for line in lines)
    # the long name folds under its own number; the next line that is not its continuation is a figure
    name_at = next(i for i, line in enumerate(lines) if line.startswith("2. "))
    assert re.sub(r"\s", "", "".join(lines[name_at:name_at + 2]))[2:].startswith(LONG.replace(" ", ""))


def test_a_wide_terminal_gets_the_table():
    text = render_compare_text(_report(False), width=400)
    assert re.search(r"^openssh\s+164,122\s+123\s+164,123\s", text, re.M)


def test_no_person_months_pd_pm_or_cocomo_paragraph_unless_asked():
    plain = render_compare_text(_report(False), width=400)
    assert not re.search(r"\bpd\b|\bpm\b", plain) and "person-months" not in plain and "COCOMO" not in plain
    from bot.render.compare import compare_blocks

    text, blocks = compare_blocks(_report(False), "compare a b")  # Slack's face too
    slack = text + json.dumps(blocks)
    assert not re.search(r"\bpd\b|\bpm\b", slack) and "person-months" not in slack and "COCOMO" not in slack
    asked = render_compare_text(_report(True), width=400)
    assert "2GAD person-months" in asked and "seed study" in asked and not re.search(r"\bpd\b|\bpm\b", asked)
