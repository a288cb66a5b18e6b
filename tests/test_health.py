"""Health that tells the truth (issue 21, part 2): /readyz over a damaged index, /metrics scraped and
parsed with the Prometheus client's own parser, one completion line per report in JSON logs.

All against a real `serve` process on a real index, Slack played by tests/slackstub.py.
"""

from __future__ import annotations

import json
import sqlite3
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.faults import Serve, tracked_web, workers_of
from tests.slackstub import SlackStub


@pytest.fixture
def data(tmp_path):
    return tracked_web(tmp_path, "2024-01-02", "2024-01-03", "2024-01-05")[0]


def get(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode()


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """Every sample of a scrape, keyed by (name, sorted labels), as Prometheus' own parser reads it."""
    found = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_metrics_are_prometheus_text_with_the_figures_of_what_happened(data, tmp_path):
    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1",
                                    GAD_LOG_FORMAT="json") as serve:
        status, body, _ = serve.post(stub.slash_fields("web by:person", response_name="one"))
        assert status == 200, body
        (answer,) = stub.wait_for_response("one", timeout=30)
        assert "2GAD" in json.dumps(answer)
        deadline = time.monotonic() + 10
        while True:  # the count is made after the answer is handed over: wait for it, briefly
            status, content_type, text = get(serve.url + "/metrics")
            found = samples(text)
            if found.get(("gad_reports_total", (("outcome", "ok"),))) == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert serve.stop() == 0
    assert status == 200 and content_type.startswith("text/plain; version="), content_type
    assert found[("gad_reports_total", (("outcome", "ok"),))] == 1
    assert found[("gad_report_duration_seconds_count", ())] == 1
    assert found[("gad_ack_duration_seconds_count", ())] >= 1  # the slash command (a scrape is not an ack)
    assert found[("gad_report_queue_depth", ())] == 0
    assert found[("gad_report_workers_alive", ())] == 1
    assert found[("gad_index_bytes", ())] >= (data / "index.sqlite").stat().st_size > 0
    # `track` synced it just now, successfully: a lag of seconds, not failing
    assert 0 <= found[("gad_sync_lag_seconds", (("repo", "web"),))] < 600
    assert found[("gad_sync_failing", (("repo", "web"),))] == 0
    lines = [json.loads(line) for line in serve.stderr.splitlines() if line.startswith("{")]
    (done,) = [line for line in lines if line["message"].startswith("report for ")]
    assert (done["repo"], done["outcome"]) == ("web", "ok") and done["seconds"] >= 0, done
    assert all(line["time"].endswith("Z") and len(line["time"]) == len("2026-12-04T16:21:29.708Z") for line in lines)


def _damage_index(path) -> None:
    """Overwrite the first page of the commit columns (what every report reads) with garbage, as a bad disk would."""
    db = sqlite3.connect(path)
    db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    page = db.execute("PRAGMA page_size").fetchone()[0]
    (root,) = db.execute("SELECT rootpage FROM sqlite_master WHERE name = 'commit_chunks'").fetchone()
    db.close()
    with open(path, "r+b") as handle:
        handle.seek((root - 1) * page)
        handle.write(b"\xa5" * page)


def test_readyz_names_a_damaged_index_while_healthz_stays_cheap(data, tmp_path):
    with SlackStub() as stub:
        with Serve(data, stub, logs=tmp_path / "healthy", GAD_REPORT_WORKERS="1") as serve:
            deadline = time.monotonic() + 30
            while "integrity checked" not in (ready := get(serve.url + "/readyz"))[2] or "Slack accepts" not in ready[2]:
                assert time.monotonic() < deadline, ready
                time.sleep(0.1)
            assert ready[0] == 200, ready
            lines = ready[2].splitlines()
            assert lines[0] == "ok index: 1 repositories, integrity checked"
            assert lines[1].startswith("ok disk: ") and f"free under {data}" in lines[1], lines
            assert lines[2:] == ["ok workers: 1 of 1 report workers alive", "ok scheduler: running",
                                 "ok slack: Slack accepts the bot token (team GAD Test, @gad-bot)"]
            assert serve.stop() == 0
        _damage_index(data / "index.sqlite")
        with Serve(data, stub, logs=tmp_path / "damaged", GAD_REPORT_WORKERS="1") as serve:
            assert get(serve.url + "/healthz")[0] == 200  # alive: restarting it would not help
            deadline = time.monotonic() + 30
            while (ready := get(serve.url + "/readyz"))[0] != 503:
                assert time.monotonic() < deadline, ready
                time.sleep(0.1)
            lines = ready[2].splitlines()
            assert lines[0].startswith("FAIL index: ") and "integrity check" in lines[0], lines
            assert [line for line in lines[1:] if not line.startswith("ok ")] == [], lines
            assert serve.stop() == 0
    assert "the index is damaged" in serve.stderr and "gad-bot doctor" in serve.stderr


def test_readyz_names_a_dead_worker(data, tmp_path):
    import os
    import signal

    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="2") as serve:
        serve.wait_serving()  # both report workers are up: each is killed below
        workers = workers_of(serve.proc.pid)
        assert workers, "serve has no worker processes"
        try:
            for pid in workers:  # the report workers (and any sync worker)
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while (ready := get(serve.url + "/readyz"))[0] != 503:
                assert time.monotonic() < deadline, ready
                time.sleep(0.05)
        finally:
            serve.stop()
    assert "FAIL workers: " in ready[2] and "of 2 report workers alive" in ready[2], ready


def test_readyz_names_a_stopped_scheduler(data):
    """The scheduler's thread gone (digests and periodic syncs no longer run): readiness says so by name."""
    from bot.config import Settings
    from bot.digests.schedule import DigestScheduler
    from bot.engine.engine import Engine
    from bot.service.health import Health
    from bot.service.workers import ReportPool

    settings = Settings.from_env({"GAD_DATA_DIR": str(data)})
    engine = Engine.open(settings)
    scheduler = DigestScheduler(settings, engine, lambda: None)
    health = Health(settings, engine, ReportPool(settings, workers=1), scheduler)
    scheduler.start()
    try:
        assert [p.line() for p in health.parts() if p.name == "scheduler"] == ["ok scheduler: running"]
    finally:
        scheduler.shutdown(wait=True)
    (part,) = [p for p in health.parts() if p.name == "scheduler"]
    assert part.line() == "FAIL scheduler: stopped: digests and syncs are not run"
