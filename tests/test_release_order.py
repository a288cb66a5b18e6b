"""by:release on an OpenSSH-shaped history, as a new estimator first runs it (issue 20 on issue 19's work).

Tracked for real (openssh-portable, 2026-12), `openssh by:release` sorted V_3_6_1_P1 before V_3_6_P1 (the
separator `_` compared as text with the suffix `_P`), so V_3_6_P1's row read `V_3_6_1_P2..V_3_6_P1`: a zero,
a negative interval, and its work counted in the wrong row; and tags that are no releases (PRE_IPV6 of 2000,
POST_KRB4_REMOVAL of 2003) sat among the V_4 and V_5 rows, so V_5_0_P1 counted everything since 2003. The
history below has both shapes; expected rows come from `git log PREVIOUS..THIS` (tests/test_estimation.py).
"""

from __future__ import annotations

import csv
import io
import json
import re
import shutil

import pytest

from tests.gitbuild import RepoBuilder
from tests.test_cli import run
from tests.test_estimation import figures, git_records


def build_portable(path) -> RepoBuilder:
    b = RepoBuilder(path)
    pre = b.commit(name="Damien", email="djm@example.org", date="2000-01-11")
    b.tag("PRE_IPV6", pre)  # a marker tag of 2000, not a release
    b.tag("V_3_6_P1", b.commit(name="Damien", email="djm@example.org", date="2003-03-26"))
    marker = b.commit(name="Ben", email="ben@example.org", date="2003-03-28")
    b.tag("V_3_6_1_P1", b.commit(name="Ben", email="ben@example.org", date="2003-04-01"))
    b.tag("V_3_6_1_P2", b.commit(name="Darren", email="dtucker@example.org", date="2003-04-29"))
    b.tag("POST_KRB4_REMOVAL", marker)  # points into 3.6.1's work
    b.commit(name="Damien", email="djm@example.org", date="2003-09-10")
    b.tag("V_3_7_P1", b.commit(name="Darren", email="dtucker@example.org", date="2003-09-16"))
    b.tag("V_3_7_1_P1", b.commit(name="Ben", email="ben@example.org", date="2003-09-17"))
    b.tag("AFTER_KRB5_GSSAPI_MERGE", b.commit(name="Damien", email="djm@example.org", date="2003-10-01"))
    b.tag("V_3_8_P1", b.commit(name="Damien", email="djm@example.org", date="2004-02-24"))
    return b


ROWS = [("V_3_6_P1", "V_3_6_P1"), ("V_3_6_1_P1", "V_3_6_P1..V_3_6_1_P1"), ("V_3_6_1_P2", "V_3_6_1_P1..V_3_6_1_P2"),
        ("V_3_7_P1", "V_3_6_1_P2..V_3_7_P1"), ("V_3_7_1_P1", "V_3_7_P1..V_3_7_1_P1"),
        ("V_3_8_P1", "V_3_7_1_P1..V_3_8_P1")]


@pytest.fixture(scope="module")
def openssh_once(tmp_path_factory):
    """build_portable's history tracked as `openssh` through the CLI, once for the module."""
    base = tmp_path_factory.mktemp("openssh")
    portable = build_portable(base / "portable")
    assert run("track", str(portable.path), "--name", "openssh", data=base / "data").returncode == 0
    return portable, base / "data"


@pytest.fixture
def openssh(openssh_once, tmp_path):
    """(the repository, a data directory of this test's own where it is tracked as `openssh`)."""
    portable, tracked = openssh_once
    shutil.copytree(tracked, tmp_path / "data")
    return portable, tmp_path / "data"


def test_openssh_releases_come_in_their_order_and_marker_tags_are_no_releases(openssh):
    portable, data = openssh
    result = run("report", "openssh", "by:release", "--json", data=data)
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert [(r["key"], r["release"]["range"].lstrip(".")) for r in rows] == ROWS
    for row, (_, revs) in zip(rows, ROWS):
        assert (row["active_days"], row["developers"], row["commits"]) == figures(git_records(portable, revs)), revs
        assert row["release"]["interval_days"] is None or row["release"]["interval_days"] > 0, row["key"]
    # by hand: 3.6.1p1 is Ben's two commits (03-28, 04-01); 3.8p1 is Damien's 10-01 and 02-24
    assert (rows[1]["active_days"], rows[5]["active_days"]) == (2, 2)


