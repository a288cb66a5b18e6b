"""Estimates people can defend (issue 19): `top:N`, COCOMO's modes, co-authors.

Histories are built in code; expected figures come from real `git log` (METRIC.md's rules applied by
hand here) or are worked out by hand in the test, never from the code under test.
"""

from __future__ import annotations

import json

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.query import parse_command
from bot.errors import QueryError
from bot.render import csvout, jsonout, text as text_render
from bot.render.blocks import report_blocks
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder

ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ask(engine: Engine, text: str):
    return engine.report(parse_command(text, TODAY).query, TODAY)


def blocks_text(blocks) -> str:
    return json.dumps(blocks)


@pytest.fixture
def crowd(tmp_path):
    """Six people with 6, 5, 4, 3, 2 and 1 active days; two of them tie on days and differ on commits."""
    b = RepoBuilder(tmp_path / "crowd")
    for person, days in (("p6", 6), ("p5", 5), ("p4", 4), ("p3", 3), ("p2", 2), ("p1", 1)):
        for day in range(1, days + 1):
            b.commit(name=person, email=f"{person}@example.com", date=f"2024-03-{day:02d}T10:00")
    b.commit(name="p4", email="p4@example.com", date="2024-03-01T11:00")  # p4: 4 days, 5 commits
    b.commit(name="q4", email="q4@other.org", date="2024-04-01")
    for day in (2, 3, 4):
        b.commit(name="q4", email="q4@other.org", date=f"2024-04-{day:02d}")  # q4: 4 days, 4 commits
    return b


@pytest.fixture
def crowd_engine(crowd, tmp_path):
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(crowd.path), "crowd")
    return engine


# -- top:N -------------------------------------------------------------------------------------------

def test_top_keeps_the_first_rows_in_display_order_and_counts_the_rest(crowd_engine):
    everyone = ask(crowd_engine, "crowd by:person")
    assert len(everyone.rows) == 7 and everyone.more_rows == 0
    top = ask(crowd_engine, "crowd by:person top:3")
    # by hand: p6 (6 days), p5 (5), then p4 and q4 tie on 4 days: p4 has 5 commits, q4 4: p4 first
    assert [r.key for r in top.rows] == ["p6@example.com", "p5@example.com", "p4@example.com"]
    assert top.more_rows == 4
    assert top.totals == everyone.totals  # the total is everyone's, whatever the table shows


def test_top_wording_in_every_face(crowd_engine):
    top = ask(crowd_engine, "crowd by:person top:3")
    text = text_render.render_text(top)
    assert "Top 3 contributors by active days" in text and "and 4 more people (top:3 shows the first 3)" in text
    blocks = blocks_text(report_blocks(top, "q"))
    assert "Top 3 contributors by active days" in blocks and "and 4 more people" in blocks
    data = jsonout.report_to_dict(top)
    assert data["more_rows"] == 4 and len(data["rows"]) == 3
    csv_lines = csvout.report_to_csv(top).splitlines()
    assert len(csv_lines) == 1 + 3 + 1  # header, the three rows, TOTAL


def test_a_table_of_everyone_says_people_not_top_contributors(crowd_engine):
    for query in ("crowd by:person", "crowd by:person top:7", "crowd by:person top:100"):
        report = ask(crowd_engine, query)
        assert report.more_rows == 0
        text = text_render.render_text(report)
        assert "People by active days" in text and "Top" not in text and "more people" not in text
        assert "People by active days" in blocks_text(report_blocks(report, "q"))


def test_top_cuts_organizations_and_repositories(crowd_engine):
    orgs = ask(crowd_engine, "crowd by:org top:1")
    # by hand: example.com holds p1..p6 (6+5+4+3+2+1 = 21 days), other.org q4's 4
    assert [(r.key, r.totals.person_days) for r in orgs.rows] == [("example.com", 21)] and orgs.more_rows == 1
    assert "and 1 more organization" in text_render.render_text(orgs)
    repos = ask(crowd_engine, "crowd by:repo top:5")
    assert len(repos.rows) == 1 and repos.more_rows == 0


