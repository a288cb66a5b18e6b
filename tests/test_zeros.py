"""A zero that is likely a slip says what was probably meant (bot/engine/zeros.py), on a history built in
code (tests/test_estimation.py build_web: commits from 2022-06-01 to 2023-03-01, tags v1.0 < v2.0,
organizations intel.com, collabora.com, redhat.com, foo.co.uk, gmail.com, localhost)."""

from __future__ import annotations

import json

import pytest

from bot.render import render_text, report_blocks, report_to_dict
from tests.test_estimation import ask, tracked, web  # noqa: F401 (fixtures)


def test_a_period_after_the_newest_commit_names_the_newest_day(tracked):
    report = ask(tracked, "web since:2030")
    assert report.totals.person_days == 0
    # the newest commit is Ann's of 2023-03-01 (git log -1 --format=%ad --date=short main)
    assert "the newest commit in scope is from 2023-03-01" in report.hint and "`since:2023`" in report.hint


def test_the_newest_day_is_the_newest_in_scope(tracked):
    # v2.0-rc1..v2.0 ends with the merge of 2022-12-01 (git log -1 --date=short v2.0)
    assert "the newest commit in scope is from 2022-12-01" in ask(tracked, "web range:v2.0-rc1..v2.0 since:2023").hint


def test_a_reversed_range_offers_the_range_the_right_way_round(tracked):
    report = ask(tracked, "web range:v2.0..v1.0")
    assert report.totals.person_days == 0
    assert report.hint.endswith("Did you mean `range:v1.0..v2.0`?")


def test_an_organization_named_without_its_domain_offers_the_glob_that_matches(tracked):
    report = ask(tracked, "web org:intel")
    assert report.totals.person_days == 0
    assert "No organization is named `intel`" in report.hint and "`org:intel*` matches intel.com" in report.hint
    assert "`by:org` lists" in ask(tracked, "web org:nosuch").hint


@pytest.mark.parametrize("query", [
    "web range:v2.0-rc1..v2.0 until:2022-06",  # a range the right way round, emptied by the period
    "web org:intel.com until:2022-05",  # an organization that exists, before its first commit
    "web until:2022-05",  # before the history starts: a plain zero
])
def test_a_zero_that_looks_meant_gets_no_hint(tracked, query):
    report = ask(tracked, query)
    assert report.totals.person_days == 0 and report.hint is None


def test_every_face_shows_the_hint(tracked):
    report = ask(tracked, "web range:v2.0..v1.0")
    assert report.hint in " ".join(render_text(report).split())  # wrapped to the terminal
    assert report_to_dict(report)["hint"] == report.hint
    _, blocks = report_blocks(report, "web range:v2.0..v1.0")
    assert "range:v1.0..v2.0" in json.dumps(blocks)


def test_the_csv_carries_the_hint_in_a_column_every_row_of_a_zero_has(tracked, web, tmp_path):
    """A zero in `--csv` / `format:csv` came with no word on why, where text, Slack and JSON explain it: the hint is
    the last column, `hint`, on every row (a comment line would be a row to csv readers and spreadsheets)."""
    import csv
    import io

    from bot.render import report_to_csv
    from tests.test_cli import run

    newest = max(web.git("log", "--all", "--format=%ad", "--date=short").split())
    assert newest == "2023-03-01"
    for question in ("web since:2030", "web since:2030 by:month"):
        report = ask(tracked, question)
        rows = list(csv.DictReader(io.StringIO(report_to_csv(report))))
        assert rows and all(r["two_gad"] == "0" for r in rows)
        assert {r["hint"] for r in rows} == {report.hint}
        assert f"the newest commit in scope is from {newest}" in report.hint
    rows = list(csv.DictReader(io.StringIO(report_to_csv(ask(tracked, "web since:2022")))))
    assert rows[0]["two_gad"] != "0" and rows[0]["hint"] == ""  # no zero, nothing to explain
    data = tmp_path / "cli"
    assert run("track", str(web.path), "--name", "web", data=data).returncode == 0
    result = run("report", "web", "range:v2.0..v1.0", "--csv", data=data)
    (row,) = list(csv.DictReader(io.StringIO(result.stdout)))
    assert row["two_gad"] == "0" and row["hint"].endswith("Did you mean `range:v1.0..v2.0`?")
