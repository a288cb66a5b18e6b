"""`path:` subsystems and projects, against `git log --no-merges --full-history -- PATH`."""

from __future__ import annotations

import pytest

from bot.errors import QueryError, UnknownRepoError
from bot.engine.query import parse_query
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder


def ask(engine, text):
    return engine.report(parse_query(text.split(), TODAY), TODAY)


def oracle(b: RepoBuilder, *pathspec: str) -> int:
    out = b.git("log", "--branches", "--tags", "--no-merges", "--full-history", "--format=%aE%x00%ad",
                "--date=short", "--", *pathspec)
    return len({line.lower() for line in out.splitlines() if line})


@pytest.fixture
def tree(tmp_path):
    b = RepoBuilder(tmp_path / "kernel")
    b.commit(email="a@example.com", date="2024-01-01", files={"drivers/gpu/drm/i915/a.c": "1", "docs/x.md": "d",
                                                             "net/core.c": "n"})
    b.commit(email="b@example.com", date="2024-01-02", files={"drivers/gpu/drm/i915/a.c": "2"})
    b.commit(email="c@example.com", date="2024-01-03", files={"docs/x.md": "d2"})
    b.commit(email="d@example.com", date="2024-01-04", files={"drivers/gpu-old.c": "not under drivers/gpu"})
    # a rename out of the directory: both sides changed
    b.commit(email="e@example.com", date="2024-01-05",
             files={"drivers/gpu/drm/i915/a.c": None, "drivers/misc/a.c": "2"})
    side = b.commit("topic", parents=[b.tip("main")], email="f@example.com", date="2024-01-06",
                    files={"drivers/gpu/new.c": "x"})
    b.commit(email="g@example.com", date="2024-01-07", files={"net/core.c": "n2"})
    b.merge("main", side, email="merger@example.com", date="2024-01-08", files={"drivers/gpu/merge.c": "m"})
    b.commit(email="h@example.com", date="2024-01-09", files={"docs/x.md": "d3", "net/core.c": "n3"})
    b.commit(email="i@example.com", date="2024-01-10", files={"drivers/gpu/drm/i915/a.c": None})  # nothing to delete
    return b


@pytest.mark.parametrize("tokens, pathspec", [
    ("path:drivers/gpu", ("drivers/gpu",)),
    ("path:drivers/gpu/drm/i915", ("drivers/gpu/drm/i915",)),
    ("path:drivers/gpu/drm/i915/a.c", ("drivers/gpu/drm/i915/a.c",)),
    ("path:drivers/misc", ("drivers/misc",)),
    ("path:docs path:net", ("docs", "net")),
    ("path:!docs", (".", ":!docs")),
    ("path:drivers path:!drivers/gpu", ("drivers", ":!drivers/gpu")),
])
def test_path_figures_equal_git_log(engine, tree, tokens, pathspec):
    engine.track(str(tree.path), "kernel")
    assert ask(engine, f"kernel {tokens}").totals.person_days == oracle(tree, *pathspec)


def test_merges_do_not_count_and_the_answer_says_so(engine, tree):
    engine.track(str(tree.path), "kernel")
    report = ask(engine, "kernel path:drivers/gpu by:person")
    assert "merger@example.com" not in {r.key for r in report.rows}
    assert report.paths == ("drivers/gpu",)
    from bot.render.words import MERGES_NOTE, footnotes

    assert MERGES_NOTE in footnotes(report)


def test_paths_are_indexed_incrementally(engine, tree):
    engine.track(str(tree.path), "kernel")
    tree.commit(email="late@example.com", date="2024-02-01", files={"drivers/gpu/late.c": "x"})
    engine.sync(["kernel"])
    assert ask(engine, "kernel path:drivers/gpu").totals.person_days == oracle(tree, "drivers/gpu")
    repo = engine.repo("kernel")
    done, total = engine.index.chunk_path_state(repo.id, engine.index.chunk_count(repo.id))
    assert done == total == repo.commits


