"""Mirror paths relative to the data directory (issue 21, part 3).

The fault: the index stored each mirror's absolute path, so an index restored into another data
directory (a restore drill) fetched into production's mirrors, without production's locks.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path

import pygit2
import pytest

import bot.store.tables.schema as index_module  # where the migrations live
from bot.errors import ConfigError
from bot.store.index import Index
from bot.store.mirrors.dirs import mirror_dir_name
from tests.faults import run_cli, tracked_web
from tests.gitbuild import RepoBuilder

(RELATIVE,) = [m[0] for m in index_module.MIGRATIONS if m[1] == "relative_mirror_paths"]


def stored_paths(index_file: Path) -> dict[str, str]:
    """What the file itself says, read with plain sqlite3 rather than the code under test."""
    conn = sqlite3.connect(index_file)
    try:
        return dict(conn.execute("SELECT name, mirror_path FROM repos"))
    finally:
        conn.close()


def snapshot(mirror: Path) -> dict[str, tuple[int, int]]:
    """Every file of a mirror with its size and mtime in ns: any write into it shows."""
    return {str(p.relative_to(mirror)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in sorted(mirror.rglob("*")) if p.is_file()}


def refs(mirror: Path) -> dict[str, str]:
    repo = pygit2.Repository(str(mirror))
    return {name: str(repo.references[name].resolve().target) for name in repo.references}


def test_track_stores_the_mirror_relative_and_reads_it_absolute(tmp_path):
    data, upstream = tracked_web(tmp_path)
    assert stored_paths(data / "index.sqlite") == {"web": f"mirrors/{mirror_dir_name('web')}"}
    row = Index(data / "index.sqlite").repo("web")
    assert row.mirror_path == data / "mirrors" / mirror_dir_name("web") and pygit2.Repository(str(row.mirror_path)).head_is_unborn is False


def test_an_in_place_repository_keeps_its_own_absolute_path(tmp_path):
    upstream = RepoBuilder(tmp_path / "here")
    upstream.commit(date="2024-01-02")
    data = tmp_path / "data"
    tracked = run_cli("track", str(upstream.path), "--name", "here", "--in-place", data=data)
    assert tracked.returncode == 0, tracked.stderr
    (stored,) = stored_paths(data / "index.sqlite").values()
    assert Path(stored).is_absolute() and Path(stored).resolve() == Path(pygit2.discover_repository(str(upstream.path))).resolve()


@pytest.fixture
def before_relative(tmp_path, monkeypatch):
    """An index as the release before the migration wrote it: a function adding rows with raw SQL."""
    old = [m for m in index_module.MIGRATIONS if m[0] < RELATIVE]
    monkeypatch.setattr(index_module, "MIGRATIONS", old)
    monkeypatch.setattr(index_module, "SCHEMA_VERSION", old[-1][0])
    path = tmp_path / "data" / "index.sqlite"
    before = Index(path)
    assert before.schema_version() == RELATIVE - 1

    def add(name: str, mirror_path: str, in_place: int = 0) -> None:
        before.db.execute("INSERT INTO repos (name, source, mirror_path, in_place, created_at) VALUES (?, ?, ?, ?, ?)",
                          (name, f"https://example.com/{name}", mirror_path, in_place, "2026-01-01T00:00:00+00:00"))

    yield path, add
    before.close()


def test_the_migration_makes_paths_under_the_data_directory_relative(before_relative, tmp_path, monkeypatch):
    path, add = before_relative
    data = tmp_path / "data"
    (tmp_path / "link").symlink_to(data)  # the service's unit named the data directory through a link
    add("abs", str(data / "mirrors" / "abs"))
    add("linked", str(tmp_path / "link" / "mirrors" / "linked"))
    add("here", "/srv/checkouts/here/.git", in_place=1)
    monkeypatch.undo()
    after = Index(path)
    assert after.schema_version() == index_module.SCHEMA_VERSION
    assert stored_paths(path) == {"abs": "mirrors/abs", "linked": "mirrors/linked", "here": "/srv/checkouts/here/.git"}
    assert {r.name: r.mirror_path for r in after.repos()} == {
        "abs": data / "mirrors" / "abs", "linked": data / "mirrors" / "linked",
        "here": Path("/srv/checkouts/here/.git")}


def test_a_relative_data_directory_of_old_is_understood(before_relative, tmp_path, monkeypatch):
    """GAD_DATA_DIR=data made the old release store `data/mirrors/x`: relative to where it was started."""
    path, add = before_relative
    add("x", "data/mirrors/x")
    monkeypatch.undo()
    monkeypatch.chdir(tmp_path)
    Index(path).close()
    assert stored_paths(path) == {"x": "mirrors/x"}


def test_the_migration_refuses_a_mirror_outside_the_data_directory_in_one_sentence(before_relative, tmp_path,
                                                                                  monkeypatch):
    path, add = before_relative
    add("inside", str(tmp_path / "data" / "mirrors" / "inside"))
    add("prod", "/var/lib/gad-bot/mirrors/prod")
    monkeypatch.undo()
    with pytest.raises(ConfigError) as refused:
        Index(path)
    message = str(refused.value)
    assert message.count(". ") == 0 and "\n" not in message
    assert "`prod`" in message and "/var/lib/gad-bot/mirrors/prod" in message and str(tmp_path / "data") in message
    assert "GAD_DATA_DIR=/var/lib/gad-bot" in message  # what to do: open it where it was made
    # nothing half-done: the file is as it was, at the schema before the migration
    assert stored_paths(path) == {"inside": str(tmp_path / "data" / "mirrors" / "inside"),
                                  "prod": "/var/lib/gad-bot/mirrors/prod"}
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT max(version) FROM migrations").fetchone()[0] == RELATIVE - 1
    conn.close()


@pytest.mark.parametrize("mirrors", ["left behind", "copied along"])
def test_a_restore_drill_in_another_data_directory_never_touches_productions_mirror(tmp_path, mirrors):
    """Back up production, restore into another data directory, sync there: production's mirror is
    untouched (every file's size and mtime, every ref), the drill's own mirror has the new commit."""
    production, upstream = tracked_web(tmp_path, "2024-01-02", "2024-01-03")
    backup = tmp_path / "backup.sqlite"
    assert run_cli("backup", str(backup), data=production).returncode == 0
    drill = tmp_path / "drill"
    drill.mkdir(mode=0o700)
    if mirrors == "copied along":
        shutil.copytree(production / "mirrors", drill / "mirrors", symlinks=True)
    new = RepoBuilder(upstream)  # upstream moves on after the backup
    new_tip = str(new.commit(email="cat@example.com", date="2024-01-04"))
    prod_mirror = production / "mirrors" / mirror_dir_name("web")
    before, before_refs = snapshot(prod_mirror), refs(prod_mirror)
    before_locks = sorted(os.listdir(production / "locks"))

    restored = run_cli("restore", str(backup), data=drill)
    assert restored.returncode == 0, restored.stderr
    synced = run_cli("sync", "web", data=drill)
    assert synced.returncode == 0, synced.stdout + synced.stderr

    assert snapshot(prod_mirror) == before and refs(prod_mirror) == before_refs
    assert new_tip not in refs(prod_mirror).values()
    assert sorted(os.listdir(production / "locks")) == before_locks
    drill_mirror = Index(drill / "index.sqlite").repo("web").mirror_path
    assert drill_mirror.parent == drill / "mirrors" and new_tip in refs(drill_mirror).values()
    answer = run_cli("report", "web", "--json", data=drill)
    assert answer.returncode == 0, answer.stderr
    # ann, bob and cat one day each: 3 person-days, doubled; the drill counts what it fetched
    assert json.loads(answer.stdout)["headline"] == "web: 2GAD 6 person-days, all history (2024-01-02 to 2024-01-04)"


def test_restoring_an_old_backup_made_elsewhere_is_refused_before_anything_is_replaced(before_relative, tmp_path,
                                                                                      monkeypatch):
    """A backup from before migration 14 names production's mirrors by absolute path: restoring it into
    another data directory says so in one sentence, and the index there stays the one it was."""
    path, add = before_relative
    add("prod", "/var/lib/gad-bot/mirrors/prod")
    old_backup = tmp_path / "old-backup.sqlite"
    Index(path, migrate=False).backup(old_backup)  # as `gad-bot backup` of that release wrote it
    monkeypatch.undo()
    drill, _ = tracked_web(tmp_path / "drill")
    before = (drill / "index.sqlite").read_bytes()
    refused = run_cli("restore", str(old_backup), data=drill)
    assert refused.returncode == 2 and "Traceback" not in refused.stderr
    assert "outside the data directory" in refused.stderr and "GAD_DATA_DIR=/var/lib/gad-bot" in refused.stderr
    assert (drill / "index.sqlite").read_bytes() == before
    assert sorted(p.name for p in drill.iterdir() if p.name.startswith("index.sqlite")) == ["index.sqlite"]


# -- issue 31: no name from outside removes another repository's mirror ------------------------------------------

def colliding_names(prefix: str) -> tuple[str, str]:
    """Two names that gad-bot's former mirror directory names (60 readable characters, 32 bits of SHA-1) gave one
    directory: a birthday search, a fraction of a second (the former scheme, written here, not imported)."""
    import hashlib
    import itertools
    import re

    def former(name: str) -> str:
        safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "repo"
        return f"{safe[:60]}-{hashlib.sha1(name.encode()).hexdigest()[:8]}.git"

    seen: dict[str, str] = {}
    for number in itertools.count():
        name = f"{prefix}{number:x}"
        directory = former(name)
        if directory in seen:
            return seen[directory], name
        seen[directory] = name


def test_a_new_repository_of_an_organization_never_takes_another_ones_mirror(tmp_path):
    """A member who may create repositories in `acme` creates one whose name gave the same mirror directory as an
    existing repository's (a long name: the readable part is cut at 60 characters, and 32 bits of hash collide
    after ~80,000 tries). The next sync cloned it there: the first repository's mirror was removed and replaced, its
    history became the newcomer's. Now each has its own mirror and its own figures, from git, through a sync."""
    from bot.config import Settings
    from bot.engine.engine import Engine
    from bot.engine.query import Query
    from tests.forgestub import ForgeStub
    from tests.gitbuild import oracle_gad

    victim, newcomer = colliding_names("acme/" + "quarterly-revenue-reconciliation-service-" * 2)
    with ForgeStub(tmp_path / "srv", "github") as forge:
        forge.add(victim, commits=[("ann@acme.example", "2024-03-01"), ("bob@acme.example", "2024-03-02")])
        engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"),
                                                "GAD_FORGES": forge.forges_setting}))
        engine.track_org(engine.org_owner(forge.owner_url("acme")))
        kept = engine.repo(victim).mirror_path
        forge.add(newcomer, commits=[("eve@evil.example", f"2024-04-{day:02d}") for day in range(1, 8)])
        (result,) = engine.sync_orgs(fetch=True)
        assert result.error is None and not result.failed
        engine.sync([victim, newcomer])
        mine, theirs = engine.repo(victim), engine.repo(newcomer)
        assert mine.mirror_path == kept and theirs.mirror_path != kept
        assert pygit2.Repository(str(kept)).remotes["origin"].url == forge.clone_url(victim)

        def two_gad(name: str) -> int:
            return engine.report(Query(repos=(name,))).totals.two_gad

        assert two_gad(victim) == 2 * oracle_gad(forge.base / f"{victim}.git") == 4
        assert two_gad(newcomer) == 2 * oracle_gad(forge.base / f"{newcomer}.git") == 14


