"""Real remotes on loopback: `git daemon` and `git http-backend`, then down, failing, stalled, rewritten.

The CLI's `track` takes any URL the operator types (the Slack face refuses http:// and loopback
hosts, see tests/test_sources.py), so `git://127.0.0.1:PORT/...` and `http://127.0.0.1:PORT/...`
exercise libgit2's real network transports here.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from tests.faults import (GitDaemon, GitHttpServer, StallServer, TrickleServer, clean_figures, figures,
                          index_problems, leftovers, repos_json, run_cli, start_cli)
from tests.gitbuild import RepoBuilder

TIMEOUT = 2  # GAD_FETCH_TIMEOUT_SECONDS for the stall cases


def _by_name(data) -> dict[str, dict]:
    return {r["name"]: r for r in repos_json(data)}


def test_remote_down_is_recorded_and_other_repositories_still_sync(small, tmp_path):
    data = tmp_path / "data"
    other = RepoBuilder(tmp_path / "other")
    other.commit(email="olga@example.com", date="2024-05-01")
    daemon = GitDaemon(tmp_path / "srv").start()
    try:
        assert run_cli("track", daemon.url("small.git"), "--name", "small", data=data).returncode == 0
        assert run_cli("track", str(other.path), "--name", "other", data=data).returncode == 0
        before = figures(data, "small")
    finally:
        daemon.stop()
    # the daemon is gone: connection refused
    small.commit(email="late@example.com", date="2024-06-01")
    other.commit(email="olga@example.com", date="2024-05-02")
    result = run_cli("sync", data=data)
    assert result.returncode == 1
    assert "other: 2 commits indexed" in result.stdout and "small: failed" in result.stdout
    assert "Traceback" not in result.stderr
    rows = _by_name(data)
    assert rows["small"]["last_error"] and "127.0.0.1" in rows["small"]["last_error"]
    assert rows["other"]["last_error"] is None
    assert figures(data, "small") == before  # the last good figures still answer
    report = run_cli("report", "other", "--json", data=data)
    assert report.returncode == 0 and json.loads(report.stdout)["commits"] == 2
    # back up: the next sync catches up and clears the error
    with daemon:  # the same port again
        assert daemon.url("small.git") == rows["small"]["source"]
        again = run_cli("sync", "small", data=data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert _by_name(data)["small"]["last_error"] is None
    assert figures(data, "small") == clean_figures(small.path, "small", tmp_path)
    assert index_problems(data) == []


def test_remote_answering_500_is_recorded_then_recovers(small, tmp_path):
    data = tmp_path / "data"
    with GitHttpServer(tmp_path / "srv") as server:
        tracked = run_cli("track", server.url("small.git"), "--name", "small", data=data)
        assert tracked.returncode == 0, tracked.stderr
        before = figures(data, "small")
        small.commit(email="late@example.com", date="2024-06-01")
        server.mode = "500"
        failed = run_cli("sync", "small", data=data)
        assert failed.returncode == 1 and "500" in failed.stdout
        assert "Traceback" not in failed.stderr
        assert "500" in _by_name(data)["small"]["last_error"]
        assert figures(data, "small") == before
        server.mode = "ok"
        again = run_cli("sync", "small", data=data)
        assert again.returncode == 0, again.stdout + again.stderr
    assert _by_name(data)["small"]["last_error"] is None
    assert figures(data, "small") == clean_figures(small.path, "small", tmp_path)


def test_stalled_remotes_fail_within_the_fetch_timeout(small, tmp_path):
    """Two hung servers at once: an HTTP one that reads the request and never answers (during a
    `sync`), and a git:// one that accepts and never says a word (during a `track`). Both give up
    after GAD_FETCH_TIMEOUT_SECONDS with a clear error; the failed track leaves nothing behind."""
    data, fresh = tmp_path / "data", tmp_path / "fresh"
    with GitHttpServer(tmp_path / "srv") as http, StallServer() as silent:
        assert run_cli("track", http.url("small.git"), "--name", "small", data=data).returncode == 0
        before = figures(data, "small")
        http.mode = "stall"
        started = time.monotonic()
        sync = start_cli("sync", "small", data=data, GAD_FETCH_TIMEOUT_SECONDS=str(TIMEOUT))
        track = start_cli("track", f"git://127.0.0.1:{silent.port}/x.git", "--name", "x", data=fresh,
                          GAD_FETCH_TIMEOUT_SECONDS=str(TIMEOUT))
        took = {}
        for label, proc in (("sync", sync), ("track", track)):
            try:
                proc.wait(timeout=TIMEOUT + 30)
            finally:
                took[label] = time.monotonic() - started
                if proc.poll() is None:
                    proc.kill()
        sync_out, sync_err = sync.communicate(timeout=10)
        _, track_err = track.communicate(timeout=10)
        assert silent.accepted >= 1
    assert sync.returncode == 1, sync_out + sync_err
    assert took["sync"] < TIMEOUT + 8, f"the sync took {took['sync']:.1f}s with GAD_FETCH_TIMEOUT_SECONDS={TIMEOUT}"
    error = _by_name(data)["small"]["last_error"]
    assert "timed out" in error or "GAD_FETCH_TIMEOUT_SECONDS" in error
    assert figures(data, "small") == before

    assert track.returncode == 2
    lines = track_err.strip().splitlines()
    assert len(lines) == 1 and "timed out" in lines[0], track_err
    assert took["track"] < TIMEOUT + 8
    assert repos_json(fresh) == []
    assert leftovers(fresh) == []
    print(f"\nstalled http remote: sync failed after {took['sync']:.1f}s ({error}); "
          f"silent git:// server: track failed after {took['track']:.1f}s")


def test_trickling_remote_fails_within_the_fetch_timeout(tmp_path):
    data = tmp_path / "data"
    with TrickleServer(interval=0.5) as server:
        proc = start_cli("track", server.url("x.git"), "--name", "x", data=data,
                         GAD_FETCH_TIMEOUT_SECONDS=str(TIMEOUT))
        try:
            proc.wait(timeout=TIMEOUT + 3)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate(timeout=10)
            pytest.fail(f"`gad-bot track` still fetching {TIMEOUT + 3}s in, with GAD_FETCH_TIMEOUT_SECONDS={TIMEOUT}")
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 2 and "Traceback" not in err


def test_force_push_is_followed(small, tmp_path):
    data = tmp_path / "data"
    with GitDaemon(tmp_path / "srv") as daemon:
        assert run_cli("track", daemon.url("small.git"), "--name", "small", data=data).returncode == 0
        # rewrite main: drop its last 5 commits, add 2 by someone else (a force-push)
        base = small.repo[small.tip("main")]
        for _ in range(5):
            base = base.parents[0]
        small.set_ref("refs/heads/main", base.id)
        small.commit(name="Rita", email="rita@example.com", date="2024-03-01")
        small.commit(name="Rita", email="rita@example.com", date="2024-03-02")
        small.tag("v1", small.tip("main"))  # the tag moves too
        result = run_cli("sync", "small", data=data)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "-5 gone" in result.stdout and "+2 new" in result.stdout
    assert figures(data, "small") == clean_figures(small.path, "small", tmp_path)
    assert index_problems(data) == []


def test_deleted_refs_are_followed(small, tmp_path):
    data = tmp_path / "data"
    with GitHttpServer(tmp_path / "srv") as server:
        assert run_cli("track", server.url("small.git"), "--name", "small", data=data).returncode == 0
        with_feature = figures(data, "small")
        small.delete_ref("feature")
        small.delete_ref("refs/tags/v1")
        result = run_cli("sync", "small", data=data)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "-1 gone" in result.stdout
    now = figures(data, "small")
    assert now == clean_figures(small.path, "small", tmp_path)
    assert now["(default)"][2] == with_feature["(default)"][2] - 1  # fay's commit no longer counts
    assert index_problems(data) == []


def test_a_redirect_to_another_host_is_not_given_that_hosts_token(small, tmp_path):
    """Confused deputy (issue 22): a source on host A that redirects to host B, whose token the
    operator configured, must not get B's token sent (B's private repository under A's URL).

    Host A is `127.0.0.1`, host B `localhost` (both loopback, different names and ports).
    """
    data = tmp_path / "data"
    with GitHttpServer(tmp_path / "srv", mode="auth", password="tok-B", hostname="localhost") as private:
        with GitHttpServer(tmp_path / "nothing", mode="redirect", redirect_to=private.url("small.git")) as stranger:
            lure = run_cli("track", stranger.url("org/repo.git"), "--name", "lure", data=data,
                           GAD_HTTPS_TOKENS="localhost=tok-B")
        lured = list(private.requests)
        direct = run_cli("track", private.url("small.git"), "--name", "small", data=data,
                         GAD_HTTPS_TOKENS="localhost=tok-B")
    assert lured, "the redirect never reached host B: the test would prove nothing"
    assert [auth for _, _, auth in lured if auth] == []  # before the fix: B's token, and B's repository
    assert lure.returncode != 0 and "Traceback" not in lure.stderr
    assert "credentials" in lure.stderr
    assert "lure" not in {r["name"] for r in repos_json(data)}
    # B's own URL still gets B's token
    assert direct.returncode == 0, direct.stderr
    assert any(auth for _, _, auth in private.requests[len(lured):])


def test_private_https_repository_with_a_token(small, tmp_path):
    data = tmp_path / "data"
    with GitHttpServer(tmp_path / "srv", mode="auth", password="tok-123") as server:
        tracked = run_cli("track", server.url("small.git"), "--name", "small", data=data,
                          GAD_HTTPS_TOKENS="127.0.0.1=tok-123")
        assert tracked.returncode == 0, tracked.stderr
        small.commit(email="late@example.com", date="2024-06-01")
        synced = run_cli("sync", "small", data=data, GAD_HTTPS_TOKENS="127.0.0.1=tok-123")
        assert synced.returncode == 0, synced.stdout
    assert figures(data, "small") == clean_figures(small.path, "small", tmp_path)
