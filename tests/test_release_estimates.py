"""Releases that are releases, and the typical one (issue 33 part 1).

A flask-like history built in code: maintenance branches tagged `2.0.x` and `2.1.x` (placeholders, not releases),
a tag of a tag (peels to a commit: a release), a tag of a blob named like a version (never a row). Every row is
checked against `git log A..B` run for real (tests/test_estimation.py: git_records), never against the engine's
own `range:`; the typical release's quartiles are worked out by hand from those rows.

    main:  c1 2023-01-02 Ann [1.1.4]   c2 01-10 Bob   c3 02-01 Cy [2.0.0]   c4 03-01 Ann   c5 03-15 Bob [2.1.0]
           c6 04-01 Cy [2.1.1: a tag of a tag; 2.1.x]   c7 05-01 Ann [2.2.0]
    maint: m1 02-10 Dee (parent c3) [2.0.1]   m2 02-20 Dee [2.0.x]
    a blob tagged 2.5.0
"""

from __future__ import annotations

import csv
import io
import json

import pygit2
import pytest

from bot.engine.query import parse_command
from bot.engine.releases import is_placeholder, series_of
from bot.render.blocks import blocks_to_text, report_blocks
from bot.render.compare import compare_to_csv, render_compare_text
from bot.render.csvout import report_to_csv
from bot.render.jsonout import report_to_dict
from bot.render.text import render_text
from tests.conftest import TODAY, engine_tracking
from tests.gitbuild import RepoBuilder
from tests.test_estimation import ask, figures, git_records


def build_lib(path) -> RepoBuilder:
    b = RepoBuilder(path)
    c1 = b.commit(name="Ann", email="ann@example.com", date="2023-01-02")
    b.tag("1.1.4", c1)
    b.commit(name="Bob", email="bob@example.com", date="2023-01-10")
    c3 = b.commit(name="Cy", email="cy@example.com", date="2023-02-01")
    b.tag("2.0.0", c3, annotated=True)
    m1 = b.commit("maint", name="Dee", email="dee@example.com", date="2023-02-10", parents=[c3])
    b.tag("2.0.1", m1)
    m2 = b.commit("maint", name="Dee", email="dee@example.com", date="2023-02-20")
    b.tag("2.0.x", m2)  # flask's maintenance-branch tag: sorted as a version it came before 2.0.0
    b.commit(name="Ann", email="ann@example.com", date="2023-03-01")
    c5 = b.commit(name="Bob", email="bob@example.com", date="2023-03-15")
    b.tag("2.1.0", c5)
    c6 = b.commit(name="Cy", email="cy@example.com", date="2023-04-01")
    sig = pygit2.Signature("T", "t@example.com", 1700000000, 0)
    inner = b.repo.create_tag("2.1.1-inner", c6, pygit2.enums.ObjectType.COMMIT, sig, "inner\n")
    b.repo.create_tag("2.1.1", inner, pygit2.enums.ObjectType.TAG, sig, "a tag of a tag\n")  # peels to c6
    b.repo.references.delete("refs/tags/2.1.1-inner")  # only the outer tag names it
    b.tag("2.1.x", c6)
    blob = b.repo.create_blob(b"not a release\n")
    b.repo.create_tag("2.5.0", blob, pygit2.enums.ObjectType.BLOB, sig, "a blob named like a version\n")
    c7 = b.commit(name="Ann", email="ann@example.com", date="2023-05-01")
    b.tag("2.2.0", c7)
    return b


# each release's range, as git log takes it ("1.1.4" alone: everything up to it)
RANGES = [("1.1.4", "1.1.4"), ("2.0.0", "1.1.4..2.0.0"), ("2.0.1", "2.0.0..2.0.1"), ("2.1.0", "2.0.1..2.1.0"),
          ("2.1.1", "2.1.0..2.1.1"), ("2.2.0", "2.1.1..2.2.0")]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    return build_lib(tmp_path_factory.mktemp("releases") / "lib")


