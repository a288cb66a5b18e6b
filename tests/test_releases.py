"""`by:release` (issue 19 part 2): a repository's releases, each what `git log PREVIOUS..THIS` lists.

The history is built in code: annotated and lightweight tags, a maintenance release tagged after the next
minor one, a release candidate, a tag on a merge that brings older commits in, a trailing beta, tags that
are not versions and a `debian/` series for `tags:GLOB`. Expected figures come from `git log A..B` run for
real through METRIC.md's pipeline (tests/test_estimation.py: git_records, figures) or are worked out by hand.
"""

from __future__ import annotations

import csv
import io
import json
import random
import re

import numpy as np
import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.query import parse_query
from bot.engine.refs import is_prerelease, version_key
from bot.errors import QueryError
from bot.faces.slack import build_app
from bot.render.text import render_text
from bot.store.graph import consecutive_ranges, reachable
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub
from tests.test_cli import run
from tests.test_estimation import ask, figures, git_records
from tests.test_estimation_faces import read
from tests.test_slack import SECRET, ack_body, answer, dispatch


def build_shop(path) -> RepoBuilder:
    """Releases v1.0 (annotated) .. v1.2.0, a 1.0.x maintenance branch whose v1.0.2 is tagged after v1.1.0,
    v1.1.0-rc1 before v1.1.0, v1.2.0 on a merge of a branch forked before v1.1.0, v2.0.0-beta.1 at the end."""
    b = RepoBuilder(path)
    c1 = b.commit(name="Ann", email="ann@example.com", date="2023-01-02")
    b.tag("v1.0", c1, annotated=True)
    b.tag("debian/1.0-1", c1)
    b.commit(name="Bob", email="bob@example.com", date="2023-01-10")
    feature = b.commit("feature", name="Eve", email="eve@example.com", date="2023-01-20")  # forked here
    rc = b.commit(name="Cy", email="cy@example.com", date="2023-02-01T23:30", offset=-300)  # UTC: 02-02
    b.tag("v1.1.0-rc1", rc)
    b.tag("nightly", rc)
    v110 = b.commit(name="Bob", email="Bob@Example.com", date="2023-03-01")
    b.tag("v1.1.0", v110)
    b.tag("debian/1.1.0-1", v110)
    fix1 = b.commit("1.0.x", name="Dee", email="dee@example.com", date="2023-02-10", parents=[c1])
    b.tag("v1.0.1", fix1)
    fix2 = b.commit("1.0.x", name="Dee", email="dee@example.com", date="2023-04-05")
    b.tag("v1.0.2", fix2, annotated=True)  # tagged after v1.1.0: out of version order in time
    assert b.tip("feature") == feature
    merge = b.merge("main", feature, name="Ann", email="ann@example.com", date="2023-05-01")
    b.tag("v1.2.0", merge)
    beta = b.commit(name="Fay", email="fay@example.com", date="2023-06-01")
    b.tag("v2.0.0-beta.1", beta)
    b.commit(name="Gus", email="gus@example.com", date="2023-07-01")  # after every release
    return b


# the version order, folded (v1.1.0-rc1 into v1.1.0), and each row's range
ROWS = [("v1.0", "v1.0"), ("v1.0.1", "v1.0..v1.0.1"), ("v1.0.2", "v1.0.1..v1.0.2"), ("v1.1.0", "v1.0.2..v1.1.0"),
        ("v1.2.0", "v1.1.0..v1.2.0"), ("v2.0.0-beta.1", "v1.2.0..v2.0.0-beta.1")]


@pytest.fixture
def shop(tmp_path):
    return build_shop(tmp_path / "shop")


@pytest.fixture
def tracked(shop, tmp_path):
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(shop.path), "shop")
    return engine


def refusal(engine: Engine, text: str) -> str:
    """The one sentence the engine answers `text` with instead of a report."""
    with pytest.raises(QueryError) as raised:
        ask(engine, text)
    return str(raised.value)


def row_figures(row) -> tuple[int, int, int]:
    return row.totals.person_days, row.totals.developers, row.totals.commits


