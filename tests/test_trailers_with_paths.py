"""A first index reads `Co-authored-by:` trailers in the paths phase's `git diff-tree` (not in the walk's
`git log`, where parsing every message cost 12 % of the time to the first answer): until then
`coauthors:on` says so and no partial count is told; after it, every figure equals git's.

Expected figures come from git itself (tests/test_estimates.py's oracle runs METRIC.md's pipeline)
or by hand."""

from __future__ import annotations

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from bot.errors import GadError
from bot.store import history
from tests.gitbuild import RepoBuilder
from tests.test_estimates import ask, oracle_with_coauthors
from tests.test_estimation import figures, git_records


@pytest.fixture
def merged(tmp_path):
    """A pull request merged with --no-ff whose merge commit names a co-author, a squash merge naming two,
    and a child commit adding a file named after its parent's id (a stranger can name files anything).

    By hand: authors ann 03-01, 03-03 (the merge), 03-04; cat 03-02, 03-05 = ann 3 days + cat 2 = 5
    person-days. Co-authors: dan on the merge (03-03), bob and eve on the squash (03-04): + 3 = 8.
    """
    b = RepoBuilder(tmp_path / "merged")
    base = b.commit(name="Ann", email="ann@example.com", date="2025-03-01T10:00", files={"src/a.c": "a"})
    side = b.commit("feature", parents=[base], name="Cat", email="cat@example.com", date="2025-03-02T10:00",
                    files={"src/b.c": "b"})
    b.merge("main", side, name="Ann", email="ann@example.com", date="2025-03-03T10:00", files={},
            message="Merge pull request #7\n\nCo-authored-by: Dan <dan@example.net>\n")
    parent = b.tip("main")
    b.commit(name="Ann", email="ann@example.com", date="2025-03-04T10:00",
             files={str(parent): "named after my parent", "docs/guide.md": "g"},
             message="Squash merge of #9\n\nCo-authored-by: Bob <bob@example.com>\nCo-authored-by: Eve <eve@example.com>\n")
    squash = b.tip("main")
    b.commit(name="Cat", email="cat@example.com", date="2025-03-05T10:00",
             files={str(squash): "named after my parent, a plain commit", "web/app.js": "x"})
    return b


def test_a_first_index_reads_trailers_with_the_paths(merged, tmp_path):
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(merged.path), "merged", paths=False)  # commits in, plain reports answer; no paths yet

    plain = ask(engine, "merged")
    assert plain.totals.person_days == 5 == oracle_with_coauthors(merged.path, coauthors=False)[0]
    assert plain.coauthor_commits == 0  # not a partial count: nothing is told until every trailer is read
    with pytest.raises(GadError, match="still reading its commits' `Co-authored-by:` trailers"):
        ask(engine, "merged coauthors:on")

    engine.index_paths("merged")
    on = ask(engine, "merged coauthors:on")
    assert (on.totals.person_days, on.coauthor_commits) == (8, 2)
    assert (on.totals.person_days, on.coauthor_commits) == oracle_with_coauthors(merged.path, coauthors=True)
    off = ask(engine, "merged")
    assert (off.totals.person_days, off.coauthor_commits, off.coauthor_active_days) == (5, 2, 3)


def test_a_file_named_after_its_parent_is_a_path_not_a_header(merged, tmp_path):
    """diff-tree lists each commit as a header then its paths: a file spelling the next commit's id (here the
    child's file names its parent, which diff-tree lists next) must not pass for that commit's header."""
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(merged.path), "merged")
    for path in ("src", "docs", "web", "src/b.c"):
        expected = figures(git_records(merged, "--branches", "--tags", paths=(path,), no_merges=True))
        got = ask(engine, f"merged path:{path}").totals
        assert (got.person_days, got.developers, got.commits) == expected, path
    assert ask(engine, "merged path:src").totals.commits == 2  # by hand: a.c, b.c; not the merge, not the squash
    web = ask(engine, "merged path:web since:2025-03-05").totals
    assert (web.person_days, web.commits) == (1, 1)  # by hand: Cat's 03-05 commit alone, not the squash's day