@pytest.mark.parametrize("query, words", [
    ("crowd top:3", "add `by:person`, `by:org` or `by:repo`"),
    ("crowd by:month top:3", "add `by:person`, `by:org` or `by:repo`"),
    ("crowd by:person top:0", "`top:0` is not a number of rows"),
    ("crowd by:person top:ten", "`top:ten` is not a number of rows"),
    ("crowd by:person top:3 top:4", "given twice"),
])
def test_top_mistakes_get_one_sentence(query, words):
    with pytest.raises(QueryError) as caught:
        parse_command(query, TODAY)
    assert words in str(caught.value)


# -- cocomo:MODE ---------------------------------------------------------------------------------------

def test_cocomo_modes_are_basic_cocomo_three_pairs():
    from bot.engine import cocomo

    # Boehm's Basic COCOMO, worked out by hand for 10,000 lines (KSLOC 10): a x 10^b
    assert cocomo.basic_cocomo_person_months(10_000) == pytest.approx(2.4 * 10 ** 1.05)
    assert cocomo.basic_cocomo_person_months(10_000, "organic") == pytest.approx(26.9284, rel=1e-4)
    assert cocomo.basic_cocomo_person_months(10_000, "semidetached") == pytest.approx(39.5479, rel=1e-4)
    assert cocomo.basic_cocomo_person_months(10_000, "embedded") == pytest.approx(57.0561, rel=1e-4)
    result = cocomo.compare(38, "SLOCCount 2.26", 10_000, "embedded")
    assert result.mode == "embedded" and result.ratio == pytest.approx(2.0 / 57.0561, rel=1e-4)
    note = cocomo.footnote(result)
    assert "basic, embedded mode, person-months = 3.6 x KSLOC^1.20" in note and "SLOCCount prints" not in note
    assert "basic, organic mode, person-months = 2.4 x KSLOC^1.05 (as SLOCCount prints it)" in \
        cocomo.footnote(cocomo.compare(38, "SLOCCount 2.26", 10_000))


def test_cocomo_mode_parses_implies_vs_cocomo_and_refuses_others():
    query = parse_command("web cocomo:Semidetached", TODAY).query
    assert query.vs_cocomo and query.cocomo_mode == "semidetached"
    assert parse_command("web vs:cocomo", TODAY).query.cocomo_mode == "organic"
    with pytest.raises(QueryError, match="did you mean `cocomo:embedded`"):
        parse_command("web cocomo:embeded", TODAY)
    with pytest.raises(QueryError, match="is not a Basic COCOMO mode"):
        parse_command("web cocomo:intermediate", TODAY)


needs_sloccount = pytest.mark.skipif(__import__("shutil").which("sloccount") is None, reason="needs sloccount")


@needs_sloccount
def test_cocomo_mode_through_the_engine_and_every_face(tmp_path):
    up = RepoBuilder(tmp_path / "up")
    source = "".join(f"int v{i} = {i};\n" for i in range(2000))  # 2,000 physical lines of C
    up.commit(files={"a.c": source}, date="2024-01-02")
    up.commit(email="bob@example.com", files={"b.c": "int b;\n"}, date="2024-01-03")
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(up.path), "up")
    embedded = ask(engine, "up cocomo:embedded")
    organic = ask(engine, "up vs:cocomo")
    assert embedded.cocomo.sloc == organic.cocomo.sloc == 2001
    assert embedded.cocomo.mode == "embedded" and organic.cocomo.mode == "organic"
    assert embedded.cocomo.person_months == pytest.approx(3.6 * 2.001 ** 1.20)
    assert organic.cocomo.person_months == pytest.approx(2.4 * 2.001 ** 1.05)
    assert "embedded mode" in text_render.render_text(embedded)
    assert "basic, embedded" in blocks_text(report_blocks(embedded, "q"))
    assert jsonout.report_to_dict(embedded)["cocomo"]["mode"] == "embedded"
    from bot.render.compare import compare_to_csv, compare_to_dict

    compared = engine.compare(parse_command("compare up up:a.c cocomo:semidetached", TODAY), TODAY)
    assert [r.cocomo.mode for r in compared.rows] == ["semidetached", "semidetached"]
    assert compare_to_dict(compared)["compare"][0]["cocomo_mode"] == "semidetached"
    assert "semidetached" in compare_to_csv(compared)