def test_project_is_a_union_usable_wherever_a_repository_is(engine, tmp_path):
    a, b = RepoBuilder(tmp_path / "a"), RepoBuilder(tmp_path / "b")
    a.commit(email="x@example.com", date="2024-03-01")
    b.commit(email="x@example.com", date="2024-03-01")
    b.commit(email="y@example.com", date="2024-03-02")
    engine.track(str(a.path), "a")
    engine.track(str(b.path), "b")
    assert engine.project_add("suite", ["a", "b"]) == ["a", "b"]
    report = ask(engine, "suite")
    assert report.totals.person_days == 2  # x on 03-01 once, y on 03-02
    assert {r.key: r.totals.person_days for r in ask(engine, "suite by:repo").rows} == {"a": 1, "b": 2}
    with pytest.raises(QueryError):
        engine.project_add("a", ["b"])  # a project cannot shadow a repository
    engine.project_remove("suite")
    with pytest.raises(UnknownRepoError):
        ask(engine, "suite")


def test_path_queries_wait_for_the_path_index_with_a_clear_answer(engine, tree):
    from bot.errors import GadError

    engine.track(str(tree.path), "kernel", paths=False)
    assert ask(engine, "kernel").totals.person_days > 0  # reports work as soon as the commits are in
    with pytest.raises(GadError, match=r"still indexing which paths .* \(0 % done, .* commits to go\)"):
        ask(engine, "kernel path:drivers/gpu")
    count, _ = engine.index_paths("kernel")
    assert count == engine.repo("kernel").commits
    assert ask(engine, "kernel path:drivers/gpu").totals.person_days == oracle(tree, "drivers/gpu")


# -- filters that match nothing are typos, not quiet periods (issue 12, item 8) -------------------


@pytest.mark.parametrize("tokens, message", [
    ("path:nonexistent", "`path:nonexistent` matches no file that `kernel` ever changed, so it would count nothing; "
                         "paths there include `docs`, `drivers`, `net`."),
    ("path:driver", "`path:driver` matches no file that `kernel` ever changed, so it would count nothing; "
                    "did you mean `path:drivers`?"),
    ("path:drivers/gpx", "`path:drivers/gpx` matches no file that `kernel` ever changed, so it would count nothing; "
                         "did you mean `path:drivers/gpu`?"),
    ("path:Docs", "`path:Docs` matches no file that `kernel` ever changed, so it would count nothing; "
                  "did you mean `path:docs`?"),  # paths are case-sensitive, as in git
    ("path:!doc", "`path:!doc` matches no file that `kernel` ever changed, so it would count nothing; "
                  "did you mean `path:!docs`?"),
    ("author:nobody@x", "`author:nobody@x` matches nobody who committed to `kernel`, so it would count nothing; "
                        "authors are mailmapped, lower-cased e-mails: `/gad kernel by:person` lists them."),
    ("author:merger@exmple.com", "`author:merger@exmple.com` matches nobody who committed to `kernel`, so it would "
                                 "count nothing; did you mean `author:merger@example.com`?"),
])
def test_a_filter_that_matches_nothing_is_refused_with_the_nearest(engine, tree, tokens, message):
    engine.track(str(tree.path), "kernel")
    if tokens.startswith("path:") and not tokens.startswith("path:!"):
        assert oracle(tree, tokens[5:]) == 0  # git agrees: no commit changed it
    with pytest.raises(QueryError) as error:
        ask(engine, f"kernel {tokens}")
    assert str(error.value) == message


def test_a_filter_that_matched_before_the_period_is_a_quiet_period(engine, tree):
    engine.track(str(tree.path), "kernel")
    quiet = ask(engine, "kernel path:docs author:c@example.com since:2025")
    assert quiet.totals.person_days == 0  # c changed docs on 2024-01-03: nothing since 2025, and no refusal
    assert ask(engine, "kernel path:docs author:c@example.com").totals.person_days == 1


