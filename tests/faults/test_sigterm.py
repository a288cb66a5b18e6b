"""SIGTERM (what systemd, Docker and Kubernetes send) in the middle of a sync."""

from __future__ import annotations

import signal
import time

import pygit2

from tests.faults import Serve, figures, index_problems, pending_paths, run_cli, start_cli


def _fetched(data, tip) -> bool:
    for path in (data / "mirrors").glob("*.git"):
        try:
            return str(pygit2.Repository(str(path)).references["refs/heads/main"].target) == tip
        except (KeyError, pygit2.GitError):
            return False
    return False


def _wait_fetched(data, tip, proc=None, timeout=60.0) -> None:
    deadline = time.monotonic() + timeout
    while not _fetched(data, tip):
        assert time.monotonic() < deadline, "the fetch never finished"
        assert proc is None or proc.poll() is None, "the sync ended before its index phase"
        time.sleep(0.01)


def test_sigterm_during_a_cli_sync(big, big_clean, sync_case):
    data = sync_case.restore()
    proc = start_cli("sync", "big", data=data)
    _wait_fetched(data, big.tips["refs/heads/main"], proc)
    time.sleep(0.1)  # into the index transaction
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=30)
    took = time.monotonic() - sent
    _, err = proc.communicate()
    assert took < 3, f"`gad-bot sync` took {took:.1f}s to stop after SIGTERM"
    assert proc.returncode != 0  # it did not pretend to have finished
    assert "Traceback" not in err
    assert index_problems(data) == []
    assert figures(data, "big") in (sync_case.old_figures, big_clean)
    again = run_cli("sync", "big", data=data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert figures(data, "big") == big_clean
    assert pending_paths(data) == 0
    print(f"\nSIGTERM to `gad-bot sync` while indexing: stopped in {took:.2f}s (status {proc.returncode})")


def test_sigterm_to_serve_during_a_sync_exits_0_promptly(big, big_clean, sync_case, tmp_path):
    from tests.slackstub import SlackStub

    data = sync_case.restore()
    with SlackStub() as stub, Serve(data, stub, GAD_ADMINS="U123", logs=tmp_path / "serve") as serve:
        status, _, _ = serve.post(stub.slash_fields("sync big", response_name="sync"))
        assert status == 200
        _wait_fetched(data, big.tips["refs/heads/main"])
        sent = time.monotonic()
        code = serve.stop(signal.SIGTERM, timeout=15)
        took = time.monotonic() - sent
        stderr = serve.stderr
    assert code == 0, stderr
    assert took < 5, f"serve took {took:.1f}s to stop after SIGTERM"
    assert "Traceback" not in stderr
    assert index_problems(data) == []
    assert figures(data, "big") in (sync_case.old_figures, big_clean)
    again = run_cli("sync", "big", data=data)
    assert again.returncode == 0, again.stdout + again.stderr
    assert figures(data, "big") == big_clean
    print(f"\nSIGTERM to serve during a Slack-started sync: exit {code} in {took:.2f}s")
