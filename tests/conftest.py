"""Test isolation: no test reads the host's git config, environment or network."""

from __future__ import annotations

import os
from datetime import date

import pygit2
import pytest

from bot.config import Settings
from bot.errors import face
from tests.gitbuild import RepoBuilder


@pytest.fixture(autouse=True)
def _slack_face():
    """Each test starts with Slack's wording: a test running the CLI in-process sets the terminal's for its thread."""
    with face("slack"):
        yield


@pytest.fixture(autouse=True, scope="session")
def _blank_git_config(tmp_path_factory):
    empty = tmp_path_factory.mktemp("gitconfig")
    for level in (pygit2.enums.ConfigLevel.GLOBAL, pygit2.enums.ConfigLevel.XDG, pygit2.enums.ConfigLevel.SYSTEM):
        pygit2.settings.search_path[level] = str(empty)
    os.environ.update(GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null")


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})


@pytest.fixture
def engine(settings):
    from bot.engine.engine import Engine

    return Engine.open(settings)


@pytest.fixture
def start_pool():
    """Start a report pool (bot/service/workers.py) with real worker processes: start_pool(settings, **args);
    every pool started is shut down after the test."""
    from bot.service.workers import ReportPool

    started = []

    def start(settings, **pool_args):
        pool = ReportPool(settings, **pool_args)
        started.append(pool)
        pool.start()
        return pool

    yield start
    for pool in started:
        pool.shutdown()


@pytest.fixture
def upstream(tmp_path):
    return RepoBuilder(tmp_path / "upstream")


TODAY = date(2026, 12, 3)
