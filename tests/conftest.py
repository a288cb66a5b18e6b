"""Test isolation: no test reads the host's git config, environment or network."""

from __future__ import annotations

import os
from datetime import date

import pygit2
import pytest

from bot.config import Settings
from bot.errors import face
from tests.gitbuild import RepoBuilder


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject's addopts): one worker per CPU. Most of the suite's time is spent waiting on the
    processes it starts (serve, gad-bot commands, git servers), so more workers would keep the CPUs busier; but a
    few tests bound an ack or a child's time in seconds, and on 2 cores four workers' processes made those measure
    each other (seen at a load average of 12-18): one per CPU keeps them honest, and still halves the wall time."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


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


@pytest.fixture(autouse=True, scope="session")
def _no_terminal_size():
    """The commands the tests run write to pipes, whose width gad-bot takes as 150 columns; pytest-xdist's
    workers export COLUMNS=80 (and LINES), which would narrow every table a test process prints."""
    for name in ("COLUMNS", "LINES"):
        os.environ.pop(name, None)


@pytest.fixture(autouse=True, scope="session")
def _bytecode_for_processes(tmp_path_factory):
    """The suite starts hundreds of Python processes (gad-bot commands, serve, its workers). Where the shell
    says not to write bytecode (PYTHONDONTWRITEBYTECODE, as some containers set) each of them compiled
    gad-bot's modules anew, 0.1-0.2 s of CPU a process; instead they share one bytecode cache under this
    run's temporary directory (one for all xdist workers), and the work tree stays free of __pycache__."""
    base = tmp_path_factory.getbasetemp()
    shared = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "pycache"
    shared.mkdir(exist_ok=True)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(shared)


@pytest.fixture
def settings(tmp_path):
    return Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")})


@pytest.fixture
def engine(settings):
    from bot.engine.engine import Engine

    return Engine.open(settings)


def engine_tracking(data, repo, name: str):
    """An Engine on the data directory `data` with the repository at `repo` tracked as `name` (for module-scoped
    fixtures, which cannot use the per-test `engine`)."""
    from bot.engine.engine import Engine

    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(data)}))
    engine.track(str(repo), name)
    return engine


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
