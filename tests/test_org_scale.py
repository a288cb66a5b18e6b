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


# -- a repository that cannot be cloned stays in sight -----------------------------------------------------------

def cli_in(tmp_path, forge: ForgeStub, *args: str):
    from click.testing import CliRunner

    from bot.faces.cli import cli

    env = {"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_FORGES": forge.forges_setting, "GAD_FORGE_FETCHES": "1"}
    return CliRunner().invoke(cli, list(args), env=env)


def clone_requests(forge: ForgeStub, full_name: str) -> int:
    return sum(1 for _, path, _ in forge.requests if f"/{full_name}.git/info/refs" in path)


def test_a_repository_that_cannot_be_cloned_stays_failed_in_sight_with_its_reason_and_back_off(forge, tmp_path):
    """Listed by the forge, but its git side answers 404: `track` says so and exits 1, never "deleted or moved";
    `repos`, `status`, `projects` and `sync` show it with its reason; the periodic listing leaves it alone until its
    back-off is over (doubling), then tries again and tracks it once it is served; figures are git's throughout."""
    from datetime import datetime, timezone

    from tests.forgestub import StubRepo

    forge.add("acme/web", commits=[("ann@acme.example", "2024-03-01")])
    forge.listed.append(StubRepo(99, "acme/missing"))  # listed, but the forge serves no such repository
    forge.add("acme/api", commits=[("cy@acme.example", "2024-03-03")])
    tracked = cli_in(tmp_path, forge, "track", forge.owner_url("acme"))
    assert tracked.exit_code == 1, tracked.output
    lines = tracked.output.splitlines()
    assert lines[0].startswith("acme: 2 repositories; 1 could not be tracked (acme/missing: ")
    assert "deleted or moved" not in tracked.output
    assert "no such repository" in lines[0] and "acme's listing names it" in lines[0]
    assert lines[1] == ("acme: 1 not cloned yet are tried again later; `gad-bot repos` lists them with the reason, "
                        "and `gad-bot untrack NAME` leaves one out.")

    listing = cli_in(tmp_path, forge, "repos").output
    assert listing.splitlines()[2].startswith("acme/missing ")  # first: what to look at
    (row,) = [r for r in json.loads(cli_in(tmp_path, forge, "repos", "--json").output) if r["name"] == "acme/missing"]
    assert row["state"] == "not cloned" and row["org"] == "acme" and row["next_attempt"]
    assert "no such repository" in row["last_error"] and "deleted or moved" not in row["last_error"]
    assert "2 repositories tracked" in listing
    assert "1 repository an organization lists could not be cloned" in listing
    status = cli_in(tmp_path, forge, "status").output
    assert "not cloned: 1 repository an organization lists" in status
    assert any(line.startswith("  acme/missing (acme): 1 try failed: ") for line in status.splitlines())
    assert "1 more it lists could not be cloned" in cli_in(tmp_path, forge, "projects").output

    engine = engine_for(forge, tmp_path)
    (failed,) = engine.failed_repos()
    interval = engine.settings.sync_interval_minutes * 60
    assert (failed.next_attempt_at - failed.failed_at).total_seconds() == pytest.approx(2 * interval, abs=2)
    tries = clone_requests(forge, "acme/missing")

    synced = cli_in(tmp_path, forge, "sync")  # within its back-off: listed, not tried
    assert "acme: 2 repositories; nothing changed upstream. 1 could not be cloned (`gad-bot repos` says why)." \
        in synced.output.splitlines()
    assert clone_requests(forge, "acme/missing") == tries

    past = datetime(2020, 1, 1, tzinfo=timezone.utc).isoformat()
    engine.index.execute("UPDATE forge_org_repos SET next_attempt_at = ?", (past,))
    cli_in(tmp_path, forge, "sync")  # its back-off over: tried again, failed again, waits twice as long
    (failed,) = engine.failed_repos()
    assert failed.failures == 2 and clone_requests(forge, "acme/missing") > tries
    assert (failed.next_attempt_at - failed.failed_at).total_seconds() == pytest.approx(4 * interval, abs=2)

    forge.listed.pop(1)
    forge.add("acme/missing", commits=[("dee@acme.example", "2024-03-04")])
    forge.listed[-1].id = 99  # the same repository, now served
    engine.index.execute("UPDATE forge_org_repos SET next_attempt_at = ?", (past,))
    assert cli_in(tmp_path, forge, "sync").exit_code == 0
    assert engine.failed_repos() == []
    from bot.engine.query import Query

    pairs = set().union(*(oracle_pairs(forge.base / f"acme/{n}.git") for n in ("web", "missing", "api")))
    assert engine_for(forge, tmp_path).report(Query(repos=("acme",))).totals.person_days == len(pairs)


def test_untrack_leaves_out_a_repository_that_cannot_be_cloned(forge, tmp_path):
    from datetime import datetime, timezone

    from tests.forgestub import StubRepo

    forge.add("acme/web")
    forge.listed.append(StubRepo(99, "acme/missing"))
    assert cli_in(tmp_path, forge, "track", forge.owner_url("acme")).exit_code == 1
    untracked = cli_in(tmp_path, forge, "untrack", "acme/missing")
    assert untracked.exit_code == 0, untracked.output
    assert untracked.output == "acme/missing: left out of acme (it could not be cloned); it will not be tried again\n"
    assert "acme/missing" not in cli_in(tmp_path, forge, "repos").output
    engine = engine_for(forge, tmp_path)
    engine.index.execute("UPDATE forge_org_repos SET next_attempt_at = ?",
                         (datetime(2020, 1, 1, tzinfo=timezone.utc).isoformat(),))
    tries = clone_requests(forge, "acme/missing")
    assert cli_in(tmp_path, forge, "sync").exit_code == 0
    assert clone_requests(forge, "acme/missing") == tries and engine.failed_repos() == []