def test_each_release_counts_what_git_log_previous_dot_dot_this_lists(tracked, shop):
    report = ask(tracked, "shop by:release")
    assert [(r.key, r.release.range.lstrip(".") if r.release.previous is None else r.release.range)
            for r in report.rows] == ROWS
    for row, (_, revs) in zip(report.rows, ROWS):
        assert row_figures(row) == figures(git_records(shop, revs)), revs
    # by hand: v1.2.0's merge brings Eve's commit of 2023-01-20, older than v1.1.0; v1.1.0 folds in the rc
    by_tag = {r.key: r for r in report.rows}
    assert row_figures(by_tag["v1.2.0"]) == (2, 2, 2)
    assert row_figures(by_tag["v1.1.0"]) == (3, 2, 3)  # Bob 01-10, Cy 02-01 (his own day), Bob 03-01
    # the total counts the rows' commits once: what every release tag reaches, not Gus's unreleased commit
    tags = [tag for tag, _ in ROWS]
    assert row_figures(report) == figures(git_records(shop, *tags))


def test_tags_carry_their_commit_day_and_the_interval(tracked):
    rows = {r.key: r.release for r in ask(tracked, "shop by:release").rows}
    assert rows["v1.0"].previous is None and rows["v1.0"].day.isoformat() == "2023-01-02"
    assert (rows["v1.0.2"].day.isoformat(), rows["v1.0.2"].interval_days) == ("2023-04-05", 54)  # 02-10 -> 04-05
    # v1.1.0 (2023-03-01) comes after v1.0.2 in version order but was tagged on an older commit
    assert (rows["v1.1.0"].previous, rows["v1.1.0"].interval_days) == ("v1.0.2", -35)
    assert rows["v2.0.0-beta.1"].prerelease  # no release after it yet: a row of its own


def test_prereleases_on_shows_the_candidate_and_its_own_range(tracked, shop):
    report = ask(tracked, "shop by:release prereleases:on")
    keys = [r.key for r in report.rows]
    assert keys == ["v1.0", "v1.0.1", "v1.0.2", "v1.1.0-rc1", "v1.1.0", "v1.2.0", "v2.0.0-beta.1"]
    rows = {r.key: r for r in report.rows}
    assert rows["v1.1.0"].release.range == "v1.1.0-rc1..v1.1.0"
    assert row_figures(rows["v1.1.0-rc1"]) == figures(git_records(shop, "v1.0.2..v1.1.0-rc1"))
    assert row_figures(rows["v1.1.0"]) == figures(git_records(shop, "v1.1.0-rc1..v1.1.0")) == (1, 1, 1)


def test_a_tag_glob_picks_another_series(tracked, shop):
    report = ask(tracked, "shop by:release tags:debian/*")
    assert [(r.key, r.release.range) for r in report.rows] == [("debian/1.0-1", "..debian/1.0-1"),
                                                                ("debian/1.1.0-1", "debian/1.0-1..debian/1.1.0-1")]
    assert row_figures(report.rows[1]) == figures(git_records(shop, "debian/1.0-1..debian/1.1.0-1"))
    assert "tags:debian/*" in render_text(report)


def test_every_other_token_applies_inside_each_release_as_range_does(tracked, shop):
    report = ask(tracked, "shop by:release author:bob@* until:2023-02")
    rows = {r.key: r for r in report.rows}
    assert set(rows) == {"v1.0", "v1.0.1"}  # the releases tagged by the end of February
    kept = [r for r in git_records(shop, "v1.0..v1.0.1") if r[0].startswith("bob@")]
    assert row_figures(rows["v1.0.1"]) == figures(kept, until="2023-02-28") == (0, 0, 0)
    since = ask(tracked, "shop by:release since:2023-03")
    assert [r.key for r in since.rows] == ["v1.0.2", "v1.1.0", "v1.2.0", "v2.0.0-beta.1"]
    assert row_figures(since.rows[1]) == figures(git_records(shop, "v1.0.2..v1.1.0"), since="2023-03-01") == (1, 1, 1)


def test_the_newest_releases_are_shown_and_the_rest_counted(tmp_path):
    b = RepoBuilder(tmp_path / "many")
    for n in range(130):
        b.tag(f"v0.{n}", b.commit(name=f"P{n % 3}", email=f"p{n % 3}@example.com", date=f"2023-01-01T{n % 24:02}:00"
                                  if n < 24 else f"2023-{1 + n // 24:02}-02"))
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(b.path), "many")
    report = ask(engine, "many by:release")
    assert len(report.rows) == 100 and report.more_rows == 30
    assert (report.rows[0].key, report.rows[0].release.previous, report.rows[-1].key) == ("v0.30", "v0.29", "v0.129")
    assert all(r.totals.commits == 1 for r in report.rows)
    assert "and 30 older releases" in render_text(report)
    few = ask(engine, "many by:release top:3")
    assert [r.key for r in few.rows] == ["v0.127", "v0.128", "v0.129"] and few.more_rows == 127


