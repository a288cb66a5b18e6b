"""/metrics an operator alerts on (issue 32, sections 1 and 2), and serve's start without Slack (section 4).

Through a real `serve` unless said otherwise: every counter at 0 before its first event, a refused
question counted `refused` and never `failed`, `gad_sync_failing` becoming 1, sync and fetch durations,
Slack API errors and retries by method; serve started while Slack's API cannot be reached.
"""

from __future__ import annotations

import json
import re
import shutil

from tests.faults import ROOT, Serve, free_port, get, run_cli, scrape, track_here, tracked_web, wait_until
from tests.gitbuild import RepoBuilder
from tests.slackstub import DEFAULT_BOT_TOKEN, SlackStub

OPERATIONS = ROOT / "docs" / "operations.md"


def test_a_refused_question_is_counted_refused_and_every_counter_starts_at_zero(tmp_path):
    """The soak's 33 of 33 `/gad compare a b` "failed in 0.003 s": `a` and `b` were not tracked, so each was
    the refusal `gad-bot compare a b` also gives (exit 2, a sentence), counted and logged as a failure."""
    data, _ = tracked_web(tmp_path, "2024-01-02", "2024-01-03")
    api = RepoBuilder(tmp_path / "api")
    api.commit(email="cy@example.com", date="2024-02-01")
    track_here(str(api.path), "api", data)
    cli = run_cli("compare", "a", "b", data=data)
    assert cli.returncode == 2 and "No repository or project named `a` is tracked" in cli.stderr, cli.stderr
    with SlackStub() as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1") as serve:
        # serve answers before its first token check (auth.test, in a thread of its own) has said anything
        wait_until("the first token check", lambda: "gad_slack_token_valid" in get(serve.url + "/metrics")[1])
        before = scrape(serve.url)
        exported = _families(get(serve.url + "/metrics")[1])
        status, body, _ = serve.post(stub.slash_fields("compare a b", response_name="typo"))
        assert status == 200, body
        (answer,) = stub.wait_for_response("typo", timeout=30)
        assert answer["text"].startswith("No repository or project named `a` is tracked"), answer["text"]
        status, body, _ = serve.post(stub.slash_fields("compare web api", response_name="both"))
        (answer,) = stub.wait_for_response("both", timeout=30)
        # git: web has ann and bob on one day each (2 pairs), api cy on one (1 pair)
        assert answer["text"] == "Side by side: web, api (all history): web 2GAD 4; api 2GAD 2", answer["text"]
        after = wait_until("both counted", lambda: (s := scrape(serve.url))[
            ("gad_reports_total", (("outcome", "ok"),))] == 1 and s)
        assert serve.stop() == 0
    for outcome in ("ok", "refused", "failed", "timed_out", "cut_off"):
        assert before[("gad_reports_total", (("outcome", outcome),))] == 0, outcome
    for outcome in ("posted", "failed", "missed", "unknown", "paused"):
        assert before[("gad_digests_total", (("outcome", outcome),))] == 0, outcome
    for outcome in ("ok", "failed"):
        assert before[("gad_syncs_total", (("outcome", outcome),))] == 0, outcome
    for method in ("chat.postMessage", "auth.test", "views.publish"):
        assert before[("gad_slack_api_errors_total", (("method", method),))] == 0, method
        assert before[("gad_slack_api_retries_total", (("method", method),))] == 0, method
    assert before[("gad_sync_duration_seconds_count", (("kind", "repo"),))] == 0
    assert before[("gad_fetch_duration_seconds_count", ())] == 0
    assert before[("gad_sync_queue_depth", ())] == 0 and before[("gad_report_queue_depth", ())] == 0
    assert before[("process_resident_memory_bytes", ())] > 10 * 2**20  # python, numpy, Bolt: tens of MiB
    assert before[("process_open_fds", ())] > 3
    assert 0 <= before[("gad_heartbeat_age_seconds", ())] < 60
    assert before[("gad_data_dir_free_bytes", ())] == shutil.disk_usage(data).free or \
        before[("gad_data_dir_free_bytes", ())] > 0  # f_bavail: what the service user may write
    assert before[("gad_data_disk_full", ())] == 0
    documented = set(re.findall(r"`((?:gad|process)_[a-z_]+)", OPERATIONS.read_text()))
    assert len(documented) > 20 and {"gad_data_disk_full", "gad_slack_token_valid"} <= documented
    missing = sorted(name for name in documented if name.removesuffix("_total") not in exported)
    assert missing == [], f"docs/operations.md names metrics /metrics does not export: {missing}"
    assert after[("gad_reports_total", (("outcome", "refused"),))] == 1
    assert after[("gad_reports_total", (("outcome", "failed"),))] == 0
    (line,) = [line for line in serve.stderr.splitlines() if "report for U123 on 2 names" in line]
    assert "refused (UnknownRepoError) in " in line, line


