"""Test isolation: no test reads the host's git config, environment or network."""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from datetime import date
from pathlib import Path


def _shared_bytecode() -> None:
    """One bytecode cache for every Python process of a run, kept between runs: set here, when pytest imports this
    file (in xdist's controller first, whose environment its workers inherit), before anything of gad-bot loads.

    Where the shell says not to write bytecode (PYTHONDONTWRITEBYTECODE, as this machine and some containers set),
    every process compiled gad-bot's modules anew (0.1-0.2 s of CPU for each of the hundreds of gad-bot commands,
    serves and workers the suite starts), and every xdist worker rewrote the asserts of all 95 test modules (7.4 s
    of CPU each). The cache is the user's own directory under the temporary one (mode 0700, checked: a directory
    someone else made there would let them plant code); the work tree stays free of __pycache__."""
    where = os.environ.get("GAD_TEST_BYTECODE")
    if not where:
        where = str(Path(tempfile.gettempdir()) / f"gad-bot-test-bytecode-{os.getuid()}")
        try:
            os.mkdir(where, 0o700)
        except FileExistsError:
            pass
        facts = os.lstat(where)
        if not stat.S_ISDIR(facts.st_mode) or facts.st_uid != os.getuid() or facts.st_mode & 0o077:
            where = tempfile.mkdtemp(prefix="gad-bot-test-bytecode-")  # not ours alone: this run's own
        os.environ["GAD_TEST_BYTECODE"] = where
    sys.pycache_prefix = where
    sys.dont_write_bytecode = False
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = where


_shared_bytecode()

import pygit2  # noqa: E402
import pytest  # noqa: E402

from bot.config import Settings  # noqa: E402
from bot.errors import face  # noqa: E402
from tests.gitbuild import RepoBuilder  # noqa: E402


def pytest_configure(config):
    """In xdist's controller, before its workers start: the asserts of every test module rewritten once, into the
    shared cache (_shared_bytecode), so that each worker reads them rather than rewriting them all itself. Through
    pytest's own rewriting functions (not public: should they change, each worker rewrites as before)."""
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    try:
        from _pytest.assertion.rewrite import PYC_TAIL, _read_pyc, _rewrite_test, _write_pyc, assertstate_key, \
            get_cache_dir

        state = config.stash[assertstate_key]
    except (ImportError, KeyError):
        return
    for source in sorted(Path(__file__).parent.rglob("*.py")):
        if not (source.name.startswith("test_") or source.name == "conftest.py"):
            continue
        cache = get_cache_dir(source)
        pyc = cache / (source.name[:-3] + PYC_TAIL)
        if _read_pyc(source, pyc, state.trace) is None:
            cache.mkdir(parents=True, exist_ok=True)
            source_hash, code = _rewrite_test(source, config)
            _write_pyc(state, code, source_hash, pyc)


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject's addopts): two workers per CPU. Most of the suite's time is spent waiting on what it
    starts (serve, gad-bot commands, git and forge servers, their time-outs), not computing: with one worker a CPU
    the two workers of a 2-core machine each waited ~300 s for ~170 s of CPU. One a CPU was the rule while every
    serve spawned four interpreters (1.84 s of CPU each start, workers included) and four workers' processes made the tests that bound
    an ack in seconds measure each other; since workers are forked (bot/spawning.py: 1.07 s a serve, from 1.84) and
    the asserts are rewritten once, two a CPU finished in 214-270 s where one a CPU took 322-361 s."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return 2 * cpus


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