@pytest.mark.parametrize("text, message", [
    ("shop lib by:release", "`by:release` breaks one repository's history into its releases, and 2 were named; "
                            "ask for each on its own, e.g. `shop by:release`."),
    ("shop tags:v*", "`tags:v*` chooses the releases of `by:release`; add `by:release`, e.g. "
                     "`shop by:release tags:v*`."),
    ("shop prereleases:on", "`prereleases:on` chooses the releases of `by:release`; add `by:release`, e.g. "
                            "`shop by:release prereleases:on`."),
    ("shop by:release range:v1.0..v1.1.0", "`by:release` counts each release's own range (what git's "
                                           "`previous..this` lists), so leave out `range:v1.0..v1.1.0`."),
    ("shop by:release branch:main", "`by:release` counts each release's own range (what git's `previous..this` "
                                    "lists), so leave out `branch:main`."),
    ("shop by:release top:101", "`by:release` shows at most the newest 100 releases; use `top:100` or fewer, "
                                "and `until:` to reach older ones (e.g. `until:2020`)."),
    ("shop by:release tags:(a+)+$", "`tags:(a+)+$` is not a tag pattern; use up to 100 characters of a tag name "
                                    "with `*` and `?`, e.g. `tags:v*` or `tags:release-*`."),
    ("shop by:release tags:" + "v" * 101, "`tags:" + "v" * 40 + "...` is not a tag pattern; use up to 100 "
                                          "characters of a tag name with `*` and `?`, e.g. `tags:v*` or `tags:release-*`."),
    ("compare shop shop:src by:release", "`compare` gives one row per item, and `by:release` one row per release of "
                                         "one repository; ask `shop by:release`, or set releases side by side as "
                                         "ranges: `compare shop range:v1.0..v1.1 range:v1.1..v1.2`."),
])
def test_what_by_release_cannot_go_with_is_one_sentence(text, message):
    from bot.engine.query import parse_command

    with pytest.raises(QueryError) as raised:
        parse_command(text, TODAY)
    assert str(raised.value) == message


def test_a_project_or_a_repository_without_releases_is_one_sentence(tracked, tmp_path):
    other = RepoBuilder(tmp_path / "plain")
    other.tag("latest", other.commit(name="Ann", email="ann@example.com", date="2024-01-02"))
    tracked.track(str(other.path), "plain")
    tracked.project_add("both", ["shop", "plain"])
    assert refusal(tracked, "both by:release") == ("`by:release` breaks one repository's history into its releases, and `both` holds 2; "
                                 "ask for one of them, e.g. `shop by:release`.")
    assert refusal(tracked, "plain by:release") == ("`plain` has no tags that look like versions; its tags (newest first) are `latest`. "
                                 "Name the releases with `tags:GLOB`, e.g. `tags:latest*`.")
    assert refusal(tracked, "shop by:release tags:x*") == ("`shop` has no tag matching `tags:x*`; its tags (newest first) are `v2.0.0-beta.1`, "
                                 "`v1.2.0`, `debian/1.1.0-1`, `v1.1.0`, `v1.1.0-rc1`, `v1.0.2` and 4 more. Name the "
                                 "releases with `tags:GLOB`, e.g. `tags:v*`.")


def test_versions_sort_as_a_reader_expects():
    tags = ["V_9_6", "V_9_5_P1", "v1.10", "V_9_5", "1.0b2", "1.0", "v2.0-rc1", "v2.0", "release-1.2", "v1.9"]
    assert sorted(tags, key=version_key) == ["1.0b2", "1.0", "release-1.2", "v1.9", "v1.10", "v2.0-rc1", "v2.0",
                                             "V_9_5", "V_9_5_P1", "V_9_6"]
    assert [t for t in tags if is_prerelease(t)] == ["1.0b2", "v2.0-rc1"]
    assert is_prerelease("v3.0.0-beta.1") and is_prerelease("4.0~pre1") and not is_prerelease("beta-1.0")


