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


# -- by:repo over a project of many repositories: one pass, the figures git's -------------------------------------

def test_by_repo_over_a_project_is_each_repositorys_own_figure(tmp_path):
    """by:repo over a project (the merged rows, no loop per repository) with and without since:/until: and author:,
    each row against git's own pairs for that repository; a repository with nothing in the period is a zero row."""
    from datetime import date

    from bot.engine import columns as col
    from bot.engine.query import Query
    from bot.store.store import IN_DEFAULT

    engine = Engine.open(Settings.from_env({"GAD_DATA_DIR": str(tmp_path / "data")}))
    names = []
    for n in range(12):
        builder = RepoBuilder(tmp_path / f"r{n}")
        for k in range(n % 4 + 1):  # ann every time, bob some days, 1-4 commits per repository
            builder.commit(name="Ann", email="ann@x.example", date=f"2024-0{k % 3 + 1}-{n + 1:02d}")
            if (n + k) % 3 == 0:
                builder.commit(name="Bob", email="Bob@X.example", date=f"2024-0{k % 3 + 1}-{n + 1:02d}")
        engine.track(str(tmp_path / f"r{n}"), f"r{n:02d}", in_place=True)
        names.append(f"r{n:02d}")
    engine.project_add("suite", names)

    def expected(n: int, since: str | None = None, until: str | None = None, who: str | None = None) -> tuple:
        pairs = {(e, d) for e, d in oracle_pairs(tmp_path / f"r{n}")
                 if (since is None or d >= since.encode()) and (until is None or d <= until.encode())
                 and (who is None or e.startswith(who.encode()))}
        return len(pairs), len({e for e, _ in pairs})

    for query, bounds in [(Query(repos=("suite",), by="repo"), {}),
                          (Query(repos=("suite",), by="repo", since=date(2024, 2, 1), until=date(2024, 2, 29)),
                           {"since": "2024-02-01", "until": "2024-02-29"}),
                          (Query(repos=("suite",), by="repo", authors=("bob*",)), {"who": "bob"})]:
        rows = {r.key: (r.totals.person_days, r.totals.developers) for r in engine.report(query).rows}
        assert rows == {f"r{n:02d}": expected(n, **bounds) for n in range(12)}, query
    columns = [engine.snapshots.columns_of(engine.repo(n), engine.repo(n).generation) for n in names]
    assert engine.snapshots.merged(columns, [None] * 12, col.Filter(scope_bit=IN_DEFAULT),
                                   Query(repos=("suite",), by="repo")) is not None  # the one-pass path was taken
