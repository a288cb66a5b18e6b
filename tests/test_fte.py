"""`vs:fte` (issue 33 part 2): the full-time-equivalent model of Robles et al. beside 2GAD (METRIC.md, "A second
model"), over a history built in code whose half-years are worked out by hand below.

    Ann  (full-timer): active every day 2023-01-02 .. 2023-04-11 (100 days, 2023-H1), 2023-07-03/04/05 (H2)
    Bob  (occasional): 2023-03-01 (H1); two commits on 2023-10-10 (H2: one active day)
    Cy:  2023-12-31 23:30 at UTC-5 (UTC says 2024-01-01, his day is 2023-12-31: H2), 2024-02-01 .. 2024-02-06 (H1)

t = 12, per person and half-year min(6, 6 d / 12):
    2023-H1: Ann min(6, 50) = 6, Bob 0.5          -> 6.5
    2023-H2: Ann 1.5, Bob 0.5, Cy 0.5             -> 2.5
    2024-H1: Cy 3.0                               -> 3.0          total 12.0 person-months
GAD = 103 + 2 + 7 = 112, 2GAD 224 person-days = 11.789 person-months. Ann gets less from the model (7.5 against
2 x 103 / 19 = 10.84), Bob (1.0 against 0.21) and Cy (3.5 against 0.74) more.
"""

from __future__ import annotations

import csv
import io
import json
from datetime import date, timedelta

import pytest

from bot.engine.fte import fte
from bot.errors import QueryError
from bot.render.blocks import blocks_to_text, report_blocks
from bot.render.csvout import report_to_csv
from bot.render.jsonout import report_to_dict
from bot.render.text import render_text
from tests.conftest import engine_tracking
from tests.gitbuild import RepoBuilder
from tests.test_cli import run
from tests.test_estimation import ask, figures, git_records


def build_team(path) -> RepoBuilder:
    b = RepoBuilder(path)
    start = date(2023, 1, 2)
    for n in range(100):
        b.commit(name="Ann", email="ann@example.com", date=(start + timedelta(days=n)).isoformat())
    b.commit(name="Bob", email="bob@example.com", date="2023-03-01")
    for day in ("2023-07-03", "2023-07-04", "2023-07-05"):
        b.commit(name="Ann", email="ann@example.com", date=day)
    b.commit(name="Bob", email="bob@example.com", date="2023-10-10T09:00")
    b.commit(name="Bob", email="bob@example.com", date="2023-10-10T17:00")
    b.commit(name="Cy", email="cy@example.com", date="2023-12-31T23:30", offset=-300)
    for n in range(6):
        b.commit(name="Cy", email="cy@example.com", date=f"2024-02-0{n + 1}")
    return b


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    return build_team(tmp_path_factory.mktemp("fte") / "team")


@pytest.fixture(scope="module")
def engine(team, tmp_path_factory):
    return engine_tracking(tmp_path_factory.mktemp("fte-data"), team.path, "team")


def halves(report) -> list[tuple[str, int, int, float, bool]]:
    return [(h.key, h.people, h.active_days, round(h.person_months, 4), h.partial) for h in report.fte.halves]


def test_the_model_per_person_and_half_year_as_worked_out_by_hand(engine, team):
    report = ask(engine, "team vs:fte")
    assert report.totals.person_days == figures(git_records(team, "--branches", "--tags"))[0] == 112
    f = report.fte
    assert f.threshold == 12
    assert round(f.person_months, 6) == 12.0
    assert round(f.two_gad_person_months, 6) == round(224 / 19, 6)
    assert halves(report) == [("2023-H1", 2, 101, 6.5, False), ("2023-H2", 3, 5, 2.5, False),
                              ("2024-H1", 1, 6, 3.0, False)]
    assert (f.people_above, f.people_below) == (2, 1)  # Bob and Cy more, Ann less
    assert [h.full_time for h in f.halves] == [1, 0, 0]


def test_fte_n_sets_the_threshold(engine):
    f = ask(engine, "team fte:18").fte  # fte:N alone asks for the model
    # 2023-H1: Ann 6, Bob 1/3; 2023-H2: Ann 1, Bob 1/3, Cy 1/3; 2024-H1: Cy 2
    assert f.threshold == 18
    assert round(f.person_months, 6) == round(6 + 1 / 3 + 1 + 1 / 3 + 1 / 3 + 2, 6)