def test_consecutive_ranges_equal_one_full_search_per_pair():
    """graph.consecutive_ranges stops each search where the previous tip's history begins; on random graphs
    (merges, tips out of order, a tip repeated, a tip older than the one before) it equals two full searches,
    and the last tip's reach it hands back equals a full search from that tip."""
    rng = random.Random(19)
    for _ in range(300):
        n = rng.randint(1, 60)
        parents = [rng.sample(range(i), min(i, rng.choice((0, 1, 1, 1, 2)))) for i in range(n)]
        offsets = np.zeros(n + 1, np.int64)
        offsets[1:] = np.cumsum([len(p) for p in parents])
        flat = np.array([p for ps in parents for p in ps], np.int32)
        tips = [rng.randrange(n) for _ in range(rng.randint(1, 8))]
        before = None
        ranges, last_reach = consecutive_ranges(offsets, flat, tips)
        for tip, got in zip(tips, ranges):
            reach = reachable(offsets, flat, np.array([tip]))
            assert np.array_equal(np.flatnonzero(reach & ~before if before is not None else reach), got)
            before = reach
        assert np.array_equal(last_reach, before)


# -- the faces: Slack's real path, the CLI as a process ----------------------------------------------------

@pytest.fixture
def stub():
    with SlackStub() as running:
        yield running


def test_slack_by_release_reads_as_a_table(shop, tmp_path, stub):
    settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url})
    engine = Engine.open(settings)
    engine.track(str(shop.path), "shop")
    app, _ = build_app(settings, engine, socket_mode=False, today=lambda: TODAY)
    _, name = dispatch(app, stub, "shop by:release")
    shown = read(answer(stub, name))
    # by hand: v1.2.0 = Eve's 2023-01-20 (merged in) and Ann's merge of 2023-05-01, 61 days after v1.1.0's
    # 2023-03-01; v1.1.0 = Bob's 01-10 and 03-01 and Cy's rc (v1.0.2 reaches only v1.0 and the two fixes)
    assert "By release" in shown
    assert "`v1.2.0` · tagged 2023-05-01, 2.0 months after `v1.1.0` — 2GAD 4 · 2 developers · 2 commits" in shown
    assert "`v1.1.0` · tagged 2023-03-01, 35 days before `v1.0.2` — 2GAD 6 · 2 developers · 3 commits" in shown
    assert "`v1.0` · tagged 2023-01-02, the first: everything up to it — 2GAD 2 · 1 developer · 1 commit" in shown
    assert "`v2.0.0-beta.1` (pre-release) · tagged 2023-06-01" in shown
    assert "1 commit on the default branch came after `v2.0.0-beta.1` and is in no release yet" in shown
    response, _ = dispatch(app, stub, "shop shop2 by:release")  # refused in the ack, in one sentence
    assert "`by:release` breaks one repository's history into its releases, and 2 were named" in json.dumps(
        ack_body(response))


def test_cli_by_release_json_and_csv(shop, tmp_path):
    data = tmp_path / "data"
    assert run("track", str(shop.path), "--name", "shop", data=data).returncode == 0
    doc = json.loads(run("report", "shop", "by:release", "--json", data=data).stdout)
    assert [r["key"] for r in doc["rows"]] == [tag for tag, _ in ROWS]
    v120 = doc["rows"][4]
    assert (v120["active_days"], v120["two_gad"], v120["developers"], v120["commits"]) == (2, 4, 2, 2)
    assert v120["release"] == {"tag": "v1.2.0", "previous": "v1.1.0", "range": "v1.1.0..v1.2.0", "day": "2023-05-01",
                               "previous_day": "2023-03-01", "interval_days": 61, "prerelease": False}
    assert doc["filters"]["tags"] is None and doc["filters"]["prereleases"] is False and doc["more_rows"] == 0
    result = run("report", "shop", "by:release", "tags:v1.*", "--csv", data=data)
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["release"] for r in rows] == ["v1.0", "v1.0.1", "v1.0.2", "v1.1.0", "v1.2.0", "TOTAL"]
    assert (rows[3]["release_range"], rows[3]["interval_days"], rows[3]["active_days"], rows[3]["two_gad"]) == (
        "v1.0.2..v1.1.0", "-35", "3", "6")
    assert rows[-1]["tags"] == "v1.*" and rows[-1]["release_range"] == ""


