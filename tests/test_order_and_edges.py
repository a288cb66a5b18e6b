"""Classes of bug that planted mistakes once slipped past (issue 20, part 3): row order where no renderer
re-sorts, boundaries met exactly, and identity rules at their edges. Expected values come from git or are
worked out by hand in each test, never from the code under test."""

from __future__ import annotations

import csv
import io
import json
from datetime import date

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.query import parse_command
from bot.render import render_text, report_to_csv, report_to_dict
from tests.gitbuild import RepoBuilder, oracle_pairs

TODAY = date(2026, 12, 4)


def _engine(tmp_path, **env) -> Engine:
    return Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), **env}))


def ask(engine: Engine, text: str):
    return engine.report(parse_command(text, TODAY).query, TODAY)


# -- row order: where commits and active days disagree ----------------------------------------------

@pytest.fixture
def crowd(tmp_path):
    """web: cy 3 days x 1 commit; zed 2 days, 5 commits; amy 2 days, 2 commits; bo 1 day, 9 commits.
    ops: 2 people x 1 day, 6 commits; api: 2 people x 1 day, 2 commits (the same active days as ops).
    Active days rank cy > zed = amy > bo, commits bo > zed > cy > amy, names amy < bo < cy < zed:
    each order gives a different table, and only (active days, then commits, then name) gives
    cy, zed, amy, bo."""
    web = RepoBuilder(tmp_path / "web")
    for day in ("01", "02", "03"):
        web.commit(name="Cy", email="cy@c.org", date=f"2024-01-{day}T10:00")
    for day, commits in (("01", 3), ("02", 2)):
        for i in range(commits):
            web.commit(name="Zed", email="zed@z.org", date=f"2024-01-{day}T1{i}:00")
    for day in ("04", "05"):
        web.commit(name="Amy", email="amy@a.org", date=f"2024-01-{day}T10:00")
    for i in range(9):
        web.commit(name="Bo", email="bo@b.org", date=f"2024-01-06T0{i}:00")
    ops = RepoBuilder(tmp_path / "ops")
    for i in range(5):
        ops.commit(name="Pat", email="pat@p.org", date=f"2024-02-01T1{i}:00")
    ops.commit(name="Quin", email="quin@q.org", date="2024-02-01T10:00")
    api = RepoBuilder(tmp_path / "api")
    api.commit(name="Ria", email="ria@r.org", date="2024-02-01T10:00")
    api.commit(name="Sol", email="sol@s.org", date="2024-02-02T10:00")
    engine = _engine(tmp_path)
    for b, name in ((web, "web"), (api, "api"), (ops, "ops")):
        engine.track(str(b.path), name, in_place=True)
    return engine


def test_by_person_rows_come_in_table_order_in_csv_and_json(crowd):
    report = ask(crowd, "web by:person")
    want = [("cy@c.org", 3, 3), ("zed@z.org", 2, 5), ("amy@a.org", 2, 2), ("bo@b.org", 1, 9)]
    rows = list(csv.DictReader(io.StringIO(report_to_csv(report))))
    assert [(r["person"], int(r["active_days"]), int(r["commits"])) for r in rows[:-1]] == want
    assert [(r["key"], r["active_days"], r["commits"]) for r in report_to_dict(report)["rows"]] == want
    text = render_text(report)
    assert [text.index(p) for p, _, _ in want] == sorted(text.index(p) for p, _, _ in want)


def test_by_repo_rows_come_in_table_order_in_csv_and_json(crowd):
    # web: 3 + 2 + 2 + 1 = 8 active days, 19 commits, first; ops and api 2 active days each, ops with
    # 6 commits, api with 2: ops before api, though api comes first by name
    report = ask(crowd, "web api ops by:repo")
    want = [("web", 8, 19), ("ops", 2, 6), ("api", 2, 2)]
    rows = list(csv.DictReader(io.StringIO(report_to_csv(report))))
    assert [(r["repo"], int(r["active_days"]), int(r["commits"])) for r in rows[:-1]] == want
    assert [(r["key"], r["active_days"], r["commits"]) for r in report_to_dict(report)["rows"]] == want


