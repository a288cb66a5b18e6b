"""Every rule of METRIC.md, on repositories built in code, checked against real git and by hand."""

from __future__ import annotations

import shutil
from datetime import date

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.engine.query import parse_query
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder, oracle_gad


def ask(engine: Engine, text: str):
    return engine.report(parse_query(text.split(), TODAY), TODAY)


@pytest.fixture
def history(tmp_path):
    """main, a feature branch, a tag on an orphan line, a PR ref, a bot, two zones, a mailmap."""
    b = RepoBuilder(tmp_path / "up")
    b.commit(name="Ann", email="ann@example.com", date="2024-01-01T09:00", offset=60)
    b.commit(name="Ann", email="Ann@Example.com", date="2024-01-01T17:00", offset=60)  # same person-day
    # Written in Tokyo on Tuesday 00:30 (Monday 15:30 UTC); applied by a maintainer on Friday.
    b.commit(name="Ken", email="ken@example.jp", date="2024-01-02T00:30", offset=540,
             committer_date="2024-01-05T10:00")
    b.commit(name="dependabot[bot]", email="49699333+dependabot[bot]@users.noreply.github.com", date="2024-01-03")
    fork_point = b.tip("main")
    b.commit("feature", parents=[fork_point], name="Cy", email="cy@example.org", date="2024-02-10")
    b.commit("refs/pull/7/head", parents=[fork_point], name="Pat", email="pat@example.net", date="2024-02-11")
    b.commit("refs/tags/v0", parents=[], name="Old", email="old@example.com", date="2019-05-05",
                      files={"README": "old"})
    b.commit(name="Ann", email="ann.personal@example.com", date="2024-03-01", offset=-300,
             files={".mailmap": "Ann <ann@example.com> <ann.personal@example.com>\n"})
    return b


def test_default_scope_counts_branches_and_tags_and_matches_git(engine, history):
    engine.track(str(history.path), "up")
    report = ask(engine, "up")
    assert report.totals.person_days == oracle_gad(history.path) == 5  # ann x2, ken, cy, old (pat only on a PR ref)
    assert report.totals.two_gad == 10
    assert report.totals.developers == 4
    assert report.totals.commits == 6  # bot left out


def test_branch_head_and_named_branch(engine, history):
    engine.track(str(history.path), "up")
    assert ask(engine, "up branch:HEAD").totals.person_days == oracle_gad(history.path, scope="head") == 3
    feature = ask(engine, "up branch:feature")
    assert feature.totals.person_days == 3  # ann 01-01, ken 01-02, cy 02-10
    assert feature.totals.commits == 4
    assert ask(engine, "up branch:v0").totals.person_days == 1  # a tag works as a branch name too


def test_unknown_branch_names_the_branches(engine, history):
    engine.track(str(history.path), "up")
    with pytest.raises(Exception, match="no branch `nope`.*`feature`.*`main`"):
        ask(engine, "up branch:nope")
    with pytest.raises(Exception, match=r"no branch `featur`; did you mean `branch:main` \(its default branch\), `branch:feature`"):
        ask(engine, "up branch:featur")


def test_refs_all_includes_pull_refs(engine, history):
    engine.track(str(history.path), "up")
    assert ask(engine, "up refs:all").totals.person_days == oracle_gad(history.path, scope="all") == 6


def test_day_is_the_authors_own_calendar_date(engine, history):
    engine.track(str(history.path), "up")
    rows = {r.key: r.totals.person_days for r in ask(engine, "up since:2024-01-02 until:2024-01-02 by:person").rows}
    assert rows == {"ken@example.jp": 1}  # Tuesday in Tokyo, although Monday in UTC and applied on Friday
    assert ask(engine, "up since:2024-01-05 until:2024-01-05").totals.person_days == 0  # never the committer date


def test_mailmap_from_default_branch_and_lower_casing(engine, history):
    engine.track(str(history.path), "up")
    people = {r.key for r in ask(engine, "up by:person").rows}
    assert "ann@example.com" in people and "ann.personal@example.com" not in people
    off = {r.key for r in ask(engine, "up mailmap:off by:person").rows}
    assert "ann.personal@example.com" in off  # mailmap:off skips the mailmap ...
    assert "Ann@Example.com" not in off  # ... not the lower-casing
    assert ask(engine, "up mailmap:off").totals.person_days == oracle_gad(history.path, mailmap=False)


def test_bots_are_not_people_unless_asked(engine, history):
    engine.track(str(history.path), "up")
    assert ask(engine, "up bots:on").totals.person_days == oracle_gad(history.path, bots=True) == 6
    assert ask(engine, "up").totals.person_days == 5


def test_operator_bot_patterns_apply_without_rewalking(tmp_path, history):
    data = str(tmp_path / "data")
    Engine.open(Settings.from_env({"GAD_DATA_DIR": data})).track(str(history.path), "up")
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": data, "GAD_BOT_PATTERNS": "example.jp"}))
    assert ask(engine, "up").totals.person_days == 4  # ken now counts as a bot


