"""A damaged mirror: a truncated pack file, a deleted loose object. gad-bot says so, keeps the last good
figures, and `gad-bot sync --reclone NAME` repairs it keeping the repository's row and projects.

The source is a real remote (git daemon): a local source would hand the missing objects over again
on the next sync (local fetches copy object files), which heals the mirror instead of testing it.
Each case also moves upstream on, so that the sync has to read the damaged history.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.faults import GitDaemon, clean_figures, figures, index_problems, repos_json, run_cli
from tests.gitbuild import git_env


def _engine(data):
    from bot.config import Settings
    from bot.engine.engine import Engine

    return Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))


def _mirror(data):
    (mirror,) = [p for p in (data / "mirrors").iterdir() if not p.name.startswith(".")]
    return mirror


def _explode(mirror) -> None:
    """Turn the mirror's packs into loose objects (so single objects can be deleted)."""
    for pack in list((mirror / "objects" / "pack").glob("*.pack")):
        data = pack.read_bytes()
        for path in (pack, pack.with_suffix(".idx"), pack.with_suffix(".rev")):
            if path.exists():
                path.unlink()
        subprocess.run(["git", "unpack-objects", "-q"], input=data, cwd=mirror, check=True, env=git_env())


def _loose(mirror, oid) -> object:
    text = str(oid)
    return mirror / "objects" / text[:2] / text[2:]


def _damage(kind: str, data, small) -> None:
    mirror = _mirror(data)
    if kind == "truncated pack":
        if not list((mirror / "objects" / "pack").glob("*.pack")):  # a small clone may be all loose objects
            subprocess.run(["git", "repack", "-a", "-d", "-q"], cwd=mirror, check=True, env=git_env())
        for pack in (mirror / "objects" / "pack").glob("*.pack"):
            content = pack.read_bytes()
            pack.unlink()  # a local clone hard-links objects: never write through to upstream's file
            pack.write_bytes(content[: len(content) // 2])
        small.commit(email="late@example.com", date="2024-06-01")  # something new to walk
    elif kind == "loose tip deleted":
        _explode(mirror)
        _loose(mirror, small.tip("main")).unlink()  # the object the ref names
        small.commit(email="late@example.com", date="2024-06-01")
    elif kind == "loose object truncated":
        _explode(mirror)
        ancestor = _loose(mirror, small.repo[small.tip("main")].parents[0].id)
        content = ancestor.read_bytes()
        ancestor.unlink()  # a local clone hard-links objects: never write through to upstream's file
        ancestor.write_bytes(content[: len(content) // 2])
        small.commit(email="late@example.com", date="2024-06-01")
    elif kind == "loose ancestor deleted":
        _explode(mirror)
        ancestor = small.repo[small.tip("main")].parents[0].parents[0].id
        _loose(mirror, ancestor).unlink()
        small.commit(email="late@example.com", date="2024-06-01")


@pytest.mark.parametrize("kind", ["truncated pack", "loose tip deleted", "loose ancestor deleted",
                                  "loose object truncated"])
def test_damaged_mirror_is_a_clear_error_and_reclone_repairs_it(kind, small, tmp_path):
    data = tmp_path / "data"
    daemon = GitDaemon(tmp_path / "srv").start()
    try:
        _damaged_then_recloned(kind, small, tmp_path, data, daemon.url("small.git"))
    finally:
        daemon.stop()


def _damaged_then_recloned(kind, small, tmp_path, data, url):
    engine = _engine(data)
    engine.track(url, "small")
    engine.project_add("suite", ["small"])
    repo_id = engine.repo("small").id
    engine.index.close()
    before = figures(data, "small")

    _damage(kind, data, small)
    result = run_cli("sync", "small", data=data)
    assert result.returncode == 1, result.stdout
    assert "Traceback" not in result.stderr
    error = repos_json(data)[0]["last_error"]
    assert error and "damaged" in error and "--reclone" in error, error
    assert figures(data, "small") == before, "a damaged mirror must never drop history from the figures"
    print(f"\n{kind}: last_error = {error}")
    assert index_problems(data) == []

    fixed = run_cli("sync", "--reclone", "small", data=data)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert figures(data, "small") == clean_figures(small.path, "small", tmp_path)
    engine = _engine(data)
    assert engine.repo("small").last_error is None
    assert engine.repo("small").id == repo_id
    assert engine.projects() == {"suite": ["small"]}
    engine.index.close()
    assert len([p for p in (data / "mirrors").iterdir()]) == 1  # the damaged copy is gone
    assert index_problems(data) == []


def test_a_local_source_heals_its_mirror_on_the_next_sync(small, tmp_path):
    """A local source hands over the object files the mirror lacks: the damage is repaired, not reported."""
    data = tmp_path / "data"
    engine = _engine(data)
    engine.track(str(small.path), "small")
    mirror = engine.repo("small").mirror_path
    _explode(mirror)
    _loose(mirror, small.repo[small.tip("main")].parents[0].id).unlink()
    small.commit(email="late@example.com", date="2024-06-01")
    result = engine.sync(["small"])[0]
    engine.index.close()
    assert result.error is None, result.error
    assert figures(data, "small") == clean_figures(small.path, "small", tmp_path)
    assert index_problems(data) == []


def test_reclone_while_the_source_is_unreachable_keeps_everything(small, tmp_path):
    data = tmp_path / "data"
    engine = _engine(data)
    engine.track(str(small.path), "small")
    engine.index.close()
    before = figures(data, "small")
    mirror = _mirror(data)
    moved = small.path.with_name("away.git")
    small.path.rename(moved)
    try:
        result = run_cli("sync", "--reclone", "small", data=data)
    finally:
        moved.rename(small.path)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert [p for p in (data / "mirrors").iterdir()] == [mirror]  # the old mirror stays, no staging left
    assert figures(data, "small") == before
    assert index_problems(data) == []