@pytest.fixture(scope="module")
def engine(lib, tmp_path_factory):
    return engine_tracking(tmp_path_factory.mktemp("releases-data"), lib.path, "lib")


def test_git_itself_sees_the_tags_as_built(lib):
    assert lib.git("cat-file", "-t", "2.5.0").strip() == "tag"
    assert lib.git("cat-file", "-t", "2.5.0^{}").strip() == "blob"
    assert lib.git("rev-parse", "2.1.1^{commit}") == lib.git("rev-parse", "2.1.x^{commit}")


def test_placeholders_blobs_are_no_rows_and_a_tag_of_a_tag_is_one(engine, lib):
    report = ask(engine, "lib by:release")
    assert [(r.key, r.release.range) for r in report.rows] == [
        (tag, f"..{revs}" if ".." not in revs else revs) for tag, revs in RANGES]
    for row, (_, revs) in zip(report.rows, RANGES):
        assert (row.totals.person_days, row.totals.developers, row.totals.commits) == figures(git_records(lib, revs)), revs
    assert report.rows[1].totals.person_days == 2  # 2.0.0: Bob 01-10, Cy 02-01 (it read 0 after 2.0.x)
    notes = " ".join(report.notes)
    assert "`2.0.x` and `2.1.x` end in a placeholder (`x`): they name branches of releases to come" in notes
    assert "2.5.0" not in render_text(report)


@pytest.mark.parametrize("name,placeholder", [("2.0.x", True), ("v1.x", True), ("release-3.X", True),
                                              ("2.0.0", False), ("v1.0", False), ("x", False), ("1.2.3x", False)])
def test_what_a_placeholder_is(name, placeholder):
    assert is_placeholder(name) is placeholder


def test_a_glob_that_names_placeholders_takes_them(engine):
    report = ask(engine, "lib by:release tags:*.x")
    assert [r.key for r in report.rows] == ["2.0.x", "2.1.x"]


def test_every_by_release_answer_states_the_typical_release(engine):
    report = ask(engine, "lib by:release")
    typical = report.typical
    # by hand from the rows above (git's figures), the first release left out: 2GAD 4, 2, 4, 2, 2 -> sorted
    # 2, 2, 2, 4, 4: median 2, P25 2, P75 4 (linear interpolation at (n - 1) p); intervals 30 (01-02 -> 02-01),
    # 9, 33, 17, 30 days -> 9, 17, 30, 30, 33: median 30, P25 17, P75 30
    assert (typical.releases, typical.left_out_first) == (5, True)
    assert (typical.two_gad.p25, typical.two_gad.median, typical.two_gad.p75) == (2, 2, 4)
    assert (typical.interval_days.p25, typical.interval_days.median, typical.interval_days.p75) == (17, 30, 30)
    line = ("Typical release (median of 5 releases; the first, everything before it, left out): 2GAD 2 person-days "
            "(P25-P75: 2-4), 30 days after the one before (P25-P75: 17-30 days)")
    assert line in " ".join(render_text(report).split())
    assert line in " ".join(blocks_to_text(report_blocks(report, "lib by:release")[1]).split())
    data = report_to_dict(report)["typical_release"]
    assert data["two_gad"] == {"p25": 2, "median": 2, "p75": 4, "count": 5} and data["interval_days"]["median"] == 30
    total = list(csv.DictReader(io.StringIO(report_to_csv(report))))[-1]
    assert (total["release"], total["typical_two_gad_median"], total["typical_interval_days_p75"]) == ("TOTAL", "2", "30")