@pytest.mark.parametrize("tokens, expected", [
    ("since:2024-01-02", 3),  # ken, cy, ann (march)
    ("until:2024-01", 2),  # whole month: ann 01-01, ken 01-02 (old 2019 too) -> see below
    ("since:2024-02 until:2024-02", 1),
    ("since:2024-Q1 until:2024-Q1", 4),
    ("since:2019 until:2019", 1),
    ("author:ann@*", 2),
    ("author:*.jp author:cy@*", 2),
    ("since:2030", 0),  # an empty period is zeros, not an error
])
def test_filters_on_day_and_person(engine, history, tokens, expected):
    engine.track(str(history.path), "up")
    if tokens == "until:2024-01":
        expected = 3  # old@ 2019, ann 01-01, ken 01-02
    assert ask(engine, f"up {tokens}").totals.person_days == expected


def test_union_of_repositories_counts_a_person_day_once(tmp_path, engine):
    a = RepoBuilder(tmp_path / "a")
    b = RepoBuilder(tmp_path / "b")
    a.commit(email="dev@example.com", date="2024-04-01")
    b.commit(email="DEV@example.com", date="2024-04-01")  # same person, same day, other repo
    b.commit(email="dev@example.com", date="2024-04-02")
    engine.track(str(a.path), "a")
    engine.track(str(b.path), "b")
    report = ask(engine, "a b")
    assert report.totals.person_days == 2
    assert report.totals.commits == 3
    shares = {r.key: r.totals.person_days for r in ask(engine, "a b by:repo").rows}
    assert shares == {"a": 1, "b": 2}


def test_a_fork_shares_commits(tmp_path, engine):
    origin = RepoBuilder(tmp_path / "origin")
    for day in range(1, 6):
        origin.commit(email="o@example.com", date=f"2024-05-0{day}")
    engine.track(str(origin.path), "origin")
    fork = shutil.copytree(origin.path, tmp_path / "fork")  # same history, another source
    engine.track(str(fork), "fork")
    report = ask(engine, "origin fork")
    assert (report.totals.person_days, report.totals.commits) == (5, 5)


def test_impossible_dates_are_skipped_not_fatal(engine, upstream):
    upstream.commit(date="2024-01-01")
    upstream.raw_commit("main", "Zed <zed@example.com> 0 +0000")  # git's "unparseable" date
    upstream.raw_commit("main", "Zed <zed@example.com> 1700000000 +9900")  # no such zone
    upstream.commit(date="2024-01-02")
    engine.track(str(upstream.path), "up")
    report = ask(engine, "up")
    assert report.totals.person_days == 2
    assert report.skipped == 2
    assert engine.repo("up").skipped == 2


def test_by_period_rows_include_quiet_periods(engine, upstream):
    upstream.commit(date="2024-01-15")
    upstream.commit(date="2024-03-15")
    engine.track(str(upstream.path), "up")
    rows = ask(engine, "up by:month").rows
    assert [(r.key, r.totals.person_days) for r in rows] == [("2024-01", 1), ("2024-02", 0), ("2024-03", 1)]
    weeks = ask(engine, "up since:2024-01-15 until:2024-01-28 by:week").rows
    assert [(r.key, r.totals.person_days) for r in weeks] == [("2024-W03", 1), ("2024-W04", 0)]
    assert [r.key for r in ask(engine, "up by:quarter").rows] == ["2024-Q1"]
    assert [r.key for r in ask(engine, "up by:year").rows] == ["2024"]


def test_reference_metric_agrees_with_engine(engine, history):
    """bot/metric.py, applied to git's own records, equals the engine's figure."""
    from bot import metric

    engine.track(str(history.path), "up")
    out = history.git("log", "--use-mailmap", "--branches", "--tags", "--format=%H%x00%aN%x00%aE%x00%ad", "--date=short")
    records = []
    for line in out.splitlines():
        commit, name, email, day = line.split("\x00")
        if not metric.is_bot(name, email):
            records.append(metric.Record(email.lower(), date.fromisoformat(day), commit))
    assert metric.totals(records) == ask(engine, "up").totals
    since = metric.select(records, since=date(2024, 1, 2))
    assert metric.totals(since) == ask(engine, "up since:2024-01-02").totals


def test_mailmap_matches_case_insensitively_like_git(engine, upstream):
    """libgit2 matches mailmap e-mails exactly; git (and so METRIC.md) does not."""
    upstream.commit(name="Ola", email="ola@oldcorp.example", date="2024-01-01")
    upstream.commit(name="Ola", email="Ola@NewCorp.example", date="2024-01-02",
                    files={".mailmap": "Ola <ola@newcorp.example> <OLA@OLDCORP.EXAMPLE>\n"})
    engine.track(str(upstream.path), "up")
    report = ask(engine, "up by:person")
    assert [r.key for r in report.rows] == ["ola@newcorp.example"]
    out = upstream.git("log", "--use-mailmap", "--format=%aE")
    assert {line.lower() for line in out.split()} == {"ola@newcorp.example"}