def test_commits_after_the_newest_release_are_told_not_hidden(tracked, shop):
    report = ask(tracked, "shop by:release")
    after = int(shop.git("rev-list", "--count", "v2.0.0-beta.1..HEAD").strip())  # Gus's commit of 2023-07-01
    assert after == 1
    assert ("1 commit on the default branch came after `v2.0.0-beta.1` and is in no release yet; "
            "`range:v2.0.0-beta.1..HEAD` counts it.") in report.notes
    assert ask(tracked, "shop range:v2.0.0-beta.1..HEAD").totals.commits == after
    assert not any("no release yet" in n for n in ask(tracked, "shop by:release until:2023-05").notes)


def test_a_period_with_no_release_is_one_sentence(tracked):
    assert refusal(tracked, "shop by:release since:2024") == ("No release of `shop` was tagged from 2024-01-01 on; its newest, `v2.0.0-beta.1`, was "
                                 "tagged on 2023-06-01. Widen `since:`/`until:`, or leave them out for every release.")
    assert refusal(tracked, "shop by:release until:2022") == ("No release of `shop` was tagged by 2022-12-31; its oldest, `v1.0`, was tagged on "
                                 "2023-01-02. Widen `since:`/`until:`, or leave them out for every release.")


def test_hostile_tag_names_stay_text_in_every_face(tmp_path):
    """Tag names are whoever pushed them: in Slack each is a code span a backtick cannot close, and in CSV a
    name starting like a formula is escaped (csvout.cell)."""
    from bot.render.blocks import report_blocks
    from bot.render.csvout import report_to_csv

    b = RepoBuilder(tmp_path / "hostile")
    b.tag("=1+2", b.commit(name="Ann", email="ann@example.com", date="2024-01-02"))
    b.tag("v2`_it_`", b.commit(name="Bob", email="bob@example.com", date="2024-02-02"))
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(b.path), "hostile")
    report = ask(engine, "hostile by:release tags:*")
    assert [r.key for r in report.rows] == ["=1+2", "v2`_it_`"]  # by version: 1 before 2
    shown = json.dumps(report_blocks(report, "hostile by:release tags:*")[1], ensure_ascii=False)
    assert "`v2\u02cb_it_\u02cb`" in shown and "v2`_it_`" not in shown
    rows = list(csv.reader(io.StringIO(report_to_csv(report))))
    assert rows[1][0] == "'=1+2" and rows[2][7] == "'=1+2"  # the key and the previous release


@pytest.mark.parametrize("width", [80, 120])
def test_the_terminal_table_names_each_rows_start_and_interval(tracked, width):
    text = render_text(ask(tracked, "shop by:release"), width=width)
    assert max(map(len, text.splitlines())) <= width  # within a plain terminal (issue 33): no row folded
    lines = [line.split() for line in text.splitlines()]
    # by hand from build_shop: v1.1.0 counts from v1.0.2, whose commit (2023-04-05) is 35 days newer than its own
    assert ["v1.1.0", "v1.0.2", "2023-03-01", "35", "days", "earlier", "6", "3", "2", "3"] in lines
    assert ["v1.0", "(start)", "2023-01-02", "first", "2", "1", "1", "1"] in lines
    assert ["v1.2.0", "v1.1.0", "2023-05-01", "2.0", "months", "4", "2", "2", "2"] in lines


@pytest.mark.parametrize("tokens", ["", "mailmap:off", "bots:on", "author:bob@*", "coauthors:on", "since:2023-02",
                                    "prereleases:on until:2023-04", "tags:v1.* top:2", "path:file3.txt"])
def test_every_row_is_what_range_previous_dot_dot_this_answers(tracked, tokens):
    """Each row equals the report `range:PREVIOUS..THIS` gives with the same tokens (that one is checked
    against git in tests/test_estimation.py), whatever the other tokens."""
    report = ask(tracked, f"shop by:release {tokens}")
    assert report.rows
    plain = " ".join(t for t in tokens.split() if not t.startswith(("prereleases:", "tags:", "top:")))
    for row in report.rows:
        alone = ask(tracked, f"shop range:{row.release.range} {plain}")
        assert row.totals == alone.totals, (tokens, row.key)


# -- tags of several families: `v2.1` beside `release-14.2` ---------------------------------------------------

