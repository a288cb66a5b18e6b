"""The index's promises: incremental == full, follows upstream, cheap identity changes, atomic, private."""

from __future__ import annotations

import shutil
import stat
import tempfile
from pathlib import Path

import pygit2
import pytest
from hypothesis import HealthCheck, given, settings as hsettings, strategies as st

from bot.config import Settings
from bot.engine.engine import Engine
from bot.store.index import SCHEMA_VERSION, Index
from bot.engine.query import parse_query
from tests.conftest import TODAY
from tests.gitbuild import RepoBuilder, oracle_gad

SCOPES = ("up", "up branch:HEAD", "up refs:all", "up bots:on", "up mailmap:off by:person", "up branch:side")


def figures(engine: Engine) -> dict:
    out = {}
    for text in SCOPES:
        try:
            report = engine.report(parse_query(text.split(), TODAY), TODAY)
        except Exception as error:  # branch:side may not exist at this point
            out[text] = type(error).__name__
            continue
        out[text] = (report.totals, tuple((r.key, r.totals) for r in report.rows))
    return out


def counted_rows(engine: Engine) -> list[tuple]:
    """(commit key, raw identity, day, scope bits) of every commit that counts somewhere, each once."""
    repo = engine.repo("up")
    columns = engine.columns_of(repo)
    identities = {a: (n, e) for a, n, e in engine.index.repo_author_identities(repo.id)}
    alive = columns.bits != 0
    rows = sorted(zip(columns.commit_ids[alive].tolist(), [identities[a] for a in columns.author_ids[alive].tolist()],
                      columns.days[alive].tolist(), columns.bits[alive].tolist()))
    assert len({r[0] for r in rows}) == len(rows), "a commit is stored twice"
    return rows


operation = st.one_of(
    st.tuples(st.just("commit"), st.sampled_from(["main", "side", "refs/pull/1/head", "refs/tags/t1"]),
              st.integers(0, 5), st.integers(0, 20), st.sampled_from([-720, -300, 0, 330, 540, 840])),
    st.tuples(st.just("branch"), st.sampled_from(["side", "refs/pull/1/head", "refs/tags/t1"]), st.integers(0, 50)),
    st.tuples(st.just("delete"), st.sampled_from(["side", "refs/pull/1/head", "refs/tags/t1"])),
    st.tuples(st.just("rewind"), st.sampled_from(["main", "side"]), st.integers(1, 3)),
    st.tuples(st.just("merge"), st.sampled_from(["side", "refs/pull/1/head"])),
    st.tuples(st.just("mailmap"), st.booleans()),
    st.just(("sync",)),
)

AUTHORS = [("Ann", "ann@example.com"), ("Ann", "ANN@example.com"), ("Bo", "bo@example.org"),
           ("Cy", "cy@example.net"), ("renovate[bot]", "bot@example.com"), ("Di", "di.alt@example.com")]


def apply(b: RepoBuilder, op: tuple, made: list) -> None:
    kind = op[0]
    full = lambda ref: ref if ref.startswith("refs/") else f"refs/heads/{ref}"
    if kind == "commit":
        _, ref, who, day, offset = op
        name, email = AUTHORS[who]
        made.append(b.commit(ref, name=name, email=email, date=f"2024-02-{day + 1:02d}T23:30", offset=offset))
    elif kind == "branch" and made:
        b.set_ref(full(op[1]), made[op[2] % len(made)])
    elif kind == "delete" and full(op[1]) in b.repo.references:
        b.repo.references.delete(full(op[1]))
    elif kind == "rewind" and b.tip(op[1]) is not None:
        commit = b.repo[b.tip(op[1])]
        for _ in range(op[2]):
            if not commit.parents:
                return
            commit = commit.parents[0]
        b.set_ref(full(op[1]), commit.id)
    elif kind == "merge" and b.tip(op[1]) is not None and b.tip("main") is not None:
        made.append(b.merge("main", b.tip(op[1]), email="merger@example.com", date="2024-03-01"))
    elif kind == "mailmap" and b.tip("main") is not None:
        text = "Di <di@example.com> <di.alt@example.com>\n" if op[1] else "# none\n"
        made.append(b.commit("main", files={".mailmap": text}, date="2024-03-02"))


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operation, min_size=1, max_size=25))
def test_incremental_equals_full_index(ops):
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        b = RepoBuilder(tmp / "up")
        made: list = [b.commit("main", date="2024-01-01")]
        stepwise = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp / "step")}))
        stepwise.track(str(b.path), "up")
        for op in ops:
            if op[0] == "sync":
                assert not stepwise.sync(["up"])[0].error
            else:
                apply(b, op, made)
        assert not stepwise.sync(["up"])[0].error
        whole = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp / "whole")}))
        whole.track(str(b.path), "up")
        # the store a sync at a time holds exactly what one walk of the final history holds
        assert counted_rows(stepwise) == counted_rows(whole)
        assert figures(stepwise) == figures(whole)
        assert figures(whole)["up"][0].person_days == oracle_gad(b.path)
        assert figures(whole)["up branch:HEAD"][0].person_days == oracle_gad(b.path, scope="head")
        assert figures(whole)["up refs:all"][0].person_days == oracle_gad(b.path, scope="all")