@pytest.fixture
def botty(engine, tmp_path):
    """`botty`: one commit by dependabot, one by ann; no tags, one branch (main)."""
    b = RepoBuilder(tmp_path / "botty")
    b.commit(name="dependabot[bot]", email="49699333+dependabot[bot]@users.noreply.github.com", date="2024-01-02")
    b.commit(email="ann@example.com", date="2024-01-03")
    engine.track(str(b.path), "botty")
    return b


def test_an_author_glob_matching_only_bots_says_bots_on(engine, botty):
    with pytest.raises(QueryError, match=r"matches only bot authors, who are left out by default; add `bots:on`"):
        ask(engine, "botty author:*dependabot*")
    assert ask(engine, "botty author:*dependabot* bots:on").totals.person_days == 1


def test_an_author_glob_matching_only_bots_is_refused_before_the_scope_is_worked_out(engine, botty):
    """That refusal needs no scope: it comes before a branch is searched or releases are ranged, and so before
    their own refusals (botty has no branch `nosuch` and no tags)."""
    assert botty.git("tag").strip() == "" and "nosuch" not in botty.git("branch", "--list")
    for scope in ("branch:nosuch", "by:release"):
        with pytest.raises(QueryError) as refused:
            ask(engine, f"botty author:*dependabot* {scope}")
        assert str(refused.value) == ("`author:*dependabot*` matches only bot authors, who are left out by default; "
                                      "add `bots:on` to count them.")


# -- `author:` suggestions come from the scope asked (issue 20, part 2) ------------------------------------


@pytest.fixture
def scoped(engine, tmp_path):
    """alice wrote docs in 2023; alicia and bob wrote src in 2024."""
    b = RepoBuilder(tmp_path / "web")
    b.commit(email="alice@example.org", date="2023-05-01", files={"src/a.c": "1"})
    b.commit(email="alice@example.org", date="2023-05-02", files={"docs/a.md": "1"})
    b.commit(email="alicia@example.org", date="2024-02-01", files={"src/a.c": "2"})
    b.commit(email="bob@example.org", date="2024-03-01", files={"src/b.c": "1"})
    engine.track(str(b.path), "web")
    return b


def git_days(b: RepoBuilder, author: str, *pathspec: str) -> list[str]:
    """The author days git lists for one person, oldest first."""
    out = b.git("log", "--all", f"--author={author}", "--format=%ad", "--date=short", "--reverse", "--", *pathspec)
    return out.split()


def test_an_author_only_outside_the_period_is_told_when_they_last_committed(engine, scoped):
    last = git_days(scoped, "alice@example.org")[-1]
    assert last == "2023-05-02"
    report = ask(engine, "web since:2024-01-01 author:alice@example.org")
    assert report.totals.person_days == 0
    assert report.hint == f"alice@example.org committed to `web`, but not since 2024-01-01: last on {last}."
    first = git_days(scoped, "bob@example.org")[0]
    assert ask(engine, "web until:2023-12-31 author:bob@example.org").hint == \
        f"bob@example.org committed to `web`, but not until 2023-12-31: first on {first}."


def test_an_author_only_outside_the_period_under_a_path_is_told_the_path(engine, scoped):
    """The sentence said "committed to `web`, but not since 2024-01-01: last on 2023-05-01" for `path:src`,
    though alice's last commit to `web` is of 2023-05-02 (in docs/): the day is her last under `src`, and
    the sentence now says so."""
    last_under_src = git_days(scoped, "alice@example.org", "src")[-1]
    assert (last_under_src, git_days(scoped, "alice@example.org")[-1]) == ("2023-05-01", "2023-05-02")
    report = ask(engine, "web since:2024-01-01 path:src author:alice@example.org")
    assert report.totals.person_days == 0
    assert report.hint == (f"alice@example.org committed to `web`, but not under `src` since 2024-01-01: "
                           f"last on {last_under_src}.")
    outside_docs = git_days(scoped, "alice@example.org", ".", ":!docs")[-1]
    assert ask(engine, "web since:2024-01-01 path:!docs author:alice@example.org").hint == (
        f"alice@example.org committed to `web`, but not outside `docs` since 2024-01-01: last on {outside_docs}.")
    first_under_src = git_days(scoped, "bob@example.org", "src")[0]
    assert ask(engine, "web until:2023-12-31 path:src path:!src/a.c author:bob@example.org").hint == (
        f"bob@example.org committed to `web`, but not under `src` and outside `src/a.c` until 2023-12-31: "
        f"first on {first_under_src}.")