def test_a_release_table_cut_to_its_newest_releases_does_not_say_all_history(openssh):
    """`openssh by:release` (the newest 100 of 116 releases) was headed "2GAD 9,874 person-days, all history" while
    `openssh` alone says 10,232 for all history: the period names the releases counted instead."""
    portable, data = openssh
    text = run("report", "openssh", "by:release", "top:2", data=data)
    assert text.returncode == 0, text.stderr
    # by hand: V_3_7_1_P1 is Ben's 2003-09-17, V_3_8_P1 Damien's 2003-10-01 and 2004-02-24: 3 person-days
    assert figures(git_records(portable, "V_3_7_P1..V_3_8_P1"))[0] == 3
    assert text.stdout.splitlines()[0] == "openssh: 2GAD 6 person-days, the newest 2 releases (2003-09-17 to 2004-02-24)"
    assert "all history" not in text.stdout
    doc = json.loads(run("report", "openssh", "by:release", "top:2", "--json", data=data).stdout)
    assert (doc["period"], doc["since"], doc["until"], doc["more_rows"]) == ("the newest 2 releases", None, None, 4)
    every = json.loads(run("report", "openssh", "by:release", "--json", data=data).stdout)
    assert (every["period"], every["more_rows"]) == ("all history", 0)  # nothing cut: it is all history


def test_a_release_tagged_on_its_predecessors_commit_says_why_its_row_is_zero(tmp_path):
    """openssh-portable tags V_10_0_P1 and V_10_0_P2 on one commit: V_10_0_P2's row was 0 person-days, 0 commits,
    '0 days', with nothing to say why. A row that is zero because its tag names the previous release's commit
    says so, in the text and in the JSON notes."""
    portable = build_portable(tmp_path / "portable")
    portable.tag("V_3_8_P2", portable.tip("refs/tags/V_3_8_P1"), annotated=True)  # a second tag on one commit
    data = tmp_path / "data"
    assert run("track", str(portable.path), "--name", "openssh", data=data).returncode == 0
    assert portable.git("rev-parse", "V_3_8_P1^{}") == portable.git("rev-parse", "V_3_8_P2^{}")
    doc = json.loads(run("report", "openssh", "by:release", "--json", data=data).stdout)
    last = doc["rows"][-1]
    assert (last["key"], last["release"]["previous"], last["active_days"], last["commits"]) == (
        "V_3_8_P2", "V_3_8_P1", 0, 0)
    said = "`V_3_8_P2` names the same commit as `V_3_8_P1`, so its row counts nothing."
    assert said in doc["notes"]
    text = run("report", "openssh", "by:release", data=data).stdout
    assert said in " ".join(text.split())


def test_a_range_whose_two_ends_are_one_commit_says_so_rather_than_a_bare_zero(tmp_path):
    """`openssh range:V_10_0_P1..V_10_0_P2` answered 0 person-days, 0 commits, 'no commits' and nothing else: both
    tags name one commit. The zero says so (git log A..B lists nothing for the same reason)."""
    portable = build_portable(tmp_path / "portable")
    portable.tag("V_3_8_P2", portable.tip("refs/tags/V_3_8_P1"))
    assert portable.git("log", "--format=%H", "V_3_8_P1..V_3_8_P2") == ""
    data = tmp_path / "data"
    assert run("track", str(portable.path), "--name", "openssh", data=data).returncode == 0
    said = ("`V_3_8_P1` and `V_3_8_P2` name the same commit, so `range:V_3_8_P1..V_3_8_P2` lists nothing; "
            "`openssh by:release` shows each release's own range.")
    text = run("report", "openssh", "range:V_3_8_P1..V_3_8_P2", data=data)
    assert text.returncode == 0 and said in " ".join(text.stdout.split())
    doc = json.loads(run("report", "openssh", "range:V_3_8_P1..V_3_8_P2", "--json", data=data).stdout)
    assert doc["two_gad"] == 0 and doc["hint"] == said
    other = json.loads(run("report", "openssh", "range:V_3_7_P1..V_3_8_P1", "--json", data=data).stdout)
    assert other["hint"] is None and other["active_days"] == 3  # Ben 09-17, Damien 10-01 and 02-24