def test_force_push_and_deleted_refs_stop_counting(engine, upstream):
    upstream.commit(email="a@example.com", date="2024-01-01")
    keep = upstream.tip("main")
    upstream.commit(email="b@example.com", date="2024-01-02")
    upstream.commit("gone", email="c@example.com", date="2024-01-03")
    engine.track(str(upstream.path), "up")
    assert engine.report(parse_query(["up"], TODAY)).totals.person_days == 3
    upstream.set_ref("refs/heads/main", keep)  # force-push main back
    upstream.delete_ref("gone")
    result = engine.sync(["up"])[0]
    assert result.removed_commits == 2 and result.commits == 1
    assert engine.report(parse_query(["up"], TODAY)).totals.person_days == 1


def test_new_mailmap_upstream_takes_effect_on_next_sync(engine, upstream):
    upstream.commit(email="dee@example.com", date="2024-01-01")
    upstream.commit(email="dee@old.example.com", date="2024-01-02")
    engine.track(str(upstream.path), "up")
    assert engine.report(parse_query(["up"], TODAY)).totals.developers == 2
    upstream.commit(email="dee@example.com", date="2024-01-02", files={".mailmap": "<dee@example.com> <dee@old.example.com>\n"})
    engine.sync(["up"])
    report = engine.report(parse_query(["up"], TODAY))
    assert (report.totals.developers, report.totals.person_days) == (1, 2)


def test_mirror_follows_upstream_through_fetch(tmp_path, settings):
    """A real clone into the store, then fetch with prune picks up new, moved and deleted refs."""
    upstream = RepoBuilder(tmp_path / "origin", bare=True)
    upstream.commit(email="a@example.com", date="2024-01-01")
    upstream.commit("topic", email="t@example.com", date="2024-01-05")
    engine = Engine.open(settings)
    engine.track(str(upstream.path), "origin")
    mirror = pygit2.Repository(str(engine.repo("origin").mirror_path))
    assert mirror.is_bare and "refs/heads/topic" in mirror.references
    assert mirror.references["HEAD"].target == "refs/heads/main"
    upstream.delete_ref("topic")
    upstream.commit(email="n@example.com", date="2024-01-06")
    engine.sync(["origin"])
    assert "refs/heads/topic" not in mirror.references
    assert engine.report(parse_query(["origin"], TODAY)).totals.person_days == 2


def test_unchanged_sync_does_nothing(engine, upstream):
    upstream.commit()
    engine.track(str(upstream.path), "up")
    generation = engine.repo("up").generation
    assert engine.sync(["up"])[0].unchanged
    assert engine.repo("up").generation == generation