def test_by_org_rows_come_in_table_order_in_csv_and_json(crowd):
    # one organization per person (their e-mail domains): the same order as by:person
    report = ask(crowd, "web by:org")
    want = ["c.org", "z.org", "a.org", "b.org"]
    assert [r["org"] for r in csv.DictReader(io.StringIO(report_to_csv(report)))][:-1] == want
    assert [r["key"] for r in report_to_dict(report)["rows"]] == want


# -- exact boundaries --------------------------------------------------------------------------------

def test_a_dated_organization_rule_holds_on_its_last_day_and_not_the_next(tmp_path):
    web = RepoBuilder(tmp_path / "web")
    for day in ("2021-06-29", "2021-06-30", "2021-07-01"):  # the rule's last day is 2021-06-30
        web.commit(name="Bob", email="bob@example.org", date=f"{day}T23:30", offset=-300)  # UTC: the next day
    rules = tmp_path / "orgs.txt"
    rules.write_text("bob@example.org Collabora until 2021-06-30\nbob@example.org Intel\n")
    engine = _engine(tmp_path, GAD_ORG_FILE=str(rules))
    engine.track(str(web.path), "web", in_place=True)
    # the author's own dates: 06-29 and 06-30 with Collabora, 07-01 with Intel (UTC would move each a day)
    rows = {r.key: r.totals.person_days for r in ask(engine, "web by:org").rows}
    assert rows == {"Collabora": 2, "Intel": 1}
    assert ask(engine, "web org:collabora until:2021-06-30").totals.person_days == 2
    assert ask(engine, "web org:intel until:2021-06-30").totals.person_days == 0


def test_person_months_are_rounded_not_truncated(tmp_path):
    web = RepoBuilder(tmp_path / "web")
    for day in range(1, 19):  # 18 active days: 2GAD 36 = 36/19 = 1.8947 person-months
        web.commit(name="Ann", email="ann@example.com", date=f"2024-03-{day:02d}T10:00")
    engine = _engine(tmp_path)
    engine.track(str(web.path), "web", in_place=True)
    report = ask(engine, "web")
    assert report.totals.two_gad == 36
    assert "2GAD 36 person-days (1.9 person-months)" in render_text(report)  # truncation would say 1.8
    assert report_to_dict(report)["two_gad_person_months"] == 1.89


def test_bot_in_capitals_is_a_bot(tmp_path):
    web = RepoBuilder(tmp_path / "web")
    web.commit(name="Ann", email="ann@example.com", date="2024-03-01T10:00")
    web.commit(name="Renovate[BOT]", email="renovate@example.com", date="2024-03-02T10:00")
    web.commit(name="CI", email="ci[Bot]@example.com", date="2024-03-03T10:00")
    engine = _engine(tmp_path)
    engine.track(str(web.path), "web", in_place=True)
    # METRIC.md rule 3: `[bot]` case-insensitively in the name or the e-mail
    assert len(oracle_pairs(web.path)) == 1 and len(oracle_pairs(web.path, bots=True)) == 3
    assert ask(engine, "web").totals.person_days == 1
    assert ask(engine, "web bots:on").totals.person_days == 3


def test_a_mailmap_whose_entries_chain_is_applied_once_as_git_does(tmp_path):
    web = RepoBuilder(tmp_path / "web")
    # a@ -> b@, and b@ -> c@: git maps a@ to b@ (once), not on to c@
    mailmap = "B <b@example.com> <a@example.com>\nC <c@example.com> <b@example.com>\n"
    web.commit(name="A", email="a@example.com", date="2024-03-01T10:00", files={".mailmap": mailmap})
    web.commit(name="B", email="b@example.com", date="2024-03-01T11:00")
    web.commit(name="C", email="c@example.com", date="2024-03-01T12:00")
    engine = _engine(tmp_path)
    engine.track(str(web.path), "web", in_place=True)
    pairs = oracle_pairs(web.path)
    assert pairs == {(b"b@example.com", b"2024-03-01"), (b"c@example.com", b"2024-03-01")}  # git's own answer
    report = ask(engine, "web by:person")
    assert sorted(r.key for r in report.rows) == ["b@example.com", "c@example.com"]
    assert report.totals.person_days == len(pairs)