def test_changed_paths_and_trailers_of_each_commit_as_git_lists_them(merged):
    """read_changed_paths alone, against `git diff-tree` and `git log` run here."""
    oids = merged.git("log", "--format=%H", "--branches").split()
    changed = history.read_changed_paths(merged.path / ".git" if (merged.path / ".git").exists() else merged.path, oids)
    for oid, paths in zip(oids, changed.paths):
        parents = merged.git("log", "-1", "--format=%P", oid).split()
        expected = [] if len(parents) > 1 else merged.git("diff-tree", "-r", "--name-only", "--root", "--no-renames",
                                                          "--format=", oid).split("\n")
        assert sorted(p.decode() for p in paths) == sorted(p for p in expected if p), oid
    named = {(oids[row], changed.identities[i][1]) for row, i in zip(changed.coauthor_rows, changed.coauthor_index)}
    trailers = {(oid, value.rpartition("<")[2].rstrip(">"))
                for oid in oids for value in merged.git(
                    "log", "-1", "--format=%(trailers:key=Co-authored-by,valueonly,separator=%x01)", oid
                ).strip().split("\x01") if value}
    assert named == trailers and len(named) == 3


def test_a_paths_phase_cut_short_reads_the_rest_of_the_trailers_later(merged, tmp_path, monkeypatch):
    """Chunks of two commits; the paths phase fails on its third chunk after storing two chunks' trailers (one
    of them naming co-authors). The next run reads the rest; the people of the co-authors stored by the first
    run are still resolved, and every figure equals git's."""
    from bot.errors import MirrorError
    from bot.store import indexer

    monkeypatch.setattr(indexer, "CHUNK", 2)
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(merged.path), "merged", paths=False)
    real, calls = indexer._changed_paths, []

    def failing_third(*args):
        calls.append(1)
        if len(calls) == 3:
            raise MirrorError("git diff-tree failed: a disk hiccup.")
        return real(*args)

    monkeypatch.setattr(indexer, "_changed_paths", failing_third)
    with pytest.raises(MirrorError):
        engine.index_paths("merged")
    repo = engine.index.repo("merged")
    assert 0 < len(engine.index.chunks_lacking_coauthors(repo.id)) < engine.index.chunk_count(repo.id)
    with pytest.raises(GadError, match="still reading"):
        ask(engine, "merged coauthors:on")

    monkeypatch.setattr(indexer, "_changed_paths", real)
    engine.index_paths("merged")
    on = ask(engine, "merged coauthors:on")
    assert (on.totals.person_days, on.coauthor_commits) == (8, 2) == oracle_with_coauthors(merged.path, coauthors=True)


def test_a_paths_phase_that_read_the_last_trailers_then_failed_on_a_synced_chunk_completes_them_on_resume(
        tmp_path, monkeypatch):
    """A first index (paths left for later), then a sync (its chunk read with its trailers, in git log), then a
    paths phase that stores every walked chunk's trailers and fails on the synced chunk, the last one. The
    next run has only the synced chunk left, whose trailers were read already: it must still finish the
    co-authors (their people, a new generation), or coauthors:on stays refused or counts them as nobody.

    By hand: ann 03-01, 03-02, 03-03, 03-04 (4) + co-authors bob and eve 03-02 (2) = 6; dan on the synced
    commit 03-05, with ann: + 2 = 8; 2 commits name co-authors."""
    from bot.errors import MirrorError
    from bot.store import indexer

    b = RepoBuilder(tmp_path / "src")
    for day, message in (("01", "one"), ("02", "two\n\nCo-authored-by: Bob <bob@example.com>\n"
                                                 "Co-authored-by: Eve <eve@example.com>\n"),
                         ("03", "three"), ("04", "four")):
        b.commit(name="Ann", email="ann@example.com", date=f"2025-03-{day}T10:00", files={f"f{day}": day},
                 message=message)
    monkeypatch.setattr(indexer, "CHUNK", 2)
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    engine.track(str(b.path), "r", paths=False)
    b.commit(name="Ann", email="ann@example.com", date="2025-03-05T10:00", files={"f05": "05"},
             message="five\n\nCo-authored-by: Dan <dan@example.net>\n")
    engine.sync_one(engine.repo("r"), paths=False)
    repo = engine.index.repo("r")
    assert len(engine.index.chunks_lacking_coauthors(repo.id)) == 2 < engine.index.chunk_count(repo.id) == 3

    real = indexer._changed_paths

    def failing_on_the_synced_chunk(mirror, chunk, scratch_dir):
        if chunk.coauthor_rows is not None:
            raise MirrorError("git diff-tree failed: a disk hiccup.")
        return real(mirror, chunk, scratch_dir)

    with pytest.raises(GadError, match="still reading"):
        ask(engine, "r coauthors:on")  # this reader keeps its columns until the next generation
    monkeypatch.setattr(indexer, "_changed_paths", failing_on_the_synced_chunk)
    with pytest.raises(MirrorError):
        engine.index_paths("r")
    assert engine.index.chunks_lacking_coauthors(repo.id) == []
    expected = oracle_with_coauthors(b.path, coauthors=True)
    assert expected == (8, 2)
    on = ask(engine, "r coauthors:on")  # every trailer is read: the answer need not wait for the paths
    assert (on.totals.person_days, on.coauthor_commits) == expected

    monkeypatch.setattr(indexer, "_changed_paths", real)
    engine.index_paths("r")
    on = ask(engine, "r coauthors:on")
    assert (on.totals.person_days, on.coauthor_commits) == expected
    fresh = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    on = ask(fresh, "r coauthors:on")
    assert (on.totals.person_days, on.coauthor_commits) == expected


