"""The first index and its resumption: refs to trees and blobs, an interrupted walk, borrowed objects."""

from __future__ import annotations

import shutil
import subprocess

import pygit2
import pytest

from bot.store import indexer as indexer_module
from bot.errors import GadError, MirrorError
from bot.engine.query import parse_query
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder, git_env, oracle_gad


def ask(engine, text: str):
    return engine.report(parse_query(text.split(), TODAY), TODAY)


def git(path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=path, check=True, capture_output=True, text=True, env=git_env()).stdout


def annotated(b: RepoBuilder, name: str, target: pygit2.Oid, kind: int) -> pygit2.Oid:
    return b.repo.create_tag(name, target, kind, pygit2.Signature("T", "t@example.com", 1700000000, 0), "tag\n")


@pytest.fixture
def odd_tags(tmp_path):
    """git.git's shape: a tag naming a blob (a public key), one naming a tree, tags of tags."""
    b = RepoBuilder(tmp_path / "up")
    b.commit(name="Ann", email="ann@example.com", date="2024-01-01")
    b.commit(name="Bob", email="bob@example.com", date="2024-01-02", files={"key.pub": "-----BEGIN PGP"})
    head = b.repo[b.tip("main")]
    blob = head.tree["key.pub"].id
    annotated(b, "junio-gpg-pub", blob, pygit2.enums.ObjectType.BLOB)
    b.repo.references.create("refs/tags/lightweight-blob", blob)
    annotated(b, "v2.6.11-tree", head.tree.id, pygit2.enums.ObjectType.TREE)
    # v1.0rc1 in git.git is a tag of a tag of a commit; this one points at a commit only a tag reaches
    side = b.commit("refs/heads/tmp", parents=[], name="Cy", email="cy@example.com", date="2023-05-05",
                    files={"old": "x"})
    inner = annotated(b, "inner", side, pygit2.enums.ObjectType.COMMIT)
    annotated(b, "v1.0rc1", inner, pygit2.enums.ObjectType.TAG)
    b.repo.references.delete("refs/tags/inner")
    b.repo.references.delete("refs/heads/tmp")
    return b


def test_tags_of_blobs_trees_and_tags_are_tracked_as_git_log_does(engine, odd_tags):
    result = engine.track(str(odd_tags.path), "up")
    assert result.error is None
    assert git(odd_tags.path, "cat-file", "-t", "refs/tags/junio-gpg-pub^{}").strip() == "blob"
    # git log --branches --tags: Ann and Bob on main, Cy through the tag of a tag; blob and tree tags add nothing
    assert ask(engine, "up").totals.person_days == oracle_gad(odd_tags.path) == 3
    assert ask(engine, "up refs:all").totals.person_days == oracle_gad(odd_tags.path, scope="all") == 3
    assert ask(engine, "up branch:HEAD").totals.person_days == oracle_gad(odd_tags.path, scope="head") == 2
    assert ask(engine, "up branch:v1.0rc1").totals.person_days == 1  # a tag of a tag names Cy's commit
    odd_tags.commit(name="Di", email="di@example.com", date="2024-01-03")
    annotated(odd_tags, "another-key", odd_tags.repo[odd_tags.tip("main")].tree.id, pygit2.enums.ObjectType.TREE)
    assert engine.sync(["up"])[0].error is None
    assert ask(engine, "up").totals.person_days == oracle_gad(odd_tags.path) == 4


def test_a_ref_to_a_missing_object_is_still_damage(engine, tmp_path):
    b = RepoBuilder(tmp_path / "up")
    b.commit(date="2024-01-01")
    engine.track(str(b.path), "up")
    mirror = engine.repo("up").mirror_path
    missing = "1" * 40
    (mirror / "refs" / "tags").mkdir(parents=True, exist_ok=True)
    (mirror / "refs" / "tags" / "ghost").write_text(missing + "\n")
    result = engine.sync_one(engine.repo("up"), fetch=False)
    assert result.error is not None and "damaged" in result.error and "refs/tags/ghost" in result.error
    assert ask(engine, "up").totals.person_days == 1  # the last good figures stay


