"""`gad-bot doctor` where an operator meets it (issue 21, part 3): a read-only data directory, one it
cannot create, its output piped into a reader that leaves early, a repository gone upstream, and the
new lines (disk space, the line counter, whether serve runs). One sentence and an exit code each."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

from bot.faces.doctor import NEEDED_SCOPES
from tests.faults import ROOT, cli_env, run_cli, track_here, tracked_web
from tests.slackstub import SlackStub
from tests.test_restart import read_only


@pytest.fixture
def stub():
    with SlackStub(scopes=list(NEEDED_SCOPES)) as running:
        yield running


@pytest.fixture
def data(tmp_path):
    return tracked_web(tmp_path)[0]


def slack(stub) -> dict[str, str]:
    return {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url, "SLACK_SIGNING_SECRET": "x" * 32}


def no_traceback(result) -> None:
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.stderr


def test_doctor_says_what_it_checks_and_passes_on_a_healthy_install(data, stub):
    result = run_cli("doctor", data=data, **slack(stub))
    assert result.returncode == 0, result.stdout + result.stderr
    free = shutil.disk_usage(data).free / 2**30
    (disk,) = [line for line in result.stdout.splitlines() if " GiB free of " in line]
    assert disk.startswith("[ok  ] ") and abs(float(re.search(r"([\d,.]+) GiB free", disk)[1].replace(",", "")) - free) < 1
    assert "[warn] `gad-bot serve` is not running on this data directory" in result.stdout
    counter = shutil.which("sloccount") or shutil.which("cloc")
    assert ("counts lines for `vs:cocomo`" in result.stdout) == bool(counter), result.stdout


def test_a_repository_gone_upstream_fails_doctor_for_cron(data, stub, tmp_path):
    shutil.rmtree(tmp_path / "web")
    result = run_cli("doctor", data=data, **slack(stub))
    assert result.returncode == 1, result.stdout
    assert f"[FAIL] web: its source {tmp_path / 'web'} no longer exists (gone upstream) -- `gad-bot untrack web`" \
        in result.stdout, result.stdout
    assert result.stdout.rstrip().endswith("1 problem(s) to fix")


@pytest.mark.parametrize("server", ["smart HTTP", "git daemon"])
def test_a_network_repository_gone_upstream_fails_doctor_after_one_sync(stub, tmp_path, server):
    """The server answers that there is no such repository (HTTP 404; git daemon's 'no such repository'): no
    retry will help, so doctor fails at once; a passing fault (HTTP 500) stays a warning until it repeats."""
    from tests.faults import GitDaemon, GitHttpServer
    from tests.gitbuild import RepoBuilder

    RepoBuilder(tmp_path / "srv" / "web.git", bare=True).commit(date="2024-01-02")
    data = tmp_path / "data"
    with (GitHttpServer(tmp_path / "srv") if server == "smart HTTP" else GitDaemon(tmp_path / "srv")) as host:
        track_here(host.url("web.git"), "web", data)
        if server == "smart HTTP":
            host.mode = "500"
            failed = run_cli("sync", "web", data=data)
            assert failed.returncode == 1 and "500" in failed.stdout, failed.stdout
            passing = run_cli("doctor", data=data, **slack(stub))
            assert passing.returncode == 0 and "[warn] web: the last 1 sync(s) failed" in passing.stdout, passing.stdout
            host.mode = "ok"
        shutil.rmtree(tmp_path / "srv" / "web.git")
        synced = run_cli("sync", "web", data=data)
    assert synced.returncode == 1
    assert "the source says there is no such repository" in synced.stdout and "untrack it" in synced.stdout, synced.stdout
    result = run_cli("doctor", data=data, **slack(stub))
    no_traceback(result)
    assert result.returncode == 1, result.stdout
    assert (f"[FAIL] web: its source {host.url('web.git')} answered its last sync that there is no such repository "
            "(gone upstream) -- `gad-bot untrack web`") in result.stdout, result.stdout
    assert result.stdout.rstrip().endswith("1 problem(s) to fix")


def test_doctor_on_a_data_directory_it_cannot_create(tmp_path, stub):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory\n")
    result = run_cli("doctor", data=blocker / "data", **slack(stub))
    no_traceback(result)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"[FAIL] data directory {blocker / 'data'} cannot be created (Not a directory) -- give the service user "
        "write access, or point GAD_DATA_DIR elsewhere", "1 problem(s) to fix"]


def test_doctor_on_a_read_only_data_directory(data, stub):
    result = subprocess.run([*read_only(data), sys.executable, "-m", "bot.faces.cli", "doctor"], cwd=ROOT,
                            env=cli_env(data, **slack(stub)), capture_output=True, text=True, timeout=120)
    no_traceback(result)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        f"[FAIL] data directory {data} is not writable (Read-only file system) -- give the service user write "
        "access, or point GAD_DATA_DIR elsewhere", "1 problem(s) to fix"]


def test_doctor_piped_into_a_reader_that_leaves_early(data, stub, tmp_path):
    """As `gad-bot doctor | head -1` once head has its line: the pipe is closed before doctor writes."""
    shutil.rmtree(tmp_path / "web")  # something to act on: the exit code must still say so
    process = subprocess.Popen([sys.executable, "-m", "bot.faces.cli", "doctor"], cwd=ROOT,
                               env=cli_env(data, **slack(stub)), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    process.stdout.close()
    _, stderr = process.communicate(timeout=120)
    assert process.returncode == 1
    assert stderr.decode().strip() == "", stderr.decode()