def test_a_taken_directory_is_never_removed_nor_given_to_another_repository(tmp_path, monkeypatch):
    """Whatever mirror_dir_name says (here: one directory for every name), a clone takes a directory that is free
    and that no repository names, even one whose directory went missing; and `remove` keeps a mirror the index
    still names for a repository."""
    from bot.store.mirrors import clones
    from bot.store.mirrors.clones import MirrorStore
    from bot.store.mirrors.remote import FetchLimits

    source = RepoBuilder(tmp_path / "src.git", bare=True)
    source.commit(name="Ann", email="ann@example.com", date="2024-01-02")
    monkeypatch.setattr(clones, "mirror_dir_name", lambda name: "same.git")
    named: list[Path] = []
    store = MirrorStore(tmp_path / "mirrors", FetchLimits({}), named=lambda: list(named))
    first = store.create(str(source.path), "web")
    named.append(first)
    assert first.name == "same.git"
    (first / "marker").write_text("web's own")
    second = store.create(str(source.path), "api")
    assert second.name == "same-2.git" and (first / "marker").read_text() == "web's own"
    named.append(second)
    shutil.rmtree(second)  # api's mirror lost on disk, still named by the index: not given to anyone
    many: list[tuple[int, Path | None, str | None]] = []
    store.create_many([(str(source.path), "lib"), (str(source.path), "lib")], lambda *done: many.append(done))
    assert sorted(path.name for _, path, error in many if error is None) == ["same-3.git", "same-4.git"]
    store.remove(first)  # still named: kept
    assert (first / "marker").exists()
    named.remove(first)
    store.remove(first)  # untracked: gone
    assert not first.exists()
    assert not [p for p in (tmp_path / "mirrors").iterdir() if p.name.startswith(".incoming-")]
