"""Reports over a project of several repositories, exactly as git counts them (METRIC.md rules 5 and 6).

A project's repositories may share no commit (an organization's) or share some (a fork, a copy): the
engine adds commits up in the first case and counts each shared commit once in the second; both are
checked against git over the same repositories, for the plain report, `by:person` and `by:month`.
A project's repositories are read in one query and remembered between reports: a sync, a failed
sync and a new member must show in the next report.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import defaultdict

import numpy as np
import pytest

from bot.engine import columns as col
from bot.engine.engine import Engine
from bot.engine.query import parse_query
from bot.store.store import IN_DEFAULT
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder, git_env, oracle_pairs


def ask(engine: Engine, text: str):
    return engine.report(parse_query(text.split(), TODAY), TODAY)


def git_commits(paths) -> dict[str, tuple[str, str]]:
    """Every commit git lists in the default scope of any of the repositories: id -> (mailmapped e-mail, day).
    A shared commit is the same id; its e-mail is taken from the first repository that lists it."""
    found: dict[str, tuple[str, str]] = {}
    for path in paths:
        out = subprocess.run(["git", "-c", "mailmap.blob=HEAD:.mailmap", "log", "--use-mailmap", "--branches",
                              "--tags", "--format=%H %aE %ad", "--date=short"], cwd=path, check=True,
                             capture_output=True, text=True, env=git_env()).stdout
        for line in out.splitlines():
            oid, email, day = line.split()
            found.setdefault(oid, (email.lower(), day))
    return found


@pytest.fixture
def repos(tmp_path):
    """Three repositories by overlapping people: `a` maps an old address with its .mailmap, `b` does not,
    `fork` is a copy of `a` with one more commit."""
    a = RepoBuilder(tmp_path / "a")
    a.commit(name="Ann", email="ann@example.com", date="2024-01-01T09:00")
    a.commit(name="Ann", email="ann@example.com", date="2024-01-01T18:00")  # same person-day
    a.commit(name="Ann", email="ann.old@example.com", date="2024-02-03", offset=120)
    a.commit(name="Bo", email="bo@example.com", date="2024-02-03", files={
        ".mailmap": "Ann <ann@example.com> <ann.old@example.com>\n"})
    b = RepoBuilder(tmp_path / "b")
    b.commit(name="Ann", email="ANN@example.com", date="2024-01-01T11:00")  # Ann's day in `a` too
    b.commit(name="Ann", email="ann.old@example.com", date="2024-03-05")  # no mailmap here: another person
    b.commit(name="Cy", email="cy@example.org", date="2024-03-05")
    fork = RepoBuilder(shutil.copytree(a.path, tmp_path / "fork"))
    fork.commit(name="Cy", email="cy@example.org", date="2024-03-06",  # its tree keeps `a`'s mailmap
                files={".mailmap": "Ann <ann@example.com> <ann.old@example.com>\n"})
    return {"a": a, "b": b, "fork": fork}


@pytest.mark.parametrize("members", [("a", "b"), ("a", "b", "fork")], ids=["no shared commit", "a fork shares"])
def test_project_figures_equal_gits(engine, repos, members):
    for name in members:
        engine.track(str(repos[name].path), name)
    engine.project_add("p", members)
    paths = [repos[name].path for name in members]
    pairs = set().union(*(oracle_pairs(p) for p in paths))
    commits = git_commits(paths)
    # by hand: Ann 01-01 and 02-03 (mailmapped in a), ann.old 03-05 (b), Bo 02-03, Cy 03-05 (+ 03-06 in the fork)
    assert len(pairs) == (6 if "fork" in members else 5)

    report = ask(engine, "p")
    assert (report.totals.person_days, report.totals.developers, report.totals.commits) == \
        (len(pairs), len({email for email, _ in pairs}), len(commits))

    people = {r.key: (r.totals.person_days, r.totals.commits) for r in ask(engine, "p by:person").rows}
    expected = defaultdict(lambda: [0, 0])
    for email, _ in pairs:
        expected[email.decode()][0] += 1
    for email, _ in commits.values():
        expected[email][1] += 1
    assert people == {email: tuple(v) for email, v in expected.items()}

    months = {r.key: (r.totals.person_days, r.totals.commits) for r in ask(engine, "p by:month").rows}
    by_month = defaultdict(lambda: [0, 0])
    for _, day in pairs:
        by_month[day.decode()[:7]][0] += 1
    for _, day in commits.values():
        by_month[day[:7]][1] += 1
    assert months == {month: tuple(v) for month, v in by_month.items()}

    orgs = {r.key: (r.totals.person_days, r.totals.commits) for r in ask(engine, "p by:org").rows}
    by_domain = defaultdict(lambda: [0, 0])  # no organizations file: each e-mail's registrable domain
    for email, _ in pairs:
        by_domain[email.decode().split("@")[1]][0] += 1
    for email, _ in commits.values():
        by_domain[email.split("@")[1]][1] += 1
    assert orgs == {domain: tuple(v) for domain, v in by_domain.items()}
    only = ask(engine, "p org:example.org")
    assert (only.totals.person_days, only.totals.commits) == tuple(by_domain["example.org"])


def test_a_project_report_follows_syncs_failures_and_new_members(tmp_path, engine, repos):
    engine.track(str(repos["a"].path), "a")
    engine.track(str(repos["b"].path), "b")
    engine.project_add("p", ["a", "b"])
    assert ask(engine, "p").totals.commits == 7 and not ask(engine, "p").notes

    repos["b"].commit(name="Dee", email="dee@example.net", date="2024-04-01")
    assert engine.sync(["b"])[0].new_commits == 1
    report = ask(engine, "p")
    assert (report.totals.commits, report.totals.developers) == (8, 5)  # Ann, ann.old, Bo, Cy, Dee

    shutil.rmtree(repos["b"].path)  # the source is gone: the next sync fails, and the report says so
    assert engine.sync(["b"])[0].error
    assert any(note.startswith("b: data as of") for note in ask(engine, "p").notes)

    engine.track(str(repos["fork"].path), "fork")
    engine.project_add("p", ["fork"])
    report = ask(engine, "p")
    assert report.repos == ("a", "b", "fork") and report.totals.commits == 9  # the fork adds one commit


@pytest.mark.parametrize("seed", range(20))
def test_sorting_helpers_agree_with_numpy_unique(seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(-5, 5 + seed * 50, size=int(rng.integers(0, 200)), dtype=np.int64)
    distinct, first = np.unique(values, return_index=True)
    assert col.sorted_distinct(values).tolist() == distinct.tolist()
    assert sorted(col.first_occurrences(values).tolist()) == sorted(first.tolist())
    assert col.has_repeats(values) == (len(distinct) < len(values))


@pytest.mark.parametrize("tokens, mailmap, day_ok, email_ok", [
    ("", True, lambda d: True, lambda e: True),
    ("since:2024-02", True, lambda d: d >= "2024-02-01", lambda e: True),
    ("until:2024-02", True, lambda d: d <= "2024-02-29", lambda e: True),
    ("author:ann*", True, lambda d: True, lambda e: e.startswith("ann")),
    ("author:ann* since:2024-02 until:2024-02", True, lambda d: "2024-02-01" <= d <= "2024-02-29",
     lambda e: e.startswith("ann")),
    ("mailmap:off", False, lambda d: True, lambda e: True),
])
def test_filters_over_a_project_equal_gits(engine, repos, tokens, mailmap, day_ok, email_ok):
    """The filters of rule 4 over a project whose repositories share no commit (its rows merged once)."""
    for name in ("a", "b"):
        engine.track(str(repos[name].path), name)
    engine.project_add("p", ["a", "b"])
    pairs = {(e.decode(), d.decode()) for path in (repos["a"].path, repos["b"].path)
             for e, d in oracle_pairs(path, mailmap=mailmap)}
    pairs = {(e, d) for e, d in pairs if day_ok(d) and email_ok(e)}
    commits = [(e, d) for e, d in git_commits([repos["a"].path, repos["b"].path]).values()
               if day_ok(d) and (email_ok(e) or not mailmap)]
    for _ in range(2):  # the first question merges the rows, the second reads them from the cache
        report = ask(engine, f"p {tokens}")
        assert (report.totals.person_days, report.totals.developers) == (len(pairs), len({e for e, _ in pairs}))
        if mailmap:  # git_commits maps e-mails; without the mailmap only the count is compared
            assert report.totals.commits == len(commits)
    assert ask(engine, "p mailmap:off").totals.commits == 7


def test_merged_rows_are_weighed_in_the_query_cache(engine, repos):
    from bot.engine.caches import size_of

    for name in ("a", "b"):
        engine.track(str(repos[name].path), name)
    merged = col.merge([engine.columns_of(engine.repo(n)) for n in ("a", "b")], IN_DEFAULT, True, False)
    assert len(merged.keys) == 7 and size_of(merged) >= 7 * col.MERGED_BYTES_PER_ROW