def test_a_half_year_cut_by_since_or_until_is_counted_inside_and_marked(engine):
    report = ask(engine, "team vs:fte since:2023-03-01 until:2024-02-03")
    # 2023-H1 from 03-01: Ann 42 days (03-01..04-11) -> 6, Bob 0.5; 2024-H1 to 02-03: Cy 3 days -> 1.5
    assert halves(report) == [("2023-H1", 2, 43, 6.5, True), ("2023-H2", 3, 5, 2.5, False),
                              ("2024-H1", 1, 3, 1.5, True)]
    partial = report.fte.partial
    assert (partial[0].first_day, partial[-1].last_day) == (date(2023, 3, 1), date(2024, 2, 3))
    assert "partial: 2023-H1 (2023-03-01 to 2023-06-30), 2024-H1 (2024-01-01 to 2024-02-03)" in " ".join(
        render_text(report).split())


def test_the_half_year_of_today_is_partial_without_until():
    # a pure check of the model: one person, 3 days in the half-year that holds today
    keys = [(7 << 32) | (date(2026, 7, d) - date(1970, 1, 1)).days for d in (1, 2, 3)]
    found = fte(keys, 12, None, None, date(2026, 12, 3))
    assert [(h.key, h.active_days, h.person_months, h.partial, h.last_day) for h in found.halves] == [
        ("2026-H2", 3, 1.5, True, date(2026, 12, 3))]


def test_filters_apply_before_the_model(engine):
    f = ask(engine, "team vs:fte author:bob@*").fte
    assert round(f.person_months, 6) == 1.0 and [h.key for h in f.halves] == ["2023-H1", "2023-H2"]


def test_every_face_shows_both_in_person_months_and_says_how_they_differ(engine):
    report = ask(engine, "team vs:fte")
    text = " ".join(render_text(report).split())
    assert "FTE model (Robles et al., t = 12): 12.0 person-months beside 2GAD's 11.8 (ratio 1.02)" in text
    said = ("gives occasional contributors more than 2GAD (one active day is 0.5 person-months, 9.5 person-days, "
            "against 2GAD's 2) and full-timers less")
    assert said in " ".join(text.split())
    assert "here 2 people got more from it and 1 person less" in " ".join(text.split())
    _, blocks = report_blocks(report, "team vs:fte")
    slack = " ".join(blocks_to_text(blocks).split())
    assert "FTE model (Robles et al., t = 12): 12.0 person-months beside 2GAD's 11.8" in slack and said in slack
    data = report_to_dict(report)
    assert data["fte"]["person_months"] == 12.0 and data["fte"]["threshold_active_days"] == 12
    assert [h["key"] for h in data["fte"]["half_years"]] == ["2023-H1", "2023-H2", "2024-H1"]
    assert any(said in note for note in data["footnotes"])
    [row] = list(csv.DictReader(io.StringIO(report_to_csv(report))))
    assert (row["fte_person_months"], row["fte_threshold"], row["two_gad_person_months"]) == ("12.0", "12", "11.7895")
    monthly = list(csv.DictReader(io.StringIO(report_to_csv(ask(engine, "team vs:fte by:year")))))
    assert [r["fte_person_months"] for r in monthly] == ["", "", "12.0"]  # the TOTAL row only


def test_without_vs_fte_nothing_changes(engine):
    report = ask(engine, "team")
    assert report.fte is None and "FTE" not in render_text(report) and report_to_dict(report)["fte"] is None
    assert "fte_person_months" not in report_to_csv(report)


@pytest.mark.parametrize("text,sentence", [
    ("team fte:0", "`fte:0` is not a threshold"),
    ("team fte:twelve", "`fte:twelve` is not a threshold"),
    ("team vs:fpa", "use `vs:cocomo` or `vs:fte`"),
])
def test_bad_thresholds_are_one_sentence(engine, text, sentence):
    with pytest.raises(QueryError, match=sentence.replace("(", r"\(")):
        ask(engine, text)


def test_the_cli_json_carries_the_model(team, tmp_path):
    done = run("report", str(team.path), "vs:fte", "--json", data=tmp_path / "data")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["fte"]["person_months"] == 12.0