def test_releases_series_folds_patch_releases_each_row_a_range(engine, lib):
    report = ask(engine, "lib by:release releases:series")
    expected = [("1.1 (1.1.4)", "..1.1.4", "1.1.4"), ("2.0 (2.0.1)", "1.1.4..2.0.1", "1.1.4..2.0.1"),
                ("2.1 (2.1.1)", "2.0.1..2.1.1", "2.0.1..2.1.1"), ("2.2 (2.2.0)", "2.1.1..2.2.0", "2.1.1..2.2.0")]
    assert [(r.key, r.release.range) for r in report.rows] == [(k, r) for k, r, _ in expected]
    for row, (_, _, revs) in zip(report.rows, expected):
        assert (row.totals.person_days, row.totals.developers, row.totals.commits) == figures(git_records(lib, revs)), revs
    assert [r.release.folded for r in report.rows] == [1, 2, 2, 1]
    # series 2GAD 6, 6, 2 (the first left out) -> median 6, P25 4, P75 6
    assert (report.typical.series, report.typical.two_gad.median, report.typical.two_gad.p25) == (True, 6, 4)
    assert "Typical series (median of 3 series" in " ".join(render_text(report).split())
    assert [series_of(t) for t in ("v2.1.3", "V_9_5_P1", "v5", "2.10.0")] == ["2.1", "9.5", "5", "2.10"]


def test_since_trimming_a_release_row_is_said(engine, lib):
    report = ask(engine, "lib by:release since:2023-01-15")
    rows = {r.key: r for r in report.rows}
    assert rows["2.0.0"].totals.person_days == figures(git_records(lib, "1.1.4..2.0.0"), since="2023-01-15")[0] == 1
    assert any("since:2023-01-15 also bounds the days counted inside each release" in n and "`2.0.0` 1 commit" in n
               for n in report.notes)


def test_compare_of_ranges_shows_each_ranges_tag_days_and_interval(engine):
    command = parse_command("compare lib range:1.1.4..2.0.0 range:2.0.0..2.1.0", TODAY)
    result = engine.compare(command, TODAY)
    assert [(r.range, r.range_start_day.isoformat(), r.range_end_day.isoformat(), r.range_interval_days)
            for r in result.rows] == [("1.1.4..2.0.0", "2023-01-02", "2023-02-01", 30),
                                      ("2.0.0..2.1.0", "2023-02-01", "2023-03-15", 42)]
    text = " ".join(render_compare_text(result, width=200).split())
    assert "1.1.4 (2023-01-02) to 2.0.0 (2023-02-01), 30 days" in text
    assert "each item's own range (what git's A..B lists)" in text and "all branches and tags" not in text
    rows = list(csv.DictReader(io.StringIO(compare_to_csv(result))))
    assert (rows[1]["range_start_day"], rows[1]["range_interval_days"]) == ("2023-02-01", "42")


def test_compare_csv_carries_the_period_and_filters(engine):
    command = parse_command("compare lib lib:file1.txt since:2023-02 until:2023-03 bots:on", TODAY)
    rows = list(csv.DictReader(io.StringIO(compare_to_csv(engine.compare(command, TODAY)))))
    assert {(r["since"], r["until"], r["filters"]) for r in rows} == {("2023-02-01", "2023-03-31", "bots:on")}


def test_compare_blocks_keep_every_field_past_slacks_ten(engine):
    import dataclasses

    from bot.metric import Cocomo
    from bot.render.compare import compare_blocks

    result = engine.compare(parse_command("compare lib range:1.1.4..2.0.0 range:2.0.0..2.1.0", TODAY), TODAY)
    cocomo = Cocomo("SLOCCount 2.26", 2_000, 4.9, 0.2, 0.04)  # by hand: 0.2 x 19 / 2 KSLOC = 1.90 per KSLOC
    rows = tuple(dataclasses.replace(r, cocomo=cocomo) for r in result.rows)
    _, blocks = compare_blocks(dataclasses.replace(result, rows=rows, vs_cocomo=True), "compare")
    assert all(len(b.get("fields", ())) <= 10 for b in blocks)
    shown = json.dumps(blocks)
    assert "*ratio*" in shown and "*2GAD / KSLOC*\\n1.90 person-days" in shown and "*range*" in shown
