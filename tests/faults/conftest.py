"""Fixtures for the fault tests: one big history per session, and a tracked "old" state of it.

Everything is built once per session and copied per test, so the whole of tests/faults/ stays
within its time budget on two cores.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults import GitDaemon, History, build_history, figures, set_refs
from tests.gitbuild import RepoBuilder

BIG_COMMITS = 24_000  # + 200 on dev + 20 on a pull ref: indexing (commits, then changed paths) takes 1-2 s
OLD_AT = 16_000  # the "previous state" a sync starts from: main at its 16,000th commit, nothing else


def _track_in_process(source: str, name: str, data: Path, in_place: bool = False) -> None:
    from bot.config import Settings
    from bot.engine.engine import Engine

    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    try:
        engine.track(source, name, in_place=in_place)
    finally:
        engine.index.close()


@pytest.fixture(scope="session")
def srv(tmp_path_factory) -> Path:
    """The directory the session's git daemon serves."""
    return tmp_path_factory.mktemp("srv")


@pytest.fixture(scope="session")
def big(srv) -> History:
    """A bare repository of 24,220 commits (main, dev, tags, a pull ref), written by git fast-import."""
    return build_history(srv / "big.git", BIG_COMMITS)


@pytest.fixture(scope="session")
def daemon(srv):
    """`git daemon` serving srv/ for the whole session: clones and fetches go through a real git server."""
    with GitDaemon(srv) as running:
        yield running


@pytest.fixture(scope="session")
def big_clean(big, tmp_path_factory) -> dict:
    """The figures of a clean, uninterrupted index of `big` (the reference every recovery must reach).

    Registered in place (no clone): the index of a repository does not depend on where its objects live.
    """
    data = tmp_path_factory.mktemp("clean") / "data"
    _track_in_process(str(big.path), "big", data, in_place=True)
    return figures(data, "big")


@dataclass
class SyncCase:
    """`big` tracked at an old state (data/), upstream (up.git) since moved to the full history."""

    upstream: Path
    data: Path
    template: Path
    old_figures: dict

    def restore(self) -> Path:
        """Put the data directory back to the tracked old state (same absolute paths as when tracked)."""
        shutil.rmtree(self.data, ignore_errors=True)
        shutil.copytree(self.template, self.data)
        return self.data


@pytest.fixture(scope="session")
def sync_case(big, srv, daemon, tmp_path_factory) -> SyncCase:
    """`big` tracked through the git daemon at an old state; then upstream moves to the full history."""
    root = tmp_path_factory.mktemp("synccase")
    upstream = srv / "up.git"
    shutil.copytree(big.path, upstream)
    set_refs(upstream, {ref: None for ref in big.tips if ref != "refs/heads/main"})
    set_refs(upstream, {"refs/heads/main": big.main_commit(OLD_AT)})
    data = root / "data"
    _track_in_process(daemon.url("up.git"), "big", data)
    old = figures(data, "big")
    template = root / "template"
    shutil.copytree(data, template)
    set_refs(upstream, big.tips)  # upstream moved on: the next sync fetches and indexes ~8,200 commits
    return SyncCase(upstream, data, template, old)


@pytest.fixture
def small(tmp_path) -> RepoBuilder:
    """A small bare upstream under tmp_path/srv (servable by GitDaemon/GitHttpServer as `small.git`)."""
    repo = RepoBuilder(tmp_path / "srv" / "small.git", bare=True)
    for i in range(12):
        repo.commit(name=f"Dev {i % 3}", email=f"dev{i % 3}@example.com", date=f"2024-01-{i + 1:02d}")
    repo.commit("feature", name="Fay", email="fay@example.com", date="2024-02-01")
    repo.tag("v1", repo.tip("main"))
    return repo