@pytest.fixture
def long_history(tmp_path):
    b = RepoBuilder(tmp_path / "up")
    for i in range(60):
        b.commit(name=f"P{i % 7}", email=f"p{i % 7}@example.com", date=f"2024-{1 + i // 28:02d}-{1 + i % 28:02d}",
                 offset=[-300, 0, 540][i % 3])
        if i == 30:
            b.commit("side", name="S", email="s@example.com", date="2024-02-10")
    b.merge("main", b.tip("side"), email="m@example.com", date="2024-03-01")
    b.tag("v1", b.tip("main"), annotated=True)
    return b


class Interrupted(Exception):
    pass


def test_an_interrupted_first_index_resumes_from_its_frontier(engine, long_history, monkeypatch):
    """Killed after two chunks of a walk: the next sync reads only what was not read, and answers exactly."""
    monkeypatch.setattr(indexer_module, "CHUNK", 10)
    read = []
    original = indexer_module.git_history.read_commits

    def counting(*args, stop_after=None, **kwargs):
        for number, chunk in enumerate(original(*args, **kwargs)):
            read.append(len(chunk))
            yield chunk
            if stop_after is not None and number + 1 == stop_after:
                raise Interrupted()

    monkeypatch.setattr(indexer_module.git_history, "read_commits",
                        lambda *a, **k: counting(*a, stop_after=2, **k))
    with pytest.raises(Interrupted):
        engine.track(str(long_history.path), "up", paths=False)
    # The failed track is not forgotten like a failed clone: its two chunks and frontier are kept.
    repo = engine.repo("up")
    assert repo.generation == 0 and sum(read) == 20
    with pytest.raises(MirrorError, match=r"still being indexed \(\d+ % done, 20 of about \d+ commits\)"):
        ask(engine, "up")
    monkeypatch.setattr(indexer_module.git_history, "read_commits", lambda *a, **k: counting(*a, **k))
    assert engine.sync(["up"])[0].error is None
    total = int(git(long_history.path, "rev-list", "--all", "--count"))
    assert sum(read) == total  # every commit read once over both runs: nothing walked twice
    assert ask(engine, "up").totals.person_days == oracle_gad(long_history.path)
    assert ask(engine, "up branch:HEAD").totals.person_days == oracle_gad(long_history.path, scope="head")
    assert ask(engine, "up path:file3.txt").totals.commits > 0


def test_a_source_that_borrows_objects_is_tracked_by_linking_not_fetching(engine, long_history, tmp_path):
    shared = tmp_path / "shared.git"
    subprocess.run(["git", "clone", "--bare", "--shared", "-q", str(long_history.path), str(shared)], check=True,
                   env=git_env())
    assert (shared / "objects" / "info" / "alternates").exists()
    assert not list((shared / "objects" / "pack").glob("*.pack"))  # every object is borrowed
    engine.track(str(shared), "borrowed")
    mirror = engine.repo("borrowed").mirror_path
    alternates = (mirror / "objects" / "info" / "alternates").read_text().split()
    assert alternates == [str((long_history.path / ".git" / "objects").resolve())]
    assert not list((mirror / "objects" / "pack").glob("*.pack"))  # nothing was repacked or fetched
    assert ask(engine, "borrowed").totals.person_days == oracle_gad(shared)
    # a new commit in the borrowing repository is hard-linked on the next sync
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(shared), str(work)], check=True, env=git_env())
    (work / "new.txt").write_text("x")
    git(work, "add", "new.txt")
    subprocess.run(["git", "-c", "user.name=New", "-c", "user.email=new@example.com", "commit", "-qm", "new",
                    "--date=2024-06-01T10:00:00+0000"], cwd=work, check=True, env=git_env())
    git(work, "push", "-q", str(shared), "HEAD:main")
    assert engine.sync(["borrowed"])[0].new_commits == 1
    assert ask(engine, "borrowed").totals.person_days == oracle_gad(shared)
    shutil.rmtree(work)