def build_mixed(path) -> RepoBuilder:
    """v2.0, v2.1, v2.2-rc1 and v2.2 on main; release-14.2 and release-14.3 on an `appliance` line forked at v2.0.
    Sorted together by their numbers (2 < 14), release-14.2's row would be `v2.2..release-14.2`: no one's release."""
    b = RepoBuilder(path)
    base = b.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    b.tag("v2.0", base, annotated=True)
    b.commit(name="Bob", email="bob@example.com", date="2024-01-10")
    b.tag("v2.1", b.commit(name="Ann", email="ann@example.com", date="2024-01-10"))
    b.tag("release-14.2", b.commit("appliance", name="Cy", email="cy@example.com", date="2024-01-05", parents=[base]))
    b.commit("appliance", name="Cy", email="cy@example.com", date="2024-01-20")
    b.tag("release-14.3", b.commit("appliance", name="Dee", email="dee@example.com", date="2024-01-20"))
    b.tag("v2.2-rc1", b.commit(name="Bob", email="bob@example.com", date="2024-02-01"))
    b.tag("v2.2", b.commit(name="Eve", email="eve@example.com", date="2024-02-03T23:30", offset=-300))
    b.commit(name="Ann", email="ann@example.com", date="2024-03-01")  # after every release
    return b


def git_row(repo: RepoBuilder, revs: str) -> tuple[int, int, int]:
    """(person-days, developers, commits) of `git log REVS`, counted with git alone: distinct (e-mail, author
    day) pairs, distinct e-mails, `git rev-list --count`."""
    pairs = {line.lower() for line in repo.git("log", "--format=%aE %ad", "--date=short", revs).splitlines()}
    return len(pairs), len({p.split()[0] for p in pairs}), int(repo.git("rev-list", "--count", revs).strip())


MIXED_NOTE = ("Releases of the `v[0-9]*` family (4 tags); 2 `release-[0-9]*` tags left out: ask with "
              "`tags:release-[0-9]*`.")


@pytest.fixture
def mixed(tmp_path):
    return build_mixed(tmp_path / "mixed")


def test_by_release_counts_the_family_most_used_and_says_which_it_left_out(mixed, tmp_path):
    """Every version-like tag was sorted together, so `release-14.2` came after `v2.2` and its row crossed families.
    By default the `v` family (4 tags, the rc included) is counted; a note names the `release-` family left out."""
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(mixed.path), "mixed")
    report = ask(engine, "mixed by:release")
    ranges = [("v2.0", "v2.0"), ("v2.1", "v2.0..v2.1"), ("v2.2", "v2.1..v2.2")]
    assert [(r.key, r.release.range.lstrip(".")) for r in report.rows] == ranges
    assert [row_figures(r) for r in report.rows] == [git_row(mixed, revs) for _, revs in ranges]
    # by hand: v2.2 = Bob's rc of 02-01 and Eve's 02-03 (her own day; UTC 02-04), v2.1 = Bob 01-10 and Ann 01-10
    assert [row_figures(r) for r in report.rows] == [(1, 1, 1), (2, 2, 2), (2, 2, 2)]
    assert MIXED_NOTE in report.notes
    assert "1 commit on the default branch came after `v2.2`" in " ".join(report.notes)
    # `tags:GLOB` still picks the other family, with no note on families
    other = ask(engine, "mixed by:release tags:release-*")
    ranges = [("release-14.2", "release-14.2"), ("release-14.3", "release-14.2..release-14.3")]
    assert [(r.key, r.release.range.lstrip(".")) for r in other.rows] == ranges
    assert [row_figures(r) for r in other.rows] == [git_row(mixed, revs) for _, revs in ranges] == [(2, 2, 2),
                                                                                                     (2, 2, 2)]
    assert not any("family" in n for n in other.notes)
    assert not any("family" in n for n in ask(engine, "mixed by:release tags:v*").notes)


@pytest.mark.parametrize("names, kept, note", [
    (["v1.0", "v1.1"], ["v1.0", "v1.1"], None),
    (["V_3_6", "V_3_6_P1", "V_3_7_P1", "v1.0"], ["V_3_6", "V_3_6_P1", "V_3_7_P1"],
     "Releases of the `V_[0-9]*` family (3 tags); 1 `v[0-9]*` tag left out: ask with `tags:v[0-9]*`."),
    (["1.0", "1.1", "1.2", "v1.3", "r1", "x1", "y1", "y2"], ["1.0", "1.1", "1.2"],
     "Releases of the `[0-9]*` family (3 tags); 2 `y[0-9]*`, 1 `r[0-9]*`, 1 `v[0-9]*` and 1 more tags left out: "
     "ask with `tags:y[0-9]*`, `tags:r[0-9]*` or `tags:v[0-9]*`."),
    (["v1.0", "release-1.0"], ["release-1.0"],  # a tie goes to the family that sorts first
     "Releases of the `release-[0-9]*` family (1 tag); 1 `v[0-9]*` tag left out: ask with `tags:v[0-9]*`."),
])
def test_the_family_most_used_is_counted_and_the_rest_named(names, kept, note):
    from bot.engine.releases import releases

    found = releases({name: row for row, name in enumerate(names)})
    assert ([t.name for t in found.tags], found.left_out) == (kept, note)
    assert releases({name: row for row, name in enumerate(names)}, "*").left_out is None  # a glob: no family