def test_an_author_only_outside_a_path_is_told_where_they_did_commit(engine, scoped):
    assert git_days(scoped, "bob@example.org", "docs") == []
    report = ask(engine, "web path:docs author:bob@example.org")
    assert report.totals.person_days == 0
    assert report.hint == "bob@example.org committed to `web`, but never with `path:docs`."


def test_several_people_outside_the_period_name_the_most_recent(engine, scoped):
    report = ask(engine, "web since:2024-02-15 author:ali*")
    assert report.hint == ("None of the 2 people `author:ali*` matches is active in this scope; the last, "
                           "alicia@example.org, committed to `web`, but not since 2024-02-15: last on 2024-02-01.")


def refusal(engine, text: str) -> str:
    """The one sentence a question is refused with."""
    with pytest.raises(QueryError) as error:
        ask(engine, text)
    return str(error.value)


def test_a_misspelt_author_is_offered_someone_active_in_the_scope(engine, scoped):
    # the nearest of all history is alice, who counts nothing since 2024: alicia does
    assert refusal(engine, "web since:2024-01-01 author:alice@exmple.org") == (
        "`author:alice@exmple.org` matches nobody who committed to `web`, so it would count nothing; did you mean "
        "`author:alicia@example.org`? The nearest of all, alice@example.org, committed to `web`, but not since "
        "2024-01-01: last on 2023-05-02.")
    # nobody close in scope: where the nearest did commit, and the command that lists the scope's people
    assert refusal(engine, "web path:docs author:bob@exmple.org") == (
        "`author:bob@exmple.org` matches nobody who committed to `web`, so it would count nothing; "
        "bob@example.org committed to `web`, but never with `path:docs`; `/gad web path:docs by:person` lists "
        "those active in this scope.")
    # in scope, the nearest is offered as before
    assert refusal(engine, "web since:2024-01-01 author:bob@exmple.org").endswith("did you mean `author:bob@example.org`?")


def test_the_scope_listing_command_names_the_scope(engine, scoped):
    assert refusal(engine, "web since:2024-01-01 path:src author:zz").endswith(
        "authors are mailmapped, lower-cased e-mails: `/gad web since:2024-01-01 path:src by:person` lists those "
        "active in this scope.")


def test_a_misspelt_domain_is_offered_the_domain_active_in_the_scope(engine, scoped):
    assert refusal(engine, "web since:2024-01-01 author:*@exmple.org") == (
        "`author:*@exmple.org` matches nobody who committed to `web`, so it would count nothing; did you mean "
        "`author:*@example.org`?")


def test_someone_who_only_shares_the_domain_is_not_offered(engine, scoped):
    # zz@example.org is as close to alice@example.org as the domain makes it: no one is named
    assert refusal(engine, "web author:zz@example.org").endswith(
        "so it would count nothing; authors are mailmapped, lower-cased e-mails: `/gad web by:person` lists them.")


def test_an_author_active_before_and_after_the_period_is_told_so(engine, tmp_path):
    b = RepoBuilder(tmp_path / "gap")
    b.commit(email="carol@example.org", date="2023-01-01")
    b.commit(email="dan@example.org", date="2023-07-01")
    b.commit(email="carol@example.org", date="2024-01-01")
    engine.track(str(b.path), "gap")
    assert ask(engine, "gap since:2023-06 until:2023-12 author:carol@example.org").hint == (
        "carol@example.org committed to `gap`, but not from 2023-06-01 to 2023-12-31: only before and after it, "
        "from 2023-01-01 to 2024-01-01.")