def test_path_answers_wait_for_the_paths_of_every_chunk(engine, long_history, monkeypatch):
    monkeypatch.setattr(indexer_module, "CHUNK", 25)
    engine.track(str(long_history.path), "up", paths=False)
    with pytest.raises(GadError, match=r"0 % done"):
        ask(engine, "up path:file3.txt")
    engine.index_paths("up")
    assert ask(engine, "up path:file3.txt").totals.commits == int(git(long_history.path, "rev-list", "--all", "--no-merges",
                                                               "--count", "--", "file3.txt"))


@pytest.fixture
def with_pulls(tmp_path):
    """A forge's shape: main and a tag, and pull-request refs whose commits no branch reaches."""
    b = RepoBuilder(tmp_path / "up")
    for day in range(1, 6):
        b.commit(name="Ann", email="ann@example.com", date=f"2024-01-0{day}")
    b.tag("v1", b.tip("main"))
    base = b.tip("main")
    for n in range(3):
        b.commit(f"refs/pull/{n}/head", parents=[base], name=f"P{n}", email=f"p{n}@example.com", date="2024-02-01")
        b.commit(f"refs/pull/{n}/head", name=f"P{n}", email=f"p{n}@example.com", date="2024-02-02")
    return b


def test_a_first_index_answers_for_branches_and_tags_before_it_walks_pull_requests(engine, with_pulls, monkeypatch):
    walks = []
    original = indexer_module.git_history.read_commits
    monkeypatch.setattr(indexer_module.git_history, "read_commits",
                        lambda path, include, exclude=(), **k: (walks.append((len(include), len(list(exclude)))),
                                                                original(path, include, exclude, **k))[1])
    result = engine.track(str(with_pulls.path), "up", paths=False)
    assert result.commits == 5  # the commits branches and tags reach: the answer comes after these alone
    assert walks == [(1, 0)]  # main and v1 name the same commit: one tip walked
    assert ask(engine, "up").totals.person_days == oracle_gad(with_pulls.path) == 5
    assert ask(engine, "up branch:HEAD").totals.person_days == 5
    with pytest.raises(GadError, match=r"`up` is still indexing the commits that only refs outside its branches "
                                       r"and tags reach .*ask for `refs:all` again"):
        ask(engine, "up refs:all")
    with pytest.raises(GadError, match=r"ask for `branch:refs/pull/1/head` again"):
        ask(engine, "up branch:refs/pull/1/head")
    engine.index_paths("up")  # the rest of a track: the other refs, then the changed paths
    assert walks[1] == (6, 0)  # exactly the pull requests' 6 commits: found by stopping at indexed ones
    assert ask(engine, "up refs:all").totals.person_days == oracle_gad(with_pulls.path, scope="all") == 11
    assert ask(engine, "up branch:refs/pull/1/head").totals.person_days == 7
    assert engine.repo("up").commits == 11
    assert ask(engine, "up path:file3.txt").totals.commits > 0


def test_a_sync_finishes_what_a_first_index_left(engine, with_pulls):
    engine.track(str(with_pulls.path), "up", paths=False)  # as if the process stopped right after answering
    result = engine.sync(["up"])[0]
    assert result.error is None and result.commits == 11
    assert ask(engine, "up refs:all").totals.person_days == oracle_gad(with_pulls.path, scope="all")
    copy = shutil.copytree(with_pulls.path, with_pulls.path.parent / "again")  # one source is tracked once
    fresh = engine.track(str(copy), "again")  # one call does the whole job
    assert fresh.commits == 11 and not engine.index.other_refs_pending(engine.repo("again").id)