def test_a_failed_update_leaves_the_previous_state(engine, upstream, monkeypatch):
    upstream.commit(date="2024-01-01")
    engine.track(str(upstream.path), "up")
    before = figures(engine)
    upstream.commit(email="new@example.com", date="2024-01-02")

    def explode(*args, **kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(engine.index, "replace_tips", explode)  # fail late, mid-transaction
    with pytest.raises(RuntimeError):
        engine.sync(["up"])
    monkeypatch.undo()
    assert figures(engine) == before
    assert engine.index.integrity_ok()
    assert engine.sync(["up"])[0].new_commits == 1  # the next sync completes the work


def test_index_file_is_private_and_migrated(settings):
    Engine.open(settings)
    mode = stat.S_IMODE(settings.index_path.stat().st_mode)
    assert mode == 0o600
    assert stat.S_IMODE(settings.data_dir.stat().st_mode) == 0o700
    index = Index(settings.index_path)
    assert index.schema_version() == SCHEMA_VERSION
    assert index.migrate() == []  # idempotent
    assert index.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_untrack_forgets_rows_and_mirror(engine, tmp_path):
    a = RepoBuilder(tmp_path / "a")
    a.commit()
    shutil.copytree(a.path, tmp_path / "b")  # a fork: another source holding the same commit
    engine.track(str(a.path), "a")
    engine.track(str(tmp_path / "b"), "b")
    mirror = engine.repo("a").mirror_path
    engine.untrack("a")
    assert not mirror.exists()
    assert engine.known_names() == ["b"]
    assert engine.report(parse_query(["b"], TODAY)).totals.commits == 1  # shared commit kept for b
    engine.untrack("b")
    for table in ("commit_chunks", "derived", "walks", "repo_authors", "refs"):
        assert engine.index.db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] == 0, table


def test_upgrade_guards_every_network_source_tracked_before(tmp_path, monkeypatch):
    """Rows written before migration 7 cannot say who typed them: https:// and ssh:// mirrors are guarded."""
    import bot.store.tables.schema as index_module  # where the migrations live

    path = tmp_path / "index.sqlite"
    # the schema as it was before migration 7 (later migrations may assume its column)
    old = [m for m in index_module.MIGRATIONS if m[0] < 7]
    assert old[-1][0] == 6 and index_module.MIGRATIONS[6][1] == "guarded_sources"
    monkeypatch.setattr(index_module, "MIGRATIONS", old)
    monkeypatch.setattr(index_module, "SCHEMA_VERSION", old[-1][0])
    before = Index(path)
    for name, source, in_place in (("gh", "https://github.com/o/n", 0), ("key", "ssh://git@host.example/o/n", 0),
                                   ("daemon", "git://127.0.0.1:9418/x", 0), ("local", "/srv/repo", 0),
                                   ("here", "https://example.com/x", 1)):
        before.db.execute("INSERT INTO repos (name, source, mirror_path, in_place, created_at) VALUES (?, ?, ?, ?, ?)",
                          (name, source, str(tmp_path / "mirrors" / name), in_place, "2026-01-01T00:00:00+00:00"))
    before.close()
    monkeypatch.undo()
    after = Index(path)
    assert after.schema_version() == SCHEMA_VERSION
    assert {r.name: r.guarded for r in after.repos()} == {"gh": True, "key": True, "daemon": False, "local": False,
                                                         "here": False}



def test_an_index_opened_while_another_process_holds_the_new_file_waits_for_it(tmp_path):
    """serve starts its report and sync workers together on a new data directory, and each opens the index file,
    switching it to WAL. While another connection holds the new file's write lock (the winner of that race, mid-
    switch), SQLite answers the WAL switch 'database is locked' at once, without waiting on busy_timeout (seen
    as a worker failing at start in test_workers under load). Opening waits for the lock instead."""
    import sqlite3
    import threading
    import time

    from bot.store.index import Index

    path = tmp_path / "index.sqlite"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")  # the file is new: no WAL yet
    opened: list[object] = []

    def open_it() -> None:
        try:
            opened.append(Index(path).repos())
        except sqlite3.OperationalError as error:
            opened.append(error)

    started = time.monotonic()
    opener = threading.Thread(target=open_it)
    opener.start()
    time.sleep(0.5)
    holder.execute("ROLLBACK")
    holder.close()
    opener.join(60)
    assert opened == [[]], opened
    assert time.monotonic() - started >= 0.5