def test_cli_and_slack_say_which_family_by_release_counted(mixed, tmp_path, stub):
    data = tmp_path / "data"
    assert run("track", str(mixed.path), "--name", "mixed", data=data).returncode == 0
    shown = run("report", "mixed", "by:release", data=data).stdout
    assert MIXED_NOTE in " ".join(shown.split())
    assert "release-14.2" not in shown.replace("tags:release-[0-9]*", "")
    settings = Settings.from_env({"GAD_DATA_DIR": str(data), "SLACK_BOT_TOKEN": stub.good_token,
                                  "SLACK_SIGNING_SECRET": SECRET, "SLACK_API_URL": stub.api_url})
    app, _ = build_app(settings, Engine.open(settings), socket_mode=False, today=lambda: TODAY)
    _, name = dispatch(app, stub, "mixed by:release")
    said = read(answer(stub, name))
    assert MIXED_NOTE in said
    assert "`v2.2` · tagged 2024-02-03, 24 days after `v2.1` — 2GAD 4 · 2 developers · 2 commits" in said


def test_the_glob_a_left_out_family_is_offered_with_takes_that_family_alone(mixed, tmp_path):
    """`tags:v*` also took `vendor-2.0` and a `very-first` tag with no number, and sorted among v1.x they made rows
    such as `v1.1..vendor-2.0` again. The glob offered is the family's text, then a digit: typed back, it takes
    the family's tags and nothing else."""
    from bot.engine.releases import releases

    names = ["release-1.0", "release-1.1", "release-1.2", "v1.0", "v1.1", "vendor-2.0", "very-first"]
    note = releases({name: row for row, name in enumerate(names)}).left_out
    offered = re.findall(r"`tags:([^`]+)`", note)
    assert offered == ["v[0-9]*", "vendor-[0-9]*"], note
    for glob, family in zip(offered, (["v1.0", "v1.1"], ["vendor-2.0"])):
        assert parse_query(f"shop by:release tags:{glob}".split(), TODAY).tags == glob  # it parses, typed back
        assert [t.name for t in releases({name: row for row, name in enumerate(names)}, glob).tags] == family
    # and through the engine: the note's glob, asked, counts the family left out (release-14.2, release-14.3)
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(mixed.path), "mixed")
    (glob,) = re.findall(r"`tags:([^`]+)`", next(n for n in ask(engine, "mixed by:release").notes if "family" in n))
    assert [r.key for r in ask(engine, f"mixed by:release tags:{glob}").rows] == ["release-14.2", "release-14.3"]


def test_a_family_too_long_to_type_as_a_glob_is_counted_not_offered():
    """A family's text is unbounded (`aaaa…aaa1.0` looks like a version): its glob would be refused by `tags:`
    (MAX_TAGS_GLOB characters), so it is counted among the rest, and the note stays short."""
    from bot.engine.query import MAX_TAGS_GLOB
    from bot.engine.releases import releases

    long_family = "a" * 5000
    names = ["v1.0", "v1.1", "v1.2", f"{long_family}1.0", f"{long_family}1.1", "r1.0"]
    found = releases({name: row for row, name in enumerate(names)})
    assert [t.name for t in found.tags] == ["v1.0", "v1.1", "v1.2"]
    offered = re.findall(r"`tags:([^`]+)`", found.left_out)
    assert offered == ["r[0-9]*"], found.left_out
    assert "2 more" in found.left_out and len(found.left_out) < 300, found.left_out
    for glob in offered:
        assert len(glob) <= MAX_TAGS_GLOB and parse_query(f"shop by:release tags:{glob}".split(), TODAY).tags == glob
    # the family counted may be the long one itself: it is not spelled out either
    kept = releases({f"{long_family}{n}.0": n for n in range(3)} | {"v1.0": 9})
    assert len(kept.tags) == 3 and len(kept.left_out) < 300, kept.left_out[:400]