def test_compare_says_why_an_item_is_zero_as_report_does(openssh):
    """`compare openssh range:V_9_5_P1..V_9_0_P1 range:V_9_0_P1..V_9_5_P1` showed the reversed range as a row of
    zeros with nothing said, where `report` says it is reversed. Each item's zero sentence is a note of the
    comparison, naming the item."""
    portable, data = openssh
    result = run("compare", "openssh", "range:V_3_7_P1..V_3_6_P1", "range:V_3_6_P1..V_3_7_P1", "--json", data=data)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    figures_by_item = {row["item"]: row["active_days"] for row in doc["compare"]}
    assert figures_by_item == {"openssh@V_3_7_P1..V_3_6_P1": 0,
                               "openssh@V_3_6_P1..V_3_7_P1": figures(git_records(portable, "V_3_6_P1..V_3_7_P1"))[0]}
    said = ("openssh@V_3_7_P1..V_3_6_P1: `range:V_3_7_P1..V_3_6_P1` lists what `V_3_6_P1` added after `V_3_7_P1`, "
            "and that is nothing: `V_3_6_P1` is the older of the two. Did you mean `range:V_3_6_P1..V_3_7_P1`?")
    assert said in doc["footnotes"]
    text = run("compare", "openssh", "range:V_3_7_P1..V_3_6_P1", "range:V_3_6_P1..V_3_7_P1", data=data).stdout
    assert said in " ".join(text.split())
    assert not any("Did you mean" in n for n in json.loads(run(
        "compare", "openssh", "range:V_3_6_P1..V_3_7_P1", "range:V_3_7_P1..V_3_8_P1", "--json", data=data).stdout)["footnotes"])
    # the CSV had the row of zeros and not the sentence: each row's `hint` holds its own (the JSON's rows too)
    result = run("compare", "openssh", "range:V_3_7_P1..V_3_6_P1", "range:V_3_6_P1..V_3_7_P1", "--csv", data=data)
    hints = {row["item"]: (row["active_days"], row["hint"]) for row in csv.DictReader(io.StringIO(result.stdout))}
    assert hints == {"openssh@V_3_7_P1..V_3_6_P1": ("0", said.removeprefix("openssh@V_3_7_P1..V_3_6_P1: ")),
                     "openssh@V_3_6_P1..V_3_7_P1": (str(figures_by_item["openssh@V_3_6_P1..V_3_7_P1"]), "")}
    assert [row["hint"] for row in doc["compare"]] == [hints["openssh@V_3_7_P1..V_3_6_P1"][1], None]


def test_compare_in_a_terminal_never_cuts_a_figure_near_the_tables_width(tmp_path):
    """`compare openssh range:V_9_0_P1..V_9_5_P1 range:V_9_5_P1..V_10_0_P1` piped (150 columns) printed the busiest
    month as '2023-03 (2GAD 9…': the table was chosen as fitting when it was a few columns too wide. At every
    terminal width from well below the table's own to just above it, each figure is whole and no line is wider."""
    from click.testing import CliRunner

    from bot.faces.cli import cli

    portable = build_portable(tmp_path / "portable")
    env = {"GAD_DATA_DIR": str(tmp_path / "data")}
    assert CliRunner().invoke(cli, ["track", str(portable.path), "--name", "openssh"], env=env).exit_code == 0
    ask = ["compare", "openssh", "range:V_3_6_P1..V_3_7_1_P1", "range:V_3_7_1_P1..V_3_8_P1"]
    wide = CliRunner().invoke(cli, ask, env={**env, "COLUMNS": "400"}).output
    table_width = max(len(line) for line in wide.splitlines() if line.startswith("openssh@"))
    # by hand: V_3_6_P1..V_3_7_1_P1 is Ben 03-28, 04-01, 09-17, Darren 04-29, 09-16, Damien 09-10: 2GAD 12;
    # its busiest month 2003-09 (Darren 16, Damien 10, Ben 17: 2GAD 6)
    assert figures(git_records(portable, "V_3_6_P1..V_3_7_1_P1"))[0] == 6
    for width in range(table_width - 24, table_width + 3):
        text = CliRunner().invoke(cli, ask, env={**env, "COLUMNS": str(width)}).output
        assert "…" not in text, width
        assert "2003-09 (2GAD 6)" in text and "2003-03-28 to 2003-09-17" in text, width
        assert max(map(len, text.splitlines())) <= width, width