# -- thousands of repositories: summaries, the whole list on request ---------------------------------------------

def test_repos_sync_and_a_report_summarise_thousands_and_list_all_on_request():
    from datetime import datetime, timezone

    from bot.engine.rows import RepoSummary
    from bot.engine.tracking import SyncResult
    from bot.faces.cli import sync_lines
    from bot.render.text import render_repos_text
    from bot.store.orgindex import FailedRepo

    when = datetime(2026, 12, 6, 9, 0, tzinfo=timezone.utc)
    rows = [RepoSummary(f"acme/r{n:04d}", f"https://forge/acme/r{n:04d}.git", commits=100, last_sync=when,
                        last_error="The fetch timed out." if n in (7, 1500) else None) for n in range(2000)]
    rows.insert(0, RepoSummary.of_failed(FailedRepo("acme", "acme/gone", "acme/gone", "Cloning failed: 403.", 1, when,
                                                    when, source="https://forge/acme/gone.git")))
    text = render_repos_text(rows, width=200)
    listed = [line.split()[0] for line in text.splitlines()[2:] if line.startswith("acme/")]
    assert listed == ["acme/gone", "acme/r0007", "acme/r1500"]  # only what to look at, not 2,001 lines
    assert text.rstrip().splitlines()[-4:] == [
        "2,000 repositories tracked, 2 failing to sync",
        "1 repository an organization lists could not be cloned: tried again later (`gad-bot untrack NAME` leaves "
        "one out)",
        "First: acme/gone: Cloning failed: 403.",
        "Listed above: the ones to look at. `gad-bot repos --all` lists all 2,001."]
    assert len([line for line in render_repos_text(rows, width=200, every=True).splitlines()
                if line.startswith("acme/")]) == 2001

    results = [SyncResult(f"acme/r{n:04d}", 0, 0, 100, unchanged=True) for n in range(1158)]
    results += [SyncResult("acme/new", 3, 0, 103), SyncResult("acme/x", 0, 0, 5, error="The fetch timed out."),
                SyncResult("acme/y", 0, 0, 5, error="Fetching failed: 500.")]
    assert sync_lines(results, 52.4) == [
        "1,161 repositories synced in 52 s: 1,158 up to date, 1 with new commits (+3), 2 failed; each failure below "
        "(`gad-bot sync --all` prints every repository).",
        "acme/x: failed: The fetch timed out.", "acme/y: failed: Fetching failed: 500."]
    assert len(sync_lines(results, 52.4, every=True)) == 1161

    from bot.metric import Report, Totals
    from bot.render.text import render_text

    report = Report(repos=tuple(f"acme/r{n:04d}" for n in range(1161)), since=None, until=None, scope_words="",
                    totals=Totals(10, 2, 5), by=None, rows=())
    shown = render_text(report, width=200)
    assert "acme/r0009 and 1,151 more (by:repo lists them all, --json names them)" in shown
    assert "acme/r0010" not in shown


def test_the_clis_sync_fetches_in_the_same_lanes_as_serve_and_says_where_it_stands_off_a_terminal(forge, tmp_path,
                                                                                                   monkeypatch):
    """`gad-bot sync` (every repository) fetches in GAD_FORGE_FETCHES lanes (it fetched one at a time before) and
    indexes what changed, figures git's; off a terminal `track` and `sync` print progress lines to stderr."""
    import threading

    from click.testing import CliRunner

    from bot.engine import lanes
    from bot.faces import cli as cli_module
    from bot.store.mirrors import fetchchild

    names = [f"acme/r{n}" for n in range(4)]
    for n, name in enumerate(names):
        forge.add(name, commits=[(f"p{n}@acme.example", f"2024-03-0{n + 1}")])
    monkeypatch.setattr(cli_module, "PROGRESS_SECONDS", 0.0)
    monkeypatch.setattr(lanes, "PROGRESS_SECONDS", 0.0)
    env = {"GAD_DATA_DIR": str(tmp_path / "data"), "GAD_FORGES": forge.forges_setting, "GAD_FORGE_FETCHES": "2"}
    tracked = CliRunner().invoke(cli_module.cli, ["track", forge.owner_url("acme")], env=env)
    assert tracked.exit_code == 0, tracked.output
    assert "gad-bot: acme: 4 of 4 repositories, 4 commits indexed" in tracked.stderr.splitlines()
    for name in names[:2]:
        RepoBuilder(forge.base / f"{name}.git", bare=True).commit(name="Zed", email="zed@acme.example",
                                                                  date="2024-05-05")
    lanes_seen: set[str] = set()
    fetch_many = fetchchild.fetch_many

    def watched(*args, **kwargs):
        lanes_seen.add(threading.current_thread().name)
        return fetch_many(*args, **kwargs)

    monkeypatch.setattr(fetchchild, "fetch_many", watched)
    synced = CliRunner().invoke(cli_module.cli, ["sync"], env=env)
    assert synced.exit_code == 0, synced.output + synced.stderr
    assert len(lanes_seen) == 2 and all(n.startswith("sync-fetch") for n in lanes_seen)
    assert "gad-bot: synced 4 of 4 repositories (0 failed)" in " ".join(synced.stderr.split())
    assert "acme/r0: 2 commits indexed (+1 new, -0 gone)" in synced.output
    assert "acme/r2: up to date (1 commits)" in synced.output
    engine = engine_for(forge, tmp_path)
    pairs = set().union(*(oracle_pairs(forge.base / f"{name}.git") for name in names))
    from bot.engine.query import Query

    assert engine.report(Query(repos=("acme",))).totals.person_days == len(pairs)