def _families(text: str) -> set[str]:
    """The metric families a scrape exports (with or without samples yet), as Prometheus' parser names them."""
    from prometheus_client.parser import text_string_to_metric_families

    return {family.name for family in text_string_to_metric_families(text)}


def test_sync_failing_becomes_1_and_syncs_are_timed(tmp_path):
    data, upstream = tracked_web(tmp_path, "2024-01-02")
    with SlackStub(admins={"U123"}) as stub, Serve(data, stub, logs=tmp_path / "logs", GAD_REPORT_WORKERS="1") as serve:
        assert scrape(serve.url)[("gad_sync_failing", (("repo", "web"),))] == 0
        status, body, _ = serve.post(stub.slash_fields("sync web", response_name="ok"))
        assert status == 200, body
        (answer,) = stub.wait_for_response("ok", timeout=60)
        assert "failed" not in answer["text"], answer
        found = wait_until("the sync counted", lambda: (s := scrape(serve.url))[
            ("gad_syncs_total", (("outcome", "ok"),))] == 1 and s, 30)
        assert found[("gad_sync_duration_seconds_count", (("kind", "repo"),))] == 1
        assert found[("gad_fetch_duration_seconds_count", ())] == 1

        shutil.rmtree(upstream)  # gone: the next sync fails, and says so
        serve.post(stub.slash_fields("sync web", response_name="gone"))
        (answer,) = stub.wait_for_response("gone", timeout=60)
        assert "failed" in json.dumps(answer), answer
        found = wait_until("gad_sync_failing 1", lambda: (s := scrape(serve.url))[
            ("gad_sync_failing", (("repo", "web"),))] == 1 and s, 30)
        assert found[("gad_syncs_total", (("outcome", "failed"),))] == 1
        assert serve.stop() == 0


def test_slack_api_errors_and_retries_are_counted_by_method(tmp_path):
    """In-process: the client every floor uses (bot/slackapi.py) against the Slack stand-in."""
    from slack_sdk.errors import SlackApiError

    from bot import metrics
    from bot.config import Settings
    from bot.slackapi import web_client

    def value(name: str, method: str) -> float:
        return metrics.REGISTRY.get_sample_value(name, {"method": method}) or 0.0

    with SlackStub() as stub:
        settings = Settings.from_env({"GAD_DATA_DIR": str(tmp_path), "SLACK_BOT_TOKEN": stub.good_token,
                                      "SLACK_API_URL": stub.api_url})
        errors, retries = value("gad_slack_api_errors_total", "chat.postMessage"), \
            value("gad_slack_api_retries_total", "chat.postMessage")
        stub.fail_next("chat.postMessage", status=429, retry_after=0)
        web_client(settings).chat_postMessage(channel="C123", text="hello")  # answered on the retry
        assert len(stub.calls_to("chat.postMessage")) == 2
        assert value("gad_slack_api_retries_total", "chat.postMessage") == retries + 1
        assert value("gad_slack_api_errors_total", "chat.postMessage") == errors
        stub.fail_next("chat.postMessage", error="channel_not_found")
        try:
            web_client(settings).chat_postMessage(channel="C123", text="hello")
        except SlackApiError:
            pass
        assert value("gad_slack_api_errors_total", "chat.postMessage") == errors + 1


def test_serve_started_before_slack_is_reachable_says_so_once_and_starts_when_it_is(tmp_path):
    data, _ = tracked_web(tmp_path, "2024-01-02")
    port = free_port()

    class Later:  # what Serve reads of a stub, before there is one
        good_token = DEFAULT_BOT_TOKEN
        api_url = f"http://127.0.0.1:{port}/api/"

    serve = Serve(data, Later(), logs=tmp_path / "logs", GAD_REPORT_WORKERS="1")
    try:
        serve.start(wait=False)
        wait_until("the sentence", lambda: "cannot reach Slack's API" in serve.stderr, 60)
        assert serve.proc.poll() is None, serve.stderr  # still there, trying
        with SlackStub(port=port) as stub:
            serve.stub = stub
            wait_until("serving", lambda: get(serve.url + "/healthz")[0] == 200 if serve.proc.poll() is None
                       else (_ for _ in ()).throw(AssertionError(serve.stderr)), 90)
            assert serve.stop() == 0
    finally:
        serve.__exit__()
    lines = [line for line in serve.stderr.splitlines() if "cannot reach Slack's API" in line]
    assert len(lines) == 1 and f"at http://127.0.0.1:{port}/api/" in lines[0], serve.stderr
    assert "gad-bot keeps trying" in lines[0] and "Traceback" not in serve.stderr and \
        "internal error" not in serve.stderr, serve.stderr
    assert "Slack's API answers now; starting" in serve.stderr
