"""An organization of thousands of repositories (issue 32, section 3): open files bounded by the lanes, a repository
that cannot be cloned kept in sight, output that summarises, the CLI's sync in lanes.

The open-files test is scaled down: a child process whose RLIMIT_NOFILE is LIMIT syncs an organization of
REPOS (> LIMIT) repositories through a loopback forge, as serve's hourly sync does. At systemd's 1,024 the same
fault needs some 1,100 repositories, which take minutes to clone here; the descriptors a sync holds depend on the
lanes, not on the limit, so LIMIT and REPOS shrink together. benchmarks/bench_forge.py runs 8,000 under
`ulimit -n 1024`.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import textwrap

import pytest

from bot.config import Settings
from bot.engine.engine import Engine
from tests.faults import ROOT, cli_env
from tests.forgestub import ForgeStub
from tests.gitbuild import RepoBuilder, oracle_pairs

LIMIT = 160  # RLIMIT_NOFILE of the syncing process
REPOS = 200  # more than LIMIT: one descriptor held per repository runs out


@pytest.fixture
def forge(tmp_path):
    with ForgeStub(tmp_path / "srv", "github") as stub:
        yield stub


def engine_for(forge: ForgeStub, tmp_path, **env) -> Engine:
    return Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_FORGES": forge.forges_setting,
                                          **env}))


def in_child(tmp_path, forge: ForgeStub, code: str, limit: int = LIMIT, **env) -> subprocess.CompletedProcess:
    """Python `code` (with `engine` open on the test's data directory) in a child whose open files are limited."""
    script = textwrap.dedent("""
        import json, sys
        from bot.config import Settings
        from bot.engine.engine import Engine
        engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": sys.argv[1], "GAD_FORGES": sys.argv[2]}))
    """) + textwrap.dedent(code)

    def lower() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (limit, limit))

    return subprocess.run([sys.executable, "-c", script, str(tmp_path / "data"), forge.forges_setting], cwd=ROOT,
                          env=cli_env(tmp_path / "data", **env), capture_output=True, text=True, timeout=600,
                          preexec_fn=lower)


def test_an_organizations_sync_holds_open_files_by_lanes_not_by_repositories(forge, tmp_path):
    """serve's hourly sync of an organization (sync_orgs with fetch) in a process allowed LIMIT open files, over
    REPOS repositories: every one fetched, the new commits pushed to some indexed, the figures git's.
    (With one lock file held per repository for the whole fetch, as before, it failed: `Too many open files`.)"""
    names = [f"acme/r{n:03d}" for n in range(REPOS)]
    for n, name in enumerate(names):
        forge.add(name, commits=[(f"p{n % 7}@acme.example", f"2024-03-{n % 28 + 1:02d}")])
    engine = engine_for(forge, tmp_path)
    result = engine.track_org(engine.org_owner(forge.owner_url("acme")))
    assert result.repositories == REPOS and not result.failed
    pushed = names[::37]
    for n, name in enumerate(pushed):  # new upstream commits the sync must fetch and index
        RepoBuilder(forge.base / f"{name}.git", bare=True).commit(name="Zed", email="zed@acme.example",
                                                                  date=f"2024-05-{n + 1:02d}")
    done = in_child(tmp_path, forge, """
        results = engine.sync_orgs(["acme"], fetch=True)
        print(json.dumps([[r.org, r.repositories, r.error, r.failed] for r in results]))
    """)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == [["acme", REPOS, None, []]]
    fresh = engine_for(forge, tmp_path)
    for name in pushed:
        assert fresh.repo(name).commits == 2
    pairs = set()
    for name in names:
        pairs |= oracle_pairs(forge.base / f"{name}.git")
    from bot.engine.query import Query

    assert fresh.report(Query(repos=("acme",))).totals.person_days == len(pairs)
