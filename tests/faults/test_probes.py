"""Health that tells the truth under faults (issue 32, section 1), each through a real `serve` process.

- A full data disk (a real tmpfs, filled until the kernel says ENOSPC): reports keep answering, what
  would write is refused with one sentence, a replayed request is still refused, `/readyz` is 503
  naming the disk, `/metrics`, `status` and `doctor` say it; once space is freed, all of it heals by
  itself (the heartbeat written again, the replay guard back in the index) without a restart.
- A damaged index under a running serve: the member is told what it is, `/readyz` is 503 within a
  minute, `status` exits 1 naming it, `doctor` gives the FAIL line with the way back.
- A revoked bot token (the Slack stand-in answers `invalid_auth`): `/readyz`, `/metrics`, `status`
  and one log line, within one check interval.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.faults import (Serve, Tmpfs, damage_table, get, run_cli, scrape, track_here, tracked_web,
                          wait_until)
from tests.gitbuild import RepoBuilder
from tests.slackstub import SlackStub

FULL_SENTENCE = "gad-bot's data disk is full, so nothing can be changed or recorded right now (reports still answer)"


def _text(body: bytes) -> str:
    return json.loads(body)["text"] if body else ""


def _lines(serve: Serve) -> list[str]:
    return serve.stderr.splitlines()


def test_a_full_disk_keeps_reports_answering_refuses_writes_and_heals_by_itself(tmp_path):
    upstream = RepoBuilder(tmp_path / "web")
    for day, email in (("2024-01-02", "ann@example.com"), ("2024-01-03", "bob@example.com"),
                       ("2024-01-05", "ann@example.com")):
        upstream.commit(email=email, date=day)
    # git's own count of (person, day) pairs: 3, so 2GAD 6 person-days
    with Tmpfs(tmp_path / "mnt", "32m") as disk:
        data = disk.path / "data"
        track_here(str(upstream.path), "web", data)
        with SlackStub(admins={"U123"}) as stub, Serve(data, stub, logs=tmp_path / "logs",
                                                       GAD_REPORT_WORKERS="1") as serve:
            env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url}
            wait_until("serve ready", lambda: get(serve.url + "/readyz")[0] == 200, 30)
            filler = disk.fill()
            filled_at = time.time()

            # /readyz names the disk; /healthz still says the process lives (a restart would not free space)
            status, ready = wait_until("readyz 503", lambda: (r := get(serve.url + "/readyz"))[0] == 503 and r)
            (line,) = [line for line in ready.splitlines() if line.startswith("FAIL ")]
            assert line.startswith("FAIL disk: the data disk is full (") and str(data) in line, ready
            assert get(serve.url + "/healthz")[0] == 200

            # a report answers (its replay guard keeps the signature in memory), the figure git gives
            status, body, _ = serve.post(stub.slash_fields("web", response_name="full"))
            assert status == 200, body
            (answer,) = stub.wait_for_response("full", timeout=30)
            assert answer["text"].startswith("web: 2GAD 6 person-days"), answer["text"]
            assert "Share in channel" not in json.dumps(answer)  # nothing can be kept for a Share meanwhile
            # ... and the very same signed bytes again are a replay, refused as before the disk filled
            from tests.slackstub import signed_slash_command

            body, headers = signed_slash_command(serve.secret, stub.slash_fields("web", response_name="twice"))
            assert serve.post_signed(body, headers)[0] == 200
            assert serve.post_signed(body, headers)[0] == 401
            # what writes is refused in one sentence, in the ack
            refused = {"subscribe web day:mon": "w1", "sync web": "w2", "project add both web": "w3"}
            for text, name in refused.items():
                status, body, _ = serve.post(stub.slash_fields(text, response_name=name))
                assert status == 200 and _text(body).startswith(FULL_SENTENCE), (text, body)

            found = scrape(serve.url)
            assert found[("gad_data_disk_full", ())] == 1
            assert found[("gad_data_dir_free_bytes", ())] < 16 * 2**20
            assert found[("gad_ready", (("part", "disk"),))] == 0
            assert found[("gad_reports_total", (("outcome", "ok"),))] >= 1

            doctor = run_cli("doctor", data=data, **env)
            assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
            (full,) = [line for line in doctor.stdout.splitlines() if "the data disk is full" in line]
            assert full.startswith("[FAIL] ") and "free space there" in full, doctor.stdout
            status_cli = run_cli("status", data=data)
            assert status_cli.returncode == 1, status_cli.stdout + status_cli.stderr
            assert any(line.strip().startswith("FAIL disk: the data disk is full") for line in
                       status_cli.stdout.splitlines()), status_cli.stdout
            # the heartbeat could not be written, and said so once; its time is still fresh for the healthcheck
            wait_until("the heartbeat's failure logged", lambda: any("cannot write the heartbeat" in line
                                                                     for line in _lines(serve)), 60)
            heartbeat = data / "serve.heartbeat"
            wait_until("the heartbeat's time refreshed on the full disk",
                       lambda: heartbeat.stat().st_mtime > filled_at + 1, 30)
            assert json.loads(heartbeat.read_text())["written_at"] < filled_at  # its time, not a new write
            assert run_cli("healthcheck", data=data).returncode == 0

            filler.unlink()  # space returns: everything heals by itself, within a minute
            freed = time.monotonic()
            wait_until("readyz 200 again", lambda: get(serve.url + "/readyz")[0] == 200, 60)
            wait_until("the heartbeat written again",
                       lambda: any("the heartbeat is written again" in line for line in _lines(serve)), 60)
            assert time.monotonic() - freed < 60
            state = json.loads((data / "serve.heartbeat").read_text())
            assert state["written_at"] >= time.time() - 60 and state["problems"] == [], state
            status, body, _ = serve.post(stub.slash_fields("subscribe web day:mon", response_name="sub"))
            assert status == 200 and not body, body
            (answer,) = stub.wait_for_response("sub", timeout=30)
            assert "web" in answer["text"] and "full" not in answer["text"], answer
            assert any("the replay guard records in the index again" in line for line in _lines(serve))
            assert scrape(serve.url)[("gad_data_disk_full", ())] == 0
            assert serve.stop() == 0
            # refused once, in the ack: the lazy work never tried them anyway (it would answer a second time)
            assert [stub.responses(name) for name in refused.values()] == [[], [], []]
        assert "Traceback" not in serve.stderr, serve.stderr
        assert len([line for line in _lines(serve) if "cannot write the heartbeat" in line]) == 1


def test_a_damaged_index_under_serve_is_named_within_a_minute(tmp_path):
    data, _ = tracked_web(tmp_path, "2024-01-02", "2024-01-03")
    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1") as serve:
        env = {"SLACK_BOT_TOKEN": stub.good_token, "SLACK_API_URL": stub.api_url}
        wait_until("integrity checked and ready",
                   lambda: (r := get(serve.url + "/readyz"))[0] == 200 and "integrity checked" in r[1], 30)
        damage_table(data / "index.sqlite", "commit_chunks")  # under the running serve: what every report reads
        damaged = time.monotonic()

        status, body, _ = serve.post(stub.slash_fields("web", response_name="damaged"))
        assert status == 200, body
        (answer,) = stub.wait_for_response("damaged", timeout=30)
        assert answer["text"].startswith("gad-bot's index is damaged, so this cannot be answered"), answer["text"]

        status, ready = wait_until("readyz 503", lambda: (r := get(serve.url + "/readyz"))[0] == 503 and r, 60)
        assert time.monotonic() - damaged < 60
        assert ready.splitlines()[0].startswith("FAIL index: "), ready
        assert scrape(serve.url)[("gad_ready", (("part", "index"),))] == 0
        assert scrape(serve.url)[("gad_reports_total", (("outcome", "failed"),))] == 1

        status_cli = wait_until("status exits 1", lambda: (r := run_cli("status", data=data)).returncode == 1 and r, 30)
        assert any(line.strip().startswith("FAIL index:") for line in status_cli.stdout.splitlines()), status_cli.stdout
        doctor = run_cli("doctor", data=data, **env)
        assert doctor.returncode == 1 and "Traceback" not in doctor.stderr, doctor.stderr
        fails = [line for line in doctor.stdout.splitlines() if line.startswith("[FAIL]") and "index" in line]
        assert fails and all("gad-bot restore" in line for line in fails), doctor.stdout
        assert serve.stop() == 0
    assert "the index is damaged" in serve.stderr and "gad-bot restore" in serve.stderr


def test_a_revoked_token_is_seen_by_readyz_metrics_status_and_one_log_line(tmp_path):
    data, _ = tracked_web(tmp_path, "2024-01-02")
    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1",
                                    GAD_TOKEN_CHECK_SECONDS="1") as serve:
        wait_until("token accepted", lambda: "ok slack: Slack accepts" in get(serve.url + "/readyz")[1], 30)
        assert scrape(serve.url)[("gad_slack_token_valid", ())] == 1
        stub.good_token = "xoxb-the-new-one"  # the app reinstalled elsewhere: serve's token answers invalid_auth

        status, ready = wait_until("readyz 503", lambda: (r := get(serve.url + "/readyz"))[0] == 503 and r, 30)
        (line,) = [line for line in ready.splitlines() if line.startswith("FAIL ")]
        assert line == ("FAIL slack: Slack refused SLACK_BOT_TOKEN (invalid_auth): reinstall the app and set the new "
                        "Bot User OAuth Token"), ready
        found = scrape(serve.url)
        assert found[("gad_slack_token_valid", ())] == 0
        assert found[("gad_slack_api_errors_total", (("method", "auth.test"),))] >= 1
        status_cli = wait_until("status exits 1", lambda: (r := run_cli("status", data=data)).returncode == 1 and r, 30)
        assert any(line.strip() == ready.splitlines()[-1] for line in status_cli.stdout.splitlines()), status_cli.stdout
        wait_until("a few more checks", lambda: len(stub.calls_to("auth.test")) >= 6, 30)
        assert serve.stop() == 0
    refusals = [line for line in serve.stderr.splitlines() if "Slack refused SLACK_BOT_TOKEN" in line]
    assert len(refusals) == 1 and "invalid_auth" in refusals[0], refusals  # one line, not one per check


@pytest.mark.parametrize("fault", ["damaged header", "damaged table", "unreadable", "read-only", "full disk"])
def test_doctor_and_status_never_crash(fault, tmp_path):
    """Each fault is one FAIL line and exit 1 from doctor, a problem and exit 1 from status; never a traceback or
    an internal error."""
    from tests.faults import as_another_user, cli_env

    base = tmp_path
    if fault in ("read-only", "full disk"):
        disk = Tmpfs(tmp_path / "mnt", "32m").__enter__()
        base = disk.path
    try:
        data, _ = tracked_web(base, "2024-01-02")
        prefix: list[str] = []
        if fault == "damaged header":
            with open(data / "index.sqlite", "r+b") as handle:  # the file header and the schema's page
                handle.write(b"\xa5" * 4096)
        elif fault == "damaged table":
            damage_table(data / "index.sqlite", "repos")
        elif fault == "unreadable":
            prefix = as_another_user()
            os.chmod(data, 0o700)
            if not prefix:
                os.chmod(data, 0)
        elif fault == "read-only":
            disk.remount("ro")
        else:
            disk.fill()
        import subprocess
        import sys

        from tests.faults import ROOT

        done, status = (subprocess.run([*prefix, sys.executable, "-m", "bot.faces.cli", command], cwd="/",
                                       capture_output=True, text=True, env=cli_env(data, PYTHONPATH=str(ROOT)),
                                       timeout=120) for command in ("doctor", "status"))
    finally:
        if fault == "unreadable":
            os.chmod(data, 0o700)
        if fault in ("read-only", "full disk"):
            disk.__exit__()
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr, done.stderr
    fails = [line for line in done.stdout.splitlines() if line.startswith("[FAIL]")]
    expected = {"damaged header": "gad-bot restore", "damaged table": "gad-bot restore",
                "unreadable": "service user", "read-only": "is not writable", "full disk": "the data disk is full"}
    assert any(expected[fault] in line for line in fails), done.stdout
    # status too: a problem to see (exit 1, `problems:`), never a crash
    assert status.returncode == 1 and "Traceback" not in status.stderr and "internal error" not in status.stderr, \
        (status.stdout, status.stderr)
    assert "problems:" in status.stdout.splitlines(), status.stdout