def test_a_project_tells_no_partial_count_while_one_repository_still_reads_its_trailers(tmp_path):
    """A project of a repository whose trailers are read and one whose paths phase has not run: the plain
    answer must not tell the first one's co-authors as the project's (the second's are unknown yet).

    By hand: `done` has one commit naming a co-author, `pending` one; neither is counted until both are read,
    then 2 commits name co-authors (the oracle, per repository: 1 + 1)."""
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    builders = {}
    for name, day in (("done", "01"), ("pending", "02")):
        b = builders[name] = RepoBuilder(tmp_path / name)
        b.commit(name="Ann", email="ann@example.com", date=f"2025-03-{day}T10:00", files={name: day},
                 message=f"{name}\n\nCo-authored-by: Bob <bob@example.com>\n")
        engine.track(str(b.path), name, paths=name == "done")
    engine.project_add("both", ["done", "pending"])
    assert ask(engine, "done").coauthor_commits == 1 == oracle_with_coauthors(builders["done"].path, coauthors=False)[1]

    plain = ask(engine, "both")
    assert (plain.coauthor_commits, plain.coauthor_active_days) == (0, 0)  # not done's alone: pending's are unknown
    with pytest.raises(GadError, match="`pending` is still reading"):
        ask(engine, "both coauthors:on")

    engine.index_paths("pending")
    assert ask(engine, "both").coauthor_commits == 2 == sum(
        oracle_with_coauthors(b.path, coauthors=False)[1] for b in builders.values())


def test_a_project_waits_for_its_members_trailers_then_counts_them(merged, tmp_path):
    """A project whose middle repository's trailers are still unread: coauthors:on names that repository, the plain
    report tells no partial count; once read, the project's figures are git's over each repository (the plain ones,
    by hand: one person-day each, people and days of their own, no trailer). The warm path keeps what it knows
    of a project's repositories per set of snapshots (Snapshots.column_set): it must follow the paths phase."""
    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    plain = []
    for name, email, day in (("first", "zed@example.org", "2024-06-01"), ("last", "yan@example.org", "2024-07-01")):
        repo = RepoBuilder(tmp_path / name)
        repo.commit(name=name.title(), email=email, date=f"{day}T10:00", files={"x": name})
        plain.append(repo)
    engine.track(str(plain[0].path), "first")
    engine.track(str(merged.path), "merged", paths=False)  # commits in, trailers not yet
    engine.track(str(plain[1].path), "last")
    engine.project_add("p", ["first", "merged", "last"])

    for _ in range(2):  # the second asking takes what the first kept
        before = ask(engine, "p")
        assert (before.totals.person_days, before.coauthor_commits) == (5 + 2, 0)
        with pytest.raises(GadError, match="`merged` is still reading its commits' `Co-authored-by:` trailers"):
            ask(engine, "p coauthors:on")

    engine.index_paths("merged")
    gad, naming = oracle_with_coauthors(merged.path, coauthors=True)
    for _ in range(2):
        on = ask(engine, "p coauthors:on")
        assert (on.totals.person_days, on.coauthor_commits) == (gad + 2, naming) == (10, 2)
        off = ask(engine, "p")
        assert (off.totals.person_days, off.coauthor_commits, off.coauthor_active_days) == (5 + 2, 2, 3)