def test_lower_casing_is_ascii_only_as_in_git(engine, upstream):
    upstream.commit(email="\u00d3la@example.com", date="2024-01-01")  # Ó is not an ASCII letter
    upstream.commit(email="\u00f3la@example.com", date="2024-01-01")
    engine.track(str(upstream.path), "up")
    assert ask(engine, "up").totals.person_days == oracle_gad(upstream.path) == 2


# -- what each face reads, where a small slip would not change the headline (issue 12) -----------


def test_a_bot_is_known_by_its_mailmapped_identity(engine, upstream):
    """A CI account that the mailmap names `release[bot]` is a bot; a raw `[bot]` mapped to a person is not."""
    upstream.commit(name="Ann", email="ann@example.com", date="2024-01-01",
                    files={".mailmap": "release[bot] <release-bot@example.com> Build <build@ci.example.com>\n"
                                       "Ann <ann@example.com> <ann-bot[bot]@example.com>\n"})
    upstream.commit(name="Build", email="build@ci.example.com", date="2024-01-02")  # mapped to a bot
    upstream.commit(name="ann-bot[bot]", email="ann-bot[bot]@example.com", date="2024-01-03")  # mapped to Ann
    upstream.commit(name="ann-bot[bot]", email="ann-bot[bot]@example.com", date="2024-01-04")
    engine.track(str(upstream.path), "up")
    # git: %aN/%aE after the mailmap, `[bot]` lines dropped: ann 01-01, 01-03 and 01-04 (release[bot] 01-02 out)
    assert ask(engine, "up").totals.person_days == oracle_gad(upstream.path) == 3
    assert ask(engine, "up bots:on").totals.person_days == oracle_gad(upstream.path, bots=True) == 4
    # without the mailmap the raw identities decide: build 01-02 is a person, ann-bot[bot] is a bot
    assert ask(engine, "up mailmap:off").totals.person_days == oracle_gad(upstream.path, mailmap=False) == 2


def test_by_person_counts_commits_and_active_days_apart(engine, upstream):
    for hour in (9, 12, 17):  # three commits on one day: one active day
        upstream.commit(email="ann@example.com", date=f"2024-01-02T{hour:02d}:00")
    upstream.commit(email="ann@example.com", date="2024-01-03")
    upstream.commit(email="bob@example.com", date="2024-01-03")
    engine.track(str(upstream.path), "up")
    rows = {r.key: r.totals for r in ask(engine, "up by:person").rows}
    assert (rows["ann@example.com"].person_days, rows["ann@example.com"].commits) == (2, 4)
    assert (rows["bob@example.com"].person_days, rows["bob@example.com"].commits) == (1, 1)


def test_period_rows_count_a_commit_in_a_repository_and_its_fork_once(tmp_path, engine):
    origin = RepoBuilder(tmp_path / "origin")
    origin.commit(email="o@example.com", date="2024-05-01")
    origin.commit(email="o@example.com", date="2024-05-01T15:00")
    origin.commit(email="p@example.com", date="2024-06-03")
    engine.track(str(origin.path), "origin")
    engine.track(str(shutil.copytree(origin.path, tmp_path / "fork")), "fork")
    # git: 3 commits, 2 in May (one person-day) and 1 in June
    assert origin.git("rev-list", "--count", "--all").strip() == "3"
    for by in ("month", "quarter", "year", "week"):
        rows = ask(engine, f"origin fork by:{by}").rows
        assert sum(r.totals.commits for r in rows) == 3, by
    months = {r.key: (r.totals.person_days, r.totals.commits) for r in ask(engine, "origin fork by:month").rows}
    assert months == {"2024-05": (1, 2), "2024-06": (1, 1)}


def test_data_as_of_is_the_oldest_sync_among_the_repositories(tmp_path, engine):
    from datetime import datetime, timezone

    a, b = RepoBuilder(tmp_path / "a"), RepoBuilder(tmp_path / "b")
    a.commit(date="2024-01-01")
    b.commit(date="2024-01-01")
    engine.track(str(a.path), "a")
    engine.track(str(b.path), "b")
    old, new = datetime(2026, 12, 1, 8, 0, tzinfo=timezone.utc), datetime(2026, 12, 3, 8, 0, tzinfo=timezone.utc)
    engine.sync(["a"], now=old)
    engine.sync(["b"], now=new)
    report = ask(engine, "a b")
    assert report.data_as_of == old  # the answer is only as fresh as its stalest repository
    from bot.render.words import footnotes

    assert "data as of 2026-12-01 08:00 UTC" in footnotes(report)
    assert ask(engine, "b").data_as_of == new