def test_release_names_too_long_for_the_table_fold_and_no_figure_is_cut(tmp_path):
    """Tags of 37 characters (one long product word, then the version) made the terminal's by:release table drop
    its 2GAD and interval columns, cut the days to '2021…' and the names before their version, so that three
    releases read as one name three times. Names fold; every figure, day and interval stays whole."""
    from click.testing import CliRunner

    from bot.faces.cli import cli

    b = RepoBuilder(tmp_path / "long")
    for year in (1, 2, 3):  # 27 people, one commit each on a day of their own, per release
        for day in range(1, 28):
            b.commit(name=f"P{day}", email=f"p{day}@example.com", date=f"202{year}-0{year}-{day:02d}")
        b.tag(f"enterpriseplatformgatewayservice-{year}.0.0", b.tip("main"))
    env = {"GAD_DATA_DIR": str(tmp_path / "data")}
    assert CliRunner().invoke(cli, ["track", str(b.path)], env=env).exit_code == 0
    text = CliRunner().invoke(cli, ["report", "long", "by:release"], env=env).output
    assert "…" not in text  # rich's mark of a cut cell: no name, day or figure lost a character
    table = text[text.index("By release"):text.index("total")]
    # by hand: each release 27 active days (2GAD 54); tagged on the 27th; 396 and 393 days apart
    for day, interval in (("2021-01-27", "first"), ("2022-02-27", "13.0 months"), ("2023-03-27", "12.9 months")):
        assert re.search(rf"{day}\s+{interval}\s+54\s+27\s+27\s+27", table), (day, table)


def test_compare_of_one_repository_by_release_is_told_what_to_ask(tmp_path):
    """`compare openssh by:release` was told to name two things to compare (another repository), not that compare
    does not break a history into releases and what to ask instead."""
    result = run("compare", "openssh", "by:release", data=tmp_path / "data")
    assert result.returncode == 2
    assert result.stderr.startswith("gad-bot: `compare` gives one row per item, and `by:release` one row per release "
                                    "of one repository; ask `openssh by:release`, or set releases side by side")


def test_compare_of_ranges_says_each_item_has_its_own_range_not_all_history(openssh):
    """`compare openssh range:V_9_0_P1..V_9_5_P1 range:V_9_5_P1..V_10_0_P1` was headed '(all history)'; each item
    counts its own range, and the text headline, the JSON period and each JSON item say so."""
    portable, data = openssh
    ask = ("compare", "openssh", "range:V_3_6_P1..V_3_7_P1", "range:V_3_7_P1..V_3_8_P1")
    text = run(*ask, data=data).stdout
    assert text.splitlines()[0] == ("Side by side: openssh@V_3_6_P1..V_3_7_P1, openssh@V_3_7_P1..V_3_8_P1 "
                                    "(each item over its own range)")
    doc = json.loads(run(*ask, "--json", data=data).stdout)
    assert doc["period"] == "each item over its own range"
    assert [row["range"] for row in doc["compare"]] == ["V_3_6_P1..V_3_7_P1", "V_3_7_P1..V_3_8_P1"]
    dated = json.loads(run("compare", "openssh@V_3_6_P1..V_3_7_P1", "openssh@V_3_7_P1..V_3_8_P1", "since:2003-06",
                           "--json", data=data).stdout)
    assert dated["period"] == "each item over its own range, since 2003-06-01"
