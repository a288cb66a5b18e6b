"""`gad-bot status` (issue 21, part 2): serve up or not, queue, workers, jobs, sync lag and last error
per repository, disk, versions; `--version` from the package metadata. Real processes, real index."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
from importlib import metadata

import pytest

from tests.faults import Serve, run_cli, tracked_web
from tests.slackstub import SlackStub


@pytest.fixture
def setup(tmp_path):
    return tracked_web(tmp_path)


def test_status_without_serve_names_versions_disk_and_each_repository(setup):
    data, upstream = setup
    result = run_cli("status", data=data)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    git = re.search(r"git version (\d+(?:\.\d+)+)", subprocess.run(["git", "--version"], capture_output=True,
                                                                    text=True).stdout)[1]
    version = metadata.version("gad-bot")
    schema = sqlite3.connect(data / "index.sqlite").execute("SELECT max(version) FROM migrations").fetchone()[0]
    assert lines[0] == f"gad-bot {version} · index schema {schema} · git {git} · SQLite {sqlite3.sqlite_version}"
    assert lines[1] == "serve: not running"
    assert re.fullmatch(rf"disk: [\d,.]+ GiB free of [\d,.]+ GiB under {re.escape(str(data))}", lines[2]), lines[2]
    assert lines[3:] == ["repositories:", "  web: synced just now"]

    shutil.rmtree(upstream)  # gone upstream: the next sync fails and says so
    assert run_cli("sync", "web", data=data).returncode != 0
    lines = run_cli("status", data=data).stdout.splitlines()
    (web,) = [line for line in lines if line.startswith("  web: ")]
    assert web.startswith("  web: synced just now; the last 1 sync(s) failed: ") and "next try " in web, web


def test_version_comes_from_the_package_metadata(setup):
    data, _ = setup
    result = run_cli("--version", data=data)
    assert result.returncode == 0 and metadata.version("gad-bot") in result.stdout, result.stdout


def test_status_beside_a_running_serve_shows_its_queue_workers_and_jobs(setup, tmp_path):
    data, _ = setup
    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1") as serve:
        lines = run_cli("status", data=data).stdout.splitlines()
        assert serve.stop() == 0
    assert re.fullmatch(rf"serve: running \(process {serve.proc.pid}, HTTP on 127\.0\.0\.1:{serve.port}\), "
                        r"heartbeat \d+ s ago", lines[1]), lines
    assert re.fullmatch(r"reports: 0 waiting, 0 running; workers 1 of 1 alive \(as of \d+ s ago\)", lines[2]), lines
    assert lines[3] == "jobs:"
    jobs = {line.split(":")[0].strip(): line for line in lines[4:] if line.startswith("    ") is False
            and line.startswith("  ") and not line.startswith("  web")}
    assert {"digest-sweep", "subscriptions-watch", "sync"} <= set(jobs), lines
    assert re.search(r"next \d{4}-\d\d-\d\d \d\d:\d\d UTC", jobs["sync"]), jobs["sync"]
    after = run_cli("status", data=data).stdout.splitlines()
    assert after[1] == "serve: not running"


def test_answers_about_a_repository_whose_sync_keeps_failing_say_so(setup):
    """Figures from before a failing sync are not passed off as current: the report says how old they are."""
    from datetime import datetime, timedelta

    data, upstream = setup
    shutil.rmtree(upstream)
    assert run_cli("sync", "web", data=data).returncode != 0
    db = sqlite3.connect(data / "index.sqlite")
    (stored,) = db.execute("SELECT last_success_at FROM repos WHERE name = 'web'").fetchone()
    three_days_ago = datetime.fromisoformat(stored) - timedelta(days=3, minutes=5)
    db.execute("UPDATE repos SET last_success_at = ? WHERE name = 'web'", (three_days_ago.isoformat(),))
    db.commit()
    db.close()
    when = three_days_ago.strftime("%Y-%m-%d %H:%M")
    expected = (f"web: data as of 3 days ago ({when} UTC): the last sync failed; gad-bot tries again by itself, "
                "and `gad-bot repos` says why.")
    text = run_cli("report", "web", data=data)
    assert text.returncode == 0, text.stderr
    assert expected in " ".join(text.stdout.split()), text.stdout
    as_json = run_cli("report", "web", "--json", data=data)
    assert expected in json.loads(as_json.stdout)["notes"], as_json.stdout
